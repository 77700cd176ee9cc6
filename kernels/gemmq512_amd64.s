// AVX-512 VNNI register-tiled products for Q8_0 and Q4_K weights (prompt
// processing), and for the other quantized dtypes repacked for them: Q4_0,
// Q5_0 and MXFP4 as Q8_0 (below), Q4_1 and Q5_1 as Q8_0 with mins (a
// tile that adds min times the activations' sums), Q5_K as Q4_K and Q6_K
// for a Q4_K tile of sixteen sub-blocks of 16. A panel of 16 weight rows
// is repacked so that each ZMM vector holds the same four quants of every
// row, one row a 32-bit lane (a 16-row transpose of 32-bit groups,
// TRANS16X8), unsigned, next to vectors of the rows' block scales. The
// tile multiplies such a vector with four quants of an activation row
// broadcast to every lane (VPDPBUSD with an embedded broadcast: unsigned
// weights by signed activations), so one vector of packed weights serves
// several activation rows and one broadcast 16 weight rows, and each int32
// lane accumulates one row's exact block sum. The float work (the block's
// scales) is then one conversion and two multiplies per activation row
// and block for all 16 weight rows.
//
// Q8_0 weights are signed: the packing adds 128 (XOR 0x80), and the tile
// starts each block sum at -128 times the activation block's sum (Acts.o).
// Q4_K quants are already unsigned; sub-block j's dot products are
// multiplied by its 6-bit scales (VPMULLD), and its mins meet the
// activations' sums of 16 (VPDPWSSD), as in dotQ4_Kx1. The integer sums
// are the Go code's. Lanes are in the transpose's row order (0-3, 8-11,
// 4-7, 12-15) until the tile swaps them back to store. The tiles use only
// Z0-Z15; the packers that use Z16-Z31 zero them before they return, and
// every routine ends with VZEROUPPER.

#include "textflag.h"
#include "gemm512_amd64.h"
#include "zero_amd64.h"

DATA zq80<>+0(SB)/4, $0x80808080
GLOBL zq80<>(SB), RODATA|NOPTR, $4
DATA zq0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL zq0f<>(SB), RODATA|NOPTR, $4
DATA zq3f<>+0(SB)/4, $0x3f
GLOBL zq3f<>(SB), RODATA|NOPTR, $4
DATA zq15<>+0(SB)/4, $0x0f
GLOBL zq15<>(SB), RODATA|NOPTR, $4
DATA zq30<>+0(SB)/4, $0x30
GLOBL zq30<>(SB), RODATA|NOPTR, $4

// LDQ loads 32 bytes of row r at a and of row r+8 at b into Z register z
// (Y alias y), as TRANS16X8 takes them.
#define LDQ(a, b, z, y) \
	VMOVDQU a, y \
	VINSERTI64X4 $1, b, z, z

// LDQ16 loads 32 bytes at offset off of the 16 rows at SI (rows 0-3),
// R10 (4-7), R11 (8-11) and R12 (12-15), R8 and R9 holding one and three
// row strides.
#define LDQ16(off) \
	LDQ(off(SI), off(R11), Z0, Y0) \
	LDQ(off(SI)(R8*1), off(R11)(R8*1), Z1, Y1) \
	LDQ(off(SI)(R8*2), off(R11)(R8*2), Z2, Y2) \
	LDQ(off(SI)(R9*1), off(R11)(R9*1), Z3, Y3) \
	LDQ(off(R10), off(R12), Z4, Y4) \
	LDQ(off(R10)(R8*1), off(R12)(R8*1), Z5, Y5) \
	LDQ(off(R10)(R8*2), off(R12)(R8*2), Z6, Y6) \
	LDQ(off(R10)(R9*1), off(R12)(R9*1), Z7, Y7)

#define PACKSETUP \
	MOVQ dst+0(FP), DI \
	MOVQ src+8(FP), SI \
	MOVQ lds+16(FP), R8 \
	MOVQ nb+24(FP), CX \
	MOVQ idx+32(FP), DX \
	LEAQ (R8)(R8*2), R9 \
	LEAQ (SI)(R8*4), R10 \
	LEAQ (R10)(R8*4), R11 \
	LEAQ (R11)(R8*4), R12

// func packQ8_0Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)
//
// Repacks nb blocks of the 16 Q8_0 rows at src (stride lds bytes) into dst,
// 576 bytes a block: eight vectors of quants plus 128, then the 16 scales
// as f32. idx holds the lanes' row offsets (row j*lds in lane zLane(j)).
TEXT ·packQ8_0Z(SB), NOSPLIT, $0-40
	PACKSETUP
	TESTQ CX, CX
	JZ   done

loop:
	LDQ16(2)
	TRANS16X8
	VPXORD.BCST zq80<>(SB), Z8, Z8
	VPXORD.BCST zq80<>(SB), Z9, Z9
	VPXORD.BCST zq80<>(SB), Z10, Z10
	VPXORD.BCST zq80<>(SB), Z11, Z11
	VPXORD.BCST zq80<>(SB), Z12, Z12
	VPXORD.BCST zq80<>(SB), Z13, Z13
	VPXORD.BCST zq80<>(SB), Z14, Z14
	VPXORD.BCST zq80<>(SB), Z15, Z15
	VMOVDQU32 Z8, (DI)
	VMOVDQU32 Z9, 64(DI)
	VMOVDQU32 Z10, 128(DI)
	VMOVDQU32 Z11, 192(DI)
	VMOVDQU32 Z12, 256(DI)
	VMOVDQU32 Z13, 320(DI)
	VMOVDQU32 Z14, 384(DI)
	VMOVDQU32 Z15, 448(DI)
	VMOVDQU32 (DX), Z0
	KXNORW K1, K1, K1
	VPGATHERDD (SI)(Z0*1), K1, Z1
	VPMOVDW Z1, Y1
	VCVTPH2PS Y1, Z1
	VMOVUPS Z1, 512(DI)
	ADDQ $34, SI
	ADDQ $34, R10
	ADDQ $34, R11
	ADDQ $34, R12
	ADDQ $576, DI
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	RET

// The 4- and 5-bit 32-element dtypes (Q4_0, Q5_0, MXFP4) are repacked into
// the Q8_0 panel (576 bytes a block) and meet the Q8_0 tiles: each code
// becomes 128 plus its signed value (Q4_0: q-8, Q5_0: q-16, MXFP4: the
// doubled E2M1 value), as a Q8_0 quant plus 128 is, so the tiles' block
// sums, started at -128 times the activation block's sum, are exactly
// those of the weights' own values.
//
// NIBQ(a, b, z) leaves in z the 32 codes of the block at a (row r) in
// its 128-bit lanes 0 and 1 and those of the block at b (row r+8) in
// lanes 2 and 3, each through the VPSHUFB table in Z16: byte i of a lane
// pair is the low nibble of byte i of the 16 at a (element i), byte 16+i
// its high nibble (element 16+i). K2 selects the words of lanes 1 and 3,
// Z17 holds 0x0f bytes, Y18 is scratch. The packers that use Z16-Z23
// zero them before they return (see the package doc).
#define NIBQ(a, b, z) \
	VBROADCASTI32X4 a, z \
	VBROADCASTI32X4 b, Y18 \
	VINSERTI64X4 $1, Y18, z, z \
	VPSRLW $4, z, K2, z \
	VPANDD Z17, z, z \
	VPSHUFB z, Z16, z

// NIB16(off) is NIBQ for the 16 rows (as LDQ16), 16 bytes of codes at
// offset off of each block.
#define NIB16(off) \
	NIBQ(off(SI), off(R11), Z0) \
	NIBQ(off(SI)(R8*1), off(R11)(R8*1), Z1) \
	NIBQ(off(SI)(R8*2), off(R11)(R8*2), Z2) \
	NIBQ(off(SI)(R9*1), off(R11)(R9*1), Z3) \
	NIBQ(off(R10), off(R12), Z4) \
	NIBQ(off(R10)(R8*1), off(R12)(R8*1), Z5) \
	NIBQ(off(R10)(R8*2), off(R12)(R8*2), Z6) \
	NIBQ(off(R10)(R9*1), off(R12)(R9*1), Z7)

// NIBSETUP loads Z17 and K2 for NIBQ.
#define NIBSETUP \
	VPBROADCASTD zq0f<>(SB), Z17 \
	MOVL $0xff00ff00, AX \
	KMOVD AX, K2

// STORE8 stores the transposed codes (Z8-Z15) as a packed block's eight
// vectors.
#define STORE8 \
	VMOVDQU32 Z8, (DI) \
	VMOVDQU32 Z9, 64(DI) \
	VMOVDQU32 Z10, 128(DI) \
	VMOVDQU32 Z11, 192(DI) \
	VMOVDQU32 Z12, 256(DI) \
	VMOVDQU32 Z13, 320(DI) \
	VMOVDQU32 Z14, 384(DI) \
	VMOVDQU32 Z15, 448(DI)

// F16SCALES stores, as f32 at 512(DI), the 16 rows' f16 block scales at
// offset 0 of the blocks at SI (idx at DX).
#define F16SCALES \
	VMOVDQU32 (DX), Z0 \
	KXNORW K1, K1, K1 \
	VPGATHERDD (SI)(Z0*1), K1, Z1 \
	VPMOVDW Z1, Y1 \
	VCVTPH2PS Y1, Z1 \
	VMOVUPS Z1, 512(DI)

// NEXTBLOCK advances the four row pointers by a block of bs bytes and the
// destination by a packed block of ps, and loops while blocks are left.
#define NEXTBLOCK(bs, ps) \
	ADDQ $bs, SI \
	ADDQ $bs, R10 \
	ADDQ $bs, R11 \
	ADDQ $bs, R12 \
	ADDQ $ps, DI \
	DECQ CX \
	JNZ  loop

DATA zq4t<>+0(SB)/8, $0x7f7e7d7c7b7a7978
DATA zq4t<>+8(SB)/8, $0x8786858483828180
GLOBL zq4t<>(SB), RODATA|NOPTR, $16
DATA zq41t<>+0(SB)/8, $0x8786858483828180
DATA zq41t<>+8(SB)/8, $0x8f8e8d8c8b8a8988
GLOBL zq41t<>(SB), RODATA|NOPTR, $16
DATA zq5t<>+0(SB)/8, $0x7776757473727170
DATA zq5t<>+8(SB)/8, $0x7f7e7d7c7b7a7978
GLOBL zq5t<>(SB), RODATA|NOPTR, $16
DATA zq10<>+0(SB)/4, $0x10101010
GLOBL zq10<>(SB), RODATA|NOPTR, $4
DATA zqff<>+0(SB)/4, $0xff
GLOBL zqff<>(SB), RODATA|NOPTR, $4
DATA zq30b<>+0(SB)/4, $0x30303030
GLOBL zq30b<>(SB), RODATA|NOPTR, $4
DATA zqffff<>+0(SB)/4, $0xffff
GLOBL zqffff<>(SB), RODATA|NOPTR, $4

// func packQ4_0Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)
//
// Repacks nb blocks of the 16 Q4_0 rows at src (stride lds bytes) into dst
// as Q8_0 blocks: code q becomes 120+q (128 plus q-8).
TEXT ·packQ4_0Z(SB), NOSPLIT, $0-40
	PACKSETUP
	NIBSETUP
	VBROADCASTI32X4 zq4t<>(SB), Z16
	TESTQ CX, CX
	JZ   done

loop:
	NIB16(2)
	TRANS16X8
	STORE8
	F16SCALES
	NEXTBLOCK(18, 576)

done:
	ZERO16TO23
	VZEROUPPER
	RET

// Q5HIGH adds 16 to the codes in z where the high bit is set: the 32 high
// bits of row r's block at a (lanes 0-1) and row r+8's at b (lanes 2-3)
// make one 64-bit mask. Z20 holds 0x10 bytes.
#define Q5HIGH(a, b, z) \
	KMOVD a, K3 \
	KMOVD b, K4 \
	KUNPCKDQ K3, K4, K3 \
	VPADDB Z20, z, K3, z

// Q5HIGH16(off) is Q5HIGH for the 16 rows (as NIB16), their high bits at
// offset off of each block.
#define Q5HIGH16(off) \
	Q5HIGH(off(SI), off(R11), Z0) \
	Q5HIGH(off(SI)(R8*1), off(R11)(R8*1), Z1) \
	Q5HIGH(off(SI)(R8*2), off(R11)(R8*2), Z2) \
	Q5HIGH(off(SI)(R9*1), off(R11)(R9*1), Z3) \
	Q5HIGH(off(R10), off(R12), Z4) \
	Q5HIGH(off(R10)(R8*1), off(R12)(R8*1), Z5) \
	Q5HIGH(off(R10)(R8*2), off(R12)(R8*2), Z6) \
	Q5HIGH(off(R10)(R9*1), off(R12)(R9*1), Z7)

// func packQ5_0Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)
//
// Repacks nb blocks of the 16 Q5_0 rows at src into dst as Q8_0 blocks:
// code q (the nibble and, as bit 4, bit i of the block's 32 high bits for
// element i) becomes 112+q (128 plus q-16): the nibbles through a table of
// 112 plus each, then 16 more where the high bit is set.
TEXT ·packQ5_0Z(SB), NOSPLIT, $0-40
	PACKSETUP
	NIBSETUP
	VBROADCASTI32X4 zq5t<>(SB), Z16
	VPBROADCASTD zq10<>(SB), Z20
	TESTQ CX, CX
	JZ   done

loop:
	NIB16(6)
	Q5HIGH16(2)
	TRANS16X8
	STORE8
	F16SCALES
	NEXTBLOCK(22, 576)

done:
	ZERO16TO23
	VZEROUPPER
	RET

// DMSCALES stores, as f32 at 512(DI) and 576(DI), the 16 rows' f16 block
// scales and mins (d and m at offset 0 of the blocks at SI).
#define DMSCALES \
	VMOVDQU32 (DX), Z0 \
	KXNORW K1, K1, K1 \
	VPGATHERDD (SI)(Z0*1), K1, Z1 \
	VPMOVDW Z1, Y2 \
	VCVTPH2PS Y2, Z2 \
	VMOVUPS Z2, 512(DI) \
	VPSRLD $16, Z1, Z1 \
	VPMOVDW Z1, Y1 \
	VCVTPH2PS Y1, Z1 \
	VMOVUPS Z1, 576(DI)

// func packQ4_1Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)
//
// Repacks nb blocks of the 16 Q4_1 rows at src into dst, 640 bytes a
// block, for the Q4_1 tiles: code q becomes 128+q (the tiles' sums are then
// those of the codes), then the scales and the mins as f32.
TEXT ·packQ4_1Z(SB), NOSPLIT, $0-40
	PACKSETUP
	NIBSETUP
	VBROADCASTI32X4 zq41t<>(SB), Z16
	TESTQ CX, CX
	JZ   done

loop:
	NIB16(4)
	TRANS16X8
	STORE8
	DMSCALES
	NEXTBLOCK(20, 640)

done:
	ZERO16TO23
	VZEROUPPER
	RET

// func packQ5_1Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)
//
// Repacks nb blocks of the 16 Q5_1 rows at src into dst as packQ4_1Z does,
// code q (with its high bit, as Q5_0's) becoming 128+q.
TEXT ·packQ5_1Z(SB), NOSPLIT, $0-40
	PACKSETUP
	NIBSETUP
	VBROADCASTI32X4 zq41t<>(SB), Z16
	VPBROADCASTD zq10<>(SB), Z20
	TESTQ CX, CX
	JZ   done

loop:
	NIB16(8)
	Q5HIGH16(4)
	TRANS16X8
	STORE8
	DMSCALES
	NEXTBLOCK(24, 640)

done:
	ZERO16TO23
	VZEROUPPER
	RET

// func packMXFP4Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)
//
// Repacks nb blocks of the 16 MXFP4 rows at src into dst as Q8_0 blocks:
// code c becomes 128 plus its doubled E2M1 value (the table ·mx4Lanes),
// and each block's exponent byte its scale from ·e8m0Half.
TEXT ·packMXFP4Z(SB), NOSPLIT, $0-40
	PACKSETUP
	NIBSETUP
	VBROADCASTI32X4 ·mx4Lanes(SB), Z16
	LEAQ ·e8m0Half(SB), R13
	TESTQ CX, CX
	JZ   done

loop:
	NIB16(1)
	TRANS16X8
	STORE8
	VMOVDQU32 (DX), Z0
	KXNORW K1, K1, K1
	VPGATHERDD (SI)(Z0*1), K1, Z1
	VPANDD.BCST zqff<>(SB), Z1, Z1
	KXNORW K1, K1, K1
	VGATHERDPS (R13)(Z1*4), K1, Z2
	VMOVUPS Z2, 512(DI)
	NEXTBLOCK(17, 576)

done:
	ZERO16TO23
	VZEROUPPER
	RET

// Q4CHUNK repacks the 32 quant bytes of chunk c (sub-blocks 2c and 2c+1:
// low and high nibbles) of the 16 rows.
#define Q4CHUNK(c) \
	LDQ16((16+32*c)) \
	TRANS16X8 \
	VPBROADCASTD zq0f<>(SB), Z0 \
	Q4NIB(c, 0, Z8) \
	Q4NIB(c, 1, Z9) \
	Q4NIB(c, 2, Z10) \
	Q4NIB(c, 3, Z11) \
	Q4NIB(c, 4, Z12) \
	Q4NIB(c, 5, Z13) \
	Q4NIB(c, 6, Z14) \
	Q4NIB(c, 7, Z15)

// Q4NIB stores the low and high nibbles of group r of chunk c (in z) as
// group r of sub-blocks 2c and 2c+1.
#define Q4NIB(c, r, z) \
	VPANDD Z0, z, Z1 \
	VMOVDQU32 Z1, ((16*c+r)*64)(DI) \
	VPSRLW $4, z, z \
	VPANDD Z0, z, z \
	VMOVDQU32 z, ((16*c+8+r)*64)(DI)

// Q4SCLO stores scale and min j < 4: bytes j of D0 (Z1) and D1 (Z2).
#define Q4SCLO(j) \
	VPSRLD $(8*j), Z1, Z4 \
	VPANDD.BCST zq3f<>(SB), Z4, Z4 \
	VMOVDQU32 Z4, (4096+64*j)(DI) \
	VPSRLD $(8*j), Z2, Z4 \
	VPANDD.BCST zq3f<>(SB), Z4, Z4 \
	VPSLLD $16, Z4, Z5 \
	VPORD Z5, Z4, Z4 \
	VMOVDQU32 Z4, (4608+64*j)(DI)

// Q4SCHI stores scale and min 4+i: the low (high) nibble of byte i of D2
// (Z3), with bits 6-7 of byte i of D0 (D1) as bits 4-5.
#define Q4SCHI(i) \
	VPSRLD $(8*i), Z3, Z4 \
	VPANDD.BCST zq15<>(SB), Z4, Z4 \
	VPSRLD $(8*i+2), Z1, Z5 \
	VPANDD.BCST zq30<>(SB), Z5, Z5 \
	VPORD Z5, Z4, Z4 \
	VMOVDQU32 Z4, (4096+64*(4+i))(DI) \
	VPSRLD $(8*i+4), Z3, Z4 \
	VPANDD.BCST zq15<>(SB), Z4, Z4 \
	VPSRLD $(8*i+2), Z2, Z5 \
	VPANDD.BCST zq30<>(SB), Z5, Z5 \
	VPORD Z5, Z4, Z4 \
	VPSLLD $16, Z4, Z5 \
	VPORD Z5, Z4, Z4 \
	VMOVDQU32 Z4, (4608+64*(4+i))(DI)

// Q4SCALES stores the 16 rows' scales, mins, d and dmin of the
// super-blocks at SI as a packed super-block's (from 4096).
#define Q4SCALES \
	VMOVDQU32 (DX), Z0 \
	KXNORW K1, K1, K1 \
	VPGATHERDD 4(SI)(Z0*1), K1, Z1 \
	KXNORW K1, K1, K1 \
	VPGATHERDD 8(SI)(Z0*1), K1, Z2 \
	KXNORW K1, K1, K1 \
	VPGATHERDD 12(SI)(Z0*1), K1, Z3 \
	KXNORW K1, K1, K1 \
	VPGATHERDD (SI)(Z0*1), K1, Z6 \
	Q4SCLO(0) \
	Q4SCLO(1) \
	Q4SCLO(2) \
	Q4SCLO(3) \
	Q4SCHI(0) \
	Q4SCHI(1) \
	Q4SCHI(2) \
	Q4SCHI(3) \
	VPMOVDW Z6, Y4 \
	VCVTPH2PS Y4, Z4 \
	VMOVUPS Z4, 5120(DI) \
	VPSRLD $16, Z6, Z6 \
	VPMOVDW Z6, Y4 \
	VCVTPH2PS Y4, Z4 \
	VMOVUPS Z4, 5184(DI)

// func packQ4_KZ(dst *byte, src *byte, lds int, nb int, idx *[16]int32)
//
// Repacks nb super-blocks of the 16 Q4_K rows at src (stride lds bytes)
// into dst, 5248 bytes a super-block: 64 vectors of quants (sub-block j's
// group r at 64*(8j+r)), the eight sub-blocks' scales as int32 (at 4096),
// their mins as int16 pairs (m, m) (at 4608), then d and dmin as f32 (at
// 5120 and 5184). idx holds the lanes' row offsets.
TEXT ·packQ4_KZ(SB), NOSPLIT, $0-40
	PACKSETUP
	TESTQ CX, CX
	JZ   done

loop:
	Q4CHUNK(0)
	Q4CHUNK(1)
	Q4CHUNK(2)
	Q4CHUNK(3)
	Q4SCALES
	ADDQ $144, SI
	ADDQ $144, R10
	ADDQ $144, R11
	ADDQ $144, R12
	ADDQ $5248, DI
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	RET

// Q5CHUNK is Q4CHUNK for Q5_K: its 32 quant bytes are at 48+32c, and the
// high bits of the 16 rows' 32 bytes at 16 (transposed as the quants, in
// Z16-Z23) join as bit 4: bit 2c of each byte for the low nibbles, bit
// 2c+1 for the high ones, brought to bit 4 by lo(ls) and hi(hs) (word
// shifts: the bits that cross into a neighbouring byte land below bit 4
// or are masked off). Z24 holds 0x10 bytes.
#define Q5CHUNK(c, lo, ls, hi, hs) \
	LDQ16((48+32*c)) \
	TRANS16X8 \
	VPBROADCASTD zq0f<>(SB), Z0 \
	Q5NIB(c, 0, Z8, Z16, lo, ls, hi, hs) \
	Q5NIB(c, 1, Z9, Z17, lo, ls, hi, hs) \
	Q5NIB(c, 2, Z10, Z18, lo, ls, hi, hs) \
	Q5NIB(c, 3, Z11, Z19, lo, ls, hi, hs) \
	Q5NIB(c, 4, Z12, Z20, lo, ls, hi, hs) \
	Q5NIB(c, 5, Z13, Z21, lo, ls, hi, hs) \
	Q5NIB(c, 6, Z14, Z22, lo, ls, hi, hs) \
	Q5NIB(c, 7, Z15, Z23, lo, ls, hi, hs)

// Q5NIB is Q4NIB with the high bits of group r (in h) as bit 4.
#define Q5NIB(c, r, z, h, lo, ls, hi, hs) \
	VPANDD Z0, z, Z1 \
	lo $ls, h, Z2 \
	VPTERNLOGD $0xf8, Z24, Z2, Z1 \
	VMOVDQU32 Z1, ((16*c+r)*64)(DI) \
	VPSRLW $4, z, z \
	VPANDD Z0, z, z \
	hi $hs, h, Z2 \
	VPTERNLOGD $0xf8, Z24, Z2, z \
	VMOVDQU32 z, ((16*c+8+r)*64)(DI)

// func packQ5_KZ(dst *byte, src *byte, lds int, nb int, idx *[16]int32)
//
// Repacks nb super-blocks of the 16 Q5_K rows at src into dst as Q4_K
// super-blocks (see packQ4_KZ), with quants of five bits: Q5_K's scales,
// mins, d and dmin are laid out as Q4_K's, and the Q4_K tiles' integer
// sums hold quants up to 31 as they do 15.
TEXT ·packQ5_KZ(SB), NOSPLIT, $0-40
	PACKSETUP
	VPBROADCASTD zq10<>(SB), Z24
	TESTQ CX, CX
	JZ   done

loop:
	LDQ16(16)
	TRANS16X8
	VMOVDQA64 Z8, Z16
	VMOVDQA64 Z9, Z17
	VMOVDQA64 Z10, Z18
	VMOVDQA64 Z11, Z19
	VMOVDQA64 Z12, Z20
	VMOVDQA64 Z13, Z21
	VMOVDQA64 Z14, Z22
	VMOVDQA64 Z15, Z23
	Q5CHUNK(0, VPSLLW, 4, VPSLLW, 3)
	Q5CHUNK(1, VPSLLW, 2, VPSLLW, 1)
	Q5CHUNK(2, VPSLLW, 0, VPSRLW, 1)
	Q5CHUNK(3, VPSRLW, 2, VPSRLW, 3)
	Q4SCALES
	ADDQ $176, SI
	ADDQ $176, R10
	ADDQ $176, R11
	ADDQ $176, R12
	ADDQ $5248, DI
	DECQ CX
	JNZ  loop

done:
	ZERO16TO23
	VPXORD Z24, Z24, Z24
	VZEROUPPER
	RET

// Q6GROUP stores the four groups that bytes of ql (a: ql[l], b:
// ql[l+32]) and qh (h: qh[l]) of half hf of a Q6_K super-block make, l
// the four bytes of group r: quants 128hf+l, +32, +64 and +96 (groups
// 32hf+r, +8, +16, +24), each a nibble with two high bits as bits 4-5.
// Z0 holds 0x0f bytes, Z1 0x30 (word shifts: the bits that cross into a
// neighbouring byte are masked off).
#define Q6GROUP(hf, r, a, b, h) \
	VPANDD Z0, a, Z2 \
	VPSLLW $4, h, Z3 \
	VPTERNLOGD $0xf8, Z1, Z3, Z2 \
	VMOVDQU32 Z2, ((32*hf+r)*64)(DI) \
	VPANDD Z0, b, Z2 \
	VPSLLW $2, h, Z3 \
	VPTERNLOGD $0xf8, Z1, Z3, Z2 \
	VMOVDQU32 Z2, ((32*hf+8+r)*64)(DI) \
	VPSRLW $4, a, Z2 \
	VPANDD Z0, Z2, Z2 \
	VPTERNLOGD $0xf8, Z1, h, Z2 \
	VMOVDQU32 Z2, ((32*hf+16+r)*64)(DI) \
	VPSRLW $4, b, Z2 \
	VPANDD Z0, Z2, Z2 \
	VPSRLW $2, h, Z3 \
	VPTERNLOGD $0xf8, Z1, Z3, Z2 \
	VMOVDQU32 Z2, ((32*hf+24+r)*64)(DI)

// Q6HALF repacks half hf (128 quants) of the 16 rows' super-blocks: ql
// bytes 64hf..64hf+31 transposed into Z16-Z23, qh bytes 128+32hf.. into
// Z24-Z31, ql bytes 64hf+32.. into Z8-Z15.
#define Q6HALF(hf) \
	LDQ16((64*hf)) \
	TRANS16X8 \
	VMOVDQA64 Z8, Z16 \
	VMOVDQA64 Z9, Z17 \
	VMOVDQA64 Z10, Z18 \
	VMOVDQA64 Z11, Z19 \
	VMOVDQA64 Z12, Z20 \
	VMOVDQA64 Z13, Z21 \
	VMOVDQA64 Z14, Z22 \
	VMOVDQA64 Z15, Z23 \
	LDQ16((128+32*hf)) \
	TRANS16X8 \
	VMOVDQA64 Z8, Z24 \
	VMOVDQA64 Z9, Z25 \
	VMOVDQA64 Z10, Z26 \
	VMOVDQA64 Z11, Z27 \
	VMOVDQA64 Z12, Z28 \
	VMOVDQA64 Z13, Z29 \
	VMOVDQA64 Z14, Z30 \
	VMOVDQA64 Z15, Z31 \
	LDQ16((64*hf+32)) \
	TRANS16X8 \
	VPBROADCASTD zq0f<>(SB), Z0 \
	VPBROADCASTD zq30b<>(SB), Z1 \
	Q6GROUP(hf, 0, Z16, Z8, Z24) \
	Q6GROUP(hf, 1, Z17, Z9, Z25) \
	Q6GROUP(hf, 2, Z18, Z10, Z26) \
	Q6GROUP(hf, 3, Z19, Z11, Z27) \
	Q6GROUP(hf, 4, Z20, Z12, Z28) \
	Q6GROUP(hf, 5, Z21, Z13, Z29) \
	Q6GROUP(hf, 6, Z22, Z14, Z30) \
	Q6GROUP(hf, 7, Z23, Z15, Z31)

// Q6SC stores scale 4i+k (of dword i, in z) of the 16 rows as int32 at
// 4096+64(4i+k), sign-extended from its byte.
#define Q6SC(z, i, k) \
	VPSLLD $(24-8*k), z, Z5 \
	VPSRAD $24, Z5, Z5 \
	VMOVDQU32 Z5, (4096+64*(4*i+k))(DI)

// Q6MIN stores min pair p: 32 times scales 2p and 2p+1 (int32 at
// 4096+128p and +64) as the int16 pair (low, high) at 5120+64p.
#define Q6MIN(p) \
	VMOVDQU32 (4096+128*p)(DI), Z5 \
	VMOVDQU32 (4160+128*p)(DI), Z6 \
	VPSLLD $5, Z5, Z5 \
	VPANDD.BCST zqffff<>(SB), Z5, Z5 \
	VPSLLD $21, Z6, Z6 \
	VPORD Z6, Z5, Z5 \
	VMOVDQU32 Z5, (5120+64*p)(DI)

// func packQ6_KZ(dst *byte, src *byte, lds int, nb int, idx *[16]int32)
//
// Repacks nb super-blocks of the 16 Q6_K rows at src (stride lds bytes)
// into dst, 5760 bytes a super-block, for the Q6_K tiles (gemmq4k_amd64.h
// with K6): 64 vectors of the six-bit quants (unsigned, group g at 64g),
// the 16 sub-blocks' scales as int32 (at 4096), 32 times them as int16
// pairs, the mins that take the quants' offset of 32 (at 5120), and d as
// f32 twice (at 5632 and 5696: the tiles' d and dmin). idx holds the
// lanes' row offsets.
TEXT ·packQ6_KZ(SB), NOSPLIT, $0-40
	PACKSETUP
	TESTQ CX, CX
	JZ   done

loop:
	Q6HALF(0)
	Q6HALF(1)
	VMOVDQU32 (DX), Z0
	KXNORW K1, K1, K1
	VPGATHERDD 192(SI)(Z0*1), K1, Z1
	KXNORW K1, K1, K1
	VPGATHERDD 196(SI)(Z0*1), K1, Z2
	KXNORW K1, K1, K1
	VPGATHERDD 200(SI)(Z0*1), K1, Z3
	KXNORW K1, K1, K1
	VPGATHERDD 204(SI)(Z0*1), K1, Z4
	KXNORW K1, K1, K1
	VPGATHERDD 206(SI)(Z0*1), K1, Z7
	Q6SC(Z1, 0, 0)
	Q6SC(Z1, 0, 1)
	Q6SC(Z1, 0, 2)
	Q6SC(Z1, 0, 3)
	Q6SC(Z2, 1, 0)
	Q6SC(Z2, 1, 1)
	Q6SC(Z2, 1, 2)
	Q6SC(Z2, 1, 3)
	Q6SC(Z3, 2, 0)
	Q6SC(Z3, 2, 1)
	Q6SC(Z3, 2, 2)
	Q6SC(Z3, 2, 3)
	Q6SC(Z4, 3, 0)
	Q6SC(Z4, 3, 1)
	Q6SC(Z4, 3, 2)
	Q6SC(Z4, 3, 3)
	Q6MIN(0)
	Q6MIN(1)
	Q6MIN(2)
	Q6MIN(3)
	Q6MIN(4)
	Q6MIN(5)
	Q6MIN(6)
	Q6MIN(7)
	VPSRLD $16, Z7, Z7
	VPMOVDW Z7, Y7
	VCVTPH2PS Y7, Z7
	VMOVUPS Z7, 5632(DI)
	VMOVUPS Z7, 5696(DI)
	ADDQ $210, SI
	ADDQ $210, R10
	ADDQ $210, R11
	ADDQ $210, R12
	ADDQ $5760, DI
	DECQ CX
	JNZ  loop

done:
	ZERO16TO31
	VZEROUPPER
	RET

// ZSTORE writes (or, when R9 is set, adds) the 16 lanes of f to y at DI,
// masked by K1, after undoing the packed lane order.
#define ZSTORE(f) \
	VSHUFF32X4 $0xD8, f, f, f \
	TESTQ R9, R9 \
	JZ   2(PC) \
	VADDPS.Z (DI), f, K1, f \
	VMOVUPS f, K1, (DI)

// Q8FIN adds a row's block sums acc, times the weight scales (Z13) and the
// activation scale at ad, to its accumulator f.
#define Q8FIN(ad, as, acc, f) \
	VCVTDQ2PS acc, acc \
	VMULPS.BCST ad, Z13, Z14 \
	VFMADD231PS Z14, acc, f

#define Q8ARGS 88
#define Q8STRIDE 576
#define Q8SETUP
#define Q8MLOAD
#define Q8MNEXT

#define Q8STORE(f) ZSTORE(f)

#define NAME ·gemmQ8_0Z1
#include "gemmq8_amd64.h"
#undef NAME
#define HAS1
#define NAME ·gemmQ8_0Z2
#include "gemmq8_amd64.h"
#undef NAME
#define HAS2
#define NAME ·gemmQ8_0Z3
#include "gemmq8_amd64.h"
#undef NAME
#define HAS3
#define NAME ·gemmQ8_0Z4
#include "gemmq8_amd64.h"
#undef NAME
#define HAS4
#define NAME ·gemmQ8_0Z5
#include "gemmq8_amd64.h"
#undef NAME
#define HAS5
#define NAME ·gemmQ8_0Z6
#include "gemmq8_amd64.h"
#undef NAME
#undef HAS1
#undef HAS2
#undef HAS3
#undef HAS4
#undef HAS5

// The Q4_1 and Q5_1 tiles: the Q8_0 tiles over blocks of 640 bytes, the
// weights' mins (Z15) as f32 after their scales, each row's block then
// adding min times the activation block's scaled sum (Acts.s, as).
#include "gemmq1_amd64.h"

#define NAME ·gemmQ4_1Z1
#include "gemmq8_amd64.h"
#undef NAME
#define HAS1
#define NAME ·gemmQ4_1Z2
#include "gemmq8_amd64.h"
#undef NAME
#define HAS2
#define NAME ·gemmQ4_1Z3
#include "gemmq8_amd64.h"
#undef NAME
#define HAS3
#define NAME ·gemmQ4_1Z4
#include "gemmq8_amd64.h"
#undef NAME
#define HAS4
#define NAME ·gemmQ4_1Z5
#include "gemmq8_amd64.h"
#undef NAME
#define HAS5
#define NAME ·gemmQ4_1Z6
#include "gemmq8_amd64.h"
#undef NAME
#undef HAS1
#undef HAS2
#undef HAS3
#undef HAS4
#undef HAS5

// K4FIN adds a row's super-block sums, d*sumi - dmin*summ (d in Z13, dmin
// in Z14) times the activation scale at ad, to its accumulator f.
#define K4FIN(ad, summ, sumi, f) \
	VCVTDQ2PS sumi, sumi \
	VCVTDQ2PS summ, summ \
	VMULPS.BCST ad, Z13, Z15 \
	VFMADD231PS Z15, sumi, f \
	VMULPS.BCST ad, Z14, Z15 \
	VFNMADD231PS Z15, summ, f

#define K4STORE(f) ZSTORE(f)

// The Q4_K tiles' super-block (see gemmq4k_amd64.h): eight sub-blocks of
// 32 quants.
#define KMINS 4608
#define KD 5120
#define KSTRIDE 5248
#define K4J(j) \
	K4ZERO \
	K4R((8*j)) \
	K4R((8*j+1)) \
	K4R((8*j+2)) \
	K4R((8*j+3)) \
	K4R((8*j+4)) \
	K4R((8*j+5)) \
	K4R((8*j+6)) \
	K4R((8*j+7)) \
	K4SCALE(j)
#define K4SUBS \
	K4J(0) \
	K4J(1) \
	K4J(2) \
	K4J(3) \
	K4J(4) \
	K4J(5) \
	K4J(6) \
	K4J(7)

#define NAME ·gemmQ4_KZ1
#include "gemmq4k_amd64.h"
#undef NAME
#define HAS1
#define NAME ·gemmQ4_KZ2
#include "gemmq4k_amd64.h"
#undef NAME
#define HAS2
#define NAME ·gemmQ4_KZ3
#include "gemmq4k_amd64.h"
#undef NAME
#define HAS3
#define NAME ·gemmQ4_KZ4
#include "gemmq4k_amd64.h"
#undef NAME
#undef HAS1
#undef HAS2
#undef HAS3

// The Q6_K tiles' super-block (packQ6_KZ): sixteen sub-blocks of 16.
#undef KMINS
#undef KD
#undef KSTRIDE
#undef K4J
#undef K4SUBS
#define KMINS 5120
#define KD 5632
#define KSTRIDE 5760
#define K4J(j) \
	K4ZERO \
	K4R((4*j)) \
	K4R((4*j+1)) \
	K4R((4*j+2)) \
	K4R((4*j+3)) \
	K4SCALE(j)
#define K4SUBS \
	K4J(0) \
	K4J(1) \
	K4J(2) \
	K4J(3) \
	K4J(4) \
	K4J(5) \
	K4J(6) \
	K4J(7) \
	K4J(8) \
	K4J(9) \
	K4J(10) \
	K4J(11) \
	K4J(12) \
	K4J(13) \
	K4J(14) \
	K4J(15)

#define NAME ·gemmQ6_KZ1
#include "gemmq4k_amd64.h"
#undef NAME
#define HAS1
#define NAME ·gemmQ6_KZ2
#include "gemmq4k_amd64.h"
#undef NAME
#define HAS2
#define NAME ·gemmQ6_KZ3
#include "gemmq4k_amd64.h"
#undef NAME
#define HAS3
#define NAME ·gemmQ6_KZ4
#include "gemmq4k_amd64.h"
#undef NAME
#undef HAS1
#undef HAS2
#undef HAS3
