#include "sampler/core/source.h"
#include "sampler/life/thread.h"
#include "sampler/capture/handler.h"
#include "sampler/life/main.h"
#include "sampler/writer/writer.h"
#include "sampler/life/python.h"
#include "sampler/core/sampler.h"
#include "sampler/capture/sigmask.h"
#include "sampler/capture/sigstack.h"
#include "sampler/base/sys.h"
#include "sampler/capture/unwind.h"

#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

static pthread_key_t sp_thread_key;

static int (*sp_real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				     void *);

/* Program threads with a live slot: while one is left, a thread that
 * leaves is not the last, and needs no look at /proc. */
static _Atomic int sp_live_threads;

/*
 * The slots threads may claim: STACKPROF_MAX_THREADS, and no more than the
 * program can spare of its memory mappings. The program's threads take 2
 * each (stack and guard). A slot's ring, stack scratch and handler stack
 * with its guard page were 3 of their own: under the kernel's
 * vm.max_map_count (65530 by default) 13,100 sampled threads took every one
 * left, and the program's next pthread_create failed where alone it
 * succeeds. They are one mapping now (sp_slot_map), 2 with the guard page
 * where the kernel can't guard a page without a mapping of its own (before
 * Linux 6.13), and one more with Python's scratch. Slots may use a quarter
 * of the mappings: by default 16,382 threads, 8,191 before 6.13 or in
 * Python, 5,460 in Python before 6.13.
 */
static uint32_t sp_slot_maps;			/* the quarter */
static _Atomic uint32_t sp_slot_guard_maps = 1; /* 0 once a guard page needed none */

static void sp_slot_cap_init(void)
{
	char buf[32];
	unsigned long maps = 65530;
	if (sp_read_small("/proc/sys/vm/max_map_count", buf, sizeof(buf)) > 0)
		maps = strtoul(buf, NULL, 10);
	sp_slot_maps = maps / 4 > UINT32_MAX ? UINT32_MAX : (uint32_t)(maps / 4);
}

/* How many slots may be used now, and whether the mappings are what bounds it. */
static uint32_t sp_slot_cap(bool *by_maps)
{
	uint32_t per = 1 + atomic_load(&sp_slot_guard_maps) + (atomic_load(&sp_py.active) ? 1 : 0);
	uint32_t cap = sp_slot_maps / per;
	if (cap < 1)
		cap = 1;
	*by_maps = cap < sp_g.cfg.max_threads;
	return *by_maps ? cap : sp_g.cfg.max_threads;
}

/*
 * Threads that got no slot (sp_missed_add): not sampled, but counted
 * (sp_g.threads_missed), and their CPU time is known. Each one's CPU clock
 * is kept here, not in the table that had no room for it: as a thread
 * exits, the key's destructor reads its clock and takes it off the list;
 * the clocks of those still running are read when the stats are written
 * (sp_thread_missed_ns). The list is reserved for every thread the kernel
 * can run (pid_max is at most 4M) and backed as it grows.
 */
#define SP_MISSED_MAX (1u << 22)
static pthread_mutex_t sp_missed_lock = PTHREAD_MUTEX_INITIALIZER;
static clockid_t *sp_missed_clk;
static size_t sp_missed_n;
static uint64_t sp_missed_exited_ns; /* the CPU time of those that exited */
static uint64_t sp_missed_last_ns;   /* the last sum, for when the lock is busy */
static char sp_missed_mark;	     /* their key value, which tells the destructor */
static _Atomic bool sp_missed_said;

static void sp_missed_add(int err)
{
	atomic_fetch_add(&sp_g.threads_missed, 1);
	if (!atomic_exchange(&sp_missed_said, true)) {
		char why[160];
		bool by_maps;
		uint32_t cap = sp_slot_cap(&by_maps);
		if (err != -EAGAIN)
			snprintf(why, sizeof(why), "%s", strerror(-err));
		else if (by_maps)
			snprintf(why, sizeof(why),
				 "%u threads are sampled at most, for the memory mappings they "
				 "take (vm.max_map_count)",
				 cap);
		else
			snprintf(why, sizeof(why),
				 "the thread table is full (%u, STACKPROF_MAX_THREADS)", cap);
		sp_log("thread %d is not sampled: %s; nor is any other thread that finds no room "
		       "(the profile counts them and their CPU time)",
		       sp_gettid(), why);
	}
	clockid_t clk;
	if (pthread_getcpuclockid(pthread_self(), &clk) != 0)
		return;
	pthread_mutex_lock(&sp_missed_lock);
	if (!sp_missed_clk) {
		void *p = mmap(NULL, SP_MISSED_MAX * sizeof(clockid_t), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		sp_missed_clk = p == MAP_FAILED ? NULL : p;
	}
	if (sp_missed_clk && sp_missed_n < SP_MISSED_MAX) {
		sp_missed_clk[sp_missed_n++] = clk;
		pthread_setspecific(sp_thread_key, &sp_missed_mark);
	}
	pthread_mutex_unlock(&sp_missed_lock);
}

/* A thread that got no slot exits: its CPU time goes with those that did. */
static void sp_missed_exit(void)
{
	clockid_t clk;
	if (pthread_getcpuclockid(pthread_self(), &clk) != 0)
		return;
	uint64_t ns = sp_thread_cpu_ns();
	pthread_mutex_lock(&sp_missed_lock);
	/* a linear search, only on an exit of a thread that got no slot */
	for (size_t i = sp_missed_n; i-- > 0;) {
		if (sp_missed_clk[i] == clk) {
			sp_missed_clk[i] = sp_missed_clk[--sp_missed_n];
			sp_missed_exited_ns += ns;
			break;
		}
	}
	pthread_mutex_unlock(&sp_missed_lock);
}

uint64_t sp_thread_missed_ns(void)
{
	/* never wait: the final stats may be written while the thread that
	 * holds the lock is stopped in a signal handler that ends the process */
	for (int i = 0; pthread_mutex_trylock(&sp_missed_lock) != 0; i++) {
		if (i == 1000)
			return sp_missed_last_ns;
		sched_yield();
	}
	uint64_t sum = sp_missed_exited_ns;
	for (size_t i = 0; i < sp_missed_n; i++) {
		struct timespec ts;
		if (clock_gettime(sp_missed_clk[i], &ts) == 0)
			sum += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
	sp_missed_last_ns = sum;
	pthread_mutex_unlock(&sp_missed_lock);
	return sum;
}

void sp_thread_atfork_child(void)
{
	/* the child's profile counts its own threads: it has one, the forking
	 * thread, which takes a slot now */
	pthread_mutex_init(&sp_missed_lock, NULL);
	sp_missed_n = 0;
	sp_missed_exited_ns = 0;
	sp_missed_last_ns = 0;
	atomic_store(&sp_g.threads_missed, 0);
	atomic_store(&sp_g.slot_hint, 0);
	atomic_store(&sp_live_threads, 0); /* the fork child attaches its one thread again */
}

static void sp_thread_key_dtor(void *arg)
{
	if (arg == &sp_missed_mark) {
		sp_missed_exit();
		return;
	}
	bool live = sp_self != NULL;
	sp_thread_detach();
	/* the last program thread to leave through glibc: main's
	 * pthread_exit, or a thread's return or pthread_exit */
	if (live && atomic_fetch_sub(&sp_live_threads, 1) == 1)
		sp_finish_if_last();
}

unsigned sp_thread_key_id(void)
{
	return (unsigned)sp_thread_key;
}

int sp_thread_init(void)
{
	sp_slot_cap_init();
	sp_real_pthread_create = dlsym(RTLD_NEXT, "pthread_create");
	if (!sp_real_pthread_create)
		return -ENOSYS;
	return -pthread_key_create(&sp_thread_key, sp_thread_key_dtor);
}

/*
 * The first free slot from the hint on, then from 0. A claim moves the hint
 * past its slot and a slot set free moves it back (sp_thread_slot_free), so
 * a new thread finds its slot at once however many run, where a scan from
 * 0 read a cache line per live thread. A stale hint costs a longer scan,
 * never a slot.
 */
static struct sp_thread *sp_slot_claim(void)
{
	bool by_maps;
	uint32_t max = sp_slot_cap(&by_maps), hint = atomic_load(&sp_g.slot_hint);
	uint32_t from = hint < max ? hint : 0;
	for (uint32_t k = 0; k < max; k++) {
		uint32_t i = from + k < max ? from + k : from + k - max;
		int expect = SP_SLOT_FREE;
		struct sp_thread *t = &sp_g.threads[i];
		if (atomic_load(&t->state) != SP_SLOT_FREE)
			continue;
		if (!atomic_compare_exchange_strong(&t->state, &expect, SP_SLOT_INIT))
			continue;
		uint32_t n = atomic_load(&sp_g.n_slots);
		while (n < i + 1 && !atomic_compare_exchange_weak(&sp_g.n_slots, &n, i + 1))
			;
		/* unless a slot was set free meanwhile: the hint is its */
		atomic_compare_exchange_strong(&sp_g.slot_hint, &hint, i + 1);
		return t;
	}
	return NULL;
}

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13 */
#endif

/*
 * A slot's first thread maps what the slot keeps in one mapping: a guard
 * page, the handler's stack (sigstack.h), the stack scratch (handler.h) and
 * the ring, which the set-up then takes as kept from a previous owner. The
 * guard page is a marker in the page table where the kernel has them
 * (MADV_GUARD_INSTALL), else a page of its own (mprotect). If the mapping
 * fails, each part is mapped alone, as it was before.
 */
static void sp_slot_map(struct sp_thread *t, size_t ring_words)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t stk = SP_STK_WORDS(sp_g.cfg.max_depth) * sizeof(uint64_t);
	stk = (stk + page - 1) / page * page;
	size_t len = page + SP_SIGSTACK_SIZE + stk + ring_words * sizeof(uint64_t);
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	if (madvise(p, page, MADV_GUARD_INSTALL) == 0) {
		atomic_store(&sp_slot_guard_maps, 0);
	} else if (mprotect(p, page, PROT_NONE) != 0) {
		munmap(p, len);
		return;
	}
	t->sigstack = p + page;
	t->stk = (uint64_t *)(p + page + SP_SIGSTACK_SIZE);
	t->ring.words = (uint64_t *)(p + page + SP_SIGSTACK_SIZE + stk);
	t->ring.n_words = ring_words;
}

static void sp_stack_bounds(struct sp_thread *t)
{
	pthread_attr_t a;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	if (pthread_attr_getstack(&a, &addr, &size) == 0) {
		t->stack_lo = (uintptr_t)addr;
		t->stack_hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&a);
}

uint64_t sp_self_handler_ns(void)
{
	struct sp_thread *t = sp_self;
	return t ? atomic_load(&t->handler_ns) : 0;
}

uint64_t sp_own_cpu_since(uint64_t c0, uint64_t h0)
{
	uint64_t cpu = sp_thread_cpu_ns() - c0, h = sp_self_handler_ns() - h0;
	return cpu > h ? cpu - h : 0;
}

int sp_thread_attach(const char *py_name)
{
	if (sp_self || !atomic_load(&sp_g.enabled) || atomic_load(&sp_g.stopping))
		return 0;
	uint64_t c0 = sp_thread_cpu_ns();
	struct sp_thread *t = sp_slot_claim();
	if (!t) {
		sp_writer_poke(); /* slots of exited threads wait for it */
		sp_missed_add(-EAGAIN);
		return -EAGAIN;
	}
	size_t words = (size_t)sp_g.cfg.ring_kb * 1024 / sizeof(uint64_t);
	if (!t->sigstack && !t->stk && !t->ring.words)
		sp_slot_map(t, words);
	struct sp_ring ring = t->ring; /* kept from a previous owner, if any */
	uint64_t *check = t->check_pcs;
	uint64_t *stk = t->stk;
	uint8_t *sigstack = t->sigstack;
	uint64_t *py_scratch = atomic_load(&t->py_scratch);
	memset((char *)t + sizeof(t->state), 0, sizeof(*t) - sizeof(t->state));
	t->sigstack = sigstack;
	atomic_store(&t->py_scratch, py_scratch);
	if (sp_g.cfg.unwind == SP_UNWIND_CHECK && !check) {
		/* kept with the slot, like the ring; only this test mode has one */
		void *p = mmap(NULL, SP_MAX_DEPTH_WORDS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		check = p == MAP_FAILED ? NULL : p;
	}
	t->check_pcs = check;
	if (!stk) {
		/* kept with the slot; without it the handler drops every sample */
		void *p = mmap(NULL, SP_STK_WORDS(sp_g.cfg.max_depth) * sizeof(uint64_t),
			       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		stk = p == MAP_FAILED ? NULL : p;
	}
	t->stk = stk;
	t->known = stk ? stk + sp_g.cfg.max_depth : NULL;
	sp_thread_forget_stacks(t);

	t->tid = sp_gettid();
	int err = 0;
	if (ring.words && ring.n_words == words) {
		t->ring.words = ring.words;
		t->ring.n_words = words;
		t->ring.populated = ring.populated;
	} else {
		if (ring.words)
			sp_ring_release(&ring);
		err = sp_ring_init(&t->ring, words);
		if (err) {
			sp_thread_slot_free(t);
			sp_missed_add(err);
			return err;
		}
	}
	sp_ring_populate(&t->ring, SP_RING_FIRST);
	sp_stack_bounds(t);
	sp_python_attach(t);
	int serr = sp_sigstack_attach(t);
	if (serr)
		sp_log("no stack of its own for the handler on thread %d (%s): it runs on the "
		       "thread's",
		       t->tid, strerror(-serr));
	if (pthread_getcpuclockid(pthread_self(), &t->cpu_clk) != 0)
		t->cpu_clk = 0;
	/* lazy set-up in libunwind and glibc happens now, not in the handler */
	sp_unwind_warm();
	if (py_name)
		snprintf(t->py_name, sizeof(t->py_name), "%s", py_name);
	/* Everything the handler reads of a live slot is set before it is
	 * live: under perf-sigtrap the thread inherited the event when it was
	 * created, and its first signal can come at any instruction from here
	 * on (t0019 caught one between these lines with 700 threads at 1 kHz). */
	t->cpu = sp_g.cpu;
	/* the first sample weighs the CPU time from here, not one period */
	atomic_store(&t->cpu_last, sp_thread_cpu_ns());
	sp_self = t;
	atomic_store(&t->state, SP_SLOT_LIVE);
	atomic_fetch_add(&sp_live_threads, 1);
	pthread_setspecific(sp_thread_key, t);
	/* Threads often start with every signal blocked (xz, thread pools that
	 * leave async signals to the main thread), and a main thread may inherit
	 * the timer's signal blocked across exec. The timer's signal is ours:
	 * what the mask blocked becomes the program's view of it (sigmask.h),
	 * and the signal itself is opened, so the thread is sampled and the
	 * program never sees one of its signals. */
	sp_mask_adopt();
	err = sp_sources_attach(t);
	atomic_fetch_add(&sp_g.setup_ns, sp_own_cpu_since(c0, 0)); /* no slot at c0 */
	return err;
}

void sp_thread_forget_stacks(struct sp_thread *t)
{
	if (t->known)
		memset(t->known, 0, SP_KNOWN_SLOTS * sizeof(uint64_t));
}

/* Set once a seccomp filter or strict mode is coming (seccomp.c): a
 * thread that leaves then makes no system call of ours. */
static _Atomic bool sp_sealed;

void sp_thread_seal(void)
{
	atomic_store(&sp_sealed, true);
}

void sp_thread_detach(void)
{
	struct sp_thread *t = sp_self;
	if (!t)
		return;
	if (atomic_load(&sp_sealed)) {
		/* its timer is stopped and the writer gone; the timer and the
		 * slot are left as they are, never used again */
		sp_self = NULL;
		return;
	}
	sigset_t set, old;
	sp_sources_sigset(&set);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	sp_sources_detach(t);
	sp_sigstack_detach(t);
	prctl(PR_GET_NAME, t->name_at_exit, 0, 0, 0);
	sp_self = NULL;
	/* the writer drains the ring, then sets the slot free */
	atomic_store(&t->state, SP_SLOT_DEAD);
	sp_writer_slot_dead();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

struct sp_start {
	void *(*fn)(void *);
	void *arg;
	char py_name[64]; /* the threading.Thread starting it, if any */
	/* the program's view of its mask (sigmask.h) */
	unsigned mask_view;
};

/*
 * The thread's start routine in stackprof's place. Its last act is a
 * sibling call (no local's address is live when it runs, so GCC and clang
 * make it a jump at -O2; musttail insists where the compiler has it, and
 * only a GCC 12 -O0 build keeps the frame): the program's routine returns
 * straight to start_thread, and no frame of ours sits in its stacks.
 */
/* A cancel sent as the thread starts acts at the program's first
 * cancellation point, not inside stackprof's set-up, which takes locks and
 * makes calls that are cancellation points (a thread cancelled there left
 * the modules lock held: the next thread's set-up waited forever). A
 * function of its own, so that no local's address is taken in the
 * trampoline below. */
static void sp_thread_attach_uncancelled(const char *py_name)
{
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	sp_thread_attach(py_name);
	pthread_setcancelstate(cancel, NULL);
}

static void *sp_thread_start(void *p)
{
	struct sp_start *s = p;
	sp_mask_thread_begin(s->mask_view);
	sp_thread_attach_uncancelled(s->py_name[0] ? s->py_name : NULL);
	void *(*fn)(void *) = s->fn;
	void *arg = s->arg;
	free(s);
#if defined(__has_attribute) && __has_attribute(musttail)
	__attribute__((musttail)) return fn(arg);
#else
	return fn(arg);
#endif
}

SP_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
			     void *arg)
{
	if (!sp_real_pthread_create)
		sp_real_pthread_create = dlsym(RTLD_NEXT, "pthread_create");
	if (!atomic_load(&sp_g.enabled) || atomic_load(&sp_g.stopping))
		return sp_real_pthread_create(thread, attr, fn, arg);
	struct sp_start *s = malloc(sizeof(*s));
	if (!s) {
		int rc = sp_real_pthread_create(thread, attr, fn, arg);
		if (!rc)
			atomic_fetch_add(&sp_g.threads_missed, 1); /* its CPU time is not known */
		return rc;
	}
	s->fn = fn;
	s->arg = arg;
	if (!sp_python_thread_name(s->py_name, sizeof(s->py_name)))
		s->py_name[0] = '\0';
	s->mask_view = sp_mask_child_view(attr);
	int rc = sp_real_pthread_create(thread, attr, sp_thread_start, s);
	if (rc)
		free(s);
	return rc;
}
