// AVX2 integer dot-product kernels for Q8_0 and Q4_0 weights against
// activations quantized to 8-bit blocks of 32 (int8 quants plus one f32
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

// CONSTS sets Y11 = int16 ones, Y9 = bytes 0x0F, Y8 = bytes 8.
#define CONSTS \
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

#define DEC_Q4_0 \
	VMOVDQU 2(BX), X12 \
	VPSRLW $4, X12, X13 \
	VINSERTI128 $1, X13, Y12, Y12 \
	VPAND Y9, Y12, Y12 \
	VPSUBB Y8, Y12, Y12 \
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

// DOT1(DEC, bb): one weight row, one activation row; two accumulators
// alternate between even and odd blocks to hide the FMA latency.
#define DOT1(DEC, bb) \
	MOVQ w+0(FP), BX \
	MOVQ nb+8(FP), CX \
	MOVQ aq+16(FP), SI \
	MOVQ ad+24(FP), DI \
	CONSTS \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1 \
	SHRQ $1, CX \
	JZ odd \
loop: \
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
	VZEROUPPER \
	RET

// func dotQ8_0x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, out *[4]float32)
TEXT ·dotQ8_0x4(SB), NOSPLIT, $0-56
	DOT4(DEC_Q8_0, 34)

// func dotQ4_0x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, out *[4]float32)
TEXT ·dotQ4_0x4(SB), NOSPLIT, $0-56
	DOT4(DEC_Q4_0, 18)

// func dotQ8_0x1(w *byte, nb int, aq *int8, ad *float32) float32
TEXT ·dotQ8_0x1(SB), NOSPLIT, $0-36
	DOT1(DEC_Q8_0, 34)

// func dotQ4_0x1(w *byte, nb int, aq *int8, ad *float32) float32
TEXT ·dotQ4_0x1(SB), NOSPLIT, $0-36
	DOT1(DEC_Q4_0, 18)
