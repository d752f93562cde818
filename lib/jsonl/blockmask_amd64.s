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

// func blockMasksAVX2(p *byte) (digits, commas, zeros uint64)
// blockMasks with AVX2: the 64 bytes as two 32-byte halves, half the
// instructions of the SSE2 loop.
TEXT ·blockMasksAVX2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ $0x3030303030303030, AX // '0'
	MOVQ AX, X13
	VPBROADCASTQ X13, Y13
	MOVQ $0x0909090909090909, AX // 9
	MOVQ AX, X14
	VPBROADCASTQ X14, Y14
	MOVQ $0x2c2c2c2c2c2c2c2c, AX // ','
	MOVQ AX, X15
	VPBROADCASTQ X15, Y15
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	// digits: min(byte-'0', 9) == byte-'0'
	VPSUBB Y13, Y0, Y2
	VPMINUB Y14, Y2, Y3
	VPCMPEQB Y2, Y3, Y3
	VPMOVMSKB Y3, AX
	VPSUBB Y13, Y1, Y4
	VPMINUB Y14, Y4, Y5
	VPCMPEQB Y4, Y5, Y5
	VPMOVMSKB Y5, BX
	SHLQ $32, BX
	ORQ BX, AX
	MOVQ AX, digits+8(FP)
	// commas
	VPCMPEQB Y15, Y0, Y2
	VPMOVMSKB Y2, AX
	VPCMPEQB Y15, Y1, Y3
	VPMOVMSKB Y3, BX
	SHLQ $32, BX
	ORQ BX, AX
	MOVQ AX, commas+16(FP)
	// zeros
	VPCMPEQB Y13, Y0, Y2
	VPMOVMSKB Y2, AX
	VPCMPEQB Y13, Y1, Y3
	VPMOVMSKB Y3, BX
	SHLQ $32, BX
	ORQ BX, AX
	MOVQ AX, zeros+24(FP)
	VZEROUPPER
	RET
