/*
 * hosted/start.S - process entry for the hosted (Linux) image.
 * At _start, (%rsp) = argc, 8(%rsp) = argv[0], ...
 */
	.section .text._start, "ax", @progbits
	.globl _start
	.type _start, @function
_start:
	xorl	%ebp, %ebp
	movq	(%rsp), %rdi		/* argc */
	leaq	8(%rsp), %rsi		/* argv */
	andq	$-16, %rsp
	call	hosted_entry
1:	hlt
	jmp	1b
	.size _start, . - _start

	.section .note.GNU-stack, "", @progbits
