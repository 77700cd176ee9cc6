// AVX-512 kernels for one activation row against weight rows (decode): the
// avx512 level's matrix-vector products. Each "rows4" routine walks ng
// groups of four consecutive weight rows (row stride rb bytes) against one
// prepared activation row and writes four outputs a group; each "row1"
// routine is the same arithmetic for one weight row, so an output does not
// depend on the group its row fell in. The activation is loaded once for
// the four rows, and the weight streams are prefetched ahead.
//
// Integer block sums are exact, as the Go code computes them. VPDPBUSD
// multiplies unsigned by signed bytes: Q8_0 weights are offset by 128 (XOR
// 0x80) and Q4_0's nibbles are used as they are, and the accumulators start
// at minus 128 (or 8) times each four activation quants' sum, computed once
// for the four rows. The K-quants' unsigned quants meet the activations in
// VPMADDUBSW (no saturation: at most 2*63*127) and their sub-block scales
// in VPDPWSSD.
//
// Only Z0-Z15 are used (VZEROUPPER clears their upper halves), and K1-K4.

#include "textflag.h"

// HSUM4 leaves in X0 the sums of the sixteen lanes of each of Z0-Z3 (in
// elements 0-3); HSUM1 reduces Z0 in the same order, so both give the
// same bits. Both use Y15.
#define HSUM4 \
	VEXTRACTF64X4 $1, Z0, Y15 \
	VADDPS Y15, Y0, Y0 \
	VEXTRACTF64X4 $1, Z1, Y15 \
	VADDPS Y15, Y1, Y1 \
	VEXTRACTF64X4 $1, Z2, Y15 \
	VADDPS Y15, Y2, Y2 \
	VEXTRACTF64X4 $1, Z3, Y15 \
	VADDPS Y15, Y3, Y3 \
	VHADDPS Y1, Y0, Y0 \
	VHADDPS Y3, Y2, Y2 \
	VHADDPS Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0

#define HSUM1 \
	VEXTRACTF64X4 $1, Z0, Y15 \
	VADDPS Y15, Y0, Y0 \
	VHADDPS Y0, Y0, Y0 \
	VHADDPS Y0, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0

// LANESUM4 sets X8 to the sums of the four 128-bit lanes of Z8 (lane r
// in element r), adding each lane's elements as HSUM4 adds each half's.
#define LANESUM4 \
	VEXTRACTF64X4 $1, Z8, Y9 \
	VHADDPS Y9, Y8, Y8 \
	VHADDPS Y8, Y8, Y8 \
	VEXTRACTF128 $1, Y8, X9 \
	VUNPCKLPS X9, X8, X8

// The weights are prefetched one group of four rows ahead, in address
// order, so that the memory sees one sequential stream: AX walks the next
// group as the four rows of this one are read (PREFETCHT2 into L2: a
// group can be larger than L1). Prefetching each row's own stream ahead
// instead was slower from DRAM.

// GROUP4 starts a group: BX, R11, R12, R13 its four rows (R10 the first,
// R8 the row stride), AX the next group's start, Z0-Z3 zero.
#define GROUP4 \
	MOVQ R10, BX \
	LEAQ (R10)(R8*1), R11 \
	LEAQ (R11)(R8*1), R12 \
	LEAQ (R12)(R8*1), R13 \
	LEAQ (R13)(R8*1), AX \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3

#define PF5 \
	PREFETCHT2 (AX) \
	PREFETCHT2 64(AX) \
	PREFETCHT2 128(AX) \
	PREFETCHT2 192(AX) \
	PREFETCHT2 256(AX)

// ---- Q8_0 ----------------------------------------------------------------

// Q8ACT loads the activation block pair at (SI) (scales at (DI)) for the
// rows: Z4 the quants, Z5 minus 128 times each four quants' sum, Z6 the two
// scales spread over lanes 0-7 and 8-15 (K1 = 0xff00). Z7 holds 0x80 bytes.
#define Q8ACT \
	VMOVDQU64 (SI), Z4 \
	VPXORD Z5, Z5, Z5 \
	VPDPBUSD Z4, Z7, Z5 \
	VPXORD Z8, Z8, Z8 \
	VPSUBD Z5, Z8, Z5 \
	VBROADCASTSS (DI), Z6 \
	VBROADCASTSS 4(DI), K1, Z6

// Q8ACT1 is Q8ACT for a last single block: quants loaded into the low half
// (K2 = 32 low bytes) and the upper half zero, which adds nothing.
#define Q8ACT1 \
	VMOVDQU8.Z (SI), K2, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPDPBUSD Z4, Z7, Z5 \
	VPXORD Z8, Z8, Z8 \
	VPSUBD Z5, Z8, Z5 \
	VBROADCASTSS (DI), Z6

// Q8ROW adds one weight row's block pair at (p) to acc; zw, zi and zs (ys
// the same register as zs) are scratch.
#define Q8ROW(p, acc, zw, yw, zi, zs, ys) \
	VMOVDQU 2(p), yw \
	VINSERTI64X4 $1, 36(p), zw, zw \
	VPXORD Z7, zw, zw \
	VMOVDQA64 Z5, zi \
	VPDPBUSD Z4, zw, zi \
	VCVTDQ2PS zi, zi \
	VPBROADCASTW (p), ys \
	VPBROADCASTW 34(p), K1, ys \
	VCVTPH2PS ys, zs \
	VMULPS Z6, zs, zs \
	VFMADD231PS zi, zs, acc

// Q8ROW1 is Q8ROW for a last single block.
#define Q8ROW1(p, acc, zw, yw, zi, zs, ys) \
	VMOVDQU8.Z 2(p), K2, zw \
	VPXORD Z7, zw, zw \
	VMOVDQA64 Z5, zi \
	VPDPBUSD Z4, zw, zi \
	VCVTDQ2PS zi, zi \
	VPBROADCASTW (p), ys \
	VCVTPH2PS ys, zs \
	VMULPS Z6, zs, zs \
	VFMADD231PS zi, zs, acc

// Q8CONSTS sets Z7 = 0x80 bytes, K1 = 0xff00, K2 = the low 32 bytes.
#define Q8CONSTS \
	MOVL $0x80808080, AX \
	VPBROADCASTD AX, Z7 \
	MOVL $0xff00, AX \
	KMOVW AX, K1 \
	MOVL $0xffffffff, AX \
	KMOVQ AX, K2

// func q8_0Rows4z(w *byte, rb int, nb int, aq *int8, ad *float32, y *float32, ng int)
TEXT ·q8_0Rows4z(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), R10
	MOVQ rb+8(FP), R8
	MOVQ y+40(FP), DX
	MOVQ ng+48(FP), R9
	Q8CONSTS
	TESTQ R9, R9
	JZ q8r4end

q8r4group:
	GROUP4
	MOVQ aq+24(FP), SI
	MOVQ ad+32(FP), DI
	MOVQ nb+16(FP), CX
	SHRQ $1, CX
	JZ q8r4odd

q8r4pair:
	PF5
	ADDQ $272, AX
	Q8ACT
	Q8ROW(BX, Z0, Z8, Y8, Z9, Z10, Y10)
	Q8ROW(R11, Z1, Z11, Y11, Z12, Z13, Y13)
	Q8ROW(R12, Z2, Z8, Y8, Z9, Z10, Y10)
	Q8ROW(R13, Z3, Z11, Y11, Z12, Z13, Y13)
	ADDQ $68, BX
	ADDQ $68, R11
	ADDQ $68, R12
	ADDQ $68, R13
	ADDQ $64, SI
	ADDQ $8, DI
	DECQ CX
	JNZ q8r4pair

q8r4odd:
	MOVQ nb+16(FP), CX
	TESTQ $1, CX
	JZ q8r4sum
	Q8ACT1
	Q8ROW1(BX, Z0, Z8, Y8, Z9, Z10, Y10)
	Q8ROW1(R11, Z1, Z11, Y11, Z12, Z13, Y13)
	Q8ROW1(R12, Z2, Z8, Y8, Z9, Z10, Y10)
	Q8ROW1(R13, Z3, Z11, Y11, Z12, Z13, Y13)

q8r4sum:
	HSUM4
	VMOVUPS X0, (DX)
	ADDQ $16, DX
	LEAQ (R10)(R8*4), R10
	DECQ R9
	JNZ q8r4group

q8r4end:
	VZEROUPPER
	RET

// func q8_0Row1z(w *byte, nb int, aq *int8, ad *float32) float32
TEXT ·q8_0Row1z(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), BX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ ad+24(FP), DI
	Q8CONSTS
	VPXORD Z0, Z0, Z0
	SHRQ $1, CX
	JZ q8r1odd

q8r1pair:
	Q8ACT
	Q8ROW(BX, Z0, Z8, Y8, Z9, Z10, Y10)
	ADDQ $68, BX
	ADDQ $64, SI
	ADDQ $8, DI
	DECQ CX
	JNZ q8r1pair

q8r1odd:
	MOVQ nb+8(FP), CX
	TESTQ $1, CX
	JZ q8r1sum
	Q8ACT1
	Q8ROW1(BX, Z0, Z8, Y8, Z9, Z10, Y10)

q8r1sum:
	HSUM1
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// ---- Q4_0 ----------------------------------------------------------------

// Four blocks an iteration: block b's low and high nibbles go to 128-bit
// lane b of two registers, so one scale vector (lane b: block b's scales)
// serves both, and the activations are shuffled to match once for the
// four rows.

// lane b of each 64 bytes: dword index b (VPERMILPS spreads block b's
// activation scale over lane b)
DATA q40lane<>+0(SB)/8, $0
DATA q40lane<>+8(SB)/8, $0
DATA q40lane<>+16(SB)/8, $0x0000000100000001
DATA q40lane<>+24(SB)/8, $0x0000000100000001
DATA q40lane<>+32(SB)/8, $0x0000000200000002
DATA q40lane<>+40(SB)/8, $0x0000000200000002
DATA q40lane<>+48(SB)/8, $0x0000000300000003
DATA q40lane<>+56(SB)/8, $0x0000000300000003
GLOBL q40lane<>(SB), RODATA|NOPTR, $64

// VPERMW indices: the f16 scales of four consecutive blocks are words 0,
// 9, 18 and 27 of the 64 bytes at the first; each is repeated four times.
DATA q40scw<>+0(SB)/8, $0x0000000000000000
DATA q40scw<>+8(SB)/8, $0x0009000900090009
DATA q40scw<>+16(SB)/8, $0x0012001200120012
DATA q40scw<>+24(SB)/8, $0x001b001b001b001b
DATA q40scw<>+32(SB)/8, $0
DATA q40scw<>+40(SB)/8, $0
DATA q40scw<>+48(SB)/8, $0
DATA q40scw<>+56(SB)/8, $0
GLOBL q40scw<>(SB), RODATA|NOPTR, $64

// Q40CONSTS sets Z12 = 0x0f bytes, Z14 = 0x08 bytes, Z13 the scale indices.
#define Q40CONSTS \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z12 \
	MOVL $0x08080808, AX \
	VPBROADCASTD AX, Z14 \
	VMOVDQU64 q40scw<>(SB), Z13

// Q40ACT loads four activation blocks at (SI), scales at (DI): Z4 (Z5)
// lane b elements 0-15 (16-31) of block b, Z6 minus 8 times each dword
// lane's sum of the quants of both, Z7 lane b block b's scale.
#define Q40ACT \
	VMOVDQU64 (SI), Z8 \
	VMOVDQU64 64(SI), Z9 \
	VSHUFI64X2 $0x88, Z9, Z8, Z4 \
	VSHUFI64X2 $0xdd, Z9, Z8, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPDPBUSD Z4, Z14, Z6 \
	VPDPBUSD Z5, Z14, Z6 \
	VPXORD Z8, Z8, Z8 \
	VPSUBD Z6, Z8, Z6 \
	VBROADCASTF32X4 (DI), Z7 \
	VPERMILPS q40lane<>(SB), Z7, Z7

// Q40ROW adds four blocks of the weight row at (p) to acc.
#define Q40ROW(p, acc) \
	VMOVDQU 2(p), X8 \
	VINSERTI32X4 $1, 20(p), Z8, Z8 \
	VINSERTI32X4 $2, 38(p), Z8, Z8 \
	VINSERTI32X4 $3, 56(p), Z8, Z8 \
	VPSRLW $4, Z8, Z9 \
	VPANDD Z12, Z8, Z8 \
	VPANDD Z12, Z9, Z9 \
	VMOVDQA64 Z6, Z10 \
	VPDPBUSD Z4, Z8, Z10 \
	VPDPBUSD Z5, Z9, Z10 \
	VCVTDQ2PS Z10, Z10 \
	VPERMW (p), Z13, Z11 \
	VCVTPH2PS Y11, Z11 \
	VMULPS Z7, Z11, Z11 \
	VFMADD231PS Z10, Z11, acc

// Q40ACT1 and Q40ROW1 are the same for one block, in lane 0.
#define Q40ACT1 \
	VMOVDQU (SI), X4 \
	VMOVDQU 16(SI), X5 \
	VPXORD Z6, Z6, Z6 \
	VPDPBUSD Z4, Z14, Z6 \
	VPDPBUSD Z5, Z14, Z6 \
	VPXORD Z8, Z8, Z8 \
	VPSUBD Z6, Z8, Z6 \
	VBROADCASTSS (DI), Z7

#define Q40ROW1(p, acc) \
	VMOVDQU 2(p), X8 \
	VPSRLW $4, Z8, Z9 \
	VPANDD Z12, Z8, Z8 \
	VPANDD Z12, Z9, Z9 \
	VMOVDQA64 Z6, Z10 \
	VPDPBUSD Z4, Z8, Z10 \
	VPDPBUSD Z5, Z9, Z10 \
	VCVTDQ2PS Z10, Z10 \
	VPBROADCASTW (p), Y11 \
	VCVTPH2PS Y11, Z11 \
	VMULPS Z7, Z11, Z11 \
	VFMADD231PS Z10, Z11, acc

// func q4_0Rows4z(w *byte, rb int, nb int, aq *int8, ad *float32, y *float32, ng int)
TEXT ·q4_0Rows4z(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), R10
	MOVQ rb+8(FP), R8
	MOVQ y+40(FP), DX
	MOVQ ng+48(FP), R9
	Q40CONSTS
	TESTQ R9, R9
	JZ q40r4end

q40r4group:
	GROUP4
	MOVQ aq+24(FP), SI
	MOVQ ad+32(FP), DI
	MOVQ nb+16(FP), CX
	SHRQ $2, CX
	JZ q40r4tail

q40r4quad:
	PF5
	ADDQ $288, AX
	Q40ACT
	Q40ROW(BX, Z0)
	Q40ROW(R11, Z1)
	Q40ROW(R12, Z2)
	Q40ROW(R13, Z3)
	ADDQ $72, BX
	ADDQ $72, R11
	ADDQ $72, R12
	ADDQ $72, R13
	ADDQ $128, SI
	ADDQ $16, DI
	DECQ CX
	JNZ q40r4quad

q40r4tail:
	MOVQ nb+16(FP), CX
	ANDQ $3, CX
	JZ q40r4sum

q40r4one:
	Q40ACT1
	Q40ROW1(BX, Z0)
	Q40ROW1(R11, Z1)
	Q40ROW1(R12, Z2)
	Q40ROW1(R13, Z3)
	ADDQ $18, BX
	ADDQ $18, R11
	ADDQ $18, R12
	ADDQ $18, R13
	ADDQ $32, SI
	ADDQ $4, DI
	DECQ CX
	JNZ q40r4one

q40r4sum:
	HSUM4
	VMOVUPS X0, (DX)
	ADDQ $16, DX
	LEAQ (R10)(R8*4), R10
	DECQ R9
	JNZ q40r4group

q40r4end:
	VZEROUPPER
	RET

// func q4_0Row1z(w *byte, nb int, aq *int8, ad *float32) float32
TEXT ·q4_0Row1z(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), BX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ ad+24(FP), DI
	Q40CONSTS
	VPXORD Z0, Z0, Z0
	SHRQ $2, CX
	JZ q40r1tail

q40r1quad:
	Q40ACT
	Q40ROW(BX, Z0)
	ADDQ $72, BX
	ADDQ $128, SI
	ADDQ $16, DI
	DECQ CX
	JNZ q40r1quad

q40r1tail:
	MOVQ nb+8(FP), CX
	ANDQ $3, CX
	JZ q40r1sum

q40r1one:
	Q40ACT1
	Q40ROW1(BX, Z0)
	ADDQ $18, BX
	ADDQ $32, SI
	ADDQ $4, DI
	DECQ CX
	JNZ q40r1one

q40r1sum:
	HSUM1
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// ---- Q4_K and Q5_K -------------------------------------------------------

// A super-block's 128 quant bytes are read as two registers of 64; the low
// nibbles of the first are sub-blocks 0 and 2 (32 elements each, one per
// 256-bit half), its high nibbles 1 and 3, and likewise 4-7 from the
// second. The activations are shuffled into the same order once for the
// four rows. The twelve scale bytes of the four rows are unpacked together
// (row r in 128-bit lane r: [8 scales, 8 mins]); VPSHUFB spreads a row's
// scales over the int16 lanes that VPDPWSSD takes. The min terms of the
// four rows are summed in lane r of Z8 and subtracted at the end.

// K4UNPACKZ's tables: kq4_amd64.h's k4shift, k4mask and k4high in each
// 128-bit lane.
#define K5REP(name, lo, hi) \
	DATA name+0(SB)/8, lo \
	DATA name+8(SB)/8, hi \
	DATA name+16(SB)/8, lo \
	DATA name+24(SB)/8, hi \
	DATA name+32(SB)/8, lo \
	DATA name+40(SB)/8, hi \
	DATA name+48(SB)/8, lo \
	DATA name+56(SB)/8, hi \
	GLOBL name(SB), RODATA|NOPTR, $64

K5REP(k5shift<>, $0, $0x0000000400000000)
K5REP(k5mask<>, $0x0f0f0f0f3f3f3f3f, $0x0f0f0f0f3f3f3f3f)
K5REP(k5high<>, $0x3030303000000000, $0x3030303000000000)
// bytes 8-15 of each lane (the mins) zero-extended to words
K5REP(k5minw<>, $0x800b800a80098008, $0x800f800e800d800c)

// k5sc: for the weight registers [0|2], [1|3], [4|6], [5|7] (64 bytes
// each), VPSHUFB indices that spread scale j over the int16 lanes of its
// half.
#define K5SC(off, j0, j1) \
	DATA k5sc<>+(off)(SB)/8, $(0x8000800080008000 + j0*0x0001000100010001) \
	DATA k5sc<>+(off+8)(SB)/8, $(0x8000800080008000 + j0*0x0001000100010001) \
	DATA k5sc<>+(off+16)(SB)/8, $(0x8000800080008000 + j0*0x0001000100010001) \
	DATA k5sc<>+(off+24)(SB)/8, $(0x8000800080008000 + j0*0x0001000100010001) \
	DATA k5sc<>+(off+32)(SB)/8, $(0x8000800080008000 + j1*0x0001000100010001) \
	DATA k5sc<>+(off+40)(SB)/8, $(0x8000800080008000 + j1*0x0001000100010001) \
	DATA k5sc<>+(off+48)(SB)/8, $(0x8000800080008000 + j1*0x0001000100010001) \
	DATA k5sc<>+(off+56)(SB)/8, $(0x8000800080008000 + j1*0x0001000100010001)
K5SC(0, 0, 2)
K5SC(64, 1, 3)
K5SC(128, 4, 6)
K5SC(192, 5, 7)
GLOBL k5sc<>(SB), RODATA|NOPTR, $256

// HALVES(name, lo, hi) is a 64-byte table: lo in its first 32 bytes, hi in
// the last 32.
#define HALVES(name, lo, hi) \
	DATA name+0(SB)/8, lo \
	DATA name+8(SB)/8, lo \
	DATA name+16(SB)/8, lo \
	DATA name+24(SB)/8, lo \
	DATA name+32(SB)/8, hi \
	DATA name+40(SB)/8, hi \
	DATA name+48(SB)/8, hi \
	DATA name+56(SB)/8, hi \
	GLOBL name(SB), RODATA|NOPTR, $64

// Q5_K: the qh bit that each byte of the four weight registers takes (qh
// byte l in both halves; bits 2c and 2c+1 belong to quant bytes 32c+l).
#define K5BIT(off, b0, b1) \
	DATA k5bit<>+(off)(SB)/8, $(b0*0x0101010101010101) \
	DATA k5bit<>+(off+8)(SB)/8, $(b0*0x0101010101010101) \
	DATA k5bit<>+(off+16)(SB)/8, $(b0*0x0101010101010101) \
	DATA k5bit<>+(off+24)(SB)/8, $(b0*0x0101010101010101) \
	DATA k5bit<>+(off+32)(SB)/8, $(b1*0x0101010101010101) \
	DATA k5bit<>+(off+40)(SB)/8, $(b1*0x0101010101010101) \
	DATA k5bit<>+(off+48)(SB)/8, $(b1*0x0101010101010101) \
	DATA k5bit<>+(off+56)(SB)/8, $(b1*0x0101010101010101)
K5BIT(0, 0x01, 0x04)
K5BIT(64, 0x02, 0x08)
K5BIT(128, 0x10, 0x40)
K5BIT(192, 0x20, 0x80)
GLOBL k5bit<>(SB), RODATA|NOPTR, $256

// bytes of 16, the fifth bit
HALVES(k5sixteen<>, $0x1010101010101010, $0x1010101010101010)
DATA k5ones<>+0(SB)/4, $0x00010001
GLOBL k5ones<>(SB), RODATA|NOPTR, $4

// K5CONSTS sets Z10 = 0x0f bytes and the masks K1-K3 for gathering four
// rows' (d, dmin) dwords.
#define K5CONSTS \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z10 \
	MOVL $0x0c, AX \
	KMOVW AX, K1 \
	MOVL $0x30, AX \
	KMOVW AX, K2 \
	MOVL $0xc0, AX \
	KMOVW AX, K3

// K5ACT: Z4-Z7 the activation quants at (SI) in the order of the weight
// registers.
#define K5ACT \
	VMOVDQU64 (SI), Z12 \
	VMOVDQU64 64(SI), Z13 \
	VSHUFI64X2 $0x44, Z13, Z12, Z4 \
	VSHUFI64X2 $0xee, Z13, Z12, Z5 \
	VMOVDQU64 128(SI), Z12 \
	VMOVDQU64 192(SI), Z13 \
	VSHUFI64X2 $0x44, Z13, Z12, Z6 \
	VSHUFI64X2 $0xee, Z13, Z12, Z7

// K5UNPACK: the scales and mins of the rows whose twelve scale bytes
// start lanes 0-3 of Z9, as [8 scales, 8 mins] bytes (as K4UNPACK).
#define K5UNPACK \
	VPSHUFD $0x50, Z9, Z12 \
	VPSHUFD $0x98, Z9, Z9 \
	VPSRLVD k5shift<>(SB), Z9, Z9 \
	VPANDD k5mask<>(SB), Z9, Z9 \
	VPSRLD $2, Z12, Z12 \
	VPANDD k5high<>(SB), Z12, Z12 \
	VPORD Z12, Z9, Z9

#define K5SCALES4 \
	VMOVDQU 4(BX), X9 \
	VINSERTI32X4 $1, 4(R11), Z9, Z9 \
	VINSERTI32X4 $2, 4(R12), Z9, Z9 \
	VINSERTI32X4 $3, 4(R13), Z9, Z9 \
	K5UNPACK

#define K5SCALES1 \
	VMOVDQU 4(BX), X9 \
	K5UNPACK

// K5DD stores lane r = [d, dmin, d, dmin] times the activation scale of
// row r at 0(SP), given the rows' f16 (d, dmin) pairs in dwords 2r, 2r+1
// of Y12, and leaves Z12 lane r = dmin times the activation scale.
#define K5DD \
	VCVTPH2PS Y12, Z12 \
	VMULPS.BCST (DI), Z12, Z12 \
	VMOVUPS Z12, 0(SP) \
	VMOVSHDUP Z12, Z12

#define K5DD4 \
	VPBROADCASTD (BX), Y12 \
	VPBROADCASTD (R11), K1, Y12 \
	VPBROADCASTD (R12), K2, Y12 \
	VPBROADCASTD (R13), K3, Y12 \
	K5DD

#define K5DD1 \
	VPBROADCASTD (BX), Y12 \
	K5DD

// K5MINS adds to lane r of Z8 row r's eight mins times the sums of their
// sub-blocks' activations (R9: the sixteen sums of 16), times dmin*da.
#define K5MINS \
	VPBROADCASTD k5ones<>(SB), Y13 \
	VPMADDWD (R9), Y13, Y13 \
	VPMOVDW Y13, X13 \
	VSHUFI64X2 $0, Z13, Z13, Z13 \
	VPSHUFB k5minw<>(SB), Z9, Z14 \
	VPMADDWD Z13, Z14, Z14 \
	VCVTDQ2PS Z14, Z14 \
	VFMADD231PS Z14, Z12, Z8

// K4QUANTS(p, off) leaves in Z13 and Z14 the low and high nibbles of the
// 64 quant bytes at off(p).
#define K4QUANTS(p, off) \
	VMOVDQU64 off(p), Z13 \
	VPSRLW $4, Z13, Z14 \
	VPANDD Z10, Z13, Z13 \
	VPANDD Z10, Z14, Z14

// K5QUANTS(p, off, c) is K4QUANTS for Q5_K weight registers 2c and
// 2c+1, adding the fifth bits from the qh bytes in Z11.
#define K5QUANTS(p, off, c) \
	K4QUANTS(p, off) \
	VPTESTMB k5bit<>+(128*c)(SB), Z11, K4 \
	VPADDB k5sixteen<>(SB), Z13, K4, Z13 \
	VPTESTMB k5bit<>+(128*c+64)(SB), Z11, K4 \
	VPADDB k5sixteen<>(SB), Z14, K4, Z14

// K5DOT(c, A0, A1) multiplies weight registers 2c and 2c+1 (Z13, Z14)
// with their activations (A0, A1) and the row's scales (Z12), adding to
// the int32 sums in Z15; Z11 is scratch.
#define K5DOT(c, A0, A1) \
	VPMADDUBSW A0, Z13, Z13 \
	VPMADDUBSW A1, Z14, Z14 \
	VPSHUFB k5sc<>+(128*c)(SB), Z12, Z11 \
	VPDPWSSD Z11, Z13, Z15 \
	VPSHUFB k5sc<>+(128*c+64)(SB), Z12, Z11 \
	VPDPWSSD Z11, Z14, Z15

// K4ROW(p, r, acc): row r of the group (at p) into acc.
#define K4ROW(p, r, acc) \
	VSHUFI64X2 $(0x55*r), Z9, Z9, Z12 \
	VPXORD Z15, Z15, Z15 \
	K4QUANTS(p, 16) \
	K5DOT(0, Z4, Z5) \
	K4QUANTS(p, 80) \
	K5DOT(1, Z6, Z7) \
	VCVTDQ2PS Z15, Z15 \
	VFMADD231PS.BCST (16*r)(SP), Z15, acc

// K5ROW is K4ROW for Q5_K: qh at 16, quants at 48.
#define K5ROW(p, r, acc) \
	VSHUFI64X2 $(0x55*r), Z9, Z9, Z12 \
	VPXORD Z15, Z15, Z15 \
	VBROADCASTI64X4 16(p), Z11 \
	K5QUANTS(p, 48, 0) \
	K5DOT(0, Z4, Z5) \
	VBROADCASTI64X4 16(p), Z11 \
	K5QUANTS(p, 112, 1) \
	K5DOT(1, Z6, Z7) \
	VCVTDQ2PS Z15, Z15 \
	VFMADD231PS.BCST (16*r)(SP), Z15, acc

// K5SUM4 stores at (DX) the four rows' sums less their min terms.
#define K5SUM4 \
	LANESUM4 \
	HSUM4 \
	VSUBPS X8, X0, X0 \
	VMOVUPS X0, (DX)

#define PF9 \
	PF5 \
	PREFETCHT2 320(AX) \
	PREFETCHT2 384(AX) \
	PREFETCHT2 448(AX) \
	PREFETCHT2 512(AX)

#define PF11 \
	PF9 \
	PREFETCHT2 576(AX) \
	PREFETCHT2 640(AX)

// KROWS4(ROW, bb, PF) is the body of a four-row K-quant kernel with
// super-blocks of bb bytes; 0(SP) holds the scale vector, and ng counts
// the groups left.
#define KROWS4(ROW, bb, PF) \
	MOVQ w+0(FP), R10 \
	MOVQ rb+8(FP), R8 \
	MOVQ y+48(FP), DX \
	K5CONSTS \
	MOVQ ng+56(FP), AX \
	TESTQ AX, AX \
	JZ end \
group: \
	GROUP4 \
	MOVQ aq+24(FP), SI \
	MOVQ ad+32(FP), DI \
	MOVQ bs+40(FP), R9 \
	MOVQ nb+16(FP), CX \
	VPXORD Z8, Z8, Z8 \
	TESTQ CX, CX \
	JZ sum \
sb: \
	PF \
	ADDQ $(4*bb), AX \
	K5ACT \
	K5SCALES4 \
	K5DD4 \
	K5MINS \
	ROW(BX, 0, Z0) \
	ROW(R11, 1, Z1) \
	ROW(R12, 2, Z2) \
	ROW(R13, 3, Z3) \
	ADDQ $bb, BX \
	ADDQ $bb, R11 \
	ADDQ $bb, R12 \
	ADDQ $bb, R13 \
	ADDQ $256, SI \
	ADDQ $4, DI \
	ADDQ $32, R9 \
	DECQ CX \
	JNZ sb \
sum: \
	K5SUM4 \
	ADDQ $16, DX \
	LEAQ (R10)(R8*4), R10 \
	DECQ ng+56(FP) \
	JNZ group \
end: \
	VZEROUPPER \
	RET

// KROW1(ROW, bb) is the one-row kernel: the arithmetic of KROWS4 for
// row 0 alone.
#define KROW1(ROW, bb) \
	MOVQ w+0(FP), BX \
	MOVQ nb+8(FP), CX \
	MOVQ aq+16(FP), SI \
	MOVQ ad+24(FP), DI \
	MOVQ bs+32(FP), R9 \
	K5CONSTS \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z8, Z8, Z8 \
	TESTQ CX, CX \
	JZ sum \
sb: \
	K5ACT \
	K5SCALES1 \
	K5DD1 \
	K5MINS \
	ROW(BX, 0, Z0) \
	ADDQ $bb, BX \
	ADDQ $256, SI \
	ADDQ $4, DI \
	ADDQ $32, R9 \
	DECQ CX \
	JNZ sb \
sum: \
	LANESUM4 \
	HSUM1 \
	VSUBSS X8, X0, X0 \
	VMOVSS X0, ret+40(FP) \
	VZEROUPPER \
	RET

// func q4_KRows4z(w *byte, rb int, nb int, aq *int8, ad *float32, bs *int16, y *float32, ng int)
TEXT ·q4_KRows4z(SB), NOSPLIT, $64-64
	KROWS4(K4ROW, 144, PF9)

// func q4_KRow1z(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32
TEXT ·q4_KRow1z(SB), NOSPLIT, $64-44
	KROW1(K4ROW, 144)

// func q5_KRows4z(w *byte, rb int, nb int, aq *int8, ad *float32, bs *int16, y *float32, ng int)
TEXT ·q5_KRows4z(SB), NOSPLIT, $64-64
	KROWS4(K5ROW, 176, PF11)

// func q5_KRow1z(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32
TEXT ·q5_KRow1z(SB), NOSPLIT, $64-44
	KROW1(K5ROW, 176)

// ---- Q6_K ----------------------------------------------------------------

// Each half super-block (128 elements) is two registers of 64 quants in
// element order: the low nibbles of its 64 ql bytes with qh bits 0-1
// (first 32) and 2-3 (last 32) above them, and the high nibbles with bits
// 4-5 and 6-7. So the activations are read as they are. The int8 group
// scales are sign-extended to words and spread over 128-bit lanes (one
// group of 16 a lane) for VPDPWSSD; the -32 offset is 32 times the scales
// times the activation sums of 16, subtracted at the start.

// VPSLLVW/VPSRLVW counts that bring qh bits 0-1 and 2-3 (low nibbles) or
// 4-5 and 6-7 (high nibbles) to bits 4-5 of each byte, for the first and
// last 32 bytes.
HALVES(k6shl<>, $0x0004000400040004, $0x0002000200020002)
HALVES(k6shr<>, $0, $0x0002000200020002)

// VPSHUFB indices: lane i takes word i (k6scA) or word 4+i (k6scB) of its
// 128-bit lane.
#define K6SC(name, w0, w1, w2, w3) \
	DATA name+0(SB)/8, $(w0*0x0202020202020202 + 0x0100010001000100) \
	DATA name+8(SB)/8, $(w0*0x0202020202020202 + 0x0100010001000100) \
	DATA name+16(SB)/8, $(w1*0x0202020202020202 + 0x0100010001000100) \
	DATA name+24(SB)/8, $(w1*0x0202020202020202 + 0x0100010001000100) \
	DATA name+32(SB)/8, $(w2*0x0202020202020202 + 0x0100010001000100) \
	DATA name+40(SB)/8, $(w2*0x0202020202020202 + 0x0100010001000100) \
	DATA name+48(SB)/8, $(w3*0x0202020202020202 + 0x0100010001000100) \
	DATA name+56(SB)/8, $(w3*0x0202020202020202 + 0x0100010001000100) \
	GLOBL name(SB), RODATA|NOPTR, $64

K6SC(k6scA<>, 0, 1, 2, 3)
K6SC(k6scB<>, 4, 5, 6, 7)

// K6CONSTS sets Z4 = 0x0f bytes, Z5 = 0x30 bytes.
#define K6CONSTS \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z4 \
	MOVL $0x30303030, AX \
	VPBROADCASTD AX, Z5

// K6HALF(p, h, zs) adds half h of the row at p to Z9, with the row's
// scales for it (words 8h..8h+7) in each 128-bit lane of zs.
#define K6HALF(p, h, zs) \
	VMOVDQU64 (64*h)(p), Z14 \
	VBROADCASTI64X4 (128+32*h)(p), Z15 \
	VPSRLW $4, Z14, Z10 \
	VPANDD Z4, Z14, Z14 \
	VPANDD Z4, Z10, Z10 \
	VPSLLVW k6shl<>(SB), Z15, Z11 \
	VPTERNLOGD $0xf8, Z5, Z11, Z14 \
	VPSRLVW k6shr<>(SB), Z15, Z15 \
	VPTERNLOGD $0xf8, Z5, Z15, Z10 \
	VPMADDUBSW (128*h)(SI), Z14, Z14 \
	VPMADDUBSW (128*h+64)(SI), Z10, Z10 \
	VPSHUFB k6scA<>(SB), zs, Z11 \
	VPDPWSSD Z11, Z14, Z9 \
	VPSHUFB k6scB<>(SB), zs, Z11 \
	VPDPWSSD Z11, Z10, Z9

// K6ROW(p, r, acc): row r of the group (at p) into acc; R9 points at the
// activation sums of 16, 0(SP) holds the rows' d times the activation
// scale.
#define K6ROW(p, r, acc) \
	VPMOVSXBW 192(p), Y12 \
	VPMADDWD (R9), Y12, Y11 \
	VPSLLD $5, Y11, Y11 \
	VPXORD Z9, Z9, Z9 \
	VPSUBD Z11, Z9, Z9 \
	VSHUFI64X2 $0x55, Z12, Z12, Z13 \
	VSHUFI64X2 $0x00, Z12, Z12, Z12 \
	K6HALF(p, 0, Z12) \
	K6HALF(p, 1, Z13) \
	VCVTDQ2PS Z9, Z9 \
	VFMADD231PS.BCST (4*r)(SP), Z9, acc

// K6D4 stores the four rows' d times the activation scale at 0(SP); K6D1
// row 0's.
#define K6D4 \
	MOVWLZX 208(BX), AX \
	VMOVD AX, X12 \
	VPINSRW $1, 208(R11), X12, X12 \
	VPINSRW $2, 208(R12), X12, X12 \
	VPINSRW $3, 208(R13), X12, X12 \
	VCVTPH2PS X12, X12 \
	VBROADCASTSS (DI), X13 \
	VMULPS X13, X12, X12 \
	VMOVUPS X12, 0(SP)

#define K6D1 \
	MOVWLZX 208(BX), AX \
	VMOVD AX, X12 \
	VCVTPH2PS X12, X12 \
	VBROADCASTSS (DI), X13 \
	VMULPS X13, X12, X12 \
	VMOVUPS X12, 0(SP)

#define PF14 \
	PF11 \
	PREFETCHT2 704(AX) \
	PREFETCHT2 768(AX) \
	PREFETCHT2 832(AX)

// func q6_KRows4z(w *byte, rb int, nb int, aq *int8, ad *float32, bs *int16, y *float32, ng int)
// 0(SP) holds the rows' scales, and ng counts the groups left.
TEXT ·q6_KRows4z(SB), NOSPLIT, $16-64
	MOVQ w+0(FP), R10
	MOVQ rb+8(FP), R8
	MOVQ y+48(FP), DX
	K6CONSTS
	MOVQ ng+56(FP), AX
	TESTQ AX, AX
	JZ end

group:
	GROUP4
	MOVQ aq+24(FP), SI
	MOVQ ad+32(FP), DI
	MOVQ bs+40(FP), R9
	MOVQ nb+16(FP), CX
	TESTQ CX, CX
	JZ sum

sb:
	PF14
	ADDQ $840, AX
	K6D4
	K6ROW(BX, 0, Z0)
	K6ROW(R11, 1, Z1)
	K6ROW(R12, 2, Z2)
	K6ROW(R13, 3, Z3)
	ADDQ $210, BX
	ADDQ $210, R11
	ADDQ $210, R12
	ADDQ $210, R13
	ADDQ $256, SI
	ADDQ $4, DI
	ADDQ $32, R9
	DECQ CX
	JNZ sb

sum:
	HSUM4
	VMOVUPS X0, (DX)
	ADDQ $16, DX
	LEAQ (R10)(R8*4), R10
	DECQ ng+56(FP)
	JNZ group

end:
	VZEROUPPER
	RET

// func q6_KRow1z(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32
TEXT ·q6_KRow1z(SB), NOSPLIT, $16-44
	MOVQ w+0(FP), BX
	MOVQ nb+8(FP), CX
	MOVQ aq+16(FP), SI
	MOVQ ad+24(FP), DI
	MOVQ bs+32(FP), R9
	K6CONSTS
	VPXORD Z0, Z0, Z0
	TESTQ CX, CX
	JZ sum

sb:
	K6D1
	K6ROW(BX, 0, Z0)
	ADDQ $210, BX
	ADDQ $256, SI
	ADDQ $4, DI
	ADDQ $32, R9
	DECQ CX
	JNZ sb

sum:
	HSUM1
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET
