// AVX2 integer dot-product kernels for Q4_K and Q6_K weights against
// activations quantized to 8-bit blocks of 256 (int8 quants, one f32 scale,
// int16 sums of each 16 quants). Weight quants are unsigned (Q4_K: 0..15,
// Q6_K: 0..63), so VPMADDUBSW takes them directly as its unsigned operand;
// the sub-block scales enter through VPMADDWD, and the offsets (Q4_K mins,
// Q6_K's -32) through the activation block sums. One float multiply-add a
// super-block.

#include "textflag.h"

#define HSUM(y, x) \
	VEXTRACTF128 $1, y, X15 \
	VADDPS X15, x, x \
	VHADDPS x, x, x \
	VHADDPS x, x, x

#include "kq4_amd64.h"

// Q4K1_CHUNK(c, s0, s1) adds chunk c's scaled sums (sub-blocks 2c, 2c+1)
// to Y1; s0 and s1 hold (or address) the shuffles k4sc+64c and k4sc+64c+32.
#define Q4K1_CHUNK(c, s0, s1) \
	VMOVDQU (16+32*c)(BX), Y2 \
	VPSRLW $4, Y2, Y3 \
	VPAND Y15, Y2, Y2 \
	VPAND Y15, Y3, Y3 \
	VPMADDUBSW (64*c)(SI), Y2, Y2 \
	VPMADDUBSW (64*c+32)(SI), Y3, Y3 \
	VPSHUFB s0, Y9, Y4 \
	VPSHUFB s1, Y9, Y5 \
	VPMADDWD Y4, Y2, Y2 \
	VPMADDWD Y5, Y3, Y3 \
	VPADDD Y2, Y1, Y1 \
	VPADDD Y3, Y1, Y1

// func dotQ4_Kx1(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32
// Per super-block: the scales are unpacked with vector shifts, the mins
// meet the activation sums in one VPMADDWD, and VPHADDD folds the scaled
// sums and the min sums into one vector [s, s, -m, -m] that meets
// [d, d, dmin, dmin] times the activation scale in one FMA.
TEXT ·dotQ4_Kx1(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), BX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ ad+24(FP), DI
	MOVQ bs+32(FP), R8
	MOVL $0x0f0f0f0f, AX
	VMOVQ AX, X15
	VPBROADCASTD X15, Y15
	VMOVDQU k4neg<>(SB), Y14
	VMOVDQU k4sc<>+0(SB), Y7
	VMOVDQU k4sc<>+32(SB), Y8
	VMOVDQU k4sc<>+64(SB), Y10
	VMOVDQU k4sc<>+96(SB), Y11
	VMOVDQU k4sc<>+128(SB), Y12
	VMOVDQU k4sc<>+160(SB), Y13
	VXORPS Y0, Y0, Y0
	TESTQ CX, CX
	JZ done

	MOVQ ·avx2Ahead(SB), R11

loop:
	// The weight row is one sequential stream, asked for avx2Ahead bytes
	// ahead of its loads.
	PREFETCHT0 (BX)(R11*1)
	PREFETCHT0 64(BX)(R11*1)
	PREFETCHT0 128(BX)(R11*1)
	K4UNPACK(BX, X9, X6)
	VINSERTI128 $1, X9, Y9, Y9
	VPSHUFB k4min<>(SB), Y9, Y6
	VPMADDWD (R8), Y6, Y6

	VMOVDQU 16(BX), Y2
	VPSRLW $4, Y2, Y3
	VPAND Y15, Y2, Y2
	VPAND Y15, Y3, Y3
	VPMADDUBSW (SI), Y2, Y2
	VPMADDUBSW 32(SI), Y3, Y3
	VPSHUFB Y7, Y9, Y4
	VPSHUFB Y8, Y9, Y5
	VPMADDWD Y4, Y2, Y2
	VPMADDWD Y5, Y3, Y3
	VPADDD Y2, Y3, Y1
	Q4K1_CHUNK(1, Y10, Y11)
	Q4K1_CHUNK(2, Y12, Y13)
	Q4K1_CHUNK(3, k4sc<>+192(SB), k4sc<>+224(SB))

	VPHADDD Y6, Y1, Y1
	VCVTDQ2PS Y1, Y1
	VPBROADCASTD (BX), X5
	VCVTPH2PS X5, Y5
	VPERMILPS $0x50, Y5, Y5
	VXORPS Y14, Y5, Y5
	VBROADCASTSS (DI), Y4
	VMULPS Y4, Y5, Y5
	VFMADD231PS Y1, Y5, Y0

	ADDQ $144, BX
	ADDQ $256, SI
	ADDQ $4, DI
	ADDQ $32, R8
	DECQ CX
	JNZ loop

done:
	HSUM(Y0, X0)
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// Q5K_CHUNK is Q4K_CHUNK for Q5_K: quants at 48+32c, and bits 2c and 2c+1
// of the qh bytes (in Y9) add 16 to the low and high nibbles.
#define Q5K_CHUNK(c) \
	VMOVDQU (48+32*c)(BX), Y2 \
	VPSRLW $4, Y2, Y3 \
	VPAND Y10, Y2, Y2 \
	VPAND Y10, Y3, Y3 \
	VPSRLW $(2*c), Y9, Y6 \
	VPAND Y14, Y6, Y6 \
	VPSLLW $4, Y6, Y6 \
	VPOR Y6, Y2, Y2 \
	VPSRLW $(2*c+1), Y9, Y6 \
	VPAND Y14, Y6, Y6 \
	VPSLLW $4, Y6, Y6 \
	VPOR Y6, Y3, Y3 \
	VPMADDUBSW (64*c)(SI), Y2, Y2 \
	VPMADDUBSW (64*c+32)(SI), Y3, Y3 \
	VPBROADCASTW (4*c)(SP), Y7 \
	VPBROADCASTW (4*c+2)(SP), Y8 \
	VPMADDWD Y7, Y2, Y2 \
	VPMADDWD Y8, Y3, Y3 \
	VPADDD Y2, Y1, Y1 \
	VPADDD Y3, Y1, Y1

// func dotQ5_Kx1(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32
TEXT ·dotQ5_Kx1(SB), NOSPLIT, $16-44
	MOVQ w+0(FP), BX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ ad+24(FP), DI
	MOVQ bs+32(FP), R8
	VPCMPEQW Y11, Y11, Y11
	VPSRLW $15, Y11, Y11
	MOVL $0x0f0f0f0f, AX
	VMOVQ AX, X10
	VPBROADCASTD X10, Y10
	MOVL $0x01010101, AX
	VMOVQ AX, X14
	VPBROADCASTD X14, Y14
	VXORPS Y0, Y0, Y0
	TESTQ CX, CX
	JZ done

	MOVQ ·avx2Ahead(SB), R13

loop:
	PREFETCHT0 (BX)(R13*1)
	PREFETCHT0 64(BX)(R13*1)
	PREFETCHT0 128(BX)(R13*1)
	// Unpack the twelve scale bytes into 8 six-bit scales and 8 mins.
	MOVL 4(BX), AX
	MOVL 8(BX), DX
	MOVL 12(BX), R9
	MOVL AX, R10
	ANDL $0x3f3f3f3f, R10
	MOVL DX, R11
	ANDL $0x3f3f3f3f, R11
	MOVL R9, R12
	ANDL $0x0f0f0f0f, R12
	SHRL $6, AX
	ANDL $0x03030303, AX
	SHLL $4, AX
	ORL AX, R12
	SHRL $4, R9
	ANDL $0x0f0f0f0f, R9
	SHRL $6, DX
	ANDL $0x03030303, DX
	SHLL $4, DX
	ORL DX, R9
	SHLQ $32, R12
	ORQ R10, R12
	SHLQ $32, R9
	ORQ R11, R9
	VMOVQ R12, X12
	VPMOVZXBW X12, X12
	VMOVDQU X12, 0(SP)

	// Mins: m_j times the sum of the activation quants of sub-block j.
	VMOVQ R9, X13
	VPMOVZXBD X13, Y13
	VPMADDWD (R8), Y11, Y12
	VPMULLD Y13, Y12, Y13
	VCVTDQ2PS Y13, Y13

	VPXOR Y1, Y1, Y1
	VMOVDQU 16(BX), Y9
	Q5K_CHUNK(0)
	Q5K_CHUNK(1)
	Q5K_CHUNK(2)
	Q5K_CHUNK(3)

	VBROADCASTSS (DI), Y4
	VPBROADCASTW (BX), X5
	VCVTPH2PS X5, Y5
	VMULPS Y4, Y5, Y5
	VPBROADCASTW 2(BX), X6
	VCVTPH2PS X6, Y6
	VMULPS Y4, Y6, Y6
	VCVTDQ2PS Y1, Y1
	VFMADD231PS Y1, Y5, Y0
	VFNMADD231PS Y13, Y6, Y0

	ADDQ $176, BX
	ADDQ $256, SI
	ADDQ $4, DI
	ADDQ $32, R8
	DECQ CX
	JNZ loop

done:
	HSUM(Y0, X0)
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// Q6K_ACC multiplies 32 unsigned quants in q with the activations at aoff and
// the two 16-element group scales at soff(SP) and soff+2(SP), adding to Y1.
#define Q6K_ACC(q, aoff, soff) \
	VPMADDUBSW aoff(SI), q, q \
	VPBROADCASTW soff(SP), X7 \
	VPBROADCASTW (soff+2)(SP), X8 \
	VINSERTI128 $1, X8, Y7, Y7 \
	VPMADDWD Y7, q, q \
	VPADDD q, Y1, Y1

// Q6K_HALF handles elements 128h..128h+127: ql at 64h, qh at 128+32h.
#define Q6K_HALF(h) \
	VMOVDQU (64*h)(BX), Y2 \
	VMOVDQU (64*h+32)(BX), Y3 \
	VMOVDQU (128+32*h)(BX), Y4 \
	VPAND Y10, Y2, Y5 \
	VPAND Y9, Y4, Y6 \
	VPSLLW $4, Y6, Y6 \
	VPOR Y6, Y5, Y5 \
	Q6K_ACC(Y5, 128*h, 16*h) \
	VPAND Y10, Y3, Y5 \
	VPSRLW $2, Y4, Y6 \
	VPAND Y9, Y6, Y6 \
	VPSLLW $4, Y6, Y6 \
	VPOR Y6, Y5, Y5 \
	Q6K_ACC(Y5, 128*h+32, 16*h+4) \
	VPSRLW $4, Y2, Y5 \
	VPAND Y10, Y5, Y5 \
	VPSRLW $4, Y4, Y6 \
	VPAND Y9, Y6, Y6 \
	VPSLLW $4, Y6, Y6 \
	VPOR Y6, Y5, Y5 \
	Q6K_ACC(Y5, 128*h+64, 16*h+8) \
	VPSRLW $4, Y3, Y5 \
	VPAND Y10, Y5, Y5 \
	VPSRLW $6, Y4, Y6 \
	VPAND Y9, Y6, Y6 \
	VPSLLW $4, Y6, Y6 \
	VPOR Y6, Y5, Y5 \
	Q6K_ACC(Y5, 128*h+96, 16*h+12)

// func dotQ6_Kx1(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32
TEXT ·dotQ6_Kx1(SB), NOSPLIT, $32-44
	MOVQ w+0(FP), BX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ ad+24(FP), DI
	MOVQ bs+32(FP), R8
	MOVL $0x0f0f0f0f, AX
	VMOVQ AX, X10
	VPBROADCASTD X10, Y10
	MOVL $0x03030303, AX
	VMOVQ AX, X9
	VPBROADCASTD X9, Y9
	VXORPS Y0, Y0, Y0
	TESTQ CX, CX
	JZ done

	MOVQ ·avx2Ahead(SB), R11

loop:
	PREFETCHT0 (BX)(R11*1)
	PREFETCHT0 64(BX)(R11*1)
	PREFETCHT0 128(BX)(R11*1)
	PREFETCHT0 192(BX)(R11*1)
	VPMOVSXBW 192(BX), Y12
	VMOVDQU Y12, 0(SP)
	// The -32 offset: 32 * sum_g scale_g * (sum of group g's activations).
	VPMADDWD (R8), Y12, Y13
	VPSLLD $5, Y13, Y13

	VPXOR Y1, Y1, Y1
	Q6K_HALF(0)
	Q6K_HALF(1)
	VPSUBD Y13, Y1, Y1

	VBROADCASTSS (DI), Y4
	VPBROADCASTW 208(BX), X5
	VCVTPH2PS X5, Y5
	VMULPS Y4, Y5, Y5
	VCVTDQ2PS Y1, Y1
	VFMADD231PS Y1, Y5, Y0

	ADDQ $210, BX
	ADDQ $256, SI
	ADDQ $4, DI
	ADDQ $32, R8
	DECQ CX
	JNZ loop

done:
	HSUM(Y0, X0)
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET
