/*
 * symbolize.h - program counters to source frames, with libdw.
 *
 * A symbolizer holds a set of modules (ELF files mapped at known load biases,
 * or copied images such as the vDSO) and JIT symbol ranges, and turns each
 * address into one or more frames, innermost first: the function that
 * contains the address and, where the compiler inlined code there, one frame
 * per inlined call, each with its own file:line. This is the output of
 * `eu-addr2line -f -i -C`.
 *
 * Cost model: per-module indexes (sorted symbols, sorted function/inline
 * ranges, line tables) are built once, on the first address that falls in the
 * module, and within a module per compile unit and per function as
 * addresses land in them; each distinct address is resolved once and cached.
 * Results are owned by the symbolizer and stay valid until
 * sp_symbolizer_free(). docs/SYMBOLIZE.md has the design and the figures.
 *
 * Nothing here is async-signal-safe, nor thread-safe (one thread at a time
 * per symbolizer); it runs after the profiled program, in the CLI.
 */
#ifndef SP_SYMBOLIZE_H
#define SP_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_symbolizer;

/* What a frame is, for marks in the output and for fallbacks. */
enum sp_frame_kind {
	SP_FRAME_FUNC = 0, /* a real function, from DWARF or the ELF symbol tables */
	SP_FRAME_INLINED,  /* code inlined into the next (outer) frame */
	SP_FRAME_JIT,	   /* from a perf-<pid>.map */
	SP_FRAME_UNNAMED,  /* no symbol: func reads "module+0xoffset" of the function start */
	SP_FRAME_UNKNOWN,  /* not in any module: func reads "0x<addr>" */
};

/*
 * One frame. For an inlined frame, file:line is where it is in its own
 * source; for the frame it was inlined into, the call site. All strings are
 * owned by the symbolizer and valid until sp_symbolizer_free(); equal
 * strings of one module are usually the same pointer, not guaranteed.
 */
struct sp_frame {
	const char *func;   /* demangled name, never NULL */
	const char *file;   /* source path as DWARF gives it, relative names joined
			     * to DW_AT_comp_dir (what eu-addr2line prints), or NULL */
	unsigned line;	    /* 0 if unknown */
	unsigned column;    /* 0 if unknown */
	const char *module; /* basename of the module path, or NULL */
	uint64_t offset;    /* address looked up (addr-1 for a return address) minus
			     * the module's load bias, i.e. the ELF vaddr; for
			     * SP_FRAME_UNNAMED the function start in func; for
			     * SP_FRAME_JIT the offset in the JIT symbol */
	enum sp_frame_kind kind;
};

/* Symbolizer options. */
#define SP_SYM_NO_INLINE   0x1u /* one frame per address: the outermost function only */
#define SP_SYM_NO_DEMANGLE 0x2u /* keep mangled C++ names */
#define SP_SYM_BASENAMES   0x4u /* file names without directories */

/* Returns a new, empty symbolizer, or NULL on allocation failure. */
struct sp_symbolizer *sp_symbolizer_new(unsigned flags);

void sp_symbolizer_free(struct sp_symbolizer *s);

/*
 * Sets the build-id cache (symbolize/bidcache.h) to read from, or none with
 * NULL (the default). A module whose file is missing, or has another
 * build-id than the one recorded, is then read from the cache's copy of
 * that build, if it has one; the warning kept says so. Call before the
 * first lookup. Returns 0 or -ENOMEM.
 */
int sp_symbolizer_set_cache_dir(struct sp_symbolizer *s, const char *dir);

/*
 * Adds the ELF file at path, mapped so that runtime address = ELF vaddr +
 * bias, covering [start, end). build_id (may be NULL / 0 length) is what was
 * recorded at run time: if the file's build-id differs, the module is not
 * used, a warning is kept (see sp_symbolizer_warnings) and its addresses fall
 * back to "module+0xoffset". Debug info is looked up through build-id,
 * .gnu_debuglink and /usr/lib/debug. Returns 0 or -errno (-EINVAL for an
 * empty range, -ENOMEM); a file that cannot be opened is not an error here:
 * the module is kept as a name-only module and a warning is kept.
 *
 * Files are opened on the first lookup that lands in them, so their warnings
 * appear then; mappings of the same path and build-id share one opened file.
 * Ranges may overlap: the module added last wins (a dlopen at a range a
 * dlclose freed). Adding after lookups is allowed and forgets cached results.
 */
int sp_symbolizer_add_module(struct sp_symbolizer *s, const char *path, uint64_t start,
			     uint64_t end, uint64_t bias, const uint8_t *build_id,
			     size_t build_id_len);

/*
 * Same, for an ELF image held in memory (the vDSO), named name in frames.
 * The image is copied; names come from its .dynsym. Returns 0 or -errno.
 */
int sp_symbolizer_add_image(struct sp_symbolizer *s, const char *name, const void *image,
			    size_t len, uint64_t start, uint64_t end, uint64_t bias);

/*
 * A JIT symbol [start, start+size) named name (from perf-<pid>.map); name
 * is copied. Its addresses give one SP_FRAME_JIT frame. JIT symbols take
 * precedence over modules; among overlapping ones the last added wins.
 * Returns 0 or -errno.
 */
int sp_symbolizer_add_jit(struct sp_symbolizer *s, uint64_t start, uint64_t size, const char *name);

/*
 * Resolves addr. is_return_address says addr is a return address (every
 * frame but the interrupted leaf): it is then looked up at addr-1 so that the
 * call instruction, not the next statement, is reported. On success stores a
 * borrowed array of frames, innermost first, in *frames and returns how many
 * (always >= 1: an address nothing knows still gets an SP_FRAME_UNKNOWN
 * frame). Returns -errno only on allocation failure.
 *
 * Where the fallbacks apply: no function DIE -> the ELF symbol (FUNC); no
 * symbol either -> SP_FRAME_UNNAMED "module+0x<function start from
 * .eh_frame>"; an unusable module -> "module+0x<vaddr>"; no module ->
 * SP_FRAME_UNKNOWN "0x<addr>". With SP_SYM_NO_INLINE the one frame is the
 * outermost function at the line of the call inlined into it.
 */
int sp_symbolizer_lookup(struct sp_symbolizer *s, uint64_t addr, bool is_return_address,
			 const struct sp_frame **frames);

/*
 * The ELF symbol (.symtab, else the debug file's, else .dynsym) holding
 * addr, demangled unless SP_SYM_NO_DEMANGLE, as eu-addr2line names the
 * function an inlined call sits in; its runtime address goes to *start (may
 * be NULL). Returns a borrowed name valid until sp_symbolizer_free(), or NULL
 * (no module, no symbol, or a symbol that ends before addr).
 */
const char *sp_symbolizer_symbol(struct sp_symbolizer *s, uint64_t addr, uint64_t *start);

/*
 * Whether addr (looked up at addr-1 if is_return_address) lies in a frame
 * whose call frame information marks the return address undefined: the
 * ABI's mark of a thread's outermost frame (_start, clone3). It needs only
 * .eh_frame, not debug info, so a stack can be seen to reach its root in a
 * stripped libc. 1 yes, 0 no or unknown.
 */
int sp_symbolizer_is_outermost(struct sp_symbolizer *s, uint64_t addr, bool is_return_address);

/*
 * Warnings collected so far (missing files, build-id mismatch, no debug
 * info), one line each, at most one per file; "" when none. Borrowed: valid
 * until the next lookup (which may add one) or sp_symbolizer_free().
 */
const char *sp_symbolizer_warnings(const struct sp_symbolizer *s);

#endif
