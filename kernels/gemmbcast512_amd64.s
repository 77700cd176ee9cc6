// AVX-512 F16 and BF16 products of 48 to 127 activation rows (prompt
// processing) over transposed activations: the tile broadcasts one weight
// of each of six weight rows a step, read in place and converted to f32,
// against three or four vectors of sixteen activation rows (Acts.xt holds
// them k-major), so that each accumulator is one weight row's outputs for
// sixteen activation rows, and nothing is packed or transposed per
// product. Six rows by four vectors are 24 accumulators (Z0-Z23, row j's
// vector i in Z(4j+i)); Z24-Z25 hold the broadcasts, Z28-Z31 the
// activations. On the Zen 5, in L1, it runs as fast as with the weights
// converted beforehand (213 GFLOP/s a core): the conversions run beside
// the FMAs. Every routine ends with VZEROUPPER.

#include "textflag.h"

// BF16W and BBF16W broadcast the weight at a+BX as f32 to z.
#define BF16W(a, z) VPBROADCASTW (a)(BX*1), Y26; VCVTPH2PS Y26, z
#define BBF16W(a, z) VPBROADCASTW (a)(BX*1), z; VPSLLD $16, z, z

// B1-B4 add one weight broadcast times one to four activation vectors
// into one weight row's accumulators; L1-L4 load the vectors (B3, B4, L3
// and L4 serve the tiles).
#define B1(z, a0, a1, a2, a3) VFMADD231PS z, Z28, a0
#define B2(z, a0, a1, a2, a3) B1(z, a0, a1, a2, a3); VFMADD231PS z, Z29, a1
#define B3(z, a0, a1, a2, a3) B2(z, a0, a1, a2, a3); VFMADD231PS z, Z30, a2
#define B4(z, a0, a1, a2, a3) B3(z, a0, a1, a2, a3); VFMADD231PS z, Z31, a3
#define L1 VMOVUPS (SI), Z28
#define L2 L1; VMOVUPS 64(SI), Z29
#define L3 L2; VMOVUPS 128(SI), Z30
#define L4 L3; VMOVUPS 192(SI), Z31

// BLOOP is the k loop for v activation vectors (LD loads them, BV adds one
// row's products, BCAST broadcasts a weight); the loop is at label lab.
#define BLOOP(BCAST, LD, BV, lab) \
lab: \
	LD \
	BCAST(DI, Z24) \
	BCAST(R8, Z25) \
	BV(Z24, Z0, Z1, Z2, Z3) \
	BV(Z25, Z4, Z5, Z6, Z7) \
	BCAST(R9, Z24) \
	BCAST(R10, Z25) \
	BV(Z24, Z8, Z9, Z10, Z11) \
	BV(Z25, Z12, Z13, Z14, Z15) \
	BCAST(R11, Z24) \
	BCAST(R12, Z25) \
	BV(Z24, Z16, Z17, Z18, Z19) \
	BV(Z25, Z20, Z21, Z22, Z23) \
	ADDQ DX, SI \
	ADDQ $2, BX \
	DECQ CX \
	JNZ  lab \
	JMP  out

// BOUT stores row j's four accumulators to the tile (AX) at j*256.
#define BOUT(j, a0, a1, a2, a3) \
	VMOVUPS a0, (j*256)(AX) \
	VMOVUPS a1, (j*256+64)(AX) \
	VMOVUPS a2, (j*256+128)(AX) \
	VMOVUPS a3, (j*256+192)(AX)

// WPTR sets r to weight row i (DI, stride DX bytes), or to the last one
// (CX, the rows) when i is past it. BX is scratch.
#define WPTR(i, r) \
	MOVQ $i, BX \
	CMPQ BX, CX \
	JLT  3(PC) \
	MOVQ CX, BX \
	DECQ BX \
	IMULQ DX, BX \
	LEAQ (DI)(BX*1), r

// BMUL is the body of gemmBcastF16Z and gemmBcastBF16Z: the products of
// nw weight rows (one to six, at w, stride ldw bytes; the tile repeats
// the last for the rest) with 16*v activation rows (v three or four; xt:
// kc steps of 16*v elements, one element of each row a step) over kc
// elements, into 16*v rows of nw outputs of y (stride ldy bytes), added to
// what is there when add is set. tile is 384 floats of scratch: the
// accumulators go there, and row t of the outputs is its column t
// (y[t*ldy+4j] = tile[64j+t]). In the loop DX is the bytes of a step of
// xt (64*v).
#define BMUL(BCAST) \
	MOVQ xt+0(FP), SI \
	MOVQ v+8(FP), AX \
	MOVQ w+16(FP), DI \
	MOVQ ldw+24(FP), DX \
	MOVQ nw+64(FP), CX \
	WPTR(1, R8) \
	WPTR(2, R9) \
	WPTR(3, R10) \
	WPTR(4, R11) \
	WPTR(5, R12) \
	MOVQ AX, DX \
	SHLQ $6, DX \
	MOVQ kc+32(FP), CX \
	XORQ BX, BX \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15 \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17 \
	VPXORD Z18, Z18, Z18 \
	VPXORD Z19, Z19, Z19 \
	VPXORD Z20, Z20, Z20 \
	VPXORD Z21, Z21, Z21 \
	VPXORD Z22, Z22, Z22 \
	VPXORD Z23, Z23, Z23 \
	TESTQ CX, CX \
	JZ   out \
	CMPQ AX, $4 \
	JEQ  v4 \
	BLOOP(BCAST, L3, B3, v3) \
	BLOOP(BCAST, L4, B4, v4) \
out: \
	MOVQ tile+40(FP), AX \
	BOUT(0, Z0, Z1, Z2, Z3) \
	BOUT(1, Z4, Z5, Z6, Z7) \
	BOUT(2, Z8, Z9, Z10, Z11) \
	BOUT(3, Z12, Z13, Z14, Z15) \
	BOUT(4, Z16, Z17, Z18, Z19) \
	BOUT(5, Z20, Z21, Z22, Z23) \
	MOVQ y+48(FP), DX \
	MOVQ ldy+56(FP), R8 \
	MOVQ v+8(FP), R9 \
	SHLQ $4, R9 \
	MOVQ add+72(FP), R10 \
tloop: \
	MOVQ AX, SI \
	MOVQ DX, DI \
	MOVQ nw+64(FP), CX \
jloop: \
	VMOVSS (SI), X0 \
	TESTQ R10, R10 \
	JZ   2(PC) \
	VADDSS (DI), X0, X0 \
	VMOVSS X0, (DI) \
	ADDQ $256, SI \
	ADDQ $4, DI \
	DECQ CX \
	JNZ  jloop \
	ADDQ $4, AX \
	ADDQ R8, DX \
	DECQ R9 \
	JNZ  tloop \
	VZEROUPPER \
	RET

// func gemmBcastF16Z(xt *float32, v int, w unsafe.Pointer, ldw int, kc int, tile *float32, y *float32, ldy int, nw int, add int)
TEXT ·gemmBcastF16Z(SB), NOSPLIT, $0-80
	BMUL(BF16W)

// func gemmBcastBF16Z(xt *float32, v int, w unsafe.Pointer, ldw int, kc int, tile *float32, y *float32, ldy int, nw int, add int)
TEXT ·gemmBcastBF16Z(SB), NOSPLIT, $0-80
	BMUL(BBF16W)
