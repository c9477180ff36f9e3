/*
 * fuzz-symbolize.c - libFuzzer target for the ELF/DWARF path of the
 * symbolizer (symbolize/: module.c, symtab.c, dwarfidx.c, linetab.c,
 * ehframe.c, through libdw/libelf).
 *
 * The input is an ELF file. It is written to a file in a private temporary
 * directory under /dev/shm (SP_FUZZ_TMPDIR to change; libdwfl opens
 * modules by path and looks for debug files next to them, so the
 * directory holds nothing else), added as a module at
 * [0x1000, 0x100000000) with bias 0, i.e. runtime address = ELF vaddr, and
 * at [0, 0x1000) (a second mapping of the same file: relocatable objects
 * and PIEs put code there), then again as an in-memory image (the vDSO
 * path) at 0x200000000 + vaddr, with a JIT symbol over its entry point.
 *
 * Addresses to look up come from the input itself so that they land in its
 * code: e_entry, points spread over every executable section, and the
 * values of the first function symbols of .symtab/.dynsym (the harness
 * parses the headers itself with bounds checks; it must not crash on its
 * own). Each is looked up as the interrupted PC and as a return address,
 * then through sp_symbolizer_symbol and sp_symbolizer_is_outermost (the
 * CFI of .eh_frame), and the warnings are read.
 *
 * Byte 15 of e_ident (EI_PAD padding, ignored by libelf) picks the
 * symbolizer flags, so the fuzzer covers SP_SYM_NO_INLINE, NO_DEMANGLE and
 * BASENAMES without a separate target; its bit 3 passes a "recorded"
 * build-id (input bytes 16..35) to sp_symbolizer_add_module, which almost
 * never matches: the stale-module path and its warning.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MOD_START   0x1000ull
#define MOD_END	    0x100000000ull
#define IMAGE_START 0x200000000ull
#define IMAGE_END   0x300000000ull
#define MAX_ADDRS   48

static char sp_fuzz_dir[64];
static char sp_fuzz_path[96];
static volatile uint64_t sp_fuzz_sink;
static bool sp_fuzz_verbose; /* SP_FUZZ_VERBOSE=1: print every lookup */
/*
 * sp_symbolizer_is_outermost (the thread-root test from .eh_frame) is
 * fuzzed too. It once leaked a Dwarf_CFI per call, which LeakSanitizer
 * reported on every input; SP_FUZZ_OUTERMOST=0 leaves it out.
 */
#define SP_FUZZ_OUTERMOST_DEFAULT 1
static bool sp_fuzz_outermost;

static const char *sp_fuzz_tmp;

/*
 * tmpfs by default: a file truncated and rewritten 500 times a second on
 * ext4 is flushed on every close (auto_da_alloc), which made the target
 * wait on the disk four fifths of the time.
 */
static void sp_fuzz_init(void)
{
	sp_fuzz_tmp = getenv("SP_FUZZ_TMPDIR");
	if (!sp_fuzz_tmp || strlen(sp_fuzz_tmp) > 40)
		sp_fuzz_tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	sp_fuzz_verbose = getenv("SP_FUZZ_VERBOSE") != NULL;
	const char *o = getenv("SP_FUZZ_OUTERMOST");
	sp_fuzz_outermost = o ? atoi(o) != 0 : SP_FUZZ_OUTERMOST_DEFAULT;
}

/*
 * A fresh directory per input, removed after it: libFuzzer does not always
 * leave through exit(), so an atexit cleanup would leave one behind per run.
 */
static void sp_fuzz_write(const uint8_t *data, size_t size)
{
	snprintf(sp_fuzz_dir, sizeof(sp_fuzz_dir), "%s/sp-fuzz-sym.XXXXXX", sp_fuzz_tmp);
	if (!mkdtemp(sp_fuzz_dir)) {
		perror("mkdtemp");
		abort();
	}
	/* a name like a library's: the module's basename shows in frames */
	snprintf(sp_fuzz_path, sizeof(sp_fuzz_path), "%s/libfuzz.so", sp_fuzz_dir);
	FILE *fp = fopen(sp_fuzz_path, "wb");
	if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp)) {
		perror(sp_fuzz_path);
		abort();
	}
}

static void sp_fuzz_remove(void)
{
	unlink(sp_fuzz_path);
	rmdir(sp_fuzz_dir);
}

static uint64_t rd(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

struct addrs {
	uint64_t v[MAX_ADDRS];
	size_t n;
};

static void add(struct addrs *a, uint64_t v)
{
	if (a->n < MAX_ADDRS)
		a->v[a->n++] = v;
}

/* Little-endian ELF32/ELF64 only; anything odd just gives fewer addresses. */
static void pick_addrs(const uint8_t *d, size_t size, struct addrs *a)
{
	if (size < EI_NIDENT || memcmp(d, ELFMAG, SELFMAG) || d[EI_DATA] != ELFDATA2LSB)
		return;
	bool is64 = d[EI_CLASS] == ELFCLASS64;
	size_t ehsize = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if (size < ehsize)
		return;
	uint64_t entry = is64 ? rd(d + 24, 8) : rd(d + 24, 4);
	uint64_t shoff = is64 ? rd(d + 40, 8) : rd(d + 32, 4);
	unsigned shentsize = (unsigned)(is64 ? rd(d + 58, 2) : rd(d + 46, 2));
	unsigned shnum = (unsigned)(is64 ? rd(d + 60, 2) : rd(d + 48, 2));
	add(a, entry);
	size_t want = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	if (shentsize < want || shoff >= size || shnum > (size - shoff) / shentsize)
		return;
	int syms = 0;
	for (unsigned i = 0; i < shnum; i++) {
		const uint8_t *sh = d + shoff + (size_t)i * shentsize;
		uint32_t type = (uint32_t)rd(sh + 4, 4);
		uint64_t flags = is64 ? rd(sh + 8, 8) : rd(sh + 8, 4);
		uint64_t addr = is64 ? rd(sh + 16, 8) : rd(sh + 12, 4);
		uint64_t off = is64 ? rd(sh + 24, 8) : rd(sh + 16, 4);
		uint64_t ssize = is64 ? rd(sh + 32, 8) : rd(sh + 20, 4);
		uint64_t entsize = is64 ? rd(sh + 56, 8) : rd(sh + 36, 4);
		if (type == SHT_PROGBITS && (flags & SHF_EXECINSTR) && ssize) {
			/* start, a few points inside, and the last byte */
			for (unsigned k = 0; k < 6; k++)
				add(a, addr + ssize * k / 6 + (k ? 3 : 0));
			add(a, addr + ssize - 1);
		}
		if ((type == SHT_SYMTAB || type == SHT_DYNSYM) && entsize >= (is64 ? 24u : 16u) &&
		    off < size && ssize <= size - off) {
			for (uint64_t k = 1; k < ssize / entsize && syms < 12; k++) {
				const uint8_t *s = d + off + k * entsize;
				uint8_t info = is64 ? s[4] : s[12];
				uint64_t value = is64 ? rd(s + 8, 8) : rd(s + 4, 4);
				uint64_t sz = is64 ? rd(s + 16, 8) : rd(s + 8, 4);
				if ((info & 0xf) != STT_FUNC || !value)
					continue;
				add(a, value + (sz > 1 ? sz / 2 : 0));
				syms++;
			}
		}
	}
}

static void use_frames(uint64_t addr, int ret, const struct sp_frame *f, int n)
{
	uint64_t acc = 0;
	for (int i = 0; i < n; i++) {
		if (sp_fuzz_verbose)
			fprintf(stderr, "%#" PRIx64 "%s %s%s (%s:%u) [%s+%#" PRIx64 "] kind %d\n",
				addr, ret ? " ret" : "", i ? "  " : "", f[i].func,
				f[i].file ? f[i].file : "?", f[i].line,
				f[i].module ? f[i].module : "?", f[i].offset, (int)f[i].kind);
		if (!f[i].func)
			abort(); /* "never NULL" */
		acc += strlen(f[i].func) + f[i].line + f[i].column + f[i].offset + f[i].kind;
		if (f[i].file)
			acc += strlen(f[i].file);
		if (f[i].module)
			acc += strlen(f[i].module);
	}
	sp_fuzz_sink += acc;
}

static void lookup(struct sp_symbolizer *s, uint64_t addr)
{
	const struct sp_frame *f;
	for (int ret = 0; ret < 2; ret++) {
		int n = sp_symbolizer_lookup(s, addr, ret, &f);
		if (n == 0)
			abort(); /* "always >= 1" */
		if (n > 0)
			use_frames(addr, ret, f, n);
	}
	uint64_t start = 0;
	const char *name = sp_symbolizer_symbol(s, addr, &start);
	if (name)
		sp_fuzz_sink += strlen(name) + start;
	for (int ret = 0; ret < 2 && sp_fuzz_outermost; ret++) {
		int outer = sp_symbolizer_is_outermost(s, addr, ret);
		if (outer != 0 && outer != 1)
			abort(); /* "1 yes, 0 no or unknown" */
		sp_fuzz_sink += (uint64_t)outer;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!sp_fuzz_tmp)
		sp_fuzz_init();
	sp_fuzz_write(data, size);

	unsigned pad = size >= EI_NIDENT ? data[EI_NIDENT - 1] : 0;
	const uint8_t *build_id = (pad & 8) && size >= EI_NIDENT + 20 ? data + EI_NIDENT : NULL;
	size_t build_id_len = build_id ? 20 : 0;
	struct sp_symbolizer *s = sp_symbolizer_new(pad & 7u);
	if (!s)
		abort();
	if (sp_symbolizer_add_module(s, sp_fuzz_path, MOD_START, MOD_END, 0, build_id,
				     build_id_len) ||
	    sp_symbolizer_add_module(s, sp_fuzz_path, 0, MOD_START, 0, build_id, build_id_len))
		abort();
	if (size &&
	    sp_symbolizer_add_image(s, "[vdso]", data, size, IMAGE_START, IMAGE_END, IMAGE_START))
		abort();

	struct addrs a = {.n = 0};
	pick_addrs(data, size, &a);
	/* a JIT symbol over the image's entry: JIT symbols win over modules */
	if (a.n && a.v[0] < IMAGE_END - IMAGE_START &&
	    sp_symbolizer_add_jit(s, IMAGE_START + a.v[0], 16, "jit_entry"))
		abort();
	for (size_t i = 0; i < a.n; i++) {
		lookup(s, a.v[i]);
		if (a.v[i] < IMAGE_END - IMAGE_START)
			lookup(s, a.v[i] + IMAGE_START);
	}
	/* in the low mapping, and in the gap before the image */
	lookup(s, 0x10);
	lookup(s, MOD_END + 0x10);
	sp_fuzz_sink += strlen(sp_symbolizer_warnings(s));
	if (sp_fuzz_verbose)
		fprintf(stderr, "warnings: %s\n", sp_symbolizer_warnings(s));
	sp_symbolizer_free(s);
	sp_fuzz_remove();
	return 0;
}
