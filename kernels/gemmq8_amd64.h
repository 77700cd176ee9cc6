// One Q8_0 tile routine (see gemmq512_amd64.s), included once per row
// count: NAME is the routine, HAS1..HAS5 mark the activation rows past the
// first that it has. The includer defines the packed block's extras:
// Q8ARGS, the arguments' size; Q8SETUP, Q8MLOAD and Q8MNEXT, which load
// the pointers to the rows' activation sums (R13: rows 0-2, R14: 3-5),
// a block's mins and advance the pointers (empty for Q8_0); Q8STRIDE, the
// packed block's size; and Q8FIN(ad, as, acc, f), which finishes a row's
// block given its activation scale at ad and its scaled sum at as. Row i's int32 block sums are in Z(i), its float
// accumulator in Z(6+i); Z12 holds one vector of packed weights, Z13 the 16
// rows' block scales, Z14 a product of scales.

#ifdef HAS1
#define Q8I1 VPBROADCASTD (BX)(R9*1), Z1
#define Q8D1(off) VPDPBUSD.BCST off(SI)(R8*1), Z12, Z1
#define Q8F1 Q8FIN((DI)(R9*1), (R13)(R9*1), Z1, Z7)
#define Q8S1 ADDQ R8, DI; Q8STORE(Z7)
#else
#define Q8I1
#define Q8D1(off)
#define Q8F1
#define Q8S1
#endif
#ifdef HAS2
#define Q8I2 VPBROADCASTD (BX)(R9*2), Z2
#define Q8D2(off) VPDPBUSD.BCST off(SI)(R8*2), Z12, Z2
#define Q8F2 Q8FIN((DI)(R9*2), (R13)(R9*2), Z2, Z8)
#define Q8S2 ADDQ R8, DI; Q8STORE(Z8)
#else
#define Q8I2
#define Q8D2(off)
#define Q8F2
#define Q8S2
#endif
#ifdef HAS3
#define Q8I3 VPBROADCASTD (R12), Z3
#define Q8D3(off) VPDPBUSD.BCST off(R10), Z12, Z3
#define Q8F3 Q8FIN((R11), (R14), Z3, Z9)
#define Q8S3 ADDQ R8, DI; Q8STORE(Z9)
#else
#define Q8I3
#define Q8D3(off)
#define Q8F3
#define Q8S3
#endif
#ifdef HAS4
#define Q8I4 VPBROADCASTD (R12)(R9*1), Z4
#define Q8D4(off) VPDPBUSD.BCST off(R10)(R8*1), Z12, Z4
#define Q8F4 Q8FIN((R11)(R9*1), (R14)(R9*1), Z4, Z10)
#define Q8S4 ADDQ R8, DI; Q8STORE(Z10)
#else
#define Q8I4
#define Q8D4(off)
#define Q8F4
#define Q8S4
#endif
#ifdef HAS5
#define Q8I5 VPBROADCASTD (R12)(R9*2), Z5
#define Q8D5(off) VPDPBUSD.BCST off(R10)(R8*2), Z12, Z5
#define Q8F5 Q8FIN((R11)(R9*2), (R14)(R9*2), Z5, Z11)
#define Q8S5 ADDQ R8, DI; Q8STORE(Z11)
#else
#define Q8I5
#define Q8D5(off)
#define Q8F5
#define Q8S5
#endif

#define Q8STEP(r) \
	VMOVDQU32 (64*r)(DX), Z12 \
	VPDPBUSD.BCST (4*r)(SI), Z12, Z0 \
	Q8D1((4*r)) \
	Q8D2((4*r)) \
	Q8D3((4*r)) \
	Q8D4((4*r)) \
	Q8D5((4*r))

// func NAME(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int[, as *float32])
TEXT NAME(SB), NOSPLIT, $0-Q8ARGS
	MOVQ p+0(FP), DX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ lda+24(FP), R8
	LEAQ (R8)(R8*2), AX
	LEAQ (SI)(AX*1), R10
	MOVQ ad+32(FP), DI
	MOVQ ldd+40(FP), R9
	LEAQ (R9)(R9*2), AX
	LEAQ (DI)(AX*1), R11
	MOVQ ao+48(FP), BX
	LEAQ (BX)(AX*1), R12
	Q8SETUP
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	TESTQ CX, CX
	JZ   store

loop:
	VPBROADCASTD (BX), Z0
	Q8I1
	Q8I2
	Q8I3
	Q8I4
	Q8I5
	Q8STEP(0)
	Q8STEP(1)
	Q8STEP(2)
	Q8STEP(3)
	Q8STEP(4)
	Q8STEP(5)
	Q8STEP(6)
	Q8STEP(7)
	VMOVUPS 512(DX), Z13
	Q8MLOAD
	Q8FIN((DI), (R13), Z0, Z6)
	Q8F1
	Q8F2
	Q8F3
	Q8F4
	Q8F5
	ADDQ $Q8STRIDE, DX
	ADDQ $32, SI
	ADDQ $32, R10
	ADDQ $4, DI
	ADDQ $4, R11
	ADDQ $4, BX
	ADDQ $4, R12
	Q8MNEXT
	DECQ CX
	JNZ  loop

store:
	MOVQ mask+72(FP), AX
	KMOVW AX, K1
	MOVQ y+56(FP), DI
	MOVQ ldy+64(FP), R8
	MOVQ add+80(FP), R9
	Q8STORE(Z6)
	Q8S1
	Q8S2
	Q8S3
	Q8S4
	Q8S5
	VZEROUPPER
	RET

#undef Q8I1
#undef Q8D1
#undef Q8F1
#undef Q8S1
#undef Q8I2
#undef Q8D2
#undef Q8F2
#undef Q8S2
#undef Q8I3
#undef Q8D3
#undef Q8F3
#undef Q8S3
#undef Q8I4
#undef Q8D4
#undef Q8F4
#undef Q8S4
#undef Q8I5
#undef Q8D5
#undef Q8F5
#undef Q8S5
#undef Q8STEP
