// AVX2 integer dot-product kernels for the 32-element weight types (Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, MXFP4) against activations quantized to 8-bit blocks of 32 (int8 quants plus one f32
// scale a block). Each weight block is decoded to 32 signed bytes once and
// multiplied with up to four activation rows: |w| (unsigned) times a with w's
// sign (VPSIGNB) through VPMADDUBSW, pairs widened by VPMADDWD, then one
// float multiply-add a block with the two scales. Activation quants lie in
// [-127,127], so VPSIGNB's -128 case and VPMADDUBSW's saturation never occur.

#include "textflag.h"

#define HSUM(y, x) \
	VEXTRACTF128 $1, y, X15 \
	VADDPS X15, x, x \
	VHADDPS x, x, x \
	VHADDPS x, x, x

// CONSTS sets Y11 = int16 ones, Y9 = bytes 0x0F, Y8 = bytes 8, and
// clears R13; for DEC_MXFP4 it also keeps its table in Y7 and points R12
// at e8m0Half (the kernels that use those registers set them after).
#define CONSTS \
	XORL R13, R13 \
	VMOVDQU mxfp4vals<>(SB), Y7 \
	LEAQ ·e8m0Half(SB), R12 \
	VPCMPEQW Y11, Y11, Y11 \
	VPSRLW $15, Y11, Y11 \
	MOVL $0x0f0f0f0f, AX \
	VMOVQ AX, X9 \
	VPBROADCASTD X9, Y9 \
	MOVL $0x08080808, AX \
	VMOVQ AX, X8 \
	VPBROADCASTD X8, Y8

// Block decoders: signed quants into Y12, the f16 scale broadcast into Y14.
#define DEC_Q8_0 \
	VMOVDQU 2(BX), Y12 \
	VPBROADCASTW (BX), X14 \
	VCVTPH2PS X14, Y14

// ROW accumulates one activation row's block (quants at aq, scale at ad)
// into acc, given |w| in Y13 and w's signs in Y12.
#define ROW(aq, ad, acc) \
	VMOVDQU aq, Y15 \
	VPSIGNB Y12, Y15, Y15 \
	VPMADDUBSW Y15, Y13, Y15 \
	VPMADDWD Y11, Y15, Y15 \
	VCVTDQ2PS Y15, Y15 \
	VBROADCASTSS ad, Y10 \
	VMULPS Y14, Y10, Y10 \
	VFMADD231PS Y15, Y10, acc

// DOT4(DEC, bb): one weight row of nb blocks of bb bytes, four activation rows.
#define DOT4(DEC, bb) \
	MOVQ w+0(FP), BX \
	MOVQ nb+8(FP), CX \
	MOVQ aq+16(FP), SI \
	MOVQ lda+24(FP), R8 \
	MOVQ ad+32(FP), DI \
	MOVQ ldd+40(FP), R9 \
	MOVQ out+48(FP), DX \
	LEAQ (R8)(R8*2), R10 \
	LEAQ (R9)(R9*2), R11 \
	CONSTS \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1; VXORPS Y2, Y2, Y2; VXORPS Y3, Y3, Y3 \
	TESTQ CX, CX \
	JZ done \
loop: \
	DEC \
	VPABSB Y12, Y13 \
	ROW((SI), (DI), Y0) \
	ROW((SI)(R8*1), (DI)(R9*1), Y1) \
	ROW((SI)(R8*2), (DI)(R9*2), Y2) \
	ROW((SI)(R10*1), (DI)(R11*1), Y3) \
	ADDQ $bb, BX \
	ADDQ $32, SI \
	ADDQ $4, DI \
	DECQ CX \
	JNZ loop \
done: \
	HSUM(Y0, X0); VMOVSS X0, 0(DX) \
	HSUM(Y1, X1); VMOVSS X1, 4(DX) \
	HSUM(Y2, X2); VMOVSS X2, 8(DX) \
	HSUM(Y3, X3); VMOVSS X3, 12(DX) \
	VZEROUPPER \
	RET

// DOT1(DEC, bb, FIN, AHEAD): one weight row, one activation row; two
// accumulators alternate between even and odd blocks to hide the FMA
// latency. FIN ends it after the sum is stored (NOFIN: nothing more).
// AHEAD sets R11 to how many bytes ahead of its loads the weight stream
// asks for lines: avx2Ahead (AHEADVAR), or 1024 on every CPU for the
// nibble types (AHEADNIB; see avx2Ahead).
#define NOFIN
#define AHEADVAR MOVQ ·avx2Ahead(SB), R11
#define AHEADNIB MOVQ $1024, R11

// MXFIN, dotMXFP4x1's, returns the OR of every block's exponent byte plus
// 3 (R13, see DEC_MXFP4): bit 8 is set where one is 253 or more, a block
// scaled by 2^125 or more whose values may decode past float32's range
// (see exactNonFinite).
#define MXFIN MOVQ R13, eor+40(FP)
#define DOT1(DEC, bb, FIN, AHEAD) \
	MOVQ w+0(FP), BX \
	MOVQ nb+8(FP), CX \
	MOVQ aq+16(FP), SI \
	MOVQ ad+24(FP), DI \
	CONSTS \
	AHEAD \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1 \
	SHRQ $1, CX \
	JZ odd \
loop: \
	PREFETCHT0 (BX)(R11*1) \
	DEC \
	VPABSB Y12, Y13 \
	ROW((SI), (DI), Y0) \
	ADDQ $bb, BX \
	DEC \
	VPABSB Y12, Y13 \
	ROW(32(SI), 4(DI), Y1) \
	ADDQ $bb, BX \
	ADDQ $64, SI \
	ADDQ $8, DI \
	DECQ CX \
	JNZ loop \
odd: \
	MOVQ nb+8(FP), CX \
	TESTQ $1, CX \
	JZ done \
	DEC \
	VPABSB Y12, Y13 \
	ROW((SI), (DI), Y0) \
done: \
	VADDPS Y1, Y0, Y0 \
	HSUM(Y0, X0) \
	VMOVSS X0, ret+32(FP) \
	FIN \
	VZEROUPPER \
	RET

// Constants for the 5-bit types: VPSHUFB indices that give byte j of a
// register byte j/8 of the 32-bit qh field (within each 128-bit lane), the
// bit each byte then tests, and the nibble values.
DATA q5shuf<>+0(SB)/8, $0x0000000000000000
DATA q5shuf<>+8(SB)/8, $0x0101010101010101
DATA q5shuf<>+16(SB)/8, $0x0202020202020202
DATA q5shuf<>+24(SB)/8, $0x0303030303030303
GLOBL q5shuf<>(SB), RODATA|NOPTR, $32
DATA q5bits<>+0(SB)/8, $0x8040201008040201
DATA q5bits<>+8(SB)/8, $0x8040201008040201
DATA q5bits<>+16(SB)/8, $0x8040201008040201
DATA q5bits<>+24(SB)/8, $0x8040201008040201
GLOBL q5bits<>(SB), RODATA|NOPTR, $32
DATA q5x10<>+0(SB)/8, $0x1010101010101010
DATA q5x10<>+8(SB)/8, $0x1010101010101010
DATA q5x10<>+16(SB)/8, $0x1010101010101010
DATA q5x10<>+24(SB)/8, $0x1010101010101010
GLOBL q5x10<>(SB), RODATA|NOPTR, $32
DATA q5xf0<>+0(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA q5xf0<>+8(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA q5xf0<>+16(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA q5xf0<>+24(SB)/8, $0xf0f0f0f0f0f0f0f0
GLOBL q5xf0<>(SB), RODATA|NOPTR, $32

// NIBBLES(off) loads the 16 quant bytes at off(BX) as 32 nibbles into Y12:
// low nibbles are elements 0..15, high nibbles 16..31.
#define NIBBLES(off) \
	VMOVDQU off(BX), X12 \
	VPSRLW $4, X12, X13 \
	VINSERTI128 $1, X13, Y12, Y12 \
	VPAND Y9, Y12, Y12

// HIGHBITS(off) sets Y6 to 0xFF in byte j where bit j of the uint32 at
// off(BX) is set, else 0.
#define HIGHBITS(off) \
	VPBROADCASTD off(BX), Y6 \
	VPSHUFB q5shuf<>(SB), Y6, Y6 \
	VPAND q5bits<>(SB), Y6, Y6 \
	VPCMPEQB q5bits<>(SB), Y6, Y6

#define SCALE_D \
	VPBROADCASTW (BX), X14 \
	VCVTPH2PS X14, Y14

// Q5_0 gives signed q-16: nibble, minus 16 where the high bit is clear.
#define DEC_Q5_0 \
	NIBBLES(6) \
	HIGHBITS(2) \
	VPANDN q5xf0<>(SB), Y6, Y6 \
	VPOR Y6, Y12, Y12 \
	SCALE_D

// The min-offset types give unsigned quants.
#define DEC_Q4_1 \
	NIBBLES(4) \
	SCALE_D

#define DEC_Q5_1 \
	NIBBLES(8) \
	HIGHBITS(4) \
	VPAND q5x10<>(SB), Y6, Y6 \
	VPOR Y6, Y12, Y12 \
	SCALE_D

// DOT1U(DEC, bb): one weight row of an unsigned min-offset type against one
// activation row: sum_b dw*da*dot(q, a) + m*s_b, where s_b = da*sum(a) is
// the activation block's scaled sum (at R8) and the min term is accumulated
// as a scalar in X2.
#define DOT1U(DEC, bb) \
	MOVQ w+0(FP), BX \
	MOVQ nb+8(FP), CX \
	MOVQ aq+16(FP), SI \
	MOVQ ad+24(FP), DI \
	MOVQ as+32(FP), R8 \
	CONSTS \
	MOVQ ·avx2Ahead(SB), R11 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y2, Y2, Y2 \
	TESTQ CX, CX \
	JZ done \
loop: \
	PREFETCHT0 (BX)(R11*1) \
	DEC \
	VPMADDUBSW (SI), Y12, Y15 \
	VPMADDWD Y11, Y15, Y15 \
	VCVTDQ2PS Y15, Y15 \
	VBROADCASTSS (DI), Y10 \
	VMULPS Y14, Y10, Y10 \
	VFMADD231PS Y15, Y10, Y0 \
	VPBROADCASTW 2(BX), X13 \
	VCVTPH2PS X13, X13 \
	VMOVSS (R8), X10 \
	VFMADD231SS X10, X13, X2 \
	ADDQ $bb, BX \
	ADDQ $32, SI \
	ADDQ $4, DI \
	ADDQ $4, R8 \
	DECQ CX \
	JNZ loop \
done: \
	HSUM(Y0, X0) \
	VADDSS X2, X0, X0 \
	VMOVSS X0, ret+40(FP) \
	VZEROUPPER \
	RET

// Q4_0 without the sign trick: the nibbles (0..15) go to VPMADDUBSW as they
// are, and the offset of 8 is applied once at the end through the
// activation blocks' scaled sums s_b: sum_b dw*(da*dot(q,a) - 8*s_b).
// ROWQ4 accumulates one row's block into acc and dw*s_b into lane 0 of corr.
#define ROWQ4(aq, ad, as, acc, corr) \
	VPMADDUBSW aq, Y12, Y15 \
	VPMADDWD Y11, Y15, Y15 \
	VCVTDQ2PS Y15, Y15 \
	VBROADCASTSS ad, Y10 \
	VMULPS Y14, Y10, Y10 \
	VFMADD231PS Y15, Y10, acc \
	VFMADD231SS as, X14, corr

// FINISHQ4 leaves hsum(acc) - 8*corr in lane 0 of x; X8 holds 8.0.
#define FINISHQ4(acc, x, corr) \
	HSUM(acc, x) \
	VFNMADD231SS X8, corr, x

#define DEC_Q4_0U \
	NIBBLES(2) \
	SCALE_D

// ROWU accumulates one row's block for the min-offset types: acc gets
// dw*da*dot(q, a), lane 0 of corr gets m*s_b (the min is in X13).
#define ROWU(aq, ad, as, acc, corr) \
	VPMADDUBSW aq, Y12, Y15 \
	VPMADDWD Y11, Y15, Y15 \
	VCVTDQ2PS Y15, Y15 \
	VBROADCASTSS ad, Y10 \
	VMULPS Y14, Y10, Y10 \
	VFMADD231PS Y15, Y10, acc \
	VFMADD231SS as, X13, corr

// DOT4U(DEC, bb): a weight row of an unsigned min-offset type against four
// activation rows (strides as DOT4; the scaled sums share the scales' stride).
// The min terms collect in X4, X5, X8 and X7: the decoders use Y6.
#define DOT4U(DEC, bb) \
	MOVQ w+0(FP), BX \
	MOVQ nb+8(FP), CX \
	MOVQ aq+16(FP), SI \
	MOVQ lda+24(FP), R8 \
	MOVQ ad+32(FP), DI \
	MOVQ ldd+40(FP), R9 \
	MOVQ as+48(FP), DX \
	LEAQ (R8)(R8*2), R10 \
	LEAQ (R9)(R9*2), R11 \
	CONSTS \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1; VXORPS Y2, Y2, Y2; VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4; VXORPS Y5, Y5, Y5; VXORPS Y8, Y8, Y8; VXORPS Y7, Y7, Y7 \
	MOVQ ·avx2Ahead(SB), R12 \
	TESTQ CX, CX \
	JZ done \
loop: \
	PREFETCHT0 (BX)(R12*1) \
	DEC \
	VPBROADCASTW 2(BX), X13 \
	VCVTPH2PS X13, X13 \
	ROWU((SI), (DI), (DX), Y0, X4) \
	ROWU((SI)(R8*1), (DI)(R9*1), (DX)(R9*1), Y1, X5) \
	ROWU((SI)(R8*2), (DI)(R9*2), (DX)(R9*2), Y2, X8) \
	ROWU((SI)(R10*1), (DI)(R11*1), (DX)(R11*1), Y3, X7) \
	ADDQ $bb, BX \
	ADDQ $32, SI \
	ADDQ $4, DI \
	ADDQ $4, DX \
	DECQ CX \
	JNZ loop \
done: \
	MOVQ out+56(FP), DX \
	HSUM(Y0, X0); VADDSS X4, X0, X0; VMOVSS X0, 0(DX) \
	HSUM(Y1, X1); VADDSS X5, X1, X1; VMOVSS X1, 4(DX) \
	HSUM(Y2, X2); VADDSS X8, X2, X2; VMOVSS X2, 8(DX) \
	HSUM(Y3, X3); VADDSS X7, X3, X3; VMOVSS X3, 12(DX) \
	VZEROUPPER \
	RET

// func dotQ8_0x1(w *byte, nb int, aq *int8, ad *float32) float32
TEXT ·dotQ8_0x1(SB), NOSPLIT, $0-36
	DOT1(DEC_Q8_0, 34, NOFIN, AHEADVAR)

// func dotQ5_0x1(w *byte, nb int, aq *int8, ad *float32) float32
TEXT ·dotQ5_0x1(SB), NOSPLIT, $0-36
	DOT1(DEC_Q5_0, 22, NOFIN, AHEADVAR)

// func dotQ4_1x1(w *byte, nb int, aq *int8, ad *float32, as *float32) float32
TEXT ·dotQ4_1x1(SB), NOSPLIT, $0-44
	DOT1U(DEC_Q4_1, 20)

// func dotQ5_1x1(w *byte, nb int, aq *int8, ad *float32, as *float32) float32
TEXT ·dotQ5_1x1(SB), NOSPLIT, $0-44
	DOT1U(DEC_Q5_1, 24)

// func dotQ4_0x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, as *float32, out *[4]float32)
TEXT ·dotQ4_0x4(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), BX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ lda+24(FP), R8
	MOVQ ad+32(FP), DI
	MOVQ ldd+40(FP), R9
	MOVQ as+48(FP), DX
	LEAQ (R8)(R8*2), R10
	LEAQ (R9)(R9*2), R11
	CONSTS
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ CX, CX
	JZ q4x4done
q4x4loop:
	DEC_Q4_0U
	ROWQ4((SI), (DI), (DX), Y0, X4)
	ROWQ4((SI)(R8*1), (DI)(R9*1), (DX)(R9*1), Y1, X5)
	ROWQ4((SI)(R8*2), (DI)(R9*2), (DX)(R9*2), Y2, X6)
	ROWQ4((SI)(R10*1), (DI)(R11*1), (DX)(R11*1), Y3, X7)
	ADDQ $18, BX
	ADDQ $32, SI
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ CX
	JNZ q4x4loop
q4x4done:
	MOVL $0x41000000, AX
	VMOVD AX, X8
	MOVQ out+56(FP), DX
	FINISHQ4(Y0, X0, X4)
	VMOVSS X0, 0(DX)
	FINISHQ4(Y1, X1, X5)
	VMOVSS X1, 4(DX)
	FINISHQ4(Y2, X2, X6)
	VMOVSS X2, 8(DX)
	FINISHQ4(Y3, X3, X7)
	VMOVSS X3, 12(DX)
	VZEROUPPER
	RET

// func dotQ4_0x1(w *byte, nb int, aq *int8, ad *float32, as *float32) float32
// Two accumulators alternate between even and odd blocks.
TEXT ·dotQ4_0x1(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), BX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ ad+24(FP), DI
	MOVQ as+32(FP), DX
	CONSTS
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	SHRQ $1, CX
	JZ q4x1odd
q4x1loop:
	PREFETCHT0 1024(BX)
	DEC_Q4_0U
	ROWQ4((SI), (DI), (DX), Y0, X4)
	ADDQ $18, BX
	DEC_Q4_0U
	ROWQ4(32(SI), 4(DI), 4(DX), Y1, X5)
	ADDQ $18, BX
	ADDQ $64, SI
	ADDQ $8, DI
	ADDQ $8, DX
	DECQ CX
	JNZ q4x1loop
q4x1odd:
	MOVQ nb+8(FP), CX
	TESTQ $1, CX
	JZ q4x1done
	DEC_Q4_0U
	ROWQ4((SI), (DI), (DX), Y0, X4)
q4x1done:
	VADDPS Y1, Y0, Y0
	VADDSS X5, X4, X4
	MOVL $0x41000000, AX
	VMOVD AX, X8
	FINISHQ4(Y0, X0, X4)
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// func dotQ4_1x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, as *float32, out *[4]float32)
TEXT ·dotQ4_1x4(SB), NOSPLIT, $0-64
	DOT4U(DEC_Q4_1, 20)

// func dotQ5_1x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, as *float32, out *[4]float32)
TEXT ·dotQ5_1x4(SB), NOSPLIT, $0-64
	DOT4U(DEC_Q5_1, 24)

// func dotQ5_0x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, out *[4]float32)
TEXT ·dotQ5_0x4(SB), NOSPLIT, $0-56
	DOT4(DEC_Q5_0, 22)

// MXFP4: the 4-bit codes index ggml's doubled E2M1 values (VPSHUFB looks
// each nibble up in the 16-byte table, repeated for both 128-bit lanes),
// giving signed quants in [-12, 12], so the signed rows of Q8_0 apply; the
// block's E8M0 exponent byte indexes e8m0Half (mxfp4.go) for the scale,
// and plus 3 is ORed into R13.
DATA mxfp4vals<>+0(SB)/8, $0x0c08060403020100
DATA mxfp4vals<>+8(SB)/8, $0xf4f8fafcfdfeff00
DATA mxfp4vals<>+16(SB)/8, $0x0c08060403020100
DATA mxfp4vals<>+24(SB)/8, $0xf4f8fafcfdfeff00
GLOBL mxfp4vals<>(SB), RODATA|NOPTR, $32

#define DEC_MXFP4 \
	NIBBLES(1) \
	VPSHUFB Y12, Y7, Y12 \
	MOVBLZX (BX), AX \
	LEAL 3(AX), R14 \
	ORL R14, R13 \
	VBROADCASTSS (R12)(AX*4), Y14

// func dotMXFP4x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, out *[4]float32)
TEXT ·dotMXFP4x4(SB), NOSPLIT, $0-56
	DOT4(DEC_MXFP4, 17)

// func dotMXFP4x1(w *byte, nb int, aq *int8, ad *float32) (v float32, eor int)
TEXT ·dotMXFP4x1(SB), NOSPLIT, $0-48
	DOT1(DEC_MXFP4, 17, MXFIN, AHEADNIB)
