#include "textflag.h"

// func blockMasksSSE2(p *byte) (digits, commas, zeros uint64)
// The 64 bytes at p, classified with SSE2 (every amd64 has it): bit k of
// each mask is set when byte k is a digit, a ',' or a '0'.
TEXT ·blockMasksSSE2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ $0x3030303030303030, AX // '0'
	MOVQ AX, X13
	PUNPCKLQDQ X13, X13
	MOVQ $0x0909090909090909, AX // 9
	MOVQ AX, X14
	PUNPCKLQDQ X14, X14
	MOVQ $0x2c2c2c2c2c2c2c2c, AX // ','
	MOVQ AX, X15
	PUNPCKLQDQ X15, X15
	XORQ R8, R8 // digits
	XORQ R9, R9 // commas
	XORQ R10, R10 // zeros
	XORQ CX, CX // shift: 0, 16, 32, 48
loop:
	MOVOU (SI), X0
	MOVO X0, X1
	PSUBB X13, X1 // byte - '0': 0...9 for a digit
	MOVO X1, X2
	PMINUB X14, X2
	PCMPEQB X1, X2 // min(byte-'0', 9) == byte-'0': a digit
	PMOVMSKB X2, AX
	SHLQ CX, AX
	ORQ AX, R8
	MOVO X0, X3
	PCMPEQB X15, X3
	PMOVMSKB X3, AX
	SHLQ CX, AX
	ORQ AX, R9
	PCMPEQB X13, X0
	PMOVMSKB X0, AX
	SHLQ CX, AX
	ORQ AX, R10
	ADDQ $16, SI
	ADDQ $16, CX
	CMPQ CX, $64
	JLT loop
	MOVQ R8, digits+8(FP)
	MOVQ R9, commas+16(FP)
	MOVQ R10, zeros+24(FP)
	RET

// The three byte constants, eight of each, that intBlocksAVX2 broadcasts
// from memory.
DATA blockConsts<>+0(SB)/8, $0x3030303030303030 // '0'
DATA blockConsts<>+8(SB)/8, $0x0909090909090909 // 9
DATA blockConsts<>+16(SB)/8, $0x2c2c2c2c2c2c2c2c // ','
GLOBL blockConsts<>(SB), RODATA|NOPTR, $24

// func intBlocksAVX2(b []byte, start uint64, run, commas int) (n int, nstart uint64, nrun, ncommas int)
// intBlocksMasks's loop with AVX2, the whole of it here: a call per block
// (through the ABI wrapper a func value needs) cost about as much as the
// block's classification. Each 64-byte block is classified as two 32-byte
// halves and checked as intBlocksMasks checks it; n is the bytes crossed.
//
// Every vector instruction is VEX-encoded: a legacy SSE one (MOVQ AX, X14)
// after a VEX one has dirtied the upper halves of the Y registers costs a
// state transition, which made the first AVX2 version 13 times slower than
// the SSE2 one (AMD EPYC, 150 MB/s).
//
// Registers: SI the block, CX the bytes left, R11 the bytes crossed, R12
// start as a bit (1: the block begins an element), R13 run, R14 commas;
// AX, BX, DX the block's digits, commas and zeros.
TEXT ·intBlocksAVX2(SB), NOSPLIT, $0-80
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), CX
	MOVQ start+24(FP), R12
	SHRQ $7, R12
	MOVQ run+32(FP), R13
	MOVQ commas+40(FP), R14
	XORQ R11, R11
	VPBROADCASTQ blockConsts<>+0(SB), Y5 // '0'
	VPBROADCASTQ blockConsts<>+8(SB), Y6 // 9
	VPBROADCASTQ blockConsts<>+16(SB), Y7 // ','

loop:
	CMPQ CX, $64
	JLT done
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	// digits: min(byte-'0', 9) == byte-'0'
	VPSUBB Y5, Y0, Y2
	VPMINUB Y6, Y2, Y3
	VPCMPEQB Y2, Y3, Y3
	VPMOVMSKB Y3, AX
	VPSUBB Y5, Y1, Y2
	VPMINUB Y6, Y2, Y3
	VPCMPEQB Y2, Y3, Y3
	VPMOVMSKB Y3, R8
	SHLQ $32, R8
	ORQ R8, AX
	// commas
	VPCMPEQB Y7, Y0, Y2
	VPMOVMSKB Y2, BX
	VPCMPEQB Y7, Y1, Y3
	VPMOVMSKB Y3, R8
	SHLQ $32, R8
	ORQ R8, BX
	// only digits and commas: then ^digits == commas
	MOVQ AX, R8
	ORQ BX, R8
	CMPQ R8, $-1
	JNE done
	// zeros
	VPCMPEQB Y5, Y0, Y2
	VPMOVMSKB Y2, DX
	VPCMPEQB Y5, Y1, Y3
	VPMOVMSKB Y3, R8
	SHLQ $32, R8
	ORQ R8, DX
	// R9: the bytes that begin an element; one that is a comma is an
	// empty element
	MOVQ BX, R9
	SHLQ $1, R9
	ORQ R12, R9
	TESTQ BX, R9
	JNZ done
	// a '0' that begins an element and is followed by a digit (or by
	// the next block, unseen yet)
	MOVQ AX, R10
	SHRQ $1, R10
	BTSQ $63, R10
	ANDQ DX, R10
	TESTQ R9, R10
	JNZ done
	// 10 digits in a row: r2 = d&d>>1, r8 = r4&r4>>4 with r4 = r2&r2>>2,
	// 10 in a row where r8&r2>>8
	MOVQ AX, R8
	SHRQ $1, R8
	ANDQ AX, R8
	MOVQ R8, R9
	SHRQ $2, R9
	ANDQ R8, R9
	MOVQ R9, R10
	SHRQ $4, R10
	ANDQ R10, R9
	SHRQ $8, R8
	TESTQ R8, R9
	JNZ done
	// the digits before the first comma continue the run before the
	// block (commas is not 0: 64 digits hold 10 in a row)
	BSFQ BX, R8
	ADDQ R13, R8
	CMPQ R8, $9
	JGT done
	// the block is well formed: count its commas; the next block
	// begins an element when this one ends with a comma, and its run
	// is the digits after the last comma
	POPCNTQ BX, R8
	ADDQ R8, R14
	MOVQ BX, R12
	SHRQ $63, R12
	BSRQ BX, R8
	MOVQ $63, R13
	SUBQ R8, R13
	ADDQ $64, SI
	ADDQ $64, R11
	SUBQ $64, CX
	JMP loop

done:
	VZEROUPPER
	MOVQ R11, n+48(FP)
	SHLQ $7, R12
	MOVQ R12, nstart+56(FP)
	MOVQ R13, nrun+64(FP)
	MOVQ R14, ncommas+72(FP)
	RET
