/*
 * saferead.c - the guarded copy, and finding a guarded read from its
 * fault (saferead.h).
 */
#include "sampler/base/saferead.h"

#include <stdatomic.h>
#include <ucontext.h>

static _Atomic unsigned long sp_faults;

/* The copy: rep movsb between two labels; a fault there lands on the third. */
__asm__(".text\n"
	".globl sp_safe_copy\n"
	".hidden sp_safe_copy\n"
	".type sp_safe_copy, @function\n"
	"sp_safe_copy:\n"
	"	.cfi_startproc\n"
	"	movq %rdx, %rcx\n"
	"	xorl %eax, %eax\n"
	".globl sp_safe_copy_begin\n"
	".hidden sp_safe_copy_begin\n"
	"sp_safe_copy_begin:\n"
	"	rep movsb\n"
	".globl sp_safe_copy_end\n"
	".hidden sp_safe_copy_end\n"
	"sp_safe_copy_end:\n"
	"	ret\n"
	".globl sp_safe_copy_fault\n"
	".hidden sp_safe_copy_fault\n"
	"sp_safe_copy_fault:\n"
	"	movl $-1, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size sp_safe_copy, .-sp_safe_copy\n");

/* The load: one instruction at a label; a fault there lands on the next. */
__asm__(".text\n"
	".globl sp_safe_word\n"
	".hidden sp_safe_word\n"
	".type sp_safe_word, @function\n"
	"sp_safe_word:\n"
	"	.cfi_startproc\n"
	"	xorl %edx, %edx\n"
	".globl sp_safe_word_load\n"
	".hidden sp_safe_word_load\n"
	"sp_safe_word_load:\n"
	"	movq (%rdi), %rax\n"
	"	ret\n"
	".globl sp_safe_word_fault\n"
	".hidden sp_safe_word_fault\n"
	"sp_safe_word_fault:\n"
	"	xorl %eax, %eax\n"
	"	movl $1, %edx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size sp_safe_word, .-sp_safe_word\n");

extern const char sp_safe_copy_begin[], sp_safe_copy_end[], sp_safe_copy_fault[];
extern const char sp_safe_word_load[], sp_safe_word_fault[];

/* Where a fault at pc resumes: 0 if pc is not a guarded read. */
SP_SIGSAFE static uintptr_t sp_safe_landing(uintptr_t pc)
{
	if (pc >= (uintptr_t)sp_safe_copy_begin && pc < (uintptr_t)sp_safe_copy_end)
		return (uintptr_t)sp_safe_copy_fault;
	if (pc == (uintptr_t)sp_safe_word_load)
		return (uintptr_t)sp_safe_word_fault;
	return 0;
}

bool sp_safe_resume(const siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	/* si_code > 0: a fault the kernel raised, not a kill() or raise() */
	if (si->si_code <= 0)
		return false;
	uintptr_t to = sp_safe_landing((uintptr_t)uc->uc_mcontext.gregs[REG_RIP]);
	if (!to)
		return false;
	/* rep movsb is restartable and the load had no effect: go on at the
	 * error return, with the registers as the fault left them */
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)to;
	atomic_fetch_add_explicit(&sp_faults, 1, memory_order_relaxed);
	return true;
}

unsigned long sp_safe_faults(void)
{
	return atomic_load(&sp_faults);
}
