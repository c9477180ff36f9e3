#include "sampler/capture/handler.h"
#include "sampler/base/fds.h"
#include "sampler/capture/modules.h"
#include "sampler/capture/pystack.h"
#include "sampler/capture/pystate.h"
#include "format/profile.h"
#include "sampler/core/sampler.h"
#include "sampler/base/sigsafe.h"
#include "sampler/capture/sigmask.h"
#include "sampler/capture/sigshare.h"
#include "sampler/base/sys.h"
#include "sampler/core/source.h"
#include "sampler/capture/unwind.h"
#include "sampler/capture/unwcheck.h"
#include "sampler/core/doorbell.h"

#include <errno.h>
#include <string.h>
#include <ucontext.h>

/*
 * Up to this long, the handler's wall time stands for its CPU time: a
 * preemption inside it (the scheduler's slices are milliseconds) would
 * almost always make it longer, and the error is bounded by it.
 */
#define SP_HANDLER_WALL_NS 20000u

/*
 * STACKPROF_UNWIND=check: whether two walks of one stack disagree. Past a
 * frame in no known module both are guesses (a stack scan whose start
 * depends on the guess before it), so only the frames up to the first
 * such frame must be equal, and as many of them. A last frame in no known
 * module is where a walk that failed gave up (libunwind steps on where
 * the cached rules stop, e.g. to 0x7fff00000001 from a oneDNN kernel's
 * caller in torch): it is not counted.
 */
SP_SIGSAFE static bool sp_stacks_differ(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
	while (na > 1 && !sp_modules_is_text(a[na - 1]))
		na--;
	while (nb > 1 && !sp_modules_is_text(b[nb - 1]))
		nb--;
	size_t i = 0;
	for (; i < na && i < nb; i++) {
		if (a[i] != b[i])
			return true;
		if (i && !sp_modules_is_text(a[i]))
			return false;
	}
	return na != nb;
}

/*
 * A stack's key for the writer's deduplication: its PCs, depth and flags,
 * mixed a word at a time in two lanes (even and odd frames), so that two
 * multiplies are in flight at once: ~0.5 ns a frame. Never 0, which marks
 * an empty slot of the known table. Two stacks the writer would merge
 * differ in their 64-bit hashes but for one pair in ~1e19.
 */
SP_SIGSAFE static uint64_t sp_stack_hash(const uint64_t *pcs, size_t n, uint32_t flags)
{
	uint64_t a = 0x9e3779b97f4a7c15ull ^ ((uint64_t)flags << 32 | n), b = 0x6a09e667f3bcc909ull;
	size_t i = 0;
	for (; i + 1 < n; i += 2) {
		a = (a ^ pcs[i]) * 0xff51afd7ed558ccdull;
		b = (b ^ pcs[i + 1]) * 0xc4ceb9fe1a85ec53ull;
		a ^= a >> 32;
		b ^= b >> 29;
	}
	if (i < n)
		a = (a ^ pcs[i]) * 0xff51afd7ed558ccdull;
	uint64_t h = (a ^ (b << 31 | b >> 33)) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	return h ? h : 1;
}

/* A page: the code before a pc at its very start may be on another. */
#define SP_PAGE 4096u

/*
 * Whether this signal cut a system call of the program short, so that it
 * returns EINTR (docs/SAMPLER.md, "Waits cut short"): the kernel delivers
 * a signal that came while a thread waited (poll, nanosleep, epoll_wait,
 * io_uring_enter, ...) with the pc just past the `syscall` instruction
 * (0f 05) and -EINTR in rax; a call it restarts (SA_RESTART) has the pc
 * back on the instruction instead. The two bytes are read only where they
 * are a known module's text, on the pc's own page: code is mapped there
 * and readable, so the read can't fault. A call made from JIT code, or
 * from the first bytes of a page, is not counted. Signal-safe.
 */
SP_SIGSAFE static bool sp_cut_syscall(const void *ucv)
{
	const ucontext_t *uc = ucv;
	if (uc->uc_mcontext.gregs[REG_RAX] != -EINTR)
		return false; /* nearly every sample ends here */
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	if (pc % SP_PAGE < 2 || !sp_modules_enter())
		return false;
	bool cut = false;
	if (sp_modules_is_text(pc - 2)) {
		const uint8_t *insn = (const uint8_t *)pc - 2;
		cut = insn[0] == 0x0f && insn[1] == 0x05;
	}
	sp_modules_leave();
	return cut;
}

/*
 * Set for the whole of a capture on this thread. The handler's mask blocks
 * every signal but SIGSEGV and SIGBUS, yet the kernel may deliver a blocked
 * perf SIGTRAP ahead of a fault taken in the handler (it dequeues a
 * synchronous signal first, blocked or not, and SIGTRAP with si_code
 * TRAP_PERF counts as one): a capture then starts inside another, and
 * would share its scratch, ring entry and flags.
 */
static __thread int sp_capturing SP_TLS;
/* The program's own SIGTRAP that came that way, inside a capture: it is
 * the program's at the point the capture interrupted, after it. */
static __thread int sp_trap_deferred SP_TLS;
static __thread siginfo_t sp_trap_si SP_TLS;

enum sp_fault_whose sp_handler_fault(const void *ucv)
{
	const ucontext_t *uc = ucv;
	/* The kernel set up a frame for our handler and then this fault's on
	 * top, before the handler's first instruction ran: the fault is the
	 * interrupted code's, which runs again once the handler returns */
	if ((uintptr_t)uc->uc_mcontext.gregs[REG_RIP] == (uintptr_t)sp_handler)
		return SP_FAULT_AGAIN;
	/* a thread on another's TLS (a raw clone) sees its busy flag: the
	 * kernel's tid says whose capture it is (a rare path: faults only) */
	struct sp_thread *t = sp_self;
	if (sp_capturing && t && t->tid == sp_gettid())
		return SP_FAULT_OURS;
	return SP_FAULT_PROGRAM;
}

void sp_handler_foreign(int sig, siginfo_t *si, void *uc)
{
	if (sig == SIGTRAP && !sp_trap_is_ours(si))
		sp_share_forward(sig, si, uc);
	else
		atomic_fetch_add_explicit(&sp_g.stray_signals, 1, memory_order_relaxed);
}

long sp_capture_walk(struct sp_thread *t, void *uc, uint64_t *pcs, uint64_t *sps, size_t max,
		     uint32_t *flags, bool sample)
{
	if (!sp_modules_enter())
		return -1;
	struct sp_unwind_count cnt = {0, 0, 0};
	enum sp_unwind_mode mode = sample ? sp_g.cfg.unwind : SP_UNWIND_FAST;
	sp_in_unwind = 1;
	sp_fd_libunwind(1);
	/* pcs still holds the thread's previous stack, which this one mostly repeats */
	if (sample && mode != SP_UNWIND_LIBUNWIND)
		sp_unwind_prefetch(pcs, t->walked < max ? t->walked : max);
	size_t depth =
	    sp_unwind_signal(uc, pcs, sps, max, flags, mode == SP_UNWIND_LIBUNWIND, &cnt);
	if (sample)
		t->walked = (uint32_t)depth;
	if (mode == SP_UNWIND_CHECK && t->check_pcs) {
		struct sp_unwind_count ref = {0, 0, 0};
		uint32_t ref_flags = 0;
		size_t n = sp_unwind_signal(uc, t->check_pcs, NULL, max, &ref_flags, true, &ref);
		if (sp_stacks_differ(pcs, depth, t->check_pcs, n)) {
			atomic_fetch_add_explicit(&t->unw_differ, 1, memory_order_relaxed);
			sp_unwcheck_keep(pcs, depth, t->check_pcs, n);
		}
	}
	sp_in_unwind = 0;
	sp_fd_libunwind(0);
	sp_modules_leave();
	if (sample) {
		atomic_fetch_add_explicit(&t->unw_fast, cnt.fast, memory_order_relaxed);
		atomic_fetch_add_explicit(&t->unw_slow, cnt.slow, memory_order_relaxed);
	}
	if (cnt.unknown)
		sp_modules_missed(); /* a dlopen since the writer's last pass? */
	return (long)depth;
}

long sp_capture_own_frames(const uint64_t *pcs, size_t depth)
{
	if (!sp_modules_enter())
		return -1;
	const struct sp_modsnap *snap = sp_modules_current();
	const struct sp_mod *self = sp_modsnap_text(snap, (uintptr_t)&sp_capture_own_frames);
	size_t i = 0;
	/* pcs[0] is where the capture began; then return addresses (at pc - 1) */
	while (self && i < depth && sp_modsnap_text(snap, i ? pcs[i] - 1 : pcs[i]) == self)
		i++;
	sp_modules_leave();
	return self ? (long)i : -1;
}

/*
 * Drops the innermost frames that are stackprof's own (a synchronous
 * source's capture starts inside this library: its caller's frame is the
 * sample's leaf), moving the rest (and their stack pointers) down. The new
 * depth. Signal-safe.
 */
SP_SIGSAFE static size_t sp_trim_own(uint64_t *pcs, uint64_t *sps, size_t depth)
{
	long i = sp_capture_own_frames(pcs, depth);
	if (i <= 0 || (size_t)i == depth)
		return depth;
	memmove(pcs, pcs + i, (depth - (size_t)i) * sizeof(*pcs));
	if (sps)
		memmove(sps, sps + i, (depth - (size_t)i) * sizeof(*sps));
	return depth - (size_t)i;
}

/*
 * The capture itself (handler.h): the same for a CPU signal and for a
 * synchronous source. Everything here reads the thread's slot and writes
 * its ring; the caller holds the capture flag, so nothing else on this
 * thread does meanwhile.
 */
bool sp_capture(struct sp_thread *t, void *uc, const struct sp_event *ev)
{
	size_t max = sp_g.cfg.max_depth;
	/* The stack is made in the slot's own memory first (the same few
	 * lines every sample), and goes to the ring once it is known whether
	 * the writer has it. With Python frames read, the native stack goes to
	 * the Python scratch, and the two are merged into stk. */
	uint64_t *stk = t->stk;
	if (!stk) {
		atomic_fetch_add_explicit(&t->drops, 1, memory_order_relaxed);
		return false;
	}
	uint64_t *py_pcs =
	    atomic_load_explicit(&sp_py.active, memory_order_relaxed) ? sp_pystack_pcs(t) : NULL;
	uint64_t *pcs = py_pcs ? py_pcs : stk;
	uint32_t flags = 0;
	long native =
	    sp_capture_walk(t, uc, pcs, py_pcs ? sp_pystack_sps(t) : NULL, max, &flags, true);
	if (native < 0) {
		/* a dlclose is under way: the reservation is simply not committed */
		atomic_fetch_add_explicit(&t->skipped, 1, memory_order_relaxed);
		return false;
	}
	size_t depth = (size_t)native;
	if (ev->own_frames == SP_EVENT_TRIM_OWN)
		depth = sp_trim_own(pcs, py_pcs ? sp_pystack_sps(t) : NULL, depth);
	if (py_pcs) {
		/* naming a code object met for the first time takes an entry of
		 * its own, before the sample's */
		struct sp_pyframes pf = sp_pystack_read(t);
		depth = sp_pystack_place(t, pf, py_pcs, sp_pystack_sps(t), depth, stk, max, &flags);
	}

	uint64_t hash = sp_stack_hash(stk, depth, flags);
	/* relaxed atomics: the writer may empty the entry (writer.c) */
	uint64_t *known = &t->known[hash % SP_KNOWN_SLOTS];
	bool sent = __atomic_load_n(known, __ATOMIC_RELAXED) == hash;
	size_t words = SP_ENTRY_PCS + (sent ? 1 : depth);
	uint64_t *e = sp_ring_reserve(&t->ring, words);
	if (!e) {
		atomic_fetch_add_explicit(&t->drops, 1, memory_order_relaxed);
		return false;
	}
	e[SP_ENTRY_TIME] = ev->time_ns - sp_g.start_mono_ns;
	e[SP_ENTRY_WEIGHT] = ev->weight;
	e[SP_ENTRY_RANGE] = atomic_load_explicit(&t->range_top, memory_order_relaxed);
	e[SP_ENTRY_HASH] = hash;
	e[SP_ENTRY_PAYLOAD] = ev->payload;
	if (sent)
		e[SP_ENTRY_DEPTH] = depth;
	else
		memcpy(e + SP_ENTRY_PCS, stk, depth * sizeof(uint64_t));
	sp_ring_commit(&t->ring, words,
		       flags | ev->kind << SP_RING_KIND_SHIFT | (sent ? SP_RING_KNOWN : 0));
	__atomic_store_n(known, hash, __ATOMIC_RELAXED);
	if (sp_ring_half_full(&t->ring))
		sp_writer_poke(); /* a burst of deep stacks or new code objects */
	if (flags & SP_STACK_UNWIND_ERR)
		atomic_fetch_add_explicit(&t->unwind_errors, 1, memory_order_relaxed);
	if (flags & SP_STACK_TRUNCATED)
		atomic_fetch_add_explicit(&t->truncated, 1, memory_order_relaxed);
	return true;
}

void sp_handler_body(int sig, siginfo_t *si, void *uc)
{
	/* the program's own, sent while its mask blocks it, waits for it;
	 * one it opened the mask for comes out as its own (sigmask.h) */
	if (sp_mask_keep_pending(sig, si, uc))
		return;
	/* The program's own SIGTRAP (sigshare.h) goes to its handler with
	 * nothing of ours set (cancel state, errno, the busy flag): that
	 * handler may leave by siglongjmp and never come back here */
	if (sig == SIGTRAP && !sp_trap_is_ours(si)) {
		if (sp_capturing && !sp_trap_deferred) {
			sp_trap_si = *si;
			sp_trap_deferred = 1;
			return;
		}
		sp_share_forward(sig, si, uc);
		return;
	}
	if (sp_capturing) {
		/* a nested capture (a signal inside a synchronous source's
		 * capture, or inside a fault in the handler) is dropped and
		 * counted; the next sample's weight has its CPU time, and a
		 * one-shot timer is set for its next expiry */
		struct sp_thread *n = sp_self;
		if (n && n->tid == sp_gettid()) {
			atomic_fetch_add_explicit(&n->drops, 1, memory_order_relaxed);
			sp_source_taken(sp_source_sent(n, sig, si), n);
		}
		return;
	}
	sp_capturing = 1;
	int saved_errno = errno;
	/* An asynchronous cancellation (PTHREAD_CANCEL_ASYNCHRONOUS) that lands
	 * in here would end the thread halfway through, with its slot marked as
	 * reading the modules and an entry half-written: it waits until the
	 * handler is done, and acts as the handler returns (a SIGCANCEL can't be
	 * blocked, so this is how to hold it off). */
	int cancel_state;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	struct sp_thread *t = sp_self;
	/* whose signal it is: one no source owns (the program's own SIGPROF
	 * sent with kill, a sample as it always was) weighs as the thread's
	 * CPU timer's */
	const struct sp_source *src = NULL;
	bool rearm = false; /* a one-shot timer (source.h) wants its next expiry */

	if (!t || atomic_load_explicit(&t->state, memory_order_relaxed) != SP_SLOT_LIVE) {
		atomic_fetch_add_explicit(&sp_g.stray_signals, 1, memory_order_relaxed);
		goto out;
	}
	atomic_fetch_add_explicit(&t->signals, 1, memory_order_relaxed);
	if (sp_cut_syscall(uc))
		atomic_fetch_add_explicit(&t->syscalls_cut, 1, memory_order_relaxed);
	/* A signal on its way as sampling stopped: not a sample, and no system
	 * call (the program may be installing a seccomp filter that forbids
	 * them: seccomp.c). A resume sets the next weight's base. */
	if (!atomic_load_explicit(&sp_g.sampling, memory_order_relaxed))
		goto out;
	/* The thread's CPU clock is a system call (0.5 us in a VM); it gives
	 * the weight. The monotonic clock (vDSO, 25 ns) stamps the sample and
	 * times the handler. */
	uint64_t c0 = sp_thread_cpu_ns();
	uint64_t m0 = sp_now_ns();
	src = sp_source_sent(t, sig, si);
	if (!src)
		src = t->cpu;
	uint64_t weight = src->weight ? src->weight(t, si, c0) : 1;
	/* The thread's CPU accounting (the next CPU sample's weight, the
	 * throttle) is the CPU timer's: another source's signal leaves it be,
	 * but for its handler's own time, which is in no sample's weight. */
	bool cpu = src->timer != NULL;
	rearm = src->rearm != NULL;
	if (cpu) {
		atomic_store_explicit(&t->cpu_last, c0, memory_order_relaxed);
		if (t->throttle) {
			/* like a lower rate: the skipped time goes to the next
			 * sample taken, so the thread's CPU total stays whole */
			t->throttle--;
			t->throttled_weight += weight;
			atomic_fetch_add_explicit(&t->throttled, 1, memory_order_relaxed);
			goto out;
		}
		weight += t->throttled_weight;
		t->throttled_weight = 0;
	}

	struct sp_event ev = {.kind = src->kind, .weight = weight, .time_ns = m0};
	if (!sp_capture(t, uc, &ev))
		goto out;
	/* A short handler ran on the CPU all along: its wall time is its CPU
	 * time. A long one may have been preempted, and only the CPU clock
	 * tells how much of it was ours. */
	uint64_t cost = sp_now_ns() - m0;
	if (cost > SP_HANDLER_WALL_NS)
		cost = sp_thread_cpu_ns() - c0;
	atomic_fetch_add_explicit(&t->handler_ns, cost, memory_order_relaxed);
	if (!cpu) {
		if (atomic_load_explicit(&t->cpu_last, memory_order_relaxed))
			atomic_fetch_add_explicit(&t->cpu_last, cost, memory_order_relaxed);
		goto out;
	}
	atomic_store_explicit(&t->cpu_last, c0 + cost, memory_order_relaxed);
	/* Handlers that take more than an eighth of the period (deep stacks
	 * at a high rate) would leave the program little time between samples:
	 * skip as many samples as they overran, and count them. Two in a row
	 * must overrun: one slow handler (a page fault, a cold cache in a
	 * module just loaded, a stolen CPU) says nothing of the next, and
	 * would blind the sampler for up to 64 periods. */
	uint64_t budget = sp_g.period_ns / 8;
	uint64_t over = cost < t->last_cost ? cost : t->last_cost;
	t->last_cost = cost;
	if (budget && over > budget)
		t->throttle = over / budget > 64 ? 64 : (uint32_t)(over / budget);
out:
	if (rearm)
		src->rearm(t);
	errno = saved_errno;
	/* before the cancel state: a cancellation pending acts in here */
	sp_capturing = 0;
	pthread_setcancelstate(cancel_state, NULL);
	if (sp_trap_deferred) {
		/* with nothing of ours set, as if it came as the capture ended */
		siginfo_t trap = sp_trap_si;
		sp_trap_deferred = 0;
		sp_share_forward(SIGTRAP, &trap, uc);
	}
}

int sp_capture_here(uint32_t kind, uint64_t weight, uint64_t payload)
{
	struct sp_thread *t = sp_self;
	if (!t || t->tid != sp_gettid() ||
	    atomic_load_explicit(&t->state, memory_order_relaxed) != SP_SLOT_LIVE)
		return -ENOENT;
	if (!atomic_load_explicit(&sp_g.sampling, memory_order_relaxed))
		return -EAGAIN;
	if (sp_capturing) {
		atomic_fetch_add_explicit(&t->drops, 1, memory_order_relaxed);
		return -EBUSY;
	}
	/* the flag first: a CPU signal from here on is dropped, never nested */
	sp_capturing = 1;
	int saved_errno = errno;
	int cancel_state;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	ucontext_t uc;
	int rc = -EAGAIN;
	if (getcontext(&uc) == 0) {
		struct sp_event ev = {.kind = kind,
				      .weight = weight,
				      .payload = payload,
				      .time_ns = sp_now_ns(),
				      .own_frames = SP_EVENT_TRIM_OWN};
		rc = sp_capture(t, &uc, &ev) ? 0 : -ENOSPC;
	}
	sp_capturing = 0;
	pthread_setcancelstate(cancel_state, NULL);
	if (sp_trap_deferred) {
		/* the program's SIGTRAP that came meanwhile: its handler runs now,
		 * with this point's context (the one it came at is gone) */
		siginfo_t trap = sp_trap_si;
		sp_trap_deferred = 0;
		sp_share_forward(SIGTRAP, &trap, &uc);
	}
	errno = saved_errno;
	return rc;
}

sigset_t sp_handler_mask(void)
{
	/* every signal waits the few microseconds the handler takes: no other
	 * handler can interrupt us inside libunwind's locks. But a fault is not
	 * held off: blocked, the kernel would kill for it, and a guarded read
	 * of Python's memory (saferead.h) must be able to fault */
	sigset_t m;
	sigfillset(&m);
	sigdelset(&m, SIGSEGV);
	sigdelset(&m, SIGBUS);
	return m;
}
