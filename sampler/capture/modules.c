#include "sampler/base/sigsafe.h"
#include "sampler/capture/modules.h"
#include "sampler/capture/rulecache.h"
#include "sampler/core/sampler.h"
#include "sampler/base/sys.h"
#include "sampler/core/doorbell.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

static _Atomic(struct sp_modsnap *) sp_snap;
static _Atomic uint64_t sp_mod_gen;
static pthread_mutex_t sp_mod_lock = PTHREAD_MUTEX_INITIALIZER;
typedef int (*sp_iterate_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);

/* glibc's dl_iterate_phdr; read by the assembly entry below, so not static. */
__attribute__((visibility("hidden"))) sp_iterate_fn sp_real_iterate;

static sp_iterate_fn sp_resolve_iterate(void)
{
	if (!sp_real_iterate)
		sp_real_iterate = (sp_iterate_fn)dlsym(RTLD_NEXT, "dl_iterate_phdr");
	return sp_real_iterate;
}

int sp_real_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	sp_iterate_fn fn = sp_resolve_iterate();
	return fn ? fn(cb, data) : 0;
}

struct sp_count {
	size_t mods, phdrs, names, x;
	unsigned long long adds, subs;
};

static int sp_count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct sp_count *c = arg;
	c->mods++;
	c->phdrs += info->dlpi_phnum;
	c->names += strlen(info->dlpi_name ? info->dlpi_name : "") + 1;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X))
			c->x++;
	c->adds = info->dlpi_adds;
	c->subs = info->dlpi_subs;
	return 0;
}

struct sp_fill {
	struct sp_modsnap *s;
	/* the snapshot before: a module still there keeps what was read of
	 * its unwind tables, if no module went since */
	const struct sp_modsnap *old;
	size_t old_i;
	ElfW(Phdr) * phdrs;
	char *names;
	size_t max_mods, max_phdrs, max_names, max_x;
	size_t n_phdrs, n_names;
	uintptr_t vdso;
};

static int sp_fill_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct sp_fill *f = arg;
	struct sp_modsnap *s = f->s;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	size_t nlen = strlen(name) + 1;
	/* modules loaded between counting and filling wait for the next refresh */
	if (s->n_mods >= f->max_mods || f->n_phdrs + info->dlpi_phnum > f->max_phdrs ||
	    f->n_names + nlen > f->max_names)
		return 0;
	struct sp_mod *m = &s->mods[s->n_mods++];
	memset(m, 0, sizeof(*m));
	m->info = *info;
	m->phdr = info->dlpi_phdr;
	if (size < sizeof(m->info))
		memset((char *)&m->info + size, 0, sizeof(m->info) - size);
	memcpy(f->phdrs + f->n_phdrs, info->dlpi_phdr, info->dlpi_phnum * sizeof(ElfW(Phdr)));
	m->info.dlpi_phdr = f->phdrs + f->n_phdrs;
	f->n_phdrs += info->dlpi_phnum;
	memcpy(f->names + f->n_names, name, nlen);
	m->info.dlpi_name = f->names + f->n_names;
	f->n_names += nlen;
	m->start = UINTPTR_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		uintptr_t hi = lo + ph->p_memsz;
		if (lo < m->start)
			m->start = lo;
		if (hi > m->end)
			m->end = hi;
		if ((ph->p_flags & PF_X) && s->n_x < f->max_x)
			s->x[s->n_x++] = (struct sp_xrange){lo, hi, s->n_mods - 1};
	}
	if (m->start == UINTPTR_MAX)
		m->start = m->end = 0;
	m->vdso = f->vdso && m->start <= f->vdso && f->vdso < m->end;
	m->main = s->n_mods == 1 && !*name;
	/* An address a closed module had may hold another now, at the same
	 * load address with the same program headers: reuse only when glibc's
	 * count of closes is the old snapshot's. dlpi_subs is read here, in
	 * this walk (glibc holds its lock through the callbacks), not in the
	 * counting walk before it: a close and a load between the two would
	 * go unseen. Modules keep their order (new ones come after): look
	 * from the last found. */
	const struct sp_mod *was = NULL;
	bool same = f->old && info->dlpi_subs == f->old->subs;
	for (size_t j = f->old_i; same && j < f->old->n_mods && !was; j++)
		if (f->old->mods[j].phdr == info->dlpi_phdr &&
		    f->old->mods[j].info.dlpi_addr == info->dlpi_addr) {
			was = &f->old->mods[j];
			f->old_i = j + 1;
		}
	if (was)
		m->cfi = was->cfi;
	else
		sp_cfi_table_init(info, &m->cfi);
	return 0;
}

static int sp_cmp_x(const void *a, const void *b)
{
	const struct sp_xrange *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void sp_snap_free(struct sp_modsnap *s)
{
	if (s)
		munmap(s, s->map_len);
}

/*
 * The snapshot before the current one, kept for the next build (under
 * sp_mod_lock) instead of unmapped: an munmap is a TLB shootdown on every
 * CPU the program runs on, and a new mapping's 60-odd pages (240 KiB with
 * torch's 325 modules) as many page faults. Publishing the 15 snapshots
 * of an import torch took 1.0 ms with them, 0.1 ms without. Mappings are
 * made a quarter larger than needed, so that the next load's still fits.
 */
static struct sp_modsnap *sp_snap_spare;

/* len bytes of memory for a snapshot, its header zeroed: the spare, or a
 * new mapping. The build writes every byte past the header it uses. */
static void *sp_snap_mem(size_t len, size_t *map_len)
{
	struct sp_modsnap *s = sp_snap_spare;
	if (s && s->map_len >= len) {
		sp_snap_spare = NULL;
		*map_len = s->map_len;
		memset(s, 0, sizeof(*s));
		return s;
	}
	*map_len = (len + len / 4 + 4095) & ~(size_t)4095;
	void *p = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Builds a snapshot in one mapping: header, modules, x-ranges, phdrs, names. */
static struct sp_modsnap *sp_snap_build(void)
{
	struct sp_count c = {0};
	sp_real_dl_iterate_phdr(sp_count_cb, &c);
	/* headroom for modules that appear between the two walks */
	size_t max_mods = c.mods + 8, max_phdrs = c.phdrs + 128, max_names = c.names + 4096;
	size_t max_x = c.x + 16;
	size_t len = sizeof(struct sp_modsnap) + max_mods * sizeof(struct sp_mod) +
		     max_x * sizeof(struct sp_xrange) + max_phdrs * sizeof(ElfW(Phdr)) + max_names;
	size_t map_len;
	void *p = sp_snap_mem(len, &map_len);
	if (!p)
		return NULL;
	struct sp_modsnap *s = p;
	s->map_len = map_len;
	s->mods = (struct sp_mod *)(s + 1);
	s->x = (struct sp_xrange *)(s->mods + max_mods);
	struct sp_fill f = {
	    .s = s,
	    .phdrs = (ElfW(Phdr) *)(s->x + max_x),
	    .max_mods = max_mods,
	    .max_phdrs = max_phdrs,
	    .max_names = max_names,
	    .max_x = max_x,
	    .vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR),
	};
	f.old = atomic_load(&sp_snap); /* sp_fill_cb decides what it may keep */
	f.names = (char *)(f.phdrs + max_phdrs);
	sp_real_dl_iterate_phdr(sp_fill_cb, &f);
	qsort(s->x, s->n_x, sizeof(s->x[0]), sp_cmp_x);
	s->adds = c.adds;
	s->subs = c.subs;
	for (size_t i = 0; i < s->n_mods; i++) {
		s->mods[i].info.dlpi_adds = c.adds;
		s->mods[i].info.dlpi_subs = c.subs;
	}
	return s;
}

/* Replaces the snapshot; frees the old one once no handler can be reading it. */
static void sp_snap_publish(struct sp_modsnap *s)
{
	struct sp_modsnap *cur = atomic_load(&sp_snap);
	s->epoch = cur ? cur->epoch + (cur->subs != s->subs) : 0;
	struct sp_modsnap *old = atomic_exchange(&sp_snap, s);
	atomic_fetch_add(&sp_mod_gen, 1);
	if (!old)
		return;
	/* a handler still in the old snapshot would read freed memory: leaking
	 * one snapshot is better than a crash */
	if (!sp_modules_quiesce())
		return;
	/* no handler holds the old epoch now */
	if (s->epoch != old->epoch)
		sp_rulecache_epoch(s->epoch);
	sp_snap_free(sp_snap_spare);
	sp_snap_spare = old;
}

/* How long a change of modules waits for the handlers in them. */
#define SP_QUIESCE_NS 1000000000ull

static bool sp_any_in_modules(void)
{
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (atomic_load(&t->in_modules) && atomic_load(&t->state) == SP_SLOT_LIVE)
			return true;
	}
	return false;
}

bool sp_modules_quiesce(void)
{
	uint64_t start = 0;
	for (int i = 0; sp_any_in_modules(); i++) {
		if (i < 100)
			continue;
		if (!start)
			start = sp_now_ns();
		else if (sp_now_ns() - start > SP_QUIESCE_NS)
			return false;
		struct timespec d = {0, 20000};
		nanosleep(&d, NULL);
	}
	return true;
}

int sp_modules_init(void)
{
	sp_resolve_iterate();
	struct sp_modsnap *s = sp_snap_build();
	if (!s)
		return -ENOMEM;
	sp_snap_publish(s);
	return 0;
}

/*
 * Set in a fork child whose parent was inside dlopen or dlclose at the
 * fork (a namespace's r_state not RT_CONSISTENT). Those hold glibc's
 * dl_load_write_lock while they change the list of modules, glibc 2.36
 * resets that lock in the child only for dl_load_lock and dl_load_tls_lock,
 * and the thread that held it is gone: dl_iterate_phdr would wait forever.
 * Such a child never calls glibc's dl_iterate_phdr for itself, and is not
 * profiled (fork.c): the snapshot it inherited may hold a module that the
 * dlclose has unmapped, whose memory the handler and the writer would read.
 * The other callers of that lock are ours, under sp_mod_lock, which fork.c
 * takes before a fork, and the program's own.
 */
static bool sp_loader_stuck;

/* glibc's _r_debug, which is the first namespace's struct r_debug_extended
 * (r_version 2) once there are several */
extern struct r_debug_extended sp_r_debug __asm__("_r_debug");

/* Whether some link namespace's list of modules is being changed. */
static bool sp_loader_changing(void)
{
	const struct r_debug_extended *e = &sp_r_debug;
	if (e->base.r_state != RT_CONSISTENT)
		return true;
	if (e->base.r_version < 2)
		return false;
	/* a bounded walk: glibc has at most 16 namespaces */
	e = e->r_next;
	for (int i = 0; e && i < 64; e = e->r_next, i++)
		if (e->base.r_state != RT_CONSISTENT)
			return true;
	return false;
}

/* The same as sp_modules_refresh, with sp_mod_lock held. */
static void sp_modules_refresh_locked(void)
{
	if (sp_loader_stuck)
		return;
	struct sp_modsnap *s = sp_snap_build();
	if (s)
		sp_snap_publish(s);
}

void sp_modules_refresh(void)
{
	pthread_mutex_lock(&sp_mod_lock);
	sp_modules_refresh_locked();
	pthread_mutex_unlock(&sp_mod_lock);
}

static int sp_counters_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;
	c[0] = info->dlpi_adds;
	c[1] = info->dlpi_subs;
	return 1; /* the counters are the same in every entry: stop at the first */
}

void sp_modules_refresh_if_changed(void)
{
	/* under the lock, like every call of ours to glibc's dl_iterate_phdr,
	 * so that none is under way at a fork */
	pthread_mutex_lock(&sp_mod_lock);
	if (!sp_loader_stuck) {
		unsigned long long c[2] = {0, 0};
		sp_real_dl_iterate_phdr(sp_counters_cb, c);
		struct sp_modsnap *s = atomic_load(&sp_snap);
		if (!s || s->adds != c[0] || s->subs != c[1])
			sp_modules_refresh_locked();
	}
	pthread_mutex_unlock(&sp_mod_lock);
}

bool sp_modules_loader_usable(void)
{
	return !sp_loader_stuck;
}

/* The cancel state of the thread that holds sp_mod_lock, given back at unlock. */
static __thread int sp_mod_cancel SP_TLS;

void sp_modules_lock(void)
{
	/* held across calls that are cancellation points (libunwind's
	 * memory-test pipe write): a thread cancelled in there would keep the
	 * lock for good, and the next dlclose, new thread or writer pass would
	 * wait forever (t0018's 2000 cancellations under load). The
	 * cancellation acts at the thread's next cancellation point instead. */
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	pthread_mutex_lock(&sp_mod_lock);
	sp_mod_cancel = old;
}

void sp_modules_unlock(void)
{
	int old = sp_mod_cancel;
	pthread_mutex_unlock(&sp_mod_lock);
	pthread_setcancelstate(old, NULL);
}

/* The generation a miss last poked the writer in, plus one (0: none yet). */
static _Atomic uint64_t sp_miss_gen;

void sp_modules_missed(void)
{
	uint64_t want = atomic_load_explicit(&sp_mod_gen, memory_order_relaxed) + 1;
	if (atomic_load_explicit(&sp_miss_gen, memory_order_relaxed) != want &&
	    atomic_exchange_explicit(&sp_miss_gen, want, memory_order_relaxed) != want)
		sp_writer_poke();
}

void sp_modules_atfork(int phase)
{
	if (phase == 0)
		pthread_mutex_lock(&sp_mod_lock);
	else if (phase == 1)
		pthread_mutex_unlock(&sp_mod_lock);
	else {
		pthread_mutex_init(&sp_mod_lock, NULL);
		atomic_store(&sp_miss_gen, 0); /* the parent's poke was for its writer */
		/* a dlclose under way in the parent raised it, and that thread is
		 * gone: the child's first rebuild (writer.h) comes before its
		 * first sample */
		atomic_store(&sp_g.modules_changing, 0);
		if (sp_loader_changing())
			sp_loader_stuck = true;
	}
}

uint64_t sp_modules_generation(void)
{
	return atomic_load(&sp_mod_gen);
}

void sp_modules_foreach(void (*fn)(const struct sp_mod *m, void *arg), void *arg)
{
	pthread_mutex_lock(&sp_mod_lock);
	struct sp_modsnap *s = atomic_load(&sp_snap);
	for (size_t i = 0; s && i < s->n_mods; i++)
		fn(&s->mods[i], arg);
	pthread_mutex_unlock(&sp_mod_lock);
}

size_t sp_module_build_id(const struct sp_mod *m, uint8_t *out, size_t cap)
{
	for (int i = 0; i < m->info.dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &m->info.dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(m->info.dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*n);
			const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
			const uint8_t *next = desc + ((n->n_descsz + 3) & ~3u);
			if (next > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4)) {
				size_t len = n->n_descsz < cap ? n->n_descsz : cap;
				memcpy(out, desc, len);
				return len;
			}
			p = next;
		}
	}
	return 0;
}

bool sp_modules_enter(void)
{
	/* seq_cst on both sides: dlclose raises modules_changing, then waits
	 * for every mark to clear; we mark our slot, then look at
	 * modules_changing */
	struct sp_thread *t = sp_self;
	atomic_store(&t->in_modules, 1);
	if (atomic_load(&sp_g.modules_changing)) {
		atomic_store(&t->in_modules, 0);
		return false;
	}
	return true;
}

void sp_modules_leave(void)
{
	atomic_store(&sp_self->in_modules, 0);
}

/* The executable segment holding addr, or NULL. Signal-safe. */
SP_SIGSAFE static const struct sp_xrange *sp_find_text(const struct sp_modsnap *s, uintptr_t addr)
{
	size_t lo = 0, hi = s->n_x;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (addr < s->x[mid].lo)
			hi = mid;
		else if (addr >= s->x[mid].hi)
			lo = mid + 1;
		else
			return &s->x[mid];
	}
	return NULL;
}

bool sp_modules_is_text(uintptr_t addr)
{
	const struct sp_modsnap *s = atomic_load(&sp_snap);
	return s && sp_find_text(s, addr);
}

const struct sp_modsnap *sp_modules_current(void)
{
	return atomic_load(&sp_snap);
}

const struct sp_mod *sp_modsnap_text(const struct sp_modsnap *s, uintptr_t addr)
{
	const struct sp_xrange *x = s ? sp_find_text(s, addr) : NULL;
	return x ? &s->mods[x->mod] : NULL;
}

const struct sp_mod *sp_modsnap_text_near(const struct sp_modsnap *s, uintptr_t addr,
					  const struct sp_xrange **hint)
{
	const struct sp_xrange *x = *hint;
	if (!x || addr < x->lo || addr >= x->hi) {
		x = s ? sp_find_text(s, addr) : NULL;
		if (x)
			*hint = x;
	}
	return x ? &s->mods[x->mod] : NULL;
}

/*
 * The handler's dl_iterate_phdr: no lock, no allocation, no loader.
 * Signal-safe. libunwind 1.6.2 calls it with its dwarf_callback, whose data
 * starts with the IP it looks for: handing it just the module that holds
 * that IP spares it a walk over every module (431 in a torch process) for
 * each frame. If the first word is not a text address, every module is
 * offered, as glibc would.
 */
SP_SIGSAFE __attribute__((visibility("hidden"))) int
sp_iterate_snapshot(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);
SP_SIGSAFE __attribute__((visibility("hidden"))) int
sp_iterate_snapshot(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	struct sp_modsnap *s = atomic_load(&sp_snap);
	if (!s)
		return 0;
	uintptr_t ip = *(const uintptr_t *)data;
	const struct sp_xrange *x = sp_find_text(s, ip);
	if (!x && ip)
		x = sp_find_text(s, ip - 1); /* a call that ends its segment */
	if (x)
		return cb(&s->mods[x->mod].info, sizeof(s->mods[x->mod].info), data);
	int ret = 0;
	for (size_t i = 0; i < s->n_mods; i++) {
		ret = cb(&s->mods[i].info, sizeof(s->mods[i].info), data);
		if (ret)
			break;
	}
	return ret;
}

/*
 * The interposed dl_iterate_phdr, in assembly because glibc's picks the link
 * namespace from its caller's return address: outside our handler this must
 * be a pure tail jump, so glibc sees the real caller. Inside the handler
 * (sp_in_unwind) it walks the snapshot instead.
 */
__asm__(".text\n"
	".globl dl_iterate_phdr\n"
	".type dl_iterate_phdr, @function\n"
	"dl_iterate_phdr:\n"
	"	.cfi_startproc\n"
	"	movq sp_in_unwind@gottpoff(%rip), %rax\n"
	"	cmpl $0, %fs:(%rax)\n"
	"	jne sp_iterate_snapshot\n"
	"	movq sp_real_iterate(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	jz sp_real_dl_iterate_phdr\n"
	"	jmp *%rax\n"
	"	.cfi_endproc\n"
	".size dl_iterate_phdr, .-dl_iterate_phdr\n");
