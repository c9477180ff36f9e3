/*
 * sigstack.c - the handler's own stack (sigstack.h), the handler's entry in
 * assembly, and the program's sigaltstack().
 */
#include "sampler/capture/sigstack.h"
#include "sampler/capture/handler.h"
#include "sampler/core/sampler.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* This thread's region [lo, hi), 0 when it has none: read by the entry. */
__attribute__((visibility("hidden"))) __thread uintptr_t sp_sigstack_lo SP_TLS;
__attribute__((visibility("hidden"))) __thread uintptr_t sp_sigstack_hi SP_TLS;
/* The kernel tid of the thread this TLS block belongs to, 0 when it has no
 * slot: a thread made by a raw clone() without CLONE_SETTLS runs on
 * another thread's TLS, and this tells it apart (the entry, below). */
__attribute__((visibility("hidden"))) __thread int32_t sp_sigstack_tid SP_TLS;
/* The region is this thread's alternate signal stack (the program has none). */
static __thread int sp_altstack_ours SP_TLS;

static size_t sp_page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

SP_SIGSAFE static int sp_sys_sigaltstack(const stack_t *ss, stack_t *old)
{
	return (int)syscall(SYS_sigaltstack, ss, old);
}

static void sp_register(void)
{
	stack_t ss = {.ss_sp = (void *)sp_sigstack_lo, .ss_size = SP_SIGSTACK_SIZE, .ss_flags = 0};
	sp_altstack_ours = sp_sigstack_lo && sp_sys_sigaltstack(&ss, NULL) == 0;
}

int sp_sigstack_attach(struct sp_thread *t)
{
	sp_sigstack_tid = t->tid; /* with or without a region */
	if (!t->sigstack) {
		size_t page = sp_page();
		void *p = mmap(NULL, SP_SIGSTACK_SIZE + page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return -errno;
		/* a guard page: an overflow is a crash of ours, never a write
		 * into whatever lies below */
		if (mprotect(p, page, PROT_NONE) < 0) {
			int e = errno;
			munmap(p, SP_SIGSTACK_SIZE + page);
			return -e;
		}
		t->sigstack = (uint8_t *)p + page;
	}
	sp_sigstack_lo = (uintptr_t)t->sigstack;
	sp_sigstack_hi = sp_sigstack_lo + SP_SIGSTACK_SIZE;
	stack_t cur;
	if (sp_sys_sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE))
		sp_register();
	return 0;
}

void sp_sigstack_detach(struct sp_thread *t)
{
	if (sp_altstack_ours) {
		stack_t off = {.ss_flags = SS_DISABLE};
		sp_sys_sigaltstack(&off, NULL);
		sp_altstack_ours = 0;
	}
	sp_sigstack_lo = sp_sigstack_hi = 0;
	sp_sigstack_tid = 0;
}

size_t sp_sigstack_used(const struct sp_thread *t)
{
	size_t page = sp_page(), n = SP_SIGSTACK_SIZE / page;
	unsigned char vec[SP_SIGSTACK_SIZE / 4096];
	if (!t->sigstack || n > sizeof(vec) || mincore(t->sigstack, SP_SIGSTACK_SIZE, vec) < 0)
		return 0;
	/* the stack grows down from the top: the lowest page touched */
	for (size_t i = 0; i < n; i++)
		if (vec[i] & 1)
			return (n - i) * page;
	return 0;
}

void sp_sigstack_reset(struct sp_thread *t)
{
	if (t->sigstack)
		madvise(t->sigstack, SP_SIGSTACK_SIZE, MADV_DONTNEED);
}

/*
 * The program's sigaltstack(). While the region is the thread's alternate
 * stack, the program has none: a query says so, disabling is a no-op, and
 * a stack it sets replaces the region. When it disables a stack of its
 * own, the region takes the place again.
 */
SP_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	if (!sp_altstack_ours) {
		int rc = sp_sys_sigaltstack(ss, old);
		/* never another thread's region: the entry trusts a frame on
		 * the region to be its owner's */
		if (rc == 0 && ss && (ss->ss_flags & SS_DISABLE) && sp_sigstack_lo &&
		    syscall(SYS_gettid) == sp_sigstack_tid)
			sp_register();
		return rc;
	}
	if (old) {
		memset(old, 0, sizeof(*old));
		old->ss_flags = SS_DISABLE;
	}
	if (!ss || (ss->ss_flags & SS_DISABLE))
		return 0;
	int rc = sp_sys_sigaltstack(ss, NULL);
	if (rc == 0)
		sp_altstack_ours = 0;
	return rc;
}

/* Calls fn(sig, si, uc) with the stack pointer at top (aligned down to 16). */
SP_SIGSAFE __attribute__((visibility("hidden"))) void
sp_call_on_stack(uintptr_t top, void (*fn)(int, siginfo_t *, void *), int sig, siginfo_t *si,
		 void *uc);

SP_SIGSAFE static int sp_within(uintptr_t a, uintptr_t lo, size_t len)
{
	return a >= lo && a - lo < len;
}

void sp_sigstack_call_program(void (*fn)(int, siginfo_t *, void *), int sig, siginfo_t *si,
			      void *uc, int onstack)
{
	/* the kernel entered the handler with the stack pointer at its frame:
	 * the return address to its restorer, then the ucontext */
	uintptr_t entry = (uintptr_t)uc - sizeof(void *);
	uintptr_t rsp = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RSP];
	stack_t cur;
	int prog_alt = !sp_altstack_ours && sp_sys_sigaltstack(NULL, &cur) == 0 &&
		       !(cur.ss_flags & SS_DISABLE);
	int on_ours = sp_within(entry, sp_sigstack_lo, SP_SIGSTACK_SIZE);
	int on_prog_alt = prog_alt && sp_within(entry, (uintptr_t)cur.ss_sp, cur.ss_size);
	uintptr_t top;
	if ((onstack && prog_alt) || (!on_ours && !on_prog_alt))
		top = entry; /* where the kernel put its frame for us is where it would have for the
				program */
	else
		top = rsp - 128; /* below the interrupted code's red zone */
	sp_call_on_stack(top, fn, sig, si, uc);
}

_Static_assert(SYS_gettid == 186, "the entry's system call number");

/*
 * The handler's entry. On the region already (the kernel used it as the
 * alternate stack, or a handler of the program's running on it was
 * interrupted): go straight on. Only the region's thread can be there:
 * the kernel gives a clone(CLONE_VM) no alternate stack, and sigaltstack()
 * never registers another thread's region. Elsewhere, the TLS may be
 * another thread's (a raw clone() without CLONE_SETTLS shares its
 * creator's, slot and region with it): the kernel's tid tells, at the cost
 * of a system call that a thread with the region as its alternate stack
 * (the usual case) never pays. Not the TLS's thread: sp_handler_foreign,
 * on the stack the kernel chose, touching nothing of the TLS. Its own:
 * keep the entry stack pointer in rbp, move to the region's top (none: stay),
 * run the handler there, come back. CFI describes both, so an unwinder (a
 * forced unwind for a thread cancelled as the handler returns) can walk
 * through it. rdi, rsi and rdx (the handler's arguments) survive the
 * syscall, which clobbers rax, rcx and r11 only.
 */
__asm__(".text\n"
	".globl sp_handler\n"
	".hidden sp_handler\n"
	".type sp_handler, @function\n"
	"sp_handler:\n"
	"	.cfi_startproc\n"
	"	movq sp_sigstack_hi@gottpoff(%rip), %rax\n"
	"	movq %fs:(%rax), %rax\n"
	"	testq %rax, %rax\n"
	"	jz 3f\n"
	"	movq sp_sigstack_lo@gottpoff(%rip), %rcx\n"
	"	movq %fs:(%rcx), %rcx\n"
	"	cmpq %rcx, %rsp\n"
	"	jb 3f\n"
	"	cmpq %rax, %rsp\n"
	"	jb 1f\n"
	"3:	movl $186, %eax\n" /* SYS_gettid */
	"	syscall\n"
	"	movq sp_sigstack_tid@gottpoff(%rip), %rcx\n"
	"	cmpl %fs:(%rcx), %eax\n"
	"	jne sp_handler_foreign\n"
	"	movq sp_sigstack_hi@gottpoff(%rip), %rax\n"
	"	movq %fs:(%rax), %rax\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	pushq %rbp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rbp, 0\n"
	"	movq %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	movq %rax, %rsp\n"
	"	call sp_handler_body\n"
	"	movq %rbp, %rsp\n"
	"	.cfi_def_cfa_register %rsp\n"
	"	popq %rbp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbp\n"
	"	ret\n"
	"1:	jmp sp_handler_body\n"
	"	.cfi_endproc\n"
	".size sp_handler, .-sp_handler\n"
	"\n"
	".globl sp_call_on_stack\n"
	".hidden sp_call_on_stack\n"
	".type sp_call_on_stack, @function\n"
	"sp_call_on_stack:\n"
	"	.cfi_startproc\n"
	"	pushq %rbp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rbp, 0\n"
	"	movq %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	andq $-16, %rdi\n"
	"	movq %rdi, %rsp\n"
	"	movq %rsi, %rax\n"
	"	movl %edx, %edi\n"
	"	movq %rcx, %rsi\n"
	"	movq %r8, %rdx\n"
	"	call *%rax\n"
	"	movq %rbp, %rsp\n"
	"	.cfi_def_cfa_register %rsp\n"
	"	popq %rbp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbp\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size sp_call_on_stack, .-sp_call_on_stack\n");
