// AVX2 decode attention: the weighted sum of a run of value rows into up
// to four query heads' outputs, sixteen columns at a time. A pass holds
// four heads' sixteen columns in eight accumulators (Y0-Y7, head r in
// Y(2r) and Y(2r+1)) over the whole run; each position loads that part of
// its value row once (Y8, Y9, converted from binary16 as loaded) and
// meets each head's weight (broadcast into Y10).

#include "textflag.h"

#define VLDY_F32(off, y) VMOVUPS off(AX), y
#define VLDY_F16(off, y) VCVTPH2PS off(AX), y

// A value row's byte offset from an output row's: the same for f32
// values, half for binary16 ones.
#define TOV_F32
#define TOV_F16 SHRQ $1, AX

// AHEADY(p, a, b) adds the weight at (p)(BX*1) times the value vectors to
// one head's accumulators.
#define AHEADY(p, a, b) \
	VBROADCASTSS (p)(BX*1), Y10 \
	VFMADD231PS Y8, Y10, a \
	VFMADD231PS Y9, Y10, b

// ACCY(VLD, ws, TOV) is the body of attnAccF32Y and attnAccF16Y, for
// values of ws bytes; TOV turns AX from a byte offset into the outputs'
// rows into one into the value rows.
#define ACCY(VLD, ws, TOV) \
	MOVQ out+0(FP), DI \
	MOVQ ldo+8(FP), DX \
	MOVQ p+16(FP), SI \
	MOVQ ldp+24(FP), R14 \
	MOVQ rows+32(FP), CX \
	MOVQ DI, R8 \
	MOVQ DI, R9 \
	MOVQ DI, R10 \
	MOVQ SI, R11 \
	MOVQ SI, R12 \
	MOVQ SI, R13 \
	CMPQ CX, $2 \
	JLT  rset \
	ADDQ DX, R8 \
	ADDQ R14, R11 \
	MOVQ R8, R9 \
	MOVQ R8, R10 \
	MOVQ R11, R12 \
	MOVQ R11, R13 \
	CMPQ CX, $3 \
	JLT  rset \
	ADDQ DX, R9 \
	ADDQ R14, R12 \
	MOVQ R9, R10 \
	MOVQ R12, R13 \
	CMPQ CX, $4 \
	JLT  rset \
	ADDQ DX, R10 \
	ADDQ R14, R13 \
rset: \
	MOVQ ldv+48(FP), DX \
	MOVQ cols+64(FP), R14 \
	TESTQ R14, R14 \
	JLE  done \
pass: \
	VMOVUPS (DI), Y0; VMOVUPS 32(DI), Y1 \
	VMOVUPS (R8), Y2; VMOVUPS 32(R8), Y3 \
	VMOVUPS (R9), Y4; VMOVUPS 32(R9), Y5 \
	VMOVUPS (R10), Y6; VMOVUPS 32(R10), Y7 \
	MOVQ DI, AX \
	SUBQ out+0(FP), AX \
	TOV \
	ADDQ v+40(FP), AX \
	MOVQ n+56(FP), CX \
	XORQ BX, BX \
	TESTQ CX, CX \
	JZ   store \
loop: \
	VLD(0, Y8) \
	VLD(8*ws, Y9) \
	AHEADY(SI, Y0, Y1) \
	AHEADY(R11, Y2, Y3) \
	AHEADY(R12, Y4, Y5) \
	AHEADY(R13, Y6, Y7) \
	ADDQ DX, AX \
	ADDQ $4, BX \
	DECQ CX \
	JNZ  loop \
store: \
	MOVQ rows+32(FP), CX \
	VMOVUPS Y0, (DI); VMOVUPS Y1, 32(DI) \
	CMPQ CX, $2 \
	JLT  next \
	VMOVUPS Y2, (R8); VMOVUPS Y3, 32(R8) \
	CMPQ CX, $3 \
	JLT  next \
	VMOVUPS Y4, (R9); VMOVUPS Y5, 32(R9) \
	CMPQ CX, $4 \
	JLT  next \
	VMOVUPS Y6, (R10); VMOVUPS Y7, 32(R10) \
next: \
	ADDQ $64, DI \
	ADDQ $64, R8 \
	ADDQ $64, R9 \
	ADDQ $64, R10 \
	SUBQ $16, R14 \
	JG   pass \
done: \
	VZEROUPPER \
	RET

// func attnAccF32Y(out *float32, ldo int, p *float32, ldp int, rows int, v unsafe.Pointer, ldv int, n int, cols int)
//
// For each of rows heads r (at most four; out and p rows ldo and ldp
// bytes apart) and each of n positions j (value rows ldv bytes apart at
// v): out[r][c] += p[r][j] * v[j][c] for the columns c < cols, a multiple
// of 16.
TEXT ·attnAccF32Y(SB), NOSPLIT, $0-72
	ACCY(VLDY_F32, 4, TOV_F32)

// func attnAccF16Y(out *float32, ldo int, p *float32, ldp int, rows int, v unsafe.Pointer, ldv int, n int, cols int)
TEXT ·attnAccF16Y(SB), NOSPLIT, $0-72
	ACCY(VLDY_F16, 2, TOV_F16)
