// One Q4_K tile routine (see gemmq512_amd64.s), included once per row
// count: NAME is the routine, HAS1..HAS3 mark the activation rows past the
// first that it has. The includer defines the packed super-block's shape:
// K4SUBS, every sub-block's K4J (whose dot products K4R takes, a dword g
// of quants at a time, and K4SCALE scales), KMINS and KD, the offsets of
// the min pairs and of d and dmin, and KSTRIDE, its size: Q4_K's (eight
// sub-blocks of 32) or Q6_K's (sixteen of 16). (Go's assembler expands
// macros even in a skipped #ifdef branch, so the choice is not made here.) Row i's sub-block dot products are in Z(i), its
// super-block sum of scale times dot in Z(4+i) (then its min sum in Z(i)),
// its float accumulator in Z(8+i); Z12 holds one vector of packed weights,
// Z13-Z15 the super-block's d and dmin and a product of scales.

#ifdef HAS1
#define K4D1(off) VPDPBUSD.BCST off(SI)(R8*1), Z12, Z1
#define K4M1(j) VPMULLD (4096+64*j)(DX), Z1, Z1; VPADDD Z1, Z5, Z5
#define K4W1(off) VPDPWSSD.BCST off(BX)(R12*1), Z12, Z1
#define K4F1 K4FIN((DI)(R9*1), Z1, Z5, Z9)
#define K4S1 ADDQ R8, DI; K4STORE(Z9)
#else
#define K4D1(off)
#define K4M1(j)
#define K4W1(off)
#define K4F1
#define K4S1
#endif
#ifdef HAS2
#define K4D2(off) VPDPBUSD.BCST off(SI)(R8*2), Z12, Z2
#define K4M2(j) VPMULLD (4096+64*j)(DX), Z2, Z2; VPADDD Z2, Z6, Z6
#define K4W2(off) VPDPWSSD.BCST off(BX)(R12*2), Z12, Z2
#define K4F2 K4FIN((DI)(R9*2), Z2, Z6, Z10)
#define K4S2 ADDQ R8, DI; K4STORE(Z10)
#else
#define K4D2(off)
#define K4M2(j)
#define K4W2(off)
#define K4F2
#define K4S2
#endif
#ifdef HAS3
#define K4D3(off) VPDPBUSD.BCST off(SI)(R10*1), Z12, Z3
#define K4M3(j) VPMULLD (4096+64*j)(DX), Z3, Z3; VPADDD Z3, Z7, Z7
#define K4W3(off) VPDPWSSD.BCST off(BX)(R13*1), Z12, Z3
#define K4F3 K4FIN((DI)(R11*1), Z3, Z7, Z11)
#define K4S3 ADDQ R8, DI; K4STORE(Z11)
#else
#define K4D3(off)
#define K4M3(j)
#define K4W3(off)
#define K4F3
#define K4S3
#endif

// K4R multiplies dword g of the super-block with every row.
#define K4R(g) \
	VMOVDQU32 (64*g)(DX), Z12 \
	VPDPBUSD.BCST (4*g)(SI), Z12, Z0 \
	K4D1((4*g)) \
	K4D2((4*g)) \
	K4D3((4*g))

// K4ZERO clears the rows' sub-block dot products.
#define K4ZERO \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3

// K4SCALE adds sub-block j's dot products, times its scales, to the sums.
#define K4SCALE(j) \
	VPMULLD (4096+64*j)(DX), Z0, Z0 \
	VPADDD Z0, Z4, Z4 \
	K4M1(j) \
	K4M2(j) \
	K4M3(j)


// K4MIN adds min pair j times the activations' sums of 16 (pairs).
#define K4MIN(j) \
	VMOVDQU32 (KMINS+64*j)(DX), Z12 \
	VPDPWSSD.BCST (4*j)(BX), Z12, Z0 \
	K4W1((4*j)) \
	K4W2((4*j)) \
	K4W3((4*j))

// func NAME(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, y *float32, ldy int, mask uint64, add int)
TEXT NAME(SB), NOSPLIT, $0-96
	MOVQ p+0(FP), DX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ lda+24(FP), R8
	LEAQ (R8)(R8*2), R10
	MOVQ ad+32(FP), DI
	MOVQ ldd+40(FP), R9
	LEAQ (R9)(R9*2), R11
	MOVQ bs+48(FP), BX
	MOVQ ldb+56(FP), R12
	LEAQ (R12)(R12*2), R13
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	TESTQ CX, CX
	JZ   store

loop:
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	K4SUBS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	K4MIN(0)
	K4MIN(1)
	K4MIN(2)
	K4MIN(3)
	K4MIN(4)
	K4MIN(5)
	K4MIN(6)
	K4MIN(7)
	VMOVUPS KD(DX), Z13
	VMOVUPS (KD+64)(DX), Z14
	K4FIN((DI), Z0, Z4, Z8)
	K4F1
	K4F2
	K4F3
	ADDQ $KSTRIDE, DX
	ADDQ $256, SI
	ADDQ $4, DI
	ADDQ $32, BX
	DECQ CX
	JNZ  loop

store:
	MOVQ mask+80(FP), AX
	KMOVW AX, K1
	MOVQ y+64(FP), DI
	MOVQ ldy+72(FP), R8
	MOVQ add+88(FP), R9
	K4STORE(Z8)
	K4S1
	K4S2
	K4S3
	VZEROUPPER
	RET

#undef K4D1
#undef K4M1
#undef K4W1
#undef K4F1
#undef K4S1
#undef K4D2
#undef K4M2
#undef K4W2
#undef K4F2
#undef K4S2
#undef K4D3
#undef K4M3
#undef K4W3
#undef K4F3
#undef K4S3
#undef K4R
#undef K4ZERO
#undef K4SCALE
#undef K4MIN
