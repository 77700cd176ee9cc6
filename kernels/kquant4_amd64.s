// Four-activation-row versions of the Q4_K, Q5_K and Q6_K kernels for prompt
// processing: each weight super-block is unpacked once and multiplied with
// four activation rows. Registers: Y0..Y3 the rows' int32 sums for the
// current super-block, Y4..Y7 their float accumulators, Y8..Y13 scratch,
// Y14 the nibble mask, Y15 int16 ones (Q5_K) or the scales and mins as
// bytes (Q4_K). Q5_K and Q6_K keep the per-row pointers that are needed once
// a super-block (scales, block sums) in the frame.

#include "textflag.h"
#include "kq4_amd64.h"

#define HSUM(y, x) \
	VEXTRACTF128 $1, y, X15 \
	VADDPS X15, x, x \
	VHADDPS x, x, x \
	VHADDPS x, x, x

// Frame layout.
#define SC 0   // 8 int16 sub-block scales (Q4_K) or 16 (Q6_K)
#define MN 32  // 8 int32 mins (Q4_K)
#define ADP 64 // activation scales of row 0, advancing a super-block at a time
#define LDD 72 // bytes between rows' scales
#define BSP 80 // activation block sums of row 0, advancing
#define LDB 88 // bytes between rows' block sums

// Q4K4_CHUNK(c) multiplies chunk c's unsigned quants (Y8: sub-block 2c,
// Y9: 2c+1) with the four rows' activations, scaled by Y10 and Y11.
#define Q4K4_CHUNK(c) \
	VMOVDQU (16+32*c)(BX), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y14, Y8, Y8 \
	VPAND Y14, Y9, Y9 \
	VPSHUFB k4sc<>+(64*c)(SB), Y15, Y10 \
	VPSHUFB k4sc<>+(64*c+32)(SB), Y15, Y11 \
	VPMADDUBSW (64*c)(SI), Y8, Y12 \
	VPMADDUBSW (64*c+32)(SI), Y9, Y13 \
	VPMADDWD Y10, Y12, Y12 \
	VPMADDWD Y11, Y13, Y13 \
	VPADDD Y12, Y0, Y0 \
	VPADDD Y13, Y0, Y0 \
	VPMADDUBSW (64*c)(SI)(R8*1), Y8, Y12 \
	VPMADDUBSW (64*c+32)(SI)(R8*1), Y9, Y13 \
	VPMADDWD Y10, Y12, Y12 \
	VPMADDWD Y11, Y13, Y13 \
	VPADDD Y12, Y1, Y1 \
	VPADDD Y13, Y1, Y1 \
	VPMADDUBSW (64*c)(SI)(R8*2), Y8, Y12 \
	VPMADDUBSW (64*c+32)(SI)(R8*2), Y9, Y13 \
	VPMADDWD Y10, Y12, Y12 \
	VPMADDWD Y11, Y13, Y13 \
	VPADDD Y12, Y2, Y2 \
	VPADDD Y13, Y2, Y2 \
	VPMADDUBSW (64*c)(SI)(R10*1), Y8, Y12 \
	VPMADDUBSW (64*c+32)(SI)(R10*1), Y9, Y13 \
	VPMADDWD Y10, Y12, Y12 \
	VPMADDWD Y11, Y13, Y13 \
	VPADDD Y12, Y3, Y3 \
	VPADDD Y13, Y3, Y3

// Q5K4_CHUNK is Q4K4_CHUNK for Q5_K: quants at 48+32c, and bits 2c and
// 2c+1 of the 32 qh bytes at 16 add 16 to the low and high nibbles.
#define Q5K4_CHUNK(c) \
	VMOVDQU (48+32*c)(BX), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y14, Y8, Y8 \
	VPAND Y14, Y9, Y9 \
	VMOVDQU 16(BX), Y12 \
	VPSRLW $(2*c), Y12, Y13 \
	VPAND q5k01<>(SB), Y13, Y13 \
	VPSLLW $4, Y13, Y13 \
	VPOR Y13, Y8, Y8 \
	VPSRLW $(2*c+1), Y12, Y13 \
	VPAND q5k01<>(SB), Y13, Y13 \
	VPSLLW $4, Y13, Y13 \
	VPOR Y13, Y9, Y9 \
	VPBROADCASTW (SC+4*c)(SP), Y10 \
	VPBROADCASTW (SC+4*c+2)(SP), Y11 \
	VPMADDUBSW (64*c)(SI), Y8, Y12 \
	VPMADDUBSW (64*c+32)(SI), Y9, Y13 \
	VPMADDWD Y10, Y12, Y12 \
	VPMADDWD Y11, Y13, Y13 \
	VPADDD Y12, Y0, Y0 \
	VPADDD Y13, Y0, Y0 \
	VPMADDUBSW (64*c)(SI)(R8*1), Y8, Y12 \
	VPMADDUBSW (64*c+32)(SI)(R8*1), Y9, Y13 \
	VPMADDWD Y10, Y12, Y12 \
	VPMADDWD Y11, Y13, Y13 \
	VPADDD Y12, Y1, Y1 \
	VPADDD Y13, Y1, Y1 \
	VPMADDUBSW (64*c)(SI)(R8*2), Y8, Y12 \
	VPMADDUBSW (64*c+32)(SI)(R8*2), Y9, Y13 \
	VPMADDWD Y10, Y12, Y12 \
	VPMADDWD Y11, Y13, Y13 \
	VPADDD Y12, Y2, Y2 \
	VPADDD Y13, Y2, Y2 \
	VPMADDUBSW (64*c)(SI)(R10*1), Y8, Y12 \
	VPMADDUBSW (64*c+32)(SI)(R10*1), Y9, Y13 \
	VPMADDWD Y10, Y12, Y12 \
	VPMADDWD Y11, Y13, Y13 \
	VPADDD Y12, Y3, Y3 \
	VPADDD Y13, Y3, Y3

// Q4K4_FINISH folds row i's integer sums (sumi) into its accumulator acc
// as dotQ4_Kx1 does: VPHADDD makes [s, s, -m, -m] of the scaled sums and
// the min sums (mins Y8 against the block sums at bs), which meet Y9 = [d,
// d, dmin, dmin] (signs flipped) times the row's activation scale at ad.
#define Q4K4_FINISH(sumi, bs, ad, acc) \
	VPMADDWD bs, Y8, Y12 \
	VPHADDD Y12, sumi, sumi \
	VCVTDQ2PS sumi, sumi \
	VBROADCASTSS ad, Y10 \
	VMULPS Y9, Y10, Y10 \
	VFMADD231PS sumi, Y10, acc

// func dotQ4_Kx4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, out *[4]float32)
// Y15 holds the super-block's scales and mins as bytes (K4UNPACK).
TEXT ·dotQ4_Kx4(SB), NOSPLIT, $0-72
	MOVQ w+0(FP), BX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ lda+24(FP), R8
	LEAQ (R8)(R8*2), R10
	MOVQ ad+32(FP), DI
	MOVQ ldd+40(FP), R9
	LEAQ (R9)(R9*2), R11
	MOVQ bs+48(FP), DX
	MOVQ ldb+56(FP), R12
	LEAQ (R12)(R12*2), R13
	MOVL $0x0f0f0f0f, AX
	VMOVQ AX, X14
	VPBROADCASTD X14, Y14
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ CX, CX
	JZ done

loop:
	K4UNPACK(BX, X15, X8)
	VINSERTI128 $1, X15, Y15, Y15
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	Q4K4_CHUNK(0)
	Q4K4_CHUNK(1)
	Q4K4_CHUNK(2)
	Q4K4_CHUNK(3)

	VPSHUFB k4min<>(SB), Y15, Y8
	VPBROADCASTD (BX), X9
	VCVTPH2PS X9, Y9
	VPERMILPS $0x50, Y9, Y9
	VXORPS k4neg<>(SB), Y9, Y9
	Q4K4_FINISH(Y0, (DX), (DI), Y4)
	Q4K4_FINISH(Y1, (DX)(R12*1), (DI)(R9*1), Y5)
	Q4K4_FINISH(Y2, (DX)(R12*2), (DI)(R9*2), Y6)
	Q4K4_FINISH(Y3, (DX)(R13*1), (DI)(R11*1), Y7)

	ADDQ $144, BX
	ADDQ $256, SI
	ADDQ $4, DI
	ADDQ $32, DX
	DECQ CX
	JNZ loop

done:
	MOVQ out+64(FP), DX
	HSUM(Y4, X4)
	VMOVSS X4, 0(DX)
	HSUM(Y5, X5)
	VMOVSS X5, 4(DX)
	HSUM(Y6, X6)
	VMOVSS X6, 8(DX)
	HSUM(Y7, X7)
	VMOVSS X7, 12(DX)
	VZEROUPPER
	RET

// Q5K4_FINISH folds row i's integer sums (sumi) into its accumulator acc:
// acc += d*da*sumi - dmin*da*(mins · pair sums of the block sums at (DX)).
// Y8 holds d and Y9 dmin; AX points at the row's activation scale.
#define Q5K4_FINISH(sumi, acc) \
	VBROADCASTSS (AX), Y10 \
	VMULPS Y8, Y10, Y11 \
	VMULPS Y9, Y10, Y10 \
	VCVTDQ2PS sumi, sumi \
	VFMADD231PS sumi, Y11, acc \
	VPMADDWD (DX), Y15, Y12 \
	VPMULLD (MN)(SP), Y12, Y12 \
	VCVTDQ2PS Y12, Y12 \
	VFNMADD231PS Y12, Y10, acc

// func dotQ5_Kx4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, out *[4]float32)
TEXT ·dotQ5_Kx4(SB), NOSPLIT, $96-72
	MOVQ w+0(FP), BX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ lda+24(FP), R8
	LEAQ (R8)(R8*2), R10
	MOVQ ad+32(FP), AX
	MOVQ AX, ADP(SP)
	MOVQ ldd+40(FP), AX
	MOVQ AX, LDD(SP)
	MOVQ bs+48(FP), AX
	MOVQ AX, BSP(SP)
	MOVQ ldb+56(FP), AX
	MOVQ AX, LDB(SP)
	VPCMPEQW Y15, Y15, Y15
	VPSRLW $15, Y15, Y15
	MOVL $0x0f0f0f0f, AX
	VMOVQ AX, X14
	VPBROADCASTD X14, Y14
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ CX, CX
	JZ done

loop:
	// Scales and mins, as in dotQ4_Kx1.
	MOVL 4(BX), AX
	MOVL 8(BX), DX
	MOVL 12(BX), R9
	MOVL AX, R11
	ANDL $0x3f3f3f3f, R11
	MOVL DX, R12
	ANDL $0x3f3f3f3f, R12
	MOVL R9, R13
	ANDL $0x0f0f0f0f, R13
	SHRL $6, AX
	ANDL $0x03030303, AX
	SHLL $4, AX
	ORL AX, R13
	SHRL $4, R9
	ANDL $0x0f0f0f0f, R9
	SHRL $6, DX
	ANDL $0x03030303, DX
	SHLL $4, DX
	ORL DX, R9
	SHLQ $32, R13
	ORQ R11, R13
	SHLQ $32, R9
	ORQ R12, R9
	VMOVQ R13, X12
	VPMOVZXBW X12, X12
	VMOVDQU X12, SC(SP)
	VMOVQ R9, X13
	VPMOVZXBD X13, Y13
	VMOVDQU Y13, MN(SP)

	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	Q5K4_CHUNK(0)
	Q5K4_CHUNK(1)
	Q5K4_CHUNK(2)
	Q5K4_CHUNK(3)

	VPBROADCASTW (BX), X8
	VCVTPH2PS X8, Y8
	VPBROADCASTW 2(BX), X9
	VCVTPH2PS X9, Y9
	MOVQ ADP(SP), AX
	MOVQ BSP(SP), DX
	MOVQ LDD(SP), R11
	MOVQ LDB(SP), R12
	Q5K4_FINISH(Y0, Y4)
	ADDQ R11, AX
	ADDQ R12, DX
	Q5K4_FINISH(Y1, Y5)
	ADDQ R11, AX
	ADDQ R12, DX
	Q5K4_FINISH(Y2, Y6)
	ADDQ R11, AX
	ADDQ R12, DX
	Q5K4_FINISH(Y3, Y7)

	ADDQ $4, ADP(SP)
	ADDQ $32, BSP(SP)
	ADDQ $176, BX
	ADDQ $256, SI
	DECQ CX
	JNZ loop

done:
	MOVQ out+64(FP), DX
	HSUM(Y4, X4)
	VMOVSS X4, 0(DX)
	HSUM(Y5, X5)
	VMOVSS X5, 4(DX)
	HSUM(Y6, X6)
	VMOVSS X6, 8(DX)
	HSUM(Y7, X7)
	VMOVSS X7, 12(DX)
	VZEROUPPER
	RET

// Q6K4_Q multiplies the 32 unsigned quants in Y8 with the four rows'
// activations at aoff, scaled by the group-scale pair at soff(SP).
#define Q6K4_Q(aoff, soff) \
	VPBROADCASTW soff(SP), X9 \
	VPBROADCASTW (soff+2)(SP), X10 \
	VINSERTI128 $1, X10, Y9, Y9 \
	VPMADDUBSW aoff(SI), Y8, Y10 \
	VPMADDWD Y9, Y10, Y10 \
	VPADDD Y10, Y0, Y0 \
	VPMADDUBSW aoff(SI)(R8*1), Y8, Y10 \
	VPMADDWD Y9, Y10, Y10 \
	VPADDD Y10, Y1, Y1 \
	VPMADDUBSW aoff(SI)(R8*2), Y8, Y10 \
	VPMADDWD Y9, Y10, Y10 \
	VPADDD Y10, Y2, Y2 \
	VPMADDUBSW aoff(SI)(R10*1), Y8, Y10 \
	VPMADDWD Y9, Y10, Y10 \
	VPADDD Y10, Y3, Y3

// Q6K4_HALF: Y11 = ql[0:32], Y12 = ql[32:64], Y13 = qh of half h.
#define Q6K4_HALF(h) \
	VMOVDQU (64*h)(BX), Y11 \
	VMOVDQU (64*h+32)(BX), Y12 \
	VMOVDQU (128+32*h)(BX), Y13 \
	VPAND Y14, Y11, Y8 \
	VPAND q6x03<>(SB), Y13, Y9 \
	VPSLLW $4, Y9, Y9 \
	VPOR Y9, Y8, Y8 \
	Q6K4_Q(128*h, SC+16*h) \
	VPAND Y14, Y12, Y8 \
	VPSRLW $2, Y13, Y9 \
	VPAND q6x03<>(SB), Y9, Y9 \
	VPSLLW $4, Y9, Y9 \
	VPOR Y9, Y8, Y8 \
	Q6K4_Q(128*h+32, SC+16*h+4) \
	VPSRLW $4, Y11, Y8 \
	VPAND Y14, Y8, Y8 \
	VPSRLW $4, Y13, Y9 \
	VPAND q6x03<>(SB), Y9, Y9 \
	VPSLLW $4, Y9, Y9 \
	VPOR Y9, Y8, Y8 \
	Q6K4_Q(128*h+64, SC+16*h+8) \
	VPSRLW $4, Y12, Y8 \
	VPAND Y14, Y8, Y8 \
	VPSRLW $6, Y13, Y9 \
	VPAND q6x03<>(SB), Y9, Y9 \
	VPSLLW $4, Y9, Y9 \
	VPOR Y9, Y8, Y8 \
	Q6K4_Q(128*h+96, SC+16*h+12)

// Q6K4_FINISH: acc += d*da*(sumi - 32*(scales · block sums at (DX))); Y8
// holds d, Y11 the 16 int16 scales; AX points at the row's scale.
#define Q6K4_FINISH(sumi, acc) \
	VPMADDWD (DX), Y11, Y12 \
	VPSLLD $5, Y12, Y12 \
	VPSUBD Y12, sumi, sumi \
	VCVTDQ2PS sumi, sumi \
	VBROADCASTSS (AX), Y10 \
	VMULPS Y8, Y10, Y10 \
	VFMADD231PS sumi, Y10, acc

DATA q6x03<>+0(SB)/8, $0x0303030303030303
DATA q6x03<>+8(SB)/8, $0x0303030303030303
DATA q6x03<>+16(SB)/8, $0x0303030303030303
DATA q6x03<>+24(SB)/8, $0x0303030303030303
GLOBL q6x03<>(SB), RODATA|NOPTR, $32

// func dotQ6_Kx4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, out *[4]float32)
TEXT ·dotQ6_Kx4(SB), NOSPLIT, $96-72
	MOVQ w+0(FP), BX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ lda+24(FP), R8
	LEAQ (R8)(R8*2), R10
	MOVQ ad+32(FP), AX
	MOVQ AX, ADP(SP)
	MOVQ ldd+40(FP), AX
	MOVQ AX, LDD(SP)
	MOVQ bs+48(FP), AX
	MOVQ AX, BSP(SP)
	MOVQ ldb+56(FP), AX
	MOVQ AX, LDB(SP)
	MOVL $0x0f0f0f0f, AX
	VMOVQ AX, X14
	VPBROADCASTD X14, Y14
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ CX, CX
	JZ done

loop:
	VPMOVSXBW 192(BX), Y11
	VMOVDQU Y11, SC(SP)
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	Q6K4_HALF(0)
	Q6K4_HALF(1)

	VMOVDQU SC(SP), Y11
	VPBROADCASTW 208(BX), X8
	VCVTPH2PS X8, Y8
	MOVQ ADP(SP), AX
	MOVQ BSP(SP), DX
	MOVQ LDD(SP), R11
	MOVQ LDB(SP), R12
	Q6K4_FINISH(Y0, Y4)
	ADDQ R11, AX
	ADDQ R12, DX
	Q6K4_FINISH(Y1, Y5)
	ADDQ R11, AX
	ADDQ R12, DX
	Q6K4_FINISH(Y2, Y6)
	ADDQ R11, AX
	ADDQ R12, DX
	Q6K4_FINISH(Y3, Y7)

	ADDQ $4, ADP(SP)
	ADDQ $32, BSP(SP)
	ADDQ $210, BX
	ADDQ $256, SI
	DECQ CX
	JNZ loop

done:
	MOVQ out+64(FP), DX
	HSUM(Y4, X4)
	VMOVSS X4, 0(DX)
	HSUM(Y5, X5)
	VMOVSS X5, 4(DX)
	HSUM(Y6, X6)
	VMOVSS X6, 8(DX)
	HSUM(Y7, X7)
	VMOVSS X7, 12(DX)
	VZEROUPPER
	RET

DATA q5k01<>+0(SB)/8, $0x0101010101010101
DATA q5k01<>+8(SB)/8, $0x0101010101010101
DATA q5k01<>+16(SB)/8, $0x0101010101010101
DATA q5k01<>+24(SB)/8, $0x0101010101010101
GLOBL q5k01<>(SB), RODATA|NOPTR, $32
