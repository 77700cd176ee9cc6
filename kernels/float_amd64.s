// AVX2+FMA+F16C dot-product kernels for F32, F16 and BF16 weights.
// Activations are f32. Every routine ends with VZEROUPPER: on the CPUs this
// runs on, dirty upper YMM state makes the legacy-SSE code Go emits for
// scalar floats very slow.

#include "textflag.h"

// HSUM reduces the 8 lanes of Y register y (X alias x) into lane 0 of x,
// using X15 as scratch.
#define HSUM(y, x) \
	VEXTRACTF128 $1, y, X15 \
	VADDPS X15, x, x \
	VHADDPS x, x, x \
	VHADDPS x, x, x

// Weight loaders: 8 weights from addr into Y register reg as f32.
#define LDW_F32(addr, reg) VMOVUPS addr, reg
#define LDW_F16(addr, reg) VCVTPH2PS addr, reg
#define LDW_BF16(addr, reg) VPMOVZXWD addr, reg; VPSLLD $16, reg, reg

// DOT4X3 is the body of the 4-activation-row by 3-weight-row tile: twelve
// accumulators Y0..Y11 (acc[i][j] in Y(3i+j)), weights in Y12..Y14, one
// activation vector in Y15. ws is the weight element size in bytes. Each
// activation row's three sums go to three adjacent floats of y (rows ldy
// bytes apart), added to what is there when add is non-zero. The loop
// starts on a 64-byte boundary: where it happened not to, on the Zen 4 a
// call over 2048 elements of K in L2 took 745 ns instead of 443.
#define DOT4X3(LDW, ws) \
	MOVQ x+0(FP), SI \
	MOVQ ldx+8(FP), R8 \
	MOVQ w+16(FP), DI \
	MOVQ ldw+24(FP), R9 \
	MOVQ k+32(FP), CX \
	MOVQ y+40(FP), DX \
	MOVQ ldy+48(FP), R11 \
	LEAQ (R8)(R8*2), R10 \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1; VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3; VXORPS Y4, Y4, Y4; VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6; VXORPS Y7, Y7, Y7; VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9; VXORPS Y10, Y10, Y10; VXORPS Y11, Y11, Y11 \
	SHRQ $3, CX \
	JZ   done \
	PCALIGN $64 \
loop: \
	LDW((DI), Y12) \
	LDW((DI)(R9*1), Y13) \
	LDW((DI)(R9*2), Y14) \
	VMOVUPS (SI), Y15 \
	VFMADD231PS Y12, Y15, Y0; VFMADD231PS Y13, Y15, Y1; VFMADD231PS Y14, Y15, Y2 \
	VMOVUPS (SI)(R8*1), Y15 \
	VFMADD231PS Y12, Y15, Y3; VFMADD231PS Y13, Y15, Y4; VFMADD231PS Y14, Y15, Y5 \
	VMOVUPS (SI)(R8*2), Y15 \
	VFMADD231PS Y12, Y15, Y6; VFMADD231PS Y13, Y15, Y7; VFMADD231PS Y14, Y15, Y8 \
	VMOVUPS (SI)(R10*1), Y15 \
	VFMADD231PS Y12, Y15, Y9; VFMADD231PS Y13, Y15, Y10; VFMADD231PS Y14, Y15, Y11 \
	ADDQ $32, SI \
	ADDQ $(8*ws), DI \
	DECQ CX \
	JNZ  loop \
done: \
	SUM3(Y0, Y1, Y2, X0) \
	SUM3(Y3, Y4, Y5, X3) \
	SUM3(Y6, Y7, Y8, X6) \
	SUM3(Y9, Y10, Y11, X9) \
	LEAQ (R11)(R11*2), R10 \
	CMPQ add+56(FP), $0 \
	JEQ  store \
	ADD3((DX), 8(DX), X0) \
	ADD3((DX)(R11*1), 8(DX)(R11*1), X3) \
	ADD3((DX)(R11*2), 8(DX)(R11*2), X6) \
	ADD3((DX)(R10*1), 8(DX)(R10*1), X9) \
	JMP  stored \
store: \
	STORE3((DX), 8(DX), X0) \
	STORE3((DX)(R11*1), 8(DX)(R11*1), X3) \
	STORE3((DX)(R11*2), 8(DX)(R11*2), X6) \
	STORE3((DX)(R10*1), 8(DX)(R10*1), X9) \
stored: \
	VZEROUPPER \
	RET

// SUM3(a, b, c, x) leaves the sums of the 8 lanes of a, b and c in lanes
// 0, 1 and 2 of x (a's X alias), using X15 as scratch.
#define SUM3(a, b, c, x) \
	VHADDPS b, a, a \
	VHADDPS c, c, c \
	VHADDPS c, a, a \
	VEXTRACTF128 $1, a, X15 \
	VADDPS X15, x, x

// STORE3(m, m8, x) stores lanes 0-2 of x at m (m8 is m plus 8 bytes);
// ADD3 adds them to the three floats there (X12 scratch).
#define STORE3(m, m8, x) \
	VMOVQ x, m \
	VEXTRACTPS $2, x, m8
#define ADD3(m, m8, x) \
	VMOVQ m, X12 \
	VINSERTPS $0x20, m8, X12, X12 \
	VADDPS X12, x, x \
	STORE3(m, m8, x)

// DOT1X4 is the body of the 1-activation-row by 4-weight-row tile, 16
// elements a step with two accumulators per weight row (Y0..Y7).
#define DOT1X4(LDW, ws) \
	MOVQ x+0(FP), SI \
	MOVQ w+8(FP), DI \
	MOVQ ldw+16(FP), R9 \
	MOVQ k+24(FP), CX \
	MOVQ out+32(FP), DX \
	LEAQ (R9)(R9*2), R10 \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1; VXORPS Y2, Y2, Y2; VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4; VXORPS Y5, Y5, Y5; VXORPS Y6, Y6, Y6; VXORPS Y7, Y7, Y7 \
	MOVQ ·avx2Ahead(SB), R11 \
	SHRQ $4, CX \
	JZ   done \
loop: \
	LEAQ (DI)(R11*1), R12 \
	PREFETCHT0 (R12) \
	PREFETCHT0 (R12)(R9*1) \
	PREFETCHT0 (R12)(R9*2) \
	PREFETCHT0 (R12)(R10*1) \
	VMOVUPS (SI), Y8 \
	VMOVUPS 32(SI), Y9 \
	LDW((DI), Y10); LDW(8*ws(DI), Y11) \
	VFMADD231PS Y10, Y8, Y0; VFMADD231PS Y11, Y9, Y4 \
	LDW((DI)(R9*1), Y12); LDW(8*ws(DI)(R9*1), Y13) \
	VFMADD231PS Y12, Y8, Y1; VFMADD231PS Y13, Y9, Y5 \
	LDW((DI)(R9*2), Y10); LDW(8*ws(DI)(R9*2), Y11) \
	VFMADD231PS Y10, Y8, Y2; VFMADD231PS Y11, Y9, Y6 \
	LDW((DI)(R10*1), Y12); LDW(8*ws(DI)(R10*1), Y13) \
	VFMADD231PS Y12, Y8, Y3; VFMADD231PS Y13, Y9, Y7 \
	ADDQ $64, SI \
	ADDQ $(16*ws), DI \
	DECQ CX \
	JNZ  loop \
done: \
	VADDPS Y4, Y0, Y0; VADDPS Y5, Y1, Y1; VADDPS Y6, Y2, Y2; VADDPS Y7, Y3, Y3 \
	HSUM(Y0, X0); VMOVSS X0, 0(DX) \
	HSUM(Y1, X1); VMOVSS X1, 4(DX) \
	HSUM(Y2, X2); VMOVSS X2, 8(DX) \
	HSUM(Y3, X3); VMOVSS X3, 12(DX) \
	VZEROUPPER \
	RET

// DOT1X1 is one activation row by one weight row, 16 elements a step.
#define DOT1X1(LDW, ws) \
	MOVQ x+0(FP), SI \
	MOVQ w+8(FP), DI \
	MOVQ k+16(FP), CX \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1 \
	SHRQ $4, CX \
	JZ   done \
loop: \
	LDW((DI), Y10); LDW(8*ws(DI), Y11) \
	VFMADD231PS (SI), Y10, Y0 \
	VFMADD231PS 32(SI), Y11, Y1 \
	ADDQ $64, SI \
	ADDQ $(16*ws), DI \
	DECQ CX \
	JNZ  loop \
done: \
	VADDPS Y1, Y0, Y0 \
	HSUM(Y0, X0) \
	VMOVSS X0, ret+24(FP) \
	VZEROUPPER \
	RET

// func dotF32x4x3(x *float32, ldx int, w unsafe.Pointer, ldw int, k int, y *float32, ldy int, add int)
TEXT ·dotF32x4x3(SB), NOSPLIT, $0-64
	DOT4X3(LDW_F32, 4)

// func dotF16x4x3(x *float32, ldx int, w unsafe.Pointer, ldw int, k int, y *float32, ldy int, add int)
TEXT ·dotF16x4x3(SB), NOSPLIT, $0-64
	DOT4X3(LDW_F16, 2)

// func dotBF16x4x3(x *float32, ldx int, w unsafe.Pointer, ldw int, k int, y *float32, ldy int, add int)
TEXT ·dotBF16x4x3(SB), NOSPLIT, $0-64
	DOT4X3(LDW_BF16, 2)

// func dotF32x1x4(x *float32, w unsafe.Pointer, ldw int, k int, out *[4]float32)
TEXT ·dotF32x1x4(SB), NOSPLIT, $0-40
	DOT1X4(LDW_F32, 4)

// func dotF16x1x4(x *float32, w unsafe.Pointer, ldw int, k int, out *[4]float32)
TEXT ·dotF16x1x4(SB), NOSPLIT, $0-40
	DOT1X4(LDW_F16, 2)

// func dotBF16x1x4(x *float32, w unsafe.Pointer, ldw int, k int, out *[4]float32)
TEXT ·dotBF16x1x4(SB), NOSPLIT, $0-40
	DOT1X4(LDW_BF16, 2)

// func dotF32x1x1(x *float32, w unsafe.Pointer, k int) float32
TEXT ·dotF32x1x1(SB), NOSPLIT, $0-28
	DOT1X1(LDW_F32, 4)

// func dotF16x1x1(x *float32, w unsafe.Pointer, k int) float32
TEXT ·dotF16x1x1(SB), NOSPLIT, $0-28
	DOT1X1(LDW_F16, 2)

// func dotBF16x1x1(x *float32, w unsafe.Pointer, k int) float32
TEXT ·dotBF16x1x1(SB), NOSPLIT, $0-28
	DOT1X1(LDW_BF16, 2)
