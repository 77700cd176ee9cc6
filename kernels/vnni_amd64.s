// AVX-512 VNNI kernel for Q8_0 weights against four activation rows
// quantized to 8-bit blocks of 32. Two weight blocks fill one ZMM register.
// VPDPBUSD multiplies unsigned by signed bytes, so each activation byte is
// offset by 128 (XOR 0x80 turns int8 a into uint8 a+128) and the excess,
// 128 times the sum of each four weights, is computed once a block pair
// (VPDPBUSD of 0x80 bytes with the weights) and subtracted by starting each
// row's accumulator at its negation: the int32 lanes then hold the exact
// sums of a*w over four bytes, as the Go code computes them. Lanes 0-7 carry
// the first block and 8-15 the second; the two block scales (weight times
// activation) are spread to their lanes with VPERMPS. Only Z0-Z15 are used,
// so VZEROUPPER leaves no dirty upper state.

#include "textflag.h"

// lanes 0-7 take element 0, lanes 8-15 element 1
DATA q8pairIdx<>+0(SB)/8, $0
DATA q8pairIdx<>+8(SB)/8, $0
DATA q8pairIdx<>+16(SB)/8, $0
DATA q8pairIdx<>+24(SB)/8, $0
DATA q8pairIdx<>+32(SB)/8, $0x0000000100000001
DATA q8pairIdx<>+40(SB)/8, $0x0000000100000001
DATA q8pairIdx<>+48(SB)/8, $0x0000000100000001
DATA q8pairIdx<>+56(SB)/8, $0x0000000100000001
GLOBL q8pairIdx<>(SB), RODATA|NOPTR, $64

// ROWZ adds one activation row's block pair (quants at aq, two scales at
// ad) to acc, given the weights in Z4, minus the offset excess in Z5 and the
// two weight scales in X6.
#define ROWZ(aq, ad, acc) \
	VPXORD aq, Z8, Z10 \
	VMOVDQA64 Z5, Z11 \
	VPDPBUSD Z4, Z10, Z11 \
	VCVTDQ2PS Z11, Z11 \
	VMOVQ ad, X12 \
	VMULPS X6, X12, X12 \
	VPERMPS Z12, Z7, Z12 \
	VFMADD231PS Z11, Z12, acc

#define HSUMZ(z, y, x, off) \
	VEXTRACTF64X4 $1, z, Y15 \
	VADDPS Y15, y, y \
	VEXTRACTF128 $1, y, X15 \
	VADDPS X15, x, x \
	VHADDPS x, x, x \
	VHADDPS x, x, x \
	VMOVSS x, off(DX)

// func dotQ8_0x4z(w *byte, np int, aq *int8, lda int, ad *float32, ldd int, out *[4]float32)
// np is the number of block pairs; lda and ldd are the activation rows'
// strides in bytes.
TEXT ·dotQ8_0x4z(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), BX
	MOVQ np+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ lda+24(FP), R8
	MOVQ ad+32(FP), DI
	MOVQ ldd+40(FP), R9
	MOVQ out+48(FP), DX
	LEAQ (R8)(R8*2), R10
	LEAQ (R9)(R9*2), R11
	MOVL $0x80808080, AX
	VMOVD AX, X8
	VPBROADCASTD X8, Z8
	VMOVDQU64 q8pairIdx<>(SB), Z7
	VPXORD Z9, Z9, Z9
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ CX, CX
	JZ done

loop:
	VMOVDQU 2(BX), Y4
	VINSERTI64X4 $1, 36(BX), Z4, Z4
	VPXORD Z5, Z5, Z5
	VPDPBUSD Z4, Z8, Z5
	VPSUBD Z5, Z9, Z5
	MOVWLZX (BX), AX
	MOVWLZX 34(BX), R12
	SHLL $16, R12
	ORL R12, AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	ROWZ((SI), (DI), Z0)
	ROWZ((SI)(R8*1), (DI)(R9*1), Z1)
	ROWZ((SI)(R8*2), (DI)(R9*2), Z2)
	ROWZ((SI)(R10*1), (DI)(R11*1), Z3)
	ADDQ $68, BX
	ADDQ $64, SI
	ADDQ $8, DI
	DECQ CX
	JNZ loop

done:
	HSUMZ(Z0, Y0, X0, 0)
	HSUMZ(Z1, Y1, X1, 4)
	HSUMZ(Z2, Y2, X2, 8)
	HSUMZ(Z3, Y3, X3, 12)
	VZEROUPPER
	RET
