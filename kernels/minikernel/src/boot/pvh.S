/*
 * boot/pvh.S - PVH entry point for QEMU (-kernel kernel.elf).
 *
 * QEMU finds the XEN_ELFNOTE_PHYS32_ENTRY note below and enters pvh_start32
 * in 32-bit protected mode (flat segments, paging off) with %ebx holding the
 * physical address of struct hvm_start_info.  We zero .bss, build identity
 * page tables for the first 1 GiB (2 MiB pages), enter long mode, set up a
 * stack and call kmain().
 */
#define XEN_ELFNOTE_PHYS32_ENTRY 18

	.section .note.Xen, "a", @note
	.balign 4
	.long 4				/* namesz: "Xen\0" */
	.long 8				/* descsz */
	.long XEN_ELFNOTE_PHYS32_ENTRY
	.asciz "Xen"
	.balign 4
	.quad pvh_start32
	.balign 4

	.section .text.pvh_start32, "ax", @progbits
	.code32
	.globl pvh_start32
	.type pvh_start32, @function
pvh_start32:
	cli
	cld
	movl	%ebx, %esi

	/* zero .bss (QEMU already does, but do not rely on it) */
	movl	$__lb_bss_units, %edi
	movl	$__lb_image_end, %ecx
	subl	%edi, %ecx
	xorl	%eax, %eax
	rep stosb

	movl	%esi, pvh_start_info_paddr

	/* PML4[0] -> PDPT, PDPT[0] -> PD, PD[i] -> i * 2 MiB */
	movl	$pvh_pdpt, %eax
	orl	$0x3, %eax
	movl	%eax, pvh_pml4
	movl	$pvh_pd, %eax
	orl	$0x3, %eax
	movl	%eax, pvh_pdpt
	movl	$pvh_pd, %edi
	movl	$0x83, %eax		/* present, writable, 2 MiB page */
	movl	$512, %ecx
1:	movl	%eax, (%edi)
	movl	$0, 4(%edi)
	addl	$0x200000, %eax
	addl	$8, %edi
	decl	%ecx
	jnz	1b

	movl	%cr4, %eax
	orl	$0x20, %eax		/* PAE */
	movl	%eax, %cr4
	movl	$pvh_pml4, %eax
	movl	%eax, %cr3
	movl	$0xc0000080, %ecx	/* EFER */
	rdmsr
	orl	$0x100, %eax		/* LME */
	wrmsr
	lgdt	pvh_gdt_desc
	movl	%cr0, %eax
	orl	$0x80000001, %eax	/* PG | PE */
	movl	%eax, %cr0
	ljmp	$0x08, $pvh_start64
	.size pvh_start32, . - pvh_start32

	.section .text.pvh_start64, "ax", @progbits
	.code64
	.type pvh_start64, @function
pvh_start64:
	movl	$0x10, %eax
	movl	%eax, %ds
	movl	%eax, %es
	movl	%eax, %ss
	movl	%eax, %fs
	movl	%eax, %gs
	movq	$pvh_stack_top, %rsp
	xorl	%ebp, %ebp
	call	kmain
2:	cli
	hlt
	jmp	2b
	.size pvh_start64, . - pvh_start64

	.section .data.pvh_gdt, "aw", @progbits
	.balign 16
pvh_gdt:
	.quad	0
	.quad	0x00af9a000000ffff	/* 0x08: 64-bit code */
	.quad	0x00cf92000000ffff	/* 0x10: data */
pvh_gdt_end:
	.balign 8
pvh_gdt_desc:
	.word	pvh_gdt_end - pvh_gdt - 1
	.long	pvh_gdt
	.long	0

	.section .bss.pvh_pagetables, "aw", @nobits
	.balign 4096
pvh_pml4:
	.skip 4096
pvh_pdpt:
	.skip 4096
pvh_pd:
	.skip 4096

	.section .bss.pvh_stack, "aw", @nobits
	.balign 64
pvh_stack:
	.skip 65536
pvh_stack_top:

	.section .note.GNU-stack, "", @progbits
