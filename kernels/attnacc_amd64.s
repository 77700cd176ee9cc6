// Decode attention's weighted sums of a run of value rows into up to
// four query heads' outputs, at the avx512 and avx2 levels.
//
// AVX-512: the 64 output columns of a call for four heads are sixteen
// accumulators (Z0-Z15, head r in Z(4r)..Z(4r+3)) held across the whole
// run; each position loads its value row once (Z16-Z19, converted from
// binary16 as loaded) and meets each head's weight (broadcast into Z20).
// K1-K4 mask the four vectors' lanes, so a head dimension need not fill
// all 64 columns; lanes outside the mask are neither read nor written.
//
// AVX2: a pass holds four heads' sixteen columns in eight accumulators
// (Y0-Y7, head r in Y(2r) and Y(2r+1)) over the whole run; each position
// loads that part of its value row once (Y8, Y9) and meets each head's
// weight (broadcast into Y10); the passes walk the head dimension, a
// multiple of 16.

#include "textflag.h"

// ROWS sets the row pointers of the call's heads (rows of at most four,
// in CX) from its arguments out and p, ldo (DX) and ldp (R14) bytes
// apart: outputs in DI, R8, R9, R10, weights in SI, R11, R12, R13; a
// missing head repeats the last one there is (its sums are not stored).
#define ROWS \
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
rset:

#define VLD_F32(off, k, z) VMOVUPS.Z off(AX), k, z
#define VLD_F16(off, k, z) VCVTPH2PS.Z off(AX), k, z

// ACCLOAD(p, a, b, c, d) loads the four masked output vectors at p.
#define ACCLOAD(p, a, b, c, d) \
	VMOVUPS.Z (p), K1, a \
	VMOVUPS.Z 64(p), K2, b \
	VMOVUPS.Z 128(p), K3, c \
	VMOVUPS.Z 192(p), K4, d

#define ACCSTORE(p, a, b, c, d) \
	VMOVUPS a, K1, (p) \
	VMOVUPS b, K2, 64(p) \
	VMOVUPS c, K3, 128(p) \
	VMOVUPS d, K4, 192(p)

// AHEAD(p, a, b, c, d) adds the weight at (p)(BX*1) times the value row
// to one head's accumulators.
#define AHEAD(p, a, b, c, d) \
	VBROADCASTSS (p)(BX*1), Z20 \
	VFMADD231PS Z16, Z20, a \
	VFMADD231PS Z17, Z20, b \
	VFMADD231PS Z18, Z20, c \
	VFMADD231PS Z19, Z20, d

// ACC(VLD, ws) is the body of attnAccF32Z and attnAccF16Z, for values of
// ws bytes.
#define ACC(VLD, ws) \
	MOVQ mask+64(FP), AX \
	KMOVW AX, K1 \
	SHRQ $16, AX \
	KMOVW AX, K2 \
	SHRQ $16, AX \
	KMOVW AX, K3 \
	SHRQ $16, AX \
	KMOVW AX, K4 \
	ROWS \
	ACCLOAD(DI, Z0, Z1, Z2, Z3) \
	ACCLOAD(R8, Z4, Z5, Z6, Z7) \
	ACCLOAD(R9, Z8, Z9, Z10, Z11) \
	ACCLOAD(R10, Z12, Z13, Z14, Z15) \
	MOVQ v+40(FP), AX \
	MOVQ ldv+48(FP), DX \
	MOVQ n+56(FP), CX \
	XORQ BX, BX \
	TESTQ CX, CX \
	JZ   store \
loop: \
	VLD(0, K1, Z16) \
	VLD(16*ws, K2, Z17) \
	VLD(32*ws, K3, Z18) \
	VLD(48*ws, K4, Z19) \
	AHEAD(SI, Z0, Z1, Z2, Z3) \
	AHEAD(R11, Z4, Z5, Z6, Z7) \
	AHEAD(R12, Z8, Z9, Z10, Z11) \
	AHEAD(R13, Z12, Z13, Z14, Z15) \
	ADDQ DX, AX \
	ADDQ $4, BX \
	DECQ CX \
	JNZ  loop \
store: \
	MOVQ rows+32(FP), CX \
	ACCSTORE(DI, Z0, Z1, Z2, Z3) \
	CMPQ CX, $2 \
	JLT  done \
	ACCSTORE(R8, Z4, Z5, Z6, Z7) \
	CMPQ CX, $3 \
	JLT  done \
	ACCSTORE(R9, Z8, Z9, Z10, Z11) \
	CMPQ CX, $4 \
	JLT  done \
	ACCSTORE(R10, Z12, Z13, Z14, Z15) \
done: \
	VZEROUPPER \
	RET

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
	ROWS \
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

// func attnAccF32Z(out *float32, ldo int, p *float32, ldp int, rows int, v unsafe.Pointer, ldv int, n int, mask uint64)
//
// For each of rows heads r (at most four; out and p rows ldo and ldp
// bytes apart) and each of n positions j (value rows ldv bytes apart at
// v): out[r][c] += p[r][j] * v[j][c] for the columns c < 64 that mask's
// bits select.
TEXT ·attnAccF32Z(SB), NOSPLIT, $0-72
	ACC(VLD_F32, 4)

// func attnAccF16Z(out *float32, ldo int, p *float32, ldp int, rows int, v unsafe.Pointer, ldv int, n int, mask uint64)
TEXT ·attnAccF16Z(SB), NOSPLIT, $0-72
	ACC(VLD_F16, 2)

// func scaleScoresZ(x *float32, n int, s float32) (bad bool)
//
// x[i] *= s for i < n, and reports whether a product is NaN or +Inf
// (not less than +Inf, unordered included).
TEXT ·scaleScoresZ(SB), NOSPLIT, $0-25
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Z0
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z1
	KXORW K2, K2, K2
sloop:
	CMPQ CX, $16
	JLT stail
	VMULPS (DI), Z0, Z2
	VMOVUPS Z2, (DI)
	VCMPPS $0x15, Z1, Z2, K3 // NLT_UQ: not below +Inf, or NaN
	KORW K3, K2, K2
	ADDQ $64, DI
	SUBQ $16, CX
	JMP sloop
stail:
	TESTQ CX, CX
	JZ sdone
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z (DI), K1, Z2
	VMULPS Z2, Z0, Z2
	VMOVUPS Z2, K1, (DI)
	VCMPPS $0x15, Z1, Z2, K1, K3
	KORW K3, K2, K2
sdone:
	KORTESTW K2, K2
	SETNE bad+24(FP)
	VZEROUPPER
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
