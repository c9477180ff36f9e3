/*
 * deep.S - tests/fuzz/crashes/symbolize/dwarfidx-deep-nesting: one function
 * with DEPTH nested DW_TAG_lexical_block DIEs (hand-written DWARF 5).
 * See README.md for the commands.
 */
	.text
	.globl _start
	.type _start, @function
_start:
	.rept 16
	nop
	.endr
	ret
	.size _start, .-_start

	.section .debug_abbrev,"",@progbits
	.uleb128 1
	.uleb128 0x11
	.byte 1
	.uleb128 0x13
	.uleb128 0x0b
	.uleb128 0x11
	.uleb128 0x01
	.uleb128 0x12
	.uleb128 0x07
	.byte 0, 0
	.uleb128 2
	.uleb128 0x2e
	.byte 1
	.uleb128 0x03
	.uleb128 0x08
	.uleb128 0x11
	.uleb128 0x01
	.uleb128 0x12
	.uleb128 0x07
	.byte 0, 0
	.uleb128 3
	.uleb128 0x0b
	.byte 1
	.uleb128 0x11
	.uleb128 0x01
	.uleb128 0x12
	.uleb128 0x21
	.sleb128 16
	.byte 0, 0
	.byte 0

	.section .debug_info,"",@progbits
	.long .Lend - .Lstart
.Lstart:
	.short 5
	.byte 1
	.byte 8
	.long 0
	.uleb128 1
	.byte 0x0c
	.quad _start
	.quad 17
	.uleb128 2
	.asciz "deep"
	.quad _start
	.quad 17
	.rept DEPTH
	.uleb128 3
	.quad _start
	.endr
	.rept DEPTH
	.byte 0
	.endr
	.byte 0
	.byte 0
.Lend:
