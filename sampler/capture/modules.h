/*
 * modules.h - the loaded modules, as a snapshot the signal handler can read.
 *
 * libunwind 1.6.2 finds unwind tables through dl_iterate_phdr(), which takes
 * glibc's loader lock: from a signal handler that deadlocks against a thread
 * inside dlopen/dlclose/malloc. This library therefore exports its own
 * dl_iterate_phdr(). Outside the handler it forwards to glibc's; inside the
 * handler (sp_in_unwind) it walks a snapshot of the modules instead:
 * program headers and names copied into our own mmap'ed memory, published
 * through one atomic pointer and rebuilt (in normal context) after every
 * dlopen/dlclose and whenever the writer sees glibc's load counters move.
 * An old snapshot is unmapped only once no handler is inside one.
 */
#ifndef SP_SAMPLER_MODULES_H
#define SP_SAMPLER_MODULES_H

#include "sampler/base/sigsafe.h"
#include "sampler/capture/cfi.h"

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_mod {
	struct dl_phdr_info info; /* dlpi_phdr and dlpi_name point into the snapshot */
	const void *phdr;	  /* the loader's dlpi_phdr: which loaded object this is */
	uintptr_t start, end;	  /* lowest and highest mapped address */
	bool vdso;
	bool main;
	struct sp_cfi_table cfi; /* its .eh_frame_hdr, for the handler's own unwinder */
};

struct sp_xrange {
	uintptr_t lo, hi; /* an executable PT_LOAD segment */
	size_t mod;	  /* index of its module in sp_modsnap.mods */
};

struct sp_modsnap {
	size_t map_len; /* bytes mapped for this snapshot */
	unsigned long long adds, subs;
	/* moves whenever a module went away since the previous snapshot: what
	 * was learnt about an address under an older epoch may be stale */
	uint32_t epoch;
	size_t n_mods;
	struct sp_mod *mods;
	size_t n_x;
	struct sp_xrange *x; /* sorted by lo */
};

/* Builds the first snapshot. 0 or -errno. */
int sp_modules_init(void);

/* Rebuilds the snapshot now (after dlopen/dlclose). Bumps the generation. */
void sp_modules_refresh(void);

/* Rebuilds only if glibc's adds/subs counters moved (modules loaded behind our back). */
void sp_modules_refresh_if_changed(void);

/*
 * The handler met code in no module of the snapshot: pokes the writer
 * (writer.h), which looks at glibc's counters at once and rebuilds the
 * snapshot if a module was loaded since. Once per snapshot generation: JIT
 * code, which no module holds, pokes it once and then waits for a rebuild
 * like everything else (a module loaded meanwhile is found by the writer's
 * next pass). Signal-safe, wait-free.
 */
SP_SIGSAFE void sp_modules_missed(void);

/*
 * Fork hooks: 0 before fork (lock), 1 in the parent (unlock), 2 in the
 * child (re-init). In a child forked while a thread was inside dlopen or
 * dlclose, glibc's dl_iterate_phdr could wait forever on a lock that
 * thread held: the rebuilds above do nothing there.
 */
void sp_modules_atfork(int phase);

/* false in such a child: no call of stackprof's may reach glibc's dl_iterate_phdr. */
bool sp_modules_loader_usable(void);

/*
 * Holds the snapshot still (no rebuild publishes meanwhile), and keeps a
 * fork out (fork.c takes the same lock first). For sp_unwind_warm, which
 * reads it outside the handler. Not signal-safe.
 */
void sp_modules_lock(void);
void sp_modules_unlock(void);

/* Generation: bumped by every rebuild, read by the writer to diff the module list. */
uint64_t sp_modules_generation(void);

/*
 * Calls fn for each module of the current snapshot under the module lock, so
 * the snapshot stays alive meanwhile. Not for the handler.
 */
void sp_modules_foreach(void (*fn)(const struct sp_mod *m, void *arg), void *arg);

/* Reads the GNU build-id note of a loaded module. Returns its length (0 if none). */
size_t sp_module_build_id(const struct sp_mod *m, uint8_t *out, size_t cap);

/*
 * Whether addr lies in an executable segment of a known module. For the
 * handler's stack scan. Signal-safe; call only between
 * sp_modules_enter()/sp_modules_leave().
 */
SP_SIGSAFE bool sp_modules_is_text(uintptr_t addr);

/*
 * The current snapshot, for the handler to hold through one sample, and the
 * module whose executable segment holds addr in it (NULL if none).
 * Signal-safe; only between sp_modules_enter()/sp_modules_leave().
 */
SP_SIGSAFE const struct sp_modsnap *sp_modules_current(void);
SP_SIGSAFE const struct sp_mod *sp_modsnap_text(const struct sp_modsnap *s, uintptr_t addr);
/*
 * The same, looking first in *hint (an executable segment of s, or NULL),
 * which it then sets to addr's segment when addr has one. A stack's
 * neighbouring frames are mostly in one module (libtorch_cpu, libpython):
 * one comparison instead of a binary search over every segment, whose
 * lines a program running between samples has evicted. Signal-safe.
 */
SP_SIGSAFE const struct sp_mod *sp_modsnap_text_near(const struct sp_modsnap *s, uintptr_t addr,
						     const struct sp_xrange **hint);

/*
 * Brackets the handler's use of the snapshot and of the modules' unwind
 * tables, marking the calling thread's slot. Returns false (and enters
 * nothing) while a dlclose() is under way: the module being closed may be
 * unmapped at any moment, so the sample is skipped. Signal-safe.
 */
SP_SIGSAFE bool sp_modules_enter(void);
SP_SIGSAFE void sp_modules_leave(void);

/*
 * Waits until no live thread's handler is between sp_modules_enter and
 * sp_modules_leave, for at most a second (a handler takes microseconds;
 * the mark is per thread, so a thread that died inside its handler leaves
 * nothing to wait for). true if none is, false after the second.
 */
bool sp_modules_quiesce(void);

/* Glibc's dl_iterate_phdr, for everyone but the handler. */
int sp_real_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

#endif
