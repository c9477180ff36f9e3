#include "unwind.h"
#include "modules.h"
#include "profile.h"
#include "sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <string.h>
#include <ucontext.h>

/* The scan gives up after this many words: deeper than any JIT kernel's frame. */
#define SP_SCAN_WORDS 4096
/* At most this many scans per stack, to bound the handler's time. */
#define SP_MAX_SCANS 8

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
	if (sp_unw.set_caching_policy)
		sp_unw.set_caching_policy(*sp_unw.local_as, UNW_CACHE_NONE);
	sp_unw.handle = h;
	sp_unwind_warm();
	return 0;
}

void sp_unwind_warm(void)
{
	if (!sp_unw.handle)
		return;
	ucontext_t uc;
	unw_cursor_t c;
	if (getcontext(&uc) < 0 || sp_unw.init_local2(&c, (unw_context_t *)&uc, 0) < 0)
		return;
	for (int i = 0; i < 64 && sp_unw.step(&c) > 0; i++)
		;
}

/* Whether the bytes before ra encode a call: the test that makes a stack word a return address. */
static bool sp_follows_call(uintptr_t ra)
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
 * From a frame without unwind info, finds the caller by scanning the stack
 * upward from sp and restarts the cursor there. The callee-saved registers
 * are carried over as the cursor knows them: the caller's CFI restores the
 * ones it saved, and the rest are what the JIT code left.
 */
static bool sp_scan_restart(unw_cursor_t *c, ucontext_t *uc, uintptr_t sp)
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
		if (!sp_modules_is_text(v) || !sp_follows_call(v))
			continue;
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
	return false;
}

size_t sp_unwind_signal(void *ucv, uint64_t *pcs, size_t max, uint32_t *flags)
{
	ucontext_t *uc = ucv;
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	if (!sp_unw.handle || max == 0) {
		pcs[0] = pc;
		*flags |= SP_STACK_UNWIND_ERR;
		return 1;
	}
	unw_cursor_t c;
	/* a private copy: the scan rewrites registers, the kernel's uc is the target's */
	ucontext_t scratch;
	size_t n = 0;
	int scans = 0;
	if (sp_unw.init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0) {
		pcs[0] = pc;
		*flags |= SP_STACK_UNWIND_ERR;
		return 1;
	}
	for (;;) {
		unw_word_t ip = 0, sp = 0;
		sp_unw.get_reg(&c, UNW_REG_IP, &ip);
		sp_unw.get_reg(&c, UNW_REG_SP, &sp);
		if (n == max) {
			*flags |= SP_STACK_TRUNCATED;
			break;
		}
		pcs[n++] = ip;
		if (!sp_modules_is_text(ip) && scans < SP_MAX_SCANS) {
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
		if (r > 0)
			continue;
		if (r < 0)
			*flags |= SP_STACK_UNWIND_ERR;
		break;
	}
	return n ? n : 1;
}
