/*
 * cfi.S - hand-written unwind info for fuzz-cfi's seeds: a signal
 * trampoline (CIE augmentation 'S'), a CFA given by an expression, a return
 * address marked undefined (a thread's outermost frame), rbp kept in
 * another register, and CFA offsets changed by DW_CFA_advance_loc of each
 * width.
 */
	.text
	.globl sp_sigtramp
	.type sp_sigtramp, @function
	.cfi_startproc simple
	.cfi_signal_frame
	.cfi_def_cfa rsp, 160
	.cfi_offset rip, 8
	.cfi_offset rbp, -120
	.cfi_offset rbx, -112
	nop
sp_sigtramp:
	mov $15, %rax
	syscall
	.cfi_endproc
	.size sp_sigtramp, .-sp_sigtramp

	.globl sp_expr
	.type sp_expr, @function
sp_expr:
	.cfi_startproc
	/* DW_CFA_def_cfa_expression: DW_OP_breg7 (rsp) 8; DW_OP_deref */
	.cfi_escape 0x0f, 0x03, 0x77, 0x08, 0x06
	ret
	.cfi_endproc
	.size sp_expr, .-sp_expr

	.globl sp_outermost
	.type sp_outermost, @function
sp_outermost:
	.cfi_startproc
	.cfi_undefined rip
	xor %ebp, %ebp
	call sp_expr
	hlt
	.cfi_endproc
	.size sp_outermost, .-sp_outermost

	.globl sp_regreg
	.type sp_regreg, @function
sp_regreg:
	.cfi_startproc
	mov %rbp, %r11
	.cfi_register rbp, r11
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbx, 0
	pop %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbx
	mov %r11, %rbp
	.cfi_restore rbp
	ret
	.cfi_endproc
	.size sp_regreg, .-sp_regreg

	.globl sp_advance
	.type sp_advance, @function
sp_advance:
	.cfi_startproc
	push %r15
	.cfi_def_cfa_offset 16
	.cfi_offset r15, -16
	.rept 70
	nop
	.endr
	push %r14
	.cfi_def_cfa_offset 24
	.cfi_offset r14, -24
	.rept 300
	nop
	.endr
	push %r13
	.cfi_def_cfa_offset 32
	.cfi_offset r13, -32
	.rept 70000
	nop
	.endr
	sub $0x400000, %rsp
	.cfi_def_cfa_offset 0x400020
	add $0x400000, %rsp
	.cfi_def_cfa_offset 32
	pop %r13
	.cfi_def_cfa_offset 24
	pop %r14
	.cfi_def_cfa_offset 16
	pop %r15
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size sp_advance, .-sp_advance
	.section .note.GNU-stack,"",@progbits
