/*
 * saferead.c - the guarded copy and the fault handler (saferead.h).
 */
#include "sampler/saferead.h"
#include "sampler/sampler.h"
#include "sampler/signals.h"
#include "sampler/sigshare.h"

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

extern const char sp_safe_copy_begin[], sp_safe_copy_end[], sp_safe_copy_fault[];

/* SIGSEGV and SIGBUS: ours when they come from inside the copy, else the
 * program's. */
static void sp_fault_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	if (pc >= (uintptr_t)sp_safe_copy_begin && pc < (uintptr_t)sp_safe_copy_end &&
	    si->si_code > 0) {
		/* rep movsb is restartable and the fault left rcx/rsi/rdi where
		 * it stopped: resume at the error return */
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)sp_safe_copy_fault;
		atomic_fetch_add_explicit(&sp_faults, 1, memory_order_relaxed);
		return;
	}
	sp_share_forward(sig, si, ucv);
}

int sp_safe_install(void)
{
	sigset_t mask = sp_handler_mask();
	int err = sp_share_install(SIGSEGV, sp_fault_handler, &mask);
	if (!err)
		err = sp_share_install(SIGBUS, sp_fault_handler, &mask);
	return err;
}

unsigned long sp_safe_faults(void)
{
	return atomic_load(&sp_faults);
}
