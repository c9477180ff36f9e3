/*
 * writer.c - the writer thread (writer.h).
 */
#include "sampler/writer/writer.h"
#include "sampler/core/doorbell.h"
#include "sampler/core/ranges.h"
#include "format/buf.h"
#include "format/manifest.h"
#include "sampler/base/fds.h"
#include "sampler/capture/handler.h"
#include "sampler/base/hot.h"
#include "sampler/capture/modules.h"
#include "format/profile.h"
#include "sampler/capture/pystack.h"
#include "sampler/capture/pystate.h"
#include "sampler/base/saferead.h"
#include "sampler/core/sampler.h"
#include "sampler/capture/sigstack.h"
#include "sampler/base/sys.h"
#include "sampler/core/ownthreads.h"
#include "sampler/core/source.h"
#include "sampler/core/upcalls.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <linux/futex.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The writer's shortest and longest pauses between passes (sp_drain_ms). */
#define SP_DRAIN_MS 20
#define SP_PASS_MS  200

struct sp_stack_slot {
	uint64_t hash;
	uint32_t id;	/* 0: empty */
	uint32_t depth; /* with the flags in the top byte */
	size_t off;	/* into the pcs arena */
};

/* A thread slot's latest stack: what its next new stack is written against. */
struct sp_last {
	uint32_t id, n;
	size_t off; /* into the pcs arena */
};

/* Samples a SAMPLES record holds at most: one per slot and drain, or more. */
#define SP_BATCH 512

struct sp_recmod {
	uint32_t id;
	uintptr_t start, bias;
	char *name;
	bool live, seen;
};

struct sp_wstate {
	struct sp_prof_writer *w;
	/* the profile, on a descriptor kept out of the program's way (fds.h) */
	struct sp_fd out;
	char out_abs[4096]; /* its absolute path, to open it again */
	dev_t out_dev;	    /* what it is, checked before every flush */
	ino_t out_ino;
	/* set when our descriptor was given up (the program took every
	 * number) or taken (closed by raw system call): bytes wait in pending
	 * until the file is opened again by its path */
	bool out_lost;
	bool out_gone; /* the path no longer names our file: nothing more is written */
	struct sp_buf pending;
	/* stack dedup: open addressing over an arena of PCs */
	struct sp_stack_slot *slots;
	size_t n_slots, n_used;
	uint64_t *arena;
	size_t arena_len, arena_cap, arena_ready; /* ready: words populated */
	uint32_t next_stack;
	struct sp_last *last; /* by slot, like name_tid to name_signals (sp_wslots_map) */
	/* the slot being drained: its samples, for one SAMPLES record */
	struct sp_prof_sample batch[SP_BATCH];
	size_t n_batch;
	/* modules recorded so far */
	struct sp_recmod *mods;
	size_t n_mods, cap_mods;
	uint64_t mod_gen;
	bool mods_listed; /* the modules there at start are recorded: later ones were dlopen'ed */
	size_t mod_next;  /* where the next module of a walk is likely in mods */
	uint64_t py_gen;  /* the Python status last recorded */
	/* thread names emitted, by slot */
	pid_t *name_tid;
	char (*name)[64];
	/* when each slot's comm was last read, and its signals then */
	uint64_t *name_read_ns;
	uint64_t *name_signals;
	void *wslots; /* the one mapping that holds these arrays */
	size_t wslots_len;
	/* ranges emitted */
	uint32_t ranges_emitted;
	/* JIT map read offset */
	off_t jit_off;
	uint64_t jit_read_ns;	/* when the JIT map was last looked at */
	uint64_t stack_read_ns; /* when the handlers' stack use was last read */
	size_t stack_max;	/* the most it was */
	char jit_path[64];
	/* counters of freed slots */
	struct sp_prof_stats retired;
	uint64_t samples, weight_ns;
	uint64_t lost; /* samples whose stack has no id: counted as drops */
	uint64_t last_flush_ns;
	/* the writer's own CPU time (stats.writer_ns): writer threads that
	 * ended (a park ends one), and the final flush on another thread,
	 * from final_c0; a dlclose's share is sp_g.aside_ns */
	uint64_t cpu_done_ns, final_c0;
	bool final_aside;
	unsigned skipped_flushes; /* periodic flushes in a row with nothing to write */
	bool stop, exec_flush;	  /* stop: the writer thread was told to end (parked) */
	pid_t tid;		  /* the writer thread's */
	bool flush_requested;
	uint64_t flush_seq, flush_done;
	int error;
	int end_signal;	  /* the final stats say the process then ended by this signal */
	bool end_outside; /* ... which came from outside (sp_writer_end_here) */
};

static struct sp_wstate *sp_ws;

/*
 * What the writer keeps per thread slot, for every slot the table may
 * have: reserved, not committed, like the table (sampler.h), so that it
 * costs memory for the slots threads used only. 100 bytes a slot.
 */
static int sp_wslots_map(struct sp_wstate *s)
{
	size_t n = sp_g.cfg.max_threads;
	size_t len = n * (sizeof(*s->last) + sizeof(*s->name_tid) + sizeof(*s->name) +
			  sizeof(*s->name_read_ns) + sizeof(*s->name_signals));
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	s->wslots = p;
	s->wslots_len = len;
	/* the 8-byte fields first: each array stays aligned */
	s->name_read_ns = p;
	s->name_signals = s->name_read_ns + n;
	s->last = (struct sp_last *)(s->name_signals + n);
	s->name = (char(*)[64])(s->last + n);
	s->name_tid = (pid_t *)(s->name + n);
	return 0;
}

static void sp_manifest_error(int err, const char *path);
static void sp_wstate_release(struct sp_wstate *s, bool free_self);

static bool sp_stacks_grow(struct sp_wstate *s)
{
	size_t n = s->n_slots ? s->n_slots * 2 : 4096;
	struct sp_stack_slot *slots = calloc(n, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < s->n_slots; i++) {
		struct sp_stack_slot *o = &s->slots[i];
		if (!o->id)
			continue;
		size_t j = o->hash & (n - 1);
		while (slots[j].id)
			j = (j + 1) & (n - 1);
		slots[j] = *o;
	}
	free(s->slots);
	s->slots = slots;
	s->n_slots = n;
	return true;
}

/*
 * Finds this stack (h: its hash, from the handler) or adds it, writing its
 * record: against base, the same thread's latest stack, when their
 * outermost frames agree (a STACK_DIFF: torch's samples share 60-90% of
 * their frames with the one before), else whole. NULL on failure; the
 * slot is valid until the next stack is added.
 */
/*
 * The arena's pages from arena_ready up to past need, made present in one
 * system call for 64 KiB: page by page, the faults of copying new stacks
 * in were a quarter of the writer's draining on torch (a fault costs a few
 * microseconds in a VM). Harmless where MADV_POPULATE_WRITE is unknown
 * (before Linux 5.14): the pages fault in as before.
 */
#define SP_ARENA_AHEAD (65536 / sizeof(uint64_t))

static void sp_arena_populate(struct sp_wstate *s, size_t need)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE) / sizeof(uint64_t);
	size_t end = need + SP_ARENA_AHEAD < s->arena_cap ? need + SP_ARENA_AHEAD : s->arena_cap;
	uintptr_t lo = ((uintptr_t)(s->arena + s->arena_ready) + page * 8 - 1) & ~(page * 8 - 1);
	uintptr_t hi = (uintptr_t)(s->arena + end) & ~(page * 8 - 1);
	if (hi > lo)
		sp_populate((void *)lo, hi - lo);
	s->arena_ready = end;
}

static const struct sp_stack_slot *sp_stack_id(struct sp_wstate *s, uint64_t h, const uint64_t *pcs,
					       size_t n, uint32_t flags, const struct sp_last *base)
{
	if (s->n_used * 2 >= s->n_slots && !sp_stacks_grow(s))
		return NULL;
	size_t j = h & (s->n_slots - 1);
	uint32_t key = (uint32_t)n | (flags << 24);
	for (; s->slots[j].id; j = (j + 1) & (s->n_slots - 1)) {
		struct sp_stack_slot *e = &s->slots[j];
		if (e->hash == h && e->depth == key &&
		    !memcmp(s->arena + e->off, pcs, n * sizeof(uint64_t)))
			return e;
	}
	if (s->arena_len + n > s->arena_cap) {
		size_t cap = s->arena_cap ? s->arena_cap * 2 : 65536;
		while (cap < s->arena_len + n)
			cap *= 2;
		uint64_t *a = realloc(s->arena, cap * sizeof(uint64_t));
		if (!a)
			return NULL;
		if (a != s->arena)
			s->arena_ready = s->arena_len; /* moved: what is past it is new */
		s->arena = a;
		s->arena_cap = cap;
	}
	if (s->arena_len + n > s->arena_ready)
		sp_arena_populate(s, s->arena_len + n);
	memcpy(s->arena + s->arena_len, pcs, n * sizeof(uint64_t));
	struct sp_stack_slot *e = &s->slots[j];
	e->hash = h;
	e->depth = key;
	e->off = s->arena_len;
	e->id = ++s->next_stack;
	s->arena_len += n;
	s->n_used++;
	struct sp_prof_stack rec = {
	    .id = e->id, .flags = flags, .depth = (uint32_t)n, .pcs = (uint64_t *)pcs};
	size_t keep = 0;
	if (base && base->id) {
		const uint64_t *b = s->arena + base->off;
		while (keep < n && keep < base->n && pcs[n - 1 - keep] == b[base->n - 1 - keep])
			keep++;
	}
	if (keep >= 2)
		sp_prof_writer_stack_diff(s->w, &rec, base->id, (uint32_t)keep);
	else
		sp_prof_writer_stack(s->w, &rec);
	return e;
}

/* A stack its thread sent whole before (SP_RING_KNOWN), NULL if unknown. */
static const struct sp_stack_slot *sp_stack_find(struct sp_wstate *s, uint64_t h, size_t n,
						 uint32_t flags)
{
	uint32_t key = (uint32_t)n | (flags << 24);
	for (size_t j = h & (s->n_slots - 1); s->n_slots && s->slots[j].id;
	     j = (j + 1) & (s->n_slots - 1))
		if (s->slots[j].hash == h && s->slots[j].depth == key)
			return &s->slots[j];
	return NULL;
}

/*
 * The bytes of the vDSO a symbolizer needs: its loaded segment, and its
 * section headers after it, which name .dynsym (__vdso_clock_gettime);
 * the segment alone leaves every vDSO frame unnamed. The kernel maps the
 * whole image, in whole pages.
 */
static size_t sp_vdso_len(const struct sp_mod *m)
{
	size_t len = m->end - m->start;
	size_t mapped = (len + 4095) & ~(size_t)4095;
	const ElfW(Ehdr) *e = (const ElfW(Ehdr) *)m->start;
	if (len < sizeof(*e) || memcmp(e->e_ident, ELFMAG, SELFMAG) || !e->e_shoff ||
	    e->e_shentsize != sizeof(ElfW(Shdr)))
		return len;
	size_t shend = e->e_shoff + (size_t)e->e_shnum * e->e_shentsize;
	return shend > len && shend <= mapped ? shend : len;
}

/* ---- modules ----------------------------------------------------------- */

static void sp_module_record(const struct sp_mod *m, void *arg)
{
	struct sp_wstate *s = arg;
	const char *name = m->info.dlpi_name;
	/* the snapshot lists modules in the order they were recorded: look
	 * where the last one was found first (325 modules under torch, a
	 * rebuild for each batch of them during import) */
	for (size_t k = 0; k < s->n_mods; k++) {
		size_t i = (s->mod_next + k) % s->n_mods;
		struct sp_recmod *r = &s->mods[i];
		if (r->live && r->start == m->start && r->bias == m->info.dlpi_addr &&
		    !strcmp(r->name, name)) {
			r->seen = true;
			s->mod_next = i + 1;
			return;
		}
	}
	if (s->n_mods == s->cap_mods) {
		size_t cap = s->cap_mods ? s->cap_mods * 2 : 64;
		struct sp_recmod *a = realloc(s->mods, cap * sizeof(*a));
		if (!a)
			return;
		s->mods = a;
		s->cap_mods = cap;
	}
	struct sp_recmod *r = &s->mods[s->n_mods];
	r->name = strdup(name);
	if (!r->name)
		return;
	r->id = (uint32_t)++s->n_mods;
	s->mod_next = s->n_mods;
	r->start = m->start;
	r->bias = m->info.dlpi_addr;
	r->live = r->seen = true;

	struct sp_prof_module rec;
	memset(&rec, 0, sizeof(rec));
	char exe[PATH_MAX];
	rec.id = r->id;
	rec.start = m->start;
	rec.end = m->end;
	rec.bias = m->info.dlpi_addr;
	rec.time_ns = sp_now_ns() - sp_g.start_mono_ns;
	rec.path = (char *)name;
	if (m->main) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		rec.path = exe;
		rec.flags |= SP_MOD_MAIN;
	}
	if (m->vdso) {
		rec.flags |= SP_MOD_VDSO;
		rec.path = "[vdso]";
		rec.image = (uint8_t *)m->start;
		rec.image_len = sp_vdso_len(m);
	}
	if (s->mods_listed)
		rec.flags |= SP_MOD_DLOPEN;
	rec.build_id_len = (uint32_t)sp_module_build_id(m, rec.build_id, sizeof(rec.build_id));
	sp_prof_writer_module(s->w, &rec);
}

/* Records what the sampler made of Python, when that changed. */
static void sp_python_sync(struct sp_wstate *s)
{
	uint64_t gen = atomic_load(&sp_py.status_gen);
	if (gen == s->py_gen)
		return;
	s->py_gen = gen;
	struct sp_prof_pyinfo i = {
	    .version = sp_py.version,
	    .flags = atomic_load(&sp_py.active) ? SP_PYINFO_ACTIVE : 0,
	    .module = sp_py.module,
	    .status = sp_py.status,
	    .time_ns = sp_now_ns() - sp_g.start_mono_ns,
	};
	sp_prof_writer_pyinfo(s->w, &i);
}

static void sp_modules_sync(struct sp_wstate *s)
{
	sp_modules_refresh_if_changed();
	uint64_t gen = sp_modules_generation();
	if (gen == s->mod_gen)
		return;
	/* a program that embeds Python may load it late */
	if (s->mod_gen)
		sp_upcall_python_refresh();
	s->mod_gen = gen;
	for (size_t i = 0; i < s->n_mods; i++)
		s->mods[i].seen = false;
	sp_modules_foreach(sp_module_record, s);
	s->mods_listed = true;
	for (size_t i = 0; i < s->n_mods; i++) {
		struct sp_recmod *r = &s->mods[i];
		if (r->live && !r->seen) {
			r->live = false;
			sp_prof_writer_unload(s->w, r->id, sp_now_ns() - sp_g.start_mono_ns);
		}
	}
}

/* ---- threads, ranges, JIT map ------------------------------------------ */

/* Names slot's thread: the name Python's threading gave it, else the one
 * it had as it exited (known), else its comm now. */
static void sp_thread_name(struct sp_wstate *s, uint32_t slot, const struct sp_thread *t,
			   const char *known)
{
	char name[sizeof(s->name[0])] = "";
	if (t->py_name[0]) {
		snprintf(name, sizeof(name), "%s", t->py_name);
	} else if (known && *known) {
		snprintf(name, sizeof(name), "%s", known);
	} else {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", t->tid);
		sp_read_small(path, name, 16);
		name[strcspn(name, "\n")] = '\0';
	}
	if (s->name_tid[slot] == t->tid && !strcmp(s->name[slot], name))
		return;
	s->name_tid[slot] = t->tid;
	memcpy(s->name[slot], name, sizeof(name));
	struct sp_prof_thread rec = {
	    .tid = t->tid, .time_ns = sp_now_ns() - sp_g.start_mono_ns, .name = name};
	sp_prof_writer_thread(s->w, &rec);
}

/* How a pass names the live threads: not at all (a drain), those due (a
 * flush), or all of them (the last flush, or the one before exec). */
enum sp_names { SP_NAMES_NONE, SP_NAMES_DUE, SP_NAMES_ALL };

/*
 * Whether a flush reads a live thread's comm again. Reading it costs 100 to
 * 300 us a flush in this VM (cold kernel paths): at every flush for every
 * thread it was a tenth of the writer's CPU on a one-thread Python program
 * at 1 kHz. A renamed thread is seen within a second and at the last flush,
 * which records every name; a thread that took no sample since its last
 * read is not read, and keeps the name it had (the reader keeps the last
 * THREAD record of a tid anyway).
 */
static bool sp_name_due(struct sp_wstate *s, uint32_t slot, const struct sp_thread *t,
			enum sp_names mode)
{
	if (mode == SP_NAMES_NONE)
		return false;
	uint64_t now = sp_now_ns(), sig = atomic_load(&t->signals);
	if (mode == SP_NAMES_DUE && t->py_name[0] == '\0' && s->name_tid[slot] == t->tid &&
	    (sig == s->name_signals[slot] || now - s->name_read_ns[slot] < 1000000000u))
		return false;
	s->name_read_ns[slot] = now;
	s->name_signals[slot] = sig;
	return true;
}

static void sp_ranges_sync(struct sp_wstate *s)
{
	struct sp_prof_range r[64];
	for (;;) {
		uint32_t n = sp_ranges_snapshot(s->ranges_emitted, r, 64);
		if (!n)
			return;
		for (uint32_t i = 0; i < n; i++) {
			sp_prof_writer_range(s->w, &r[i]);
			s->ranges_emitted++;
		}
	}
}

static void sp_marks_sync(struct sp_wstate *s)
{
	uint32_t kind[64];
	uint64_t time_ns[64];
	uint32_t n;
	while ((n = sp_marks_take(kind, time_ns, 64))) {
		for (uint32_t i = 0; i < n; i++) {
			struct sp_prof_mark m = {.kind = kind[i], .time_ns = time_ns[i]};
			sp_prof_writer_mark(s->w, &m);
		}
	}
}

/* Copies new lines of /tmp/perf-<pid>.map (JIT code, e.g. oneDNN with DNNL_JIT_PROFILE=2). */
static void sp_jit_sync(struct sp_wstate *s, bool now)
{
	/* once a second, and at the last flush (and the one before exec): a
	 * JIT record is read after the run, so only a killed program's last
	 * second can miss names. One system call when nothing was added: the
	 * open, the move of its number and the read are 5 */
	uint64_t t = sp_now_ns();
	if (!now && t - s->jit_read_ns < 1000000000u)
		return;
	s->jit_read_ns = t;
	struct stat st;
	if (lstat(s->jit_path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= s->jit_off)
		return;
	struct sp_fd map = {0};
	int fd = sp_fd_open(&map, s->jit_path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return;
	char buf[65536];
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, s->jit_off);
		if (n <= 0)
			break;
		buf[n] = '\0';
		char *line = buf, *nl;
		size_t used = 0;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			char *end;
			unsigned long long start = strtoull(line, &end, 16);
			unsigned long long size = strtoull(end, &end, 16);
			while (*end == ' ')
				end++;
			if (size && *end) {
				struct sp_prof_jit j = {.start = start, .size = size, .name = end};
				sp_prof_writer_jit(s->w, &j);
			}
			used += (size_t)(nl - line) + 1;
			line = nl + 1;
		}
		if (!used)
			break; /* a partial line: wait for its end */
		s->jit_off += (off_t)used;
	}
	sp_fd_close(&map);
}

/* ---- draining ------------------------------------------------------------ */

/* Writes the slot's samples taken so far as one SAMPLES record. */
static void sp_batch_flush(struct sp_wstate *s, pid_t tid)
{
	if (s->n_batch)
		sp_prof_writer_samples(s->w, tid, sp_g.period_ns, s->batch, s->n_batch);
	s->n_batch = 0;
}

static void sp_drain_slot(struct sp_wstate *s, uint32_t i, struct sp_thread *t)
{
	const uint64_t *e;
	size_t words;
	uint32_t flags;
	bool named = s->name_tid[i] == t->tid;
	while ((e = sp_ring_peek(&t->ring, &words, &flags))) {
		if (flags & SP_RING_PYCODE) {
			/* a code object this thread met first: named once */
			struct sp_prof_pycode c;
			if (sp_pystack_code_decode(e, words, &c) == 0)
				sp_prof_writer_pycode(s->w, &c);
			sp_pystack_code_release(&c);
			sp_ring_pop(&t->ring);
			continue;
		}
		if (!named) {
			sp_thread_name(s, i, t, NULL);
			named = true;
		}
		const struct sp_stack_slot *st;
		uint32_t kind = SP_RING_KIND(flags);
		if (flags & SP_RING_KNOWN)
			st = sp_stack_find(s, e[SP_ENTRY_HASH], e[SP_ENTRY_DEPTH],
					   flags & SP_RING_STACK_MASK);
		else
			st =
			    sp_stack_id(s, e[SP_ENTRY_HASH], e + SP_ENTRY_PCS, words - SP_ENTRY_PCS,
					flags & SP_RING_STACK_MASK, &s->last[i]);
		/* a range pushed since this pass synced them: its record first */
		if (e[SP_ENTRY_RANGE] > s->ranges_emitted)
			sp_ranges_sync(s);
		if (st) {
			s->last[i] = (struct sp_last){st->id, st->depth & 0xffffffu, st->off};
			if (s->n_batch == SP_BATCH)
				sp_batch_flush(s, t->tid);
			s->batch[s->n_batch++] = (struct sp_prof_sample){
			    .stack = st->id,
			    .range = (uint32_t)e[SP_ENTRY_RANGE],
			    .time_ns = e[SP_ENTRY_TIME],
			    .weight_ns = e[SP_ENTRY_WEIGHT],
			    .event = kind,
			    .payload = e[SP_ENTRY_PAYLOAD],
			};
			/* the stats' samples and CPU time are the CPU timer's */
			if (kind == SP_EVENT_CPU) {
				s->samples++;
				s->weight_ns += e[SP_ENTRY_WEIGHT];
			}
		} else {
			/* no memory for the stack, or a hash of one that had none: lost,
			 * counted, and the thread sends the stack whole next time */
			s->lost++;
			uint64_t h = e[SP_ENTRY_HASH];
			if (t->known)
				__atomic_compare_exchange_n(&t->known[h % SP_KNOWN_SLOTS], &h, 0,
							    false, __ATOMIC_RELAXED,
							    __ATOMIC_RELAXED);
		}
		sp_ring_pop(&t->ring);
	}
	sp_batch_flush(s, t->tid);
}

/* Adds t's counters to st; its handler's stack use too if stack (a
 * mincore() each: once a second, at the last stats and at a thread's end). */
static void sp_add_counters(struct sp_prof_stats *st, struct sp_thread *t, bool stack)
{
	st->drops += atomic_load(&t->drops);
	st->unwind_errors += atomic_load(&t->unwind_errors);
	st->truncated += atomic_load(&t->truncated);
	st->skipped += atomic_load(&t->skipped);
	st->signals += atomic_load(&t->signals);
	st->overruns += atomic_load(&t->overruns);
	st->handler_ns += atomic_load(&t->handler_ns);
	st->throttled += atomic_load(&t->throttled);
	st->syscalls_cut += atomic_load(&t->syscalls_cut);
	st->unwind_fast += atomic_load(&t->unw_fast);
	st->unwind_slow += atomic_load(&t->unw_slow);
	st->unwind_differ += atomic_load(&t->unw_differ);
	st->py_unreadable += atomic_load(&t->py_unreadable);
	size_t used = stack ? sp_sigstack_used(t) : 0;
	if (used > st->handler_stack)
		st->handler_stack = used;
}

static void sp_drain_all(struct sp_wstate *s, enum sp_names names)
{
	/* every pass: the handler unwinds through a dlopen'ed module, and its
	 * samples are named, from the pass after the load (the first sample in
	 * it pokes the writer: modules.h) */
	sp_modules_sync(s);
	sp_python_sync(s);
	sp_ranges_sync(s);
	sp_marks_sync(s);
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		int st = atomic_load(&t->state);
		if (st == SP_SLOT_LIVE) {
			sp_drain_slot(s, i, t);
			/* the handler's next writes go to memory already there */
			sp_ring_keep_ahead(&t->ring);
			if (sp_name_due(s, i, t, names))
				sp_thread_name(s, i, t, NULL);
		} else if (st == SP_SLOT_DEAD) {
			sp_drain_slot(s, i, t);
			sp_thread_name(s, i, t, t->name_at_exit);
			sp_add_counters(&s->retired, t, true);
			sp_sigstack_reset(t); /* the slot's next thread is measured afresh */
			sp_thread_slot_free(t);
		}
	}
}

static void sp_write_stats(struct sp_wstate *s, uint32_t flags)
{
	struct sp_prof_stats st = s->retired;
	uint64_t now = sp_now_ns();
	bool stack = flags || now - s->stack_read_ns >= 1000000000u;
	if (stack)
		s->stack_read_ns = now;
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (atomic_load(&t->state) == SP_SLOT_LIVE)
			sp_add_counters(&st, t, stack);
	}
	/* the most any reading found: a stack only grows, until its thread ends */
	if (st.handler_stack > s->stack_max)
		s->stack_max = st.handler_stack;
	st.handler_stack = s->stack_max;
	if ((flags & SP_STATS_FINAL) && s->end_signal) {
		flags |= SP_STATS_SIGNAL | (s->end_outside ? SP_STATS_SIGNAL_OUTSIDE : 0);
		st.signal = s->end_signal;
	}
	st.flags = flags;
	st.time_ns = sp_now_ns() - sp_g.start_mono_ns;
	st.samples = s->samples;
	st.weight_ns = s->weight_ns;
	st.drops += s->lost;
	st.timer = (char *)sp_g.cpu->name;
	st.unwind_checked = sp_g.cfg.unwind == SP_UNWIND_CHECK;
	st.timer_fallbacks = atomic_load(&sp_g.timer_fallbacks);
	st.aside = sp_aside_count();
	st.randomized = sp_g.cpu->randomized;
	st.py_faults = sp_safe_faults();
	st.py_bad_tstates = atomic_load(&sp_py.bad_tstates);
	st.writer_ns = s->cpu_done_ns + atomic_load(&sp_g.aside_ns);
	if (s->final_aside)
		st.writer_ns += sp_thread_cpu_ns() - s->final_c0;
	else
		st.writer_ns += sp_thread_cpu_ns(); /* the writer thread's, so far */
	st.setup_ns = atomic_load(&sp_g.setup_ns);
	st.threads_missed = atomic_load(&sp_g.threads_missed);
	if (st.threads_missed)
		st.missed_ns = sp_upcall_missed_ns();
	st.stray_signals = atomic_load(&sp_g.stray_signals);
	st.timer_why = (char *)sp_source_cpu_why();
	/* the figure `stackprof run` measured is perf-sigtrap's (timercost.c) */
	if (sp_g.cpu->timer && !strcmp(sp_g.cpu->timer, "trap"))
		st.timer_irq_ns = sp_g.cfg.timer_irq_ns;
	sp_prof_writer_stats(s->w, &st);
}

/* Bytes the profile may hold back while its descriptor is away. */
#define SP_PENDING_MAX (64u << 20)

/* Writes all of p through our descriptor, holding its number so that a
 * move (the program's dup2 onto it) waits for the write. */
static int sp_out_write(struct sp_wstate *s, const uint8_t *p, size_t n)
{
	int fd = sp_fd_hold(&s->out);
	if (fd < 0)
		return -EBADF;
	int err = 0;
	while (n) {
		ssize_t r = write(fd, p, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		p += r;
		n -= (size_t)r;
	}
	sp_fd_drop(&s->out);
	return err;
}

static bool sp_out_check(struct sp_wstate *s);

/* The format writer's sink. While the descriptor is away, bytes wait. */
static int sp_out_sink(void *ctx, const uint8_t *p, size_t n)
{
	struct sp_wstate *s = ctx;
	if (s->out_gone)
		return -EBADF;
	/* the number's identity before every write, not only at a flush: a
	 * program that closed it by raw system call and put a file of its own
	 * there would get zlib's output between two flushes */
	if (sp_out_check(s)) {
		int err = sp_out_write(s, p, n);
		if (err != -EBADF)
			return err;
		s->out_lost = true; /* given up by a move, or closed under us */
	}
	if (s->pending.len + n > SP_PENDING_MAX)
		return -ENOBUFS;
	sp_buf_put_bytes(&s->pending, p, n);
	return s->pending.oom ? -ENOMEM : 0;
}

/* Opens our file again by its path, if the path still names it, at its end. */
static bool sp_out_reopen(struct sp_wstate *s)
{
	struct stat st;
	int fd = sp_fd_open(&s->out, s->out_abs, O_WRONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return false; /* no number free yet: try again at the next flush */
	if (fstat(fd, &st) < 0 || st.st_dev != s->out_dev || st.st_ino != s->out_ino) {
		sp_fd_close(&s->out);
		s->out_gone = true;
		sp_log("%s is no longer the profile's file; nothing more is written", s->out_abs);
		return false;
	}
	lseek(fd, 0, SEEK_END);
	/* the lock went with the closed descriptor: `stackprof run` must still
	 * see a profile being written */
	flock(fd, LOCK_SH | LOCK_NB);
	return true;
}

/*
 * Before a flush: does our number still name our file? A program that
 * closes descriptors by raw system call (not through libc, which stackprof
 * interposes) may have closed it and opened a file of its own there; one
 * that took every number left stackprof none. Then nothing is written
 * through that number: the file is opened again by its path, and what
 * waited is written first. false while the file can't be written.
 */
static bool sp_out_check(struct sp_wstate *s)
{
	if (s->out_gone)
		return false;
	if (!s->out_lost) {
		struct stat st;
		int fd = sp_fd_hold(&s->out);
		bool same = fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == s->out_dev &&
			    st.st_ino == s->out_ino;
		if (fd >= 0)
			sp_fd_drop(&s->out);
		if (same)
			return true;
		s->out_lost = true;
		/* the number is someone else's now: forget it, never close it */
		sp_fd_abandon(&s->out);
		sp_log("the profile's descriptor no longer names %s (closed behind stackprof's "
		       "back); opening it again",
		       s->out_abs);
	}
	if (!sp_out_reopen(s))
		return false;
	int err = sp_out_write(s, s->pending.data, s->pending.len);
	if (err)
		return false;
	s->out_lost = false;
	sp_buf_reset(&s->pending);
	return true;
}

/* The first write error is said once, and recorded where `stackprof run` reads it. */
static void sp_writer_failed(struct sp_wstate *s, int err)
{
	if (!err || s->error)
		return;
	s->error = err;
	sp_log("writing the profile %s failed: %s; profiling goes on without it", sp_g.path,
	       strerror(-err));
	sp_manifest_error(-err, s->out_abs);
}

/*
 * A periodic flush with nothing new since the last one writes nothing,
 * for up to this many flush intervals: a program that sleeps (a server
 * between requests) paid 3 ms of CPU a second for stats and zlib sync
 * flushes saying the same thing. Its profile's stats and duration then lag
 * by at most 10 intervals (2 s by default) should it be killed.
 */
#define SP_IDLE_FLUSHES 10

/*
 * How long the writer sleeps between passes: 200 ms (a flush interval), or
 * less where that long of the deepest samples could fill half a ring: a
 * 1 MiB ring at 1 kHz holds 252 ms of them, half of it 126; at 10 kHz 13,
 * so 20. It wakes sooner for a flush that falls due (STACKPROF_FLUSH_MS).
 * A wake-up costs the writer 35-47 us of CPU in this VM (a futex, a timer,
 * two context switches) and takes a CPU from the program for as long:
 * every 20 ms, it was a third of the writer's CPU on torch at 100 Hz; every
 * 100 ms, an eighth. What can't wait pokes it instead (sp_writer_poke).
 */
static unsigned sp_drain_ms(void)
{
	uint64_t entry = ((uint64_t)sp_g.cfg.max_depth + 8) * sizeof(uint64_t);
	uint64_t ring = (uint64_t)sp_g.cfg.ring_kb * 1024;
	uint64_t ms = ring * 1000 / (2 * entry * (sp_g.cfg.freq_hz ? sp_g.cfg.freq_hz : 1));
	return ms > SP_PASS_MS ? SP_PASS_MS : ms < SP_DRAIN_MS ? SP_DRAIN_MS : (unsigned)ms;
}

/* A signal the process is about to die of (sp_writer_end_for_signal), and
 * 1 once the writer has ended the profile for it. */
static _Atomic int sp_end_sig;
static _Atomic uint32_t sp_end_done;

bool sp_writer_end_for_signal(int sig, uint64_t wait_ns)
{
	int none = 0;
	atomic_compare_exchange_strong(&sp_end_sig, &none, sig);
	sp_futex_wake();
	uint64_t deadline = sp_now_ns() + wait_ns;
	while (!atomic_load_explicit(&sp_end_done, memory_order_acquire)) {
		uint64_t now = sp_now_ns();
		if (now >= deadline)
			return false;
		struct timespec ts = {.tv_sec = (time_t)((deadline - now) / 1000000000u),
				      .tv_nsec = (long)((deadline - now) % 1000000000u)};
		syscall(SYS_futex, &sp_end_done, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	}
	return true;
}

/* Wakes the writer for a request set under sp_g.lock, and whoever waits on sp_g.wake. */
static void sp_writer_wake(void)
{
	pthread_cond_broadcast(&sp_g.wake);
	sp_futex_wake();
}

static void sp_flush(struct sp_wstate *s, uint32_t flags, bool may_skip)
{
	sp_drain_all(s, flags ? SP_NAMES_ALL : SP_NAMES_DUE);
	sp_jit_sync(s, flags != 0);
	if (may_skip && !flags && sp_prof_writer_records(s->w) == 0 &&
	    s->skipped_flushes < SP_IDLE_FLUSHES - 1) {
		s->skipped_flushes++;
		s->last_flush_ns = sp_now_ns();
		return;
	}
	s->skipped_flushes = 0;
	sp_write_stats(s, flags);
	/* while the file can't be written the flush waits, and the bytes with it */
	sp_writer_failed(s, sp_out_check(s) ? sp_prof_writer_flush(s->w)
			    : s->out_gone   ? -EBADF
					    : 0);
	s->last_flush_ns = sp_now_ns();
}

/*
 * The end of the profile for a signal that ends the process, on the writer
 * thread itself (sp_writer_stop would join it): the last drain, the final
 * stats and the stream's end, then nothing more is written. Called with
 * sp_g.lock held. The process
 * dies as soon as the waiting handler sees sp_end_done; should it live on
 * (its handler for the signal set meanwhile), every writer call finds the
 * writer stopped, and the exit path finishes nothing twice.
 */
static void sp_writer_end_here(struct sp_wstate *s, int sig)
{
	atomic_store(&sp_g.sampling, false);
	s->end_signal = sig;
	s->end_outside = true;
	sp_flush(s, SP_STATS_FINAL, false);
	/* nothing freed or closed: free() could wait on the allocator lock of
	 * the thread the signal interrupted, and fds.c's section on that
	 * thread's close(); the kernel closes the file as the process dies */
	sp_writer_failed(s, sp_prof_writer_end(s->w));
	s->stop = true;
	sp_ws = NULL;
	atomic_store(&sp_g.stopping, true);
	atomic_store(&sp_g.enabled, false);
	pthread_cond_broadcast(&sp_g.wake); /* sp_writer_flush_now() waiters see stop */
	atomic_store_explicit(&sp_end_done, 1, memory_order_release);
	syscall(SYS_futex, &sp_end_done, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static void *sp_writer_main(void *arg)
{
	struct sp_wstate *s = arg;
	s->tid = sp_gettid();
	/* straight to the kernel: prctl() is life/seccomp.c's */
	sp_syscall(SYS_prctl, PR_SET_NAME, "stackprof-wr", 0, 0, 0);
	pthread_mutex_lock(&sp_g.lock);
	uint64_t pause_ns = (uint64_t)sp_drain_ms() * 1000000u;
	uint64_t flush_ns = (uint64_t)sp_g.cfg.flush_ms * 1000000u;
	uint32_t seen = atomic_load_explicit(&sp_wake_word, memory_order_acquire);
	/* the first pass comes at once: what was poked while the writer was
	 * parked (sp_poked still set, so nothing poked again) is served */
	bool first = true;
	while (!s->stop) {
		/* the pause, or less when a flush falls due sooner */
		uint64_t now = sp_now_ns(), wait = pause_ns;
		if (s->last_flush_ns + flush_ns < now + wait)
			wait = s->last_flush_ns + flush_ns > now ? s->last_flush_ns + flush_ns - now
								 : 0;
		/* a request made since seen was read has changed the word: no sleep */
		if (!s->flush_requested && !first && wait) {
			struct timespec ts = {.tv_sec = (time_t)(wait / 1000000000u),
					      .tv_nsec = (long)(wait % 1000000000u)};
			pthread_mutex_unlock(&sp_g.lock);
			syscall(SYS_futex, &sp_wake_word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
			pthread_mutex_lock(&sp_g.lock);
		}
		first = false;
		if (s->stop)
			break; /* parked: the next writer's first pass serves any poke */
		int end_sig = atomic_load(&sp_end_sig);
		if (end_sig) {
			sp_writer_end_here(s, end_sig);
			break;
		}
		/* a poke before these two is served by the pass below; one after
		 * them changes the word again */
		seen = atomic_load_explicit(&sp_wake_word, memory_order_acquire);
		atomic_store_explicit(&sp_poked, 0, memory_order_release);
		atomic_store_explicit(&sp_dead_pending, 0, memory_order_relaxed);
		if (s->flush_requested || sp_now_ns() - s->last_flush_ns >= flush_ns) {
			uint64_t seq = s->flush_seq;
			sp_flush(s, s->exec_flush ? SP_STATS_EXEC : 0, !s->flush_requested);
			s->flush_requested = false;
			s->flush_done = seq;
			pthread_cond_broadcast(&sp_g.wake);
		} else {
			sp_drain_all(s, SP_NAMES_NONE);
		}
		/* no program thread left (life/main.h, through upcalls.h): a thread of
		 * ours finishes */
		if (sp_upcall_orphan_check())
			break;
	}
	s->cpu_done_ns += sp_thread_cpu_ns();
	pthread_mutex_unlock(&sp_g.lock);
	return NULL;
}

/* ---- set-up -------------------------------------------------------------- */

/*
 * Formats a candidate name into path and creates it: O_EXCL (nothing is
 * overwritten unless STACKPROF_OVERWRITE=1), O_NOFOLLOW (no symlink games in
 * shared directories), mode 0600 (a profile holds code addresses and the
 * command line). -1 with errno set on failure.
 */
static int sp_try_open(struct sp_fd *f, char *path, size_t cap, bool overwrite, const char *fmt,
		       ...) __attribute__((format(printf, 5, 6)));

static int sp_try_open(struct sp_fd *f, char *path, size_t cap, bool overwrite, const char *fmt,
		       ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(path, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
	int fd = sp_fd_open(f, path, flags, 0600);
	if (fd == -EEXIST && overwrite) {
		/* replace, don't truncate: a parent that exec'ed a child (timeout,
		 * a shell) may still be writing the old file, which then stays
		 * whole on its unlinked inode instead of being interleaved */
		struct stat st;
		if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && unlink(path) == 0)
			fd = sp_fd_open(f, path, flags, 0600);
	}
	if (fd < 0)
		errno = -fd;
	return fd < 0 ? -1 : fd;
}

/*
 * The first process gets STACKPROF_OUT itself; a forked child or an exec'ed
 * image finds it taken and writes PATH.<pid> (then PATH.<pid>.<n>).
 */
static int sp_open_output(struct sp_fd *f, char *path, size_t cap)
{
	const char *out = sp_g.cfg.out;
	int pid = (int)sp_g.pid;
	int fd;
	struct stat st;
	if (sp_g.cfg.out_refused) {
		snprintf(path, cap, "%s", out);
		errno = EILSEQ;
		return -1;
	}
	if (out[0] && stat(out, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* /dev/null: profile and keep nothing (the cost without the
		 * file). Anything else that is not a file (a FIFO, a device, a
		 * directory) is refused, and no PATH.<pid> is made beside it. */
		snprintf(path, cap, "%s", out);
		if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
			fd = sp_fd_open(f, out, O_WRONLY, 0);
			if (fd < 0)
				errno = -fd;
			return fd < 0 ? -1 : fd;
		}
		errno = ENOTSUP;
		return -1;
	}
	if (out[0])
		fd = sp_try_open(f, path, cap, sp_g.cfg.overwrite, "%s", out);
	else
		fd = sp_try_open(f, path, cap, sp_g.cfg.overwrite, "stackprof.%d.prof", pid);
	if (fd >= 0 || errno != EEXIST)
		return fd;
	if (out[0]) {
		fd = sp_try_open(f, path, cap, false, "%s.%d", out, pid);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	for (int k = 1; k < 1000; k++) {
		if (out[0])
			fd = sp_try_open(f, path, cap, false, "%s.%d.%d", out, pid, k);
		else
			fd = sp_try_open(f, path, cap, false, "stackprof.%d.prof.%d", pid, k);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

static void sp_read_cmdline(char *out, size_t cap)
{
	ssize_t n = sp_read_small("/proc/self/cmdline", out, cap);
	for (ssize_t i = 0; i < n - 1; i++)
		if (out[i] == '\0')
			out[i] = ' ';
}

/* The absolute form of path (relative to the directory now), into out. */
static void sp_abs_path(const char *path, char *out, size_t cap)
{
	char cwd[4096];
	int n;
	if (path[0] != '/' && getcwd(cwd, sizeof(cwd)))
		n = snprintf(out, cap, "%s/%s", cwd, path);
	else
		n = snprintf(out, cap, "%s", path);
	if (n < 0 || (size_t)n >= cap)
		snprintf(out, cap, "%s", path);
}

/*
 * STACKPROF_MANIFEST names a file to which every profiled process appends
 * one line: its profile's absolute path when it starts writing it, and
 * "!error ENAME PATH" (e.g. "!error ENOSPC /tmp/x.prof") if writing it
 * failed. `stackprof run` reads it to name every file and every failure.
 * The path is taken when the writer starts: the program may clear its
 * environment later. The file stays open, as a descriptor of stackprof's
 * (fds.h), shared by fork children: a child that can't make a descriptor
 * any more (the program lowered RLIMIT_NOFILE) can still say that its
 * profile failed. Paths are escaped (format/manifest.h): a newline in a
 * directory's name never splits a line.
 */
static char sp_manifest[4096];
static struct sp_fd sp_manifest_fd;

/* Keeps the manifest open; a fork child already has its parent's. */
static void sp_manifest_open(void)
{
	if (atomic_load(&sp_manifest_fd.fd) > 0)
		return;
	const char *m = getenv("STACKPROF_MANIFEST");
	snprintf(sp_manifest, sizeof(sp_manifest), "%s", m ? m : "");
	if (sp_manifest[0])
		sp_fd_open(&sp_manifest_fd, sp_manifest, O_WRONLY | O_APPEND | O_NOFOLLOW, 0);
}

/* Appends one line to the manifest; a single O_APPEND write, so that lines
 * of several processes never interleave. */
static void sp_manifest_line(const char *tag, const char *path)
{
	char line[2 * 4096 + 128];
	char abs[4096];
	sp_abs_path(path, abs, sizeof(abs));
	size_t t = strlen(tag);
	if (t >= sizeof(line) / 2 || sp_manifest_encode(abs, line + t, sizeof(line) - t - 1) < 0)
		return;
	memcpy(line, tag, t);
	size_t n = strlen(line);
	line[n++] = '\n';
	/* the kept descriptor, or (given up to the program's dup2) a new one */
	struct sp_fd tmp = {0};
	struct sp_fd *mf = &sp_manifest_fd;
	int fd = sp_fd_hold(mf);
	if (fd < 0 && sp_manifest[0]) {
		mf = &tmp;
		if (sp_fd_open(mf, sp_manifest, O_WRONLY | O_APPEND | O_NOFOLLOW, 0) < 0)
			return;
		fd = sp_fd_hold(mf);
	}
	if (fd < 0)
		return;
	ssize_t r = write(fd, line, n);
	(void)r;
	sp_fd_drop(mf);
	sp_fd_close(&tmp);
}

static void sp_manifest_add(const char *path)
{
	sp_manifest_line("", path);
}

static void sp_manifest_error(int err, const char *path)
{
	char tag[64];
	const char *name = strerrorname_np(err);
	if (name)
		snprintf(tag, sizeof(tag), "!error %s ", name);
	else
		snprintf(tag, sizeof(tag), "!error %d ", err);
	sp_manifest_line(tag, path);
}

int sp_writer_start(void)
{
	struct sp_wstate *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (sp_wslots_map(s) < 0) {
		free(s);
		return -ENOMEM;
	}
	sp_manifest_open();
	int fd = sp_open_output(&s->out, sp_g.path, sizeof(sp_g.path));
	if (fd < 0) {
		int e = errno;
		struct rlimit rl;
		if (e == ENOTSUP)
			sp_log("STACKPROF_OUT=%s is not a regular file (only /dev/null is allowed, "
			       "to keep nothing); not profiling",
			       sp_g.cfg.out);
		else if (e == EILSEQ)
			; /* a control character in STACKPROF_OUT: config.c said so */
		else if (e == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0)
			sp_log("cannot create the profile %s: no file descriptor is free for it "
			       "(RLIMIT_NOFILE is %llu; stackprof keeps its own from %d up, out "
			       "of the program's way); not profiling",
			       sp_g.path, (unsigned long long)rl.rlim_cur, sp_fd_floor());
		else
			sp_log("cannot create the profile %s: %s; not profiling", sp_g.path,
			       strerror(e));
		sp_manifest_error(e, sp_g.path);
		sp_wstate_release(s, true);
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) == 0) {
		s->out_dev = st.st_dev;
		s->out_ino = st.st_ino;
	}
	sp_abs_path(sp_g.path, s->out_abs, sizeof(s->out_abs));
	sp_buf_init(&s->pending);
	/* a profile being written is not one `stackprof run` may replace: a
	 * shared lock says so for as long as the file is open */
	flock(fd, LOCK_SH | LOCK_NB);
	s->w = sp_prof_writer_new_sink(sp_out_sink, s);
	if (!s->w) {
		sp_fd_close(&s->out);
		sp_wstate_release(s, true);
		return -ENOMEM;
	}
	snprintf(s->jit_path, sizeof(s->jit_path), "/tmp/perf-%d.map", (int)sp_g.pid);

	char cmdline[8192], exe[PATH_MAX], host[256];
	sp_read_cmdline(cmdline, sizeof(cmdline));
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (gethostname(host, sizeof(host)) < 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	struct sp_prof_header h = {
	    .version = SP_PROFILE_VERSION,
	    .pid = sp_g.pid,
	    .ppid = getppid(),
	    .start_realtime_ns = sp_g.start_real_ns,
	    .start_mono_ns = sp_g.start_mono_ns,
	    .freq_hz = sp_g.cfg.freq_hz,
	    .max_depth = sp_g.cfg.max_depth,
	    .timer = (char *)sp_g.cpu->name,
	    .cmdline = cmdline,
	    .exe = exe,
	    .hostname = host,
	};
	sp_prof_writer_header(s->w, &h);
	sp_modules_sync(s);
	sp_prof_writer_flush(s->w);
	s->last_flush_ns = sp_now_ns();
	sp_ws = s;
	sp_manifest_add(s->out_abs);

	int rc = sp_spawn_quiet(&sp_g.writer, sp_writer_main, s);
	if (rc) {
		sp_prof_writer_close(s->w);
		sp_fd_close(&s->out);
		sp_ws = NULL;
		sp_wstate_release(s, true);
		return -rc;
	}
	sp_g.writer_running = true;
	return 0;
}

void sp_writer_flush_now(void)
{
	struct sp_wstate *s = sp_ws;
	if (!s || !sp_g.writer_running)
		return;
	pthread_mutex_lock(&sp_g.lock);
	uint64_t seq = ++s->flush_seq;
	s->flush_requested = true;
	sp_writer_wake();
	while (s->flush_done < seq && !s->stop)
		pthread_cond_wait(&sp_g.wake, &sp_g.lock);
	pthread_mutex_unlock(&sp_g.lock);
}

void sp_writer_record_modules(void)
{
	struct sp_wstate *s = sp_ws;
	if (!s || !sp_g.writer_running || s->tid == sp_gettid())
		return;
	/* never hang the program's dlclose: after a second it goes ahead */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec++;
	if (pthread_mutex_timedlock(&sp_g.lock, &ts) != 0)
		return;
	/* stop: parked, or the final flush owns the state */
	if (!s->stop)
		sp_modules_sync(s); /* its CPU: dlclose counts it (sp_g.aside_ns) */
	pthread_mutex_unlock(&sp_g.lock);
}

void sp_writer_exec_flush(void)
{
	struct sp_wstate *s = sp_ws;
	if (!s)
		return;
	pthread_mutex_lock(&sp_g.lock);
	s->exec_flush = true;
	pthread_mutex_unlock(&sp_g.lock);
	sp_writer_flush_now();
	pthread_mutex_lock(&sp_g.lock);
	s->exec_flush = false;
	pthread_mutex_unlock(&sp_g.lock);
}

/* Frees what the writer state owns; the state itself only if free_self. */
static void sp_wstate_release(struct sp_wstate *s, bool free_self)
{
	free(s->slots);
	free(s->arena);
	for (size_t i = 0; i < s->n_mods; i++)
		free(s->mods[i].name);
	free(s->mods);
	s->slots = NULL;
	s->arena = NULL;
	s->mods = NULL;
	s->n_mods = 0;
	sp_buf_release(&s->pending);
	if (s->wslots)
		munmap(s->wslots, s->wslots_len);
	s->wslots = NULL;
	if (free_self)
		free(s);
}

void sp_writer_park(void)
{
	struct sp_wstate *s = sp_ws;
	if (!s || !sp_g.writer_running)
		return;
	pthread_mutex_lock(&sp_g.lock);
	s->stop = true;
	sp_writer_wake();
	pthread_mutex_unlock(&sp_g.lock);
	sp_join_quiet(sp_g.writer, s->tid);
	sp_g.writer_running = false;
}

void sp_writer_unpark(void)
{
	struct sp_wstate *s = sp_ws;
	if (!s || !s->stop || atomic_load(&sp_g.stopping))
		return;
	pthread_mutex_lock(&sp_g.lock);
	s->stop = false;
	pthread_mutex_unlock(&sp_g.lock);
	int rc = sp_spawn_quiet(&sp_g.writer, sp_writer_main, s);
	if (rc == 0)
		sp_g.writer_running = true;
	else
		sp_log("cannot restart the writer thread: %s; the profile is written at exit",
		       strerror(rc));
}

void sp_writer_stop(bool final, int sig)
{
	struct sp_wstate *s = sp_ws;
	if (!s)
		return;
	sp_writer_park();
	s->final_aside = true;
	s->final_c0 = sp_thread_cpu_ns();
	s->end_signal = sig;
	sp_flush(s, final ? SP_STATS_FINAL : 0, false);
	sp_writer_failed(s, sp_prof_writer_close(s->w));
	/* the stream's end may still wait for the file (fds.h) */
	if ((s->out_lost || s->pending.len) && !sp_out_check(s))
		sp_log("the end of the profile could not be written to %s", s->out_abs);
	sp_fd_close(&s->out);
	sp_ws = NULL;
	/* a thread may still be in sp_writer_flush_now(), about to read
	 * s->stop: at exit, keeping the struct is cheaper than a use-after-free */
	sp_wstate_release(s, false);
}

void sp_writer_forget(void)
{
	struct sp_wstate *s = sp_ws;
	/* a poke the parent's writer had yet to serve is not the child's */
	atomic_store(&sp_poked, 0);
	atomic_store(&sp_dead_pending, 0);
	atomic_store(&sp_end_sig, 0);
	atomic_store(&sp_end_done, 0);
	if (!s)
		return;
	/* the parent owns the file and its zlib stream: drop our copies
	 * silently; the child has a single thread, so everything can go */
	sp_prof_writer_abandon(s->w);
	sp_fd_forget(&s->out);
	sp_wstate_release(s, true);
	sp_ws = NULL;
	sp_g.writer_running = false;
}
