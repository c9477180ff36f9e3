#include "sampler/base/sigsafe.h"
#include "sampler/capture/unwind.h"
#include "sampler/capture/cfi.h"
#include "sampler/base/fds.h"
#include "sampler/base/real.h"
#include "sampler/capture/modules.h"
#include "format/profile.h"
#include "sampler/capture/rulecache.h"
#include "sampler/core/sampler.h"
#include "sampler/capture/handler.h"

#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

/* The scan gives up after this many words: deeper than any JIT kernel's frame. */
#define SP_SCAN_WORDS 4096
/* At most this many scans per stack, to bound the handler's time. */
#define SP_MAX_SCANS 8
/* No code lives in the first 64 KiB (vm.mmap_min_addr): a "return address"
 * there comes from a stack that was misread, and ends the walk. */
#define SP_MIN_CODE 0x10000

static struct {
	int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
	int (*step)(unw_cursor_t *);
	int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
	unw_addr_space_t *local_as;
	void *handle;
} sp_unw;

int sp_unwind_init(void)
{
	/* without the cache every frame's rule is read again: slower, still right */
	sp_rulecache_init();
	if (sp_unw.handle)
		return 0;
	void *h = sp_real_dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -ENOENT;
	sp_unw.init_local2 = dlsym(h, "_ULx86_64_init_local2");
	sp_unw.step = dlsym(h, "_ULx86_64_step");
	sp_unw.get_reg = dlsym(h, "_ULx86_64_get_reg");
	sp_unw.set_caching_policy = dlsym(h, "_ULx86_64_set_caching_policy");
	sp_unw.local_as = dlsym(h, "_ULx86_64_local_addr_space");
	if (!sp_unw.init_local2 || !sp_unw.step || !sp_unw.get_reg || !sp_unw.local_as)
		return -ENOSYS;
	sp_fd_libunwind(1);
	if (sp_unw.set_caching_policy)
		sp_unw.set_caching_policy(*sp_unw.local_as, UNW_CACHE_NONE);
	sp_fd_libunwind(0);
	sp_unw.handle = h;
	sp_unwind_warm();
	return 0;
}

/* This thread has warmed libunwind; a fork child's thread inherits it. */
static __thread bool sp_unw_warmed SP_TLS;

/*
 * The walk reads the modules from the snapshot, as the handler's does, and
 * never glibc's dl_iterate_phdr: glibc 2.36 does not reset that function's
 * lock (dl_load_write_lock) in a fork child, so a thread warming while
 * another forked left the child waiting for it forever. The snapshot is
 * held still meanwhile, and fork.c takes the same lock before a fork: no
 * warm is ever half done in a child, so none of libunwind's own locks is
 * held there by a thread that is gone. Every signal but a fault waits, as
 * in the handler: sp_in_unwind makes libunwind's sigprocmask calls no-ops,
 * and a sample on this thread while libunwind holds a lock would wait for
 * itself. Once per thread: the thread that forks was warmed in the parent,
 * and the child has its copy.
 */
void sp_unwind_warm(void)
{
	if (!sp_unw.handle || sp_unw_warmed)
		return;
	ucontext_t uc;
	unw_cursor_t c;
	if (getcontext(&uc) < 0)
		return;
	sigset_t mask = sp_handler_mask(), old;
	pthread_sigmask(SIG_BLOCK, &mask, &old);
	sp_modules_lock();
	sp_in_unwind = 1;
	/* the first call makes libunwind's memory-test pipe (fds.h) */
	sp_fd_libunwind(1);
	if (sp_unw.init_local2(&c, (unw_context_t *)&uc, 0) == 0)
		for (int i = 0; i < 64 && sp_unw.step(&c) > 0; i++)
			;
	sp_fd_libunwind(0);
	sp_in_unwind = 0;
	sp_modules_unlock();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	sp_unw_warmed = true;
}

/* Whether the bytes before ra encode a call: the test that makes a stack word a return address. */
SP_SIGSAFE static bool sp_follows_call(uintptr_t ra)
{
	if (!sp_modules_is_text(ra - 7))
		return false;
	const uint8_t *p = (const uint8_t *)ra;
	if (p[-5] == 0xe8)
		return true; /* call rel32 */
	if (p[-6] == 0xff && (p[-5] == 0x15 || (p[-5] & 0xf8) == 0x90))
		return true; /* call [rip+disp32], call [reg+disp32] */
	if (p[-2] == 0xff && (p[-1] & 0xf8) == 0xd0)
		return true; /* call reg */
	if (p[-3] == 0x41 && p[-2] == 0xff && (p[-1] & 0xf8) == 0xd0)
		return true; /* call r8..r15 */
	if (p[-3] == 0xff && (p[-2] & 0xf8) == 0x50)
		return true; /* call [reg+disp8] */
	if (p[-4] == 0xff && p[-3] == 0x54 && p[-2] == 0x24)
		return true; /* call [rsp+disp8] */
	if (p[-7] == 0xff && p[-6] == 0x94 && p[-5] == 0x24)
		return true; /* call [rsp+disp32] */
	return false;
}

/*
 * From a frame without unwind info (JIT code), the first word upward from
 * sp that is a return address into a known module: its address in *at.
 */
SP_SIGSAFE static bool sp_scan(uintptr_t sp, uintptr_t *ra, uintptr_t *at)
{
	struct sp_thread *t = sp_self;
	if (!t || !t->stack_hi || sp < t->stack_lo || sp >= t->stack_hi)
		return false;
	uintptr_t p = (sp + 7) & ~(uintptr_t)7;
	uintptr_t end = t->stack_hi;
	if (end - p > SP_SCAN_WORDS * 8)
		end = p + SP_SCAN_WORDS * 8;
	for (; p + 8 <= end; p += 8) {
		uintptr_t v = *(const uintptr_t *)p;
		if (sp_modules_is_text(v) && sp_follows_call(v)) {
			*ra = v;
			*at = p;
			return true;
		}
	}
	return false;
}

/* ---- libunwind alone (STACKPROF_UNWIND=libunwind, and check's reference) ---- */

/*
 * Restarts the cursor at the caller found by a scan. The callee-saved
 * registers are carried over as the cursor knows them: the caller's CFI
 * restores the ones it saved, and the rest are what the JIT code left.
 */
SP_SIGSAFE static bool sp_scan_restart(unw_cursor_t *c, ucontext_t *uc, uintptr_t sp)
{
	uintptr_t v, p;
	if (!sp_scan(sp, &v, &p))
		return false;
	static const int regs[][2] = {
	    {UNW_X86_64_RBX, REG_RBX}, {UNW_X86_64_RBP, REG_RBP}, {UNW_X86_64_R12, REG_R12},
	    {UNW_X86_64_R13, REG_R13}, {UNW_X86_64_R14, REG_R14}, {UNW_X86_64_R15, REG_R15},
	};
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		unw_word_t val;
		if (sp_unw.get_reg(c, regs[i][0], &val) == 0)
			uc->uc_mcontext.gregs[regs[i][1]] = (greg_t)val;
	}
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)v;
	uc->uc_mcontext.gregs[REG_RSP] = (greg_t)(p + 8);
	return sp_unw.init_local2(c, (unw_context_t *)uc, 0) == 0;
}

SP_SIGSAFE static size_t sp_unwind_libunwind(ucontext_t *uc, uint64_t *pcs, uint64_t *sps,
					     size_t max, uint32_t *flags,
					     struct sp_unwind_count *cnt)
{
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	unw_cursor_t c;
	/* a private copy: the scan rewrites registers, the kernel's uc is the target's */
	ucontext_t scratch;
	size_t n = 0;
	int scans = 0;
	if (!sp_unw.handle ||
	    sp_unw.init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0) {
		pcs[0] = pc;
		*flags |= SP_STACK_UNWIND_ERR;
		return 1;
	}
	for (;;) {
		unw_word_t ip = 0, sp = 0;
		sp_unw.get_reg(&c, UNW_REG_IP, &ip);
		sp_unw.get_reg(&c, UNW_REG_SP, &sp);
		if (n && ip < SP_MIN_CODE) {
			if (ip)
				*flags |= SP_STACK_UNWIND_ERR;
			break;
		}
		if (n == max) {
			*flags |= SP_STACK_TRUNCATED;
			break;
		}
		if (sps)
			sps[n] = sp;
		pcs[n++] = ip;
		bool known = sp_modules_is_text(ip);
		cnt->unknown += !known;
		if (!known && scans < SP_MAX_SCANS) {
			/* JIT or unknown code: libunwind would guess from rbp */
			scans++;
			memcpy(&scratch, uc, sizeof(scratch));
			if (sp_scan_restart(&c, &scratch, sp)) {
				*flags |= SP_STACK_JIT_SCAN;
				continue;
			}
			*flags |= SP_STACK_UNWIND_ERR;
			break;
		}
		int r = sp_unw.step(&c);
		if (r > 0) {
			cnt->slow++;
			continue;
		}
		if (r < 0)
			*flags |= SP_STACK_UNWIND_ERR;
		break;
	}
	return n ? n : 1;
}

/* ---- cached CFI rules, with libunwind for the frames they can't step ---- */

/* One frame's registers as the walk knows them. */
struct sp_walk {
	uintptr_t ip, sp;
	uintptr_t regs[SP_CFI_REGS]; /* rbx, rbp, r12-r15: cfi.h's order */
	/* ip is where the thread was stopped (the leaf, or the frame a signal
	 * interrupted), not a return address: its rule is looked up at ip
	 * itself rather than at the call instruction before it */
	bool exact;
};

/* ucontext and libunwind numbers of the tracked registers, in cfi.h's order */
static const int sp_greg[SP_CFI_REGS] = {REG_RBX, REG_RBP, REG_R12, REG_R13, REG_R14, REG_R15};
static const int sp_unw_reg[SP_CFI_REGS] = {UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12,
					    UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15};

enum sp_step { SP_STEP_OK, SP_STEP_END, SP_STEP_ERR, SP_STEP_SLOW };

/*
 * Bytes below rsp that the ABI's red zone keeps: the kernel builds the
 * signal frame under them, so they are mapped and intact in the leaf, and
 * every outer frame's are inside the leaf's stack. An epilogue interrupted
 * between `pop %rbp` and `ret` finds the caller's rbp there: GCC's CFI
 * still says "saved at CFA-16" after the pop.
 */
#define SP_RED_ZONE 128

/* A word of the stack at at, which a rule built on a register the code
 * did not keep (after a JIT scan) may leave unaligned: one mov on x86-64. */
SP_SIGSAFE static uintptr_t sp_stack_word(uintptr_t at)
{
	uintptr_t v;
	memcpy(&v, (const void *)at, sizeof(v));
	return v;
}

/*
 * Steps w to its caller with rule r. Every read lies between the frame's
 * red zone and the top of the thread's stack: memory that is mapped,
 * whatever the rule says. A frame off the known stack (a signal stack, a
 * coroutine's) is left to libunwind; a rule that points off the stack from
 * on it means the registers are not what the CFI expects, and the walk ends
 * there.
 */
SP_SIGSAFE static enum sp_step sp_fast_step(struct sp_walk *w, const struct sp_cfi_rule *r,
					    const struct sp_thread *t)
{
	if (!t || !t->stack_hi || w->sp < t->stack_lo || w->sp >= t->stack_hi)
		return SP_STEP_SLOW;
	uintptr_t cfa = (r->cfa_reg ? w->regs[r->cfa_reg - 1] : w->sp) + (intptr_t)r->cfa_off;
	uintptr_t top = t->stack_hi - sizeof(uintptr_t);
	uintptr_t low = w->sp - SP_RED_ZONE;
	if (low < t->stack_lo)
		low = t->stack_lo;
	/* the return address at CFA - 8, the saved registers under it */
	if (cfa <= w->sp || cfa - 8 < low || cfa - 8 > top)
		return SP_STEP_ERR;
	uintptr_t regs[SP_CFI_REGS];
	for (int i = 0; i < SP_CFI_REGS; i++) {
		regs[i] = w->regs[i];
		if (!r->saved[i])
			continue;
		uintptr_t at = cfa - 8 * (uintptr_t)r->saved[i];
		if (at < low)
			return SP_STEP_ERR;
		regs[i] = sp_stack_word(at);
	}
	uintptr_t ra = sp_stack_word(cfa - 8);
	if (!ra)
		return SP_STEP_END;
	w->ip = ra;
	w->sp = cfa;
	memcpy(w->regs, regs, sizeof(regs));
	w->exact = false;
	return SP_STEP_OK;
}

/*
 * One step by libunwind from w. The leaf starts from the signal's own
 * context; any other frame from a copy of it with rip, rsp and the
 * callee-saved registers of w (the caller-saved ones are dead there).
 * signal: the frame is a signal trampoline's, so its caller's ip is exact.
 * 1 stepped, 0 end of stack, < 0 error. Not inlined: the walk's loop stays
 * free of libunwind's calls through pointers (sigsafe.h).
 */
SP_SIGSAFE static __attribute__((noinline)) int sp_slow_step(struct sp_walk *w, ucontext_t *uc,
							     bool signal)
{
	unw_cursor_t c;
	ucontext_t scratch;
	ucontext_t *from = uc;
	if (!sp_unw.handle)
		return -ENOSYS;
	if ((uintptr_t)uc->uc_mcontext.gregs[REG_RIP] != w->ip ||
	    (uintptr_t)uc->uc_mcontext.gregs[REG_RSP] != w->sp) {
		memcpy(&scratch, uc, sizeof(scratch));
		scratch.uc_mcontext.gregs[REG_RIP] = (greg_t)w->ip;
		scratch.uc_mcontext.gregs[REG_RSP] = (greg_t)w->sp;
		for (int i = 0; i < SP_CFI_REGS; i++)
			scratch.uc_mcontext.gregs[sp_greg[i]] = (greg_t)w->regs[i];
		from = &scratch;
	}
	if (sp_unw.init_local2(&c, (unw_context_t *)from, w->exact ? UNW_INIT_SIGNAL_FRAME : 0) < 0)
		return -EINVAL;
	int r = sp_unw.step(&c);
	if (r <= 0)
		return r;
	unw_word_t ip = 0, sp = 0;
	if (sp_unw.get_reg(&c, UNW_REG_IP, &ip) < 0 || sp_unw.get_reg(&c, UNW_REG_SP, &sp) < 0)
		return -EINVAL;
	if (!ip)
		return 0;
	for (int i = 0; i < SP_CFI_REGS; i++) {
		unw_word_t v;
		if (sp_unw.get_reg(&c, sp_unw_reg[i], &v) == 0)
			w->regs[i] = v;
	}
	w->ip = ip;
	w->sp = sp;
	w->exact = signal;
	return 1;
}

/* The rule for addr in module m: from the cache, else read and cached. */
SP_SIGSAFE static void sp_rule(const struct sp_modsnap *s, const struct sp_mod *m, uintptr_t addr,
			       struct sp_cfi_rule *r)
{
	uint64_t packed = sp_rulecache_get(addr, s->epoch);
	if (packed) {
		sp_cfi_unpack(packed, r);
		return;
	}
	sp_cfi_find(&m->cfi, addr, r);
	sp_rulecache_put(addr, s->epoch, sp_cfi_pack(r));
}

/*
 * What one walk learnt about a code address: its module and rule. A stack
 * that recurses, or that enters the same code again further out (an
 * interpreter's eval loop for each call from C, torch's module calls),
 * meets the same return addresses many times: the memo answers those
 * without the module search and the rule cache, whose lines a program
 * running between samples has evicted. For this walk only (the snapshot
 * it holds does not change under it).
 */
#define SP_WALK_MEMO 16

struct sp_walk_memo {
	uintptr_t addr;
	const struct sp_mod *m;
	struct sp_cfi_rule r;
};

SP_SIGSAFE static size_t sp_unwind_cached(ucontext_t *uc, uint64_t *pcs, uint64_t *sps, size_t max,
					  uint32_t *flags, struct sp_unwind_count *cnt)
{
	const struct sp_modsnap *snap = sp_modules_current();
	const struct sp_thread *t = sp_self;
	struct sp_walk w = {
	    .ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP],
	    .sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP],
	    .exact = true,
	};
	for (int i = 0; i < SP_CFI_REGS; i++)
		w.regs[i] = (uintptr_t)uc->uc_mcontext.gregs[sp_greg[i]];
	size_t n = 0;
	int scans = 0;
	struct sp_walk_memo memo[SP_WALK_MEMO];
	memset(memo, 0, sizeof(memo)); /* address 0 is in no module, as the zeroed entry says */
	const struct sp_xrange *near = NULL;
	for (;;) {
		if (n && w.ip < SP_MIN_CODE) {
			*flags |= SP_STACK_UNWIND_ERR;
			break;
		}
		if (n == max) {
			*flags |= SP_STACK_TRUNCATED;
			break;
		}
		if (sps)
			sps[n] = w.sp;
		pcs[n++] = w.ip;
		uintptr_t addr = w.exact ? w.ip : w.ip - 1;
		struct sp_walk_memo *me = &memo[(addr ^ addr >> 6) % SP_WALK_MEMO];
		if (me->addr != addr) {
			me->addr = addr;
			me->m = sp_modsnap_text_near(snap, addr, &near);
			me->r = (struct sp_cfi_rule){.kind = SP_CFI_SLOW};
			if (me->m)
				sp_rule(snap, me->m, addr, &me->r);
		}
		const struct sp_mod *m = me->m;
		struct sp_cfi_rule r = me->r;
		cnt->unknown += !m;
		if (!m && scans < SP_MAX_SCANS) {
			/* JIT or unknown code: find the caller by scanning */
			uintptr_t ra, at;
			scans++;
			if (!sp_scan(w.sp, &ra, &at)) {
				*flags |= SP_STACK_UNWIND_ERR;
				break;
			}
			/* the callee-saved registers are what the JIT code left */
			w.ip = ra;
			w.sp = at + 8;
			w.exact = false;
			*flags |= SP_STACK_JIT_SCAN;
			continue;
		}
		if (!m) {
			/* libunwind would read code at a garbage address: stop here */
			*flags |= SP_STACK_UNWIND_ERR;
			break;
		}
		if (r.kind == SP_CFI_END)
			break;
		enum sp_step st = r.kind == SP_CFI_STEP ? sp_fast_step(&w, &r, t) : SP_STEP_SLOW;
		if (st == SP_STEP_OK) {
			cnt->fast++;
			continue;
		}
		if (st == SP_STEP_SLOW) {
			int s = sp_slow_step(&w, uc, r.signal);
			if (s > 0) {
				cnt->slow++;
				continue;
			}
			if (s == 0)
				break;
		} else if (st == SP_STEP_END) {
			break;
		}
		*flags |= SP_STACK_UNWIND_ERR;
		break;
	}
	return n;
}

void sp_unwind_prefetch(const uint64_t *pcs, size_t n)
{
	const struct sp_modsnap *snap = sp_modules_current();
	if (!snap)
		return;
	for (size_t i = 1; i < n; i++)
		sp_rulecache_prefetch((uintptr_t)pcs[i] - 1, snap->epoch);
}

size_t sp_unwind_signal(void *ucv, uint64_t *pcs, uint64_t *sps, size_t max, uint32_t *flags,
			bool reference, struct sp_unwind_count *cnt)
{
	ucontext_t *uc = ucv;
	if (max == 0) {
		*flags |= SP_STACK_TRUNCATED;
		return 0;
	}
	if (reference)
		return sp_unwind_libunwind(uc, pcs, sps, max, flags, cnt);
	return sp_unwind_cached(uc, pcs, sps, max, flags, cnt);
}
