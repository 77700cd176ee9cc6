// AVX-512 F16 and BF16 products without a packed panel (prompt processing): each
// accumulator is one activation row's dot product with one weight row,
// sixteen elements of K a lane, summed across its lanes when the call
// ends. Four activation rows by six weight rows are 24 accumulators
// (Z0-Z23); the six weight vectors of a step (Z24-Z29) are converted to
// f32 as they are loaded (VCVTPH2PS runs beside the FMAs without slowing
// them), so the weights are read where they lie and nothing is
// transposed. Every routine ends with VZEROUPPER.

#include "textflag.h"
#include "zero_amd64.h"

#define DLD_F16(a, z) VCVTPH2PS a, z
#define DLD_BF16(a, z) VPMOVZXWD a, z; VPSLLD $16, z, z

// DROW adds one step of activation row base a (index BX scaled by s) into
// the row's six accumulators.
#define DROW(a, s, b, z0, z1, z2, z3, z4, z5) \
	VMOVUPS (a)(BX*s), b \
	VFMADD231PS Z24, b, z0 \
	VFMADD231PS Z25, b, z1 \
	VFMADD231PS Z26, b, z2 \
	VFMADD231PS Z27, b, z3 \
	VFMADD231PS Z28, b, z4 \
	VFMADD231PS Z29, b, z5

// DSUM sums the lanes of the six accumulators of one row and writes (or,
// when add is set, adds) the six sums to y at DX, the lanes masked by K1.
// Z24-Z31 are scratch.
#define DSUM(z0, z1, z2, z3, z4, z5) \
	VSHUFF32X4 $0x44, z1, z0, Z24 \
	VSHUFF32X4 $0xEE, z1, z0, Z25 \
	VADDPS Z25, Z24, Z24 \
	VSHUFF32X4 $0x44, z3, z2, Z25 \
	VSHUFF32X4 $0xEE, z3, z2, Z26 \
	VADDPS Z26, Z25, Z25 \
	VSHUFF32X4 $0x44, z5, z4, Z26 \
	VSHUFF32X4 $0xEE, z5, z4, Z27 \
	VADDPS Z27, Z26, Z26 \
	VSHUFF32X4 $0x88, Z25, Z24, Z27 \
	VSHUFF32X4 $0xDD, Z25, Z24, Z28 \
	VADDPS Z28, Z27, Z27 \
	VSHUFF32X4 $0x88, Z26, Z26, Z28 \
	VSHUFF32X4 $0xDD, Z26, Z26, Z29 \
	VADDPS Z29, Z28, Z28 \
	VPERMILPS $0x4E, Z27, Z29 \
	VADDPS Z29, Z27, Z27 \
	VPERMILPS $0xB1, Z27, Z29 \
	VADDPS Z29, Z27, Z27 \
	VPERMILPS $0x4E, Z28, Z29 \
	VADDPS Z29, Z28, Z28 \
	VPERMILPS $0xB1, Z28, Z29 \
	VADDPS Z29, Z28, Z28 \
	VCOMPRESSPS Z27, K2, Z30 \
	VCOMPRESSPS Z28, K3, Z31 \
	VINSERTF32X4 $1, X31, Z30, Z30 \
	TESTQ R9, R9 \
	JZ   2(PC) \
	VADDPS.Z (DX), Z30, K1, Z30 \
	VMOVUPS Z30, K1, (DX)

// DOT is the body of gemmDotF16Z and gemmDotBF16Z: DLD loads
// (and converts) sixteen weights, ws is the bytes of sixteen weights and
// as the scale from the weights' offset to the activations'.
#define DOT(DLD, ws, as) \
	MOVQ x+0(FP), SI \
	MOVQ ldx+8(FP), DX \
	MOVQ rows+16(FP), CX \
	MOVQ SI, R8 \
	MOVQ SI, R9 \
	MOVQ SI, AX \
	CMPQ CX, $2 \
	JLT  xset \
	ADDQ DX, R8 \
	MOVQ R8, R9 \
	MOVQ R8, AX \
	CMPQ CX, $3 \
	JLT  xset \
	ADDQ DX, R9 \
	MOVQ R9, AX \
	CMPQ CX, $4 \
	JLT  xset \
	ADDQ DX, AX \
xset: \
	MOVQ w+24(FP), DI \
	MOVQ ldw+32(FP), DX \
	MOVQ nw+40(FP), CX \
	MOVQ DI, R10 \
	MOVQ DI, R11 \
	MOVQ DI, R12 \
	MOVQ DI, R13 \
	MOVQ DI, R14 \
	CMPQ CX, $2 \
	JLT  wset \
	ADDQ DX, R10 \
	MOVQ R10, R11 \
	MOVQ R10, R12 \
	MOVQ R10, R13 \
	MOVQ R10, R14 \
	CMPQ CX, $3 \
	JLT  wset \
	ADDQ DX, R11 \
	MOVQ R11, R12 \
	MOVQ R11, R13 \
	MOVQ R11, R14 \
	CMPQ CX, $4 \
	JLT  wset \
	ADDQ DX, R12 \
	MOVQ R12, R13 \
	MOVQ R12, R14 \
	CMPQ CX, $5 \
	JLT  wset \
	ADDQ DX, R13 \
	MOVQ R13, R14 \
	CMPQ CX, $6 \
	JLT  wset \
	ADDQ DX, R14 \
wset: \
	ZERO0TO23 \
	XORQ BX, BX \
	MOVQ k16+48(FP), CX \
	TESTQ CX, CX \
	JZ   sum \
loop: \
	DLD((DI)(BX*1), Z24) \
	DLD((R10)(BX*1), Z25) \
	DLD((R11)(BX*1), Z26) \
	DLD((R12)(BX*1), Z27) \
	DLD((R13)(BX*1), Z28) \
	DLD((R14)(BX*1), Z29) \
	DROW(SI, as, Z30, Z0, Z1, Z2, Z3, Z4, Z5) \
	DROW(R8, as, Z31, Z6, Z7, Z8, Z9, Z10, Z11) \
	DROW(R9, as, Z30, Z12, Z13, Z14, Z15, Z16, Z17) \
	DROW(AX, as, Z31, Z18, Z19, Z20, Z21, Z22, Z23) \
	ADDQ $ws, BX \
	DECQ CX \
	JNZ  loop \
sum: \
	MOVQ nw+40(FP), CX \
	MOVQ $1, DX \
	SHLQ CX, DX \
	DECQ DX \
	KMOVW DX, K1 \
	MOVQ $0x1111, DX \
	KMOVW DX, K2 \
	MOVQ $0x11, DX \
	KMOVW DX, K3 \
	MOVQ y+56(FP), DX \
	MOVQ ldy+64(FP), R8 \
	MOVQ add+72(FP), R9 \
	MOVQ rows+16(FP), CX \
	DSUM(Z0, Z1, Z2, Z3, Z4, Z5) \
	CMPQ CX, $2 \
	JLT  done \
	ADDQ R8, DX \
	DSUM(Z6, Z7, Z8, Z9, Z10, Z11) \
	CMPQ CX, $3 \
	JLT  done \
	ADDQ R8, DX \
	DSUM(Z12, Z13, Z14, Z15, Z16, Z17) \
	CMPQ CX, $4 \
	JLT  done \
	ADDQ R8, DX \
	DSUM(Z18, Z19, Z20, Z21, Z22, Z23) \
done: \
	VZEROUPPER \
	RET

// func gemmDotF16Z(x *float32, ldx int, rows int, w unsafe.Pointer, ldw int, nw int, k16 int, y *float32, ldy int, add int)
//
// rows activation rows at x (stride ldx bytes; at most four, rows past
// them repeat the last) by nw weight rows at w (stride ldw bytes; at most
// six, likewise), 16*k16 elements, into rows rows of nw outputs of y
// (stride ldy bytes).
TEXT ·gemmDotF16Z(SB), NOSPLIT, $0-80
	DOT(DLD_F16, 32, 2)

// func gemmDotBF16Z(x *float32, ldx int, rows int, w unsafe.Pointer, ldw int, nw int, k16 int, y *float32, ldy int, add int)
TEXT ·gemmDotBF16Z(SB), NOSPLIT, $0-80
	DOT(DLD_BF16, 32, 2)

// func gemmDotF32Z(x *float32, ldx int, rows int, w unsafe.Pointer, ldw int, nw int, k16 int, y *float32, ldy int, add int)
//
// gemmDotF16Z for f32 weights (decode attention's scores over an f32
// cache).
#define DLD_F32(a, z) VMOVUPS a, z

TEXT ·gemmDotF32Z(SB), NOSPLIT, $0-80
	DOT(DLD_F32, 64, 1)
