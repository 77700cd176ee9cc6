// AVX2 register-tiled prompt products for the 32-element dtypes (Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, MXFP4; the avx2 level, four or more activation
// rows). A panel of 8 weight rows is repacked a block of 32 at a time:
// each code becomes an unsigned byte u (Q4_0: its nibble, the value plus
// 8; Q5_0: its five bits, the value plus 16; Q4_1 and Q5_1: the code
// itself; MXFP4: its doubled E2M1 value plus 16, through a VPSHUFB table),
// and the 8 rows' codes are transposed so that each YMM vector holds the
// same four codes of every row, one row a 32-bit lane, followed by the
// rows' block scales as f32 (and Q4_1's and Q5_1's mins: 288 or 320 bytes
// a block). The tile broadcasts four quants of an activation row to every
// lane and multiplies them with such a vector (VPMADDUBSW: unsigned codes
// by signed quants, pairs summed to int16), so one vector of packed
// weights serves four activation rows and one broadcast eight weight
// rows. Without VNNI the int16 pairs add up over groups of four codes
// before VPMADDWD widens them: a pair is at most 2*15*127 (four-bit
// codes) or 2*31*127 (five-bit codes, MXFP4's), so eight groups or four
// (the halves of a block are widened and added in int32) stay below 2^15.
// The codes' offset (8 or 16) times the activation block's sum is
// subtracted from the int32 sum (Acts.o, -128 times the sum, shifted right
// by 4 or 3), which is then exactly the sum of the weights' own values
// times the quants, as the Go code takes it (a row of zeros gives exactly
// zero), and meets the scales in floats; Q4_1's and Q5_1's mins meet the
// activation block's scaled sum (Acts.s). Every routine ends with
// VZEROUPPER.
//
// Q8_0's codes are signed and take eight bits, so its tile (gemmQ8_0x8)
// has them packed as magnitudes and signs instead and widens every
// group's pair sums at once. It replaced a kernel that took one weight
// row against four activation rows interleaved a piece of eight quants
// at a time (VPABSB and VPSIGNB on each broadcast piece): on the Zen 4
// with the avx2 level forced, BenchmarkPrefill's Q8_0 shapes ran 84-96
// GFLOP/s on one thread and 161-190 on two, and run 115-131 and 201-260
// with the tile; the 1B model's 512-token prompt 86-91 -> 108-112
// tokens/s (two threads, four runs each, alternated).

#include "textflag.h"
#include "tile_amd64.h"

DATA p8mask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA p8mask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL p8mask<>(SB), RODATA|NOPTR, $16
DATA p8ident<>+0(SB)/8, $0x0706050403020100
DATA p8ident<>+8(SB)/8, $0x0f0e0d0c0b0a0908
GLOBL p8ident<>(SB), RODATA|NOPTR, $16
// p8spread puts byte k/8 of a broadcast dword at byte k (k = 0..31);
// p8bits selects bit k%8 of it.
DATA p8spread<>+0(SB)/8, $0x0000000000000000
DATA p8spread<>+8(SB)/8, $0x0101010101010101
DATA p8spread<>+16(SB)/8, $0x0202020202020202
DATA p8spread<>+24(SB)/8, $0x0303030303030303
GLOBL p8spread<>(SB), RODATA|NOPTR, $32
DATA p8bits<>+0(SB)/8, $0x8040201008040201
GLOBL p8bits<>(SB), RODATA|NOPTR, $8
DATA p8hi<>+0(SB)/1, $0x10
GLOBL p8hi<>(SB), RODATA|NOPTR, $1

// EXPAND8(off) writes the 32 codes of the blocks' 16 bytes at offset off
// of each of the 8 rows (at SI, SI+R8, SI+2*R8, SI+R9; R10, ...: R8 and R9
// one and three row strides, R10 four rows on) to 32*j(SP), row j: the
// low nibbles (elements 0-15), then the high ones (16-31), each through
// the table in Y15. Y14 holds 0x0f bytes.
#define EXPAND1(a, j) \
	VMOVDQU a, X0 \
	VPSRLW $4, X0, X1 \
	VINSERTI128 $1, X1, Y0, Y0 \
	VPAND Y14, Y0, Y0 \
	VPSHUFB Y0, Y15, Y0 \
	VMOVDQU Y0, (32*j)(SP)

#define EXPAND8(off) \
	EXPAND1(off(SI), 0) \
	EXPAND1(off(SI)(R8*1), 1) \
	EXPAND1(off(SI)(R8*2), 2) \
	EXPAND1(off(SI)(R9*1), 3) \
	EXPAND1(off(R10), 4) \
	EXPAND1(off(R10)(R8*1), 5) \
	EXPAND1(off(R10)(R8*2), 6) \
	EXPAND1(off(R10)(R9*1), 7)

// TRANS8 transposes the 8 rows of 8 dwords at 0(SP)..255(SP) into 8
// vectors at DI (vector g: dword g of every row, row j in lane j) by
// TRANSPOSE8.
#define TRANS8 \
	VMOVDQU 0(SP), Y0 \
	VMOVDQU 32(SP), Y1 \
	VMOVDQU 64(SP), Y2 \
	VMOVDQU 96(SP), Y3 \
	VMOVDQU 128(SP), Y4 \
	VMOVDQU 160(SP), Y5 \
	VMOVDQU 192(SP), Y6 \
	VMOVDQU 224(SP), Y7 \
	TRANSPOSE8 \
	VMOVDQU Y8, (DI) \
	VMOVDQU Y9, 32(DI) \
	VMOVDQU Y10, 64(DI) \
	VMOVDQU Y11, 96(DI) \
	VMOVDQU Y12, 128(DI) \
	VMOVDQU Y13, 160(DI) \
	VMOVDQU Y14, 192(DI) \
	VMOVDQU Y15, 224(DI)

#define PACK8SETUP \
	MOVQ dst+0(FP), DI \
	MOVQ src+8(FP), SI \
	MOVQ lds+16(FP), R8 \
	MOVQ nb+24(FP), CX \
	LEAQ (R8)(R8*2), R9 \
	LEAQ (SI)(R8*4), R10

// F16SCALES8(off, dst) stores, as f32 at dst(DI), the 8 rows' f16 block
// scales (or mins) at offset off of the blocks.
#define F16SCALES8(off, dst) \
	VPXOR X0, X0, X0 \
	VPINSRW $0, off(SI), X0, X0 \
	VPINSRW $1, off(SI)(R8*1), X0, X0 \
	VPINSRW $2, off(SI)(R8*2), X0, X0 \
	VPINSRW $3, off(SI)(R9*1), X0, X0 \
	VPINSRW $4, off(R10), X0, X0 \
	VPINSRW $5, off(R10)(R8*1), X0, X0 \
	VPINSRW $6, off(R10)(R8*2), X0, X0 \
	VPINSRW $7, off(R10)(R9*1), X0, X0 \
	VCVTPH2PS X0, Y0 \
	VMOVUPS Y0, dst(DI)

#define NEXT8(bs, ps) \
	ADDQ $bs, SI \
	ADDQ $bs, R10 \
	ADDQ $ps, DI \
	DECQ CX \
	JNZ  loop

// The tile: activation row i's float sums in Y(i), its int16 pair sums in
// Y(4+i) (the row-by-row tiles: Y11, and Y14 for a half block's int32);
// Y8 a vector of packed codes, Y9 a broadcast of four quants, Y10 int16
// ones, Y11 and Y12 scratch, Y13 the block's 8 weight scales, X15 the
// offset's shift. Rows' quants at SI, SI+R8, SI+2*R8, SI+R10; their
// scales at DI, DI+R9, DI+2*R9, R11; their offsets (Acts.o) or, with
// mins, scaled sums (Acts.s) at BX, BX+R9, BX+2*R9, R12.

// G1 starts row i's pair sums with group g, G adds group g to them.
#define G1(g, a, i) \
	VPBROADCASTD (4*g)a, Y9 \
	VPMADDUBSW Y9, Y8, i

#define G(g, a, i) \
	VPBROADCASTD (4*g)a, Y9 \
	VPMADDUBSW Y9, Y8, Y11 \
	VPADDW Y11, i, i

// GROUP(g, op) takes group g of the block to the four rows.
#define GROUP(g, op) \
	VMOVDQU (32*g)(DX), Y8 \
	op(g, (SI), Y4) \
	op(g, (SI)(R8*1), Y5) \
	op(g, (SI)(R8*2), Y6) \
	op(g, (SI)(R10*1), Y7)

// OFFSET adds the codes' offset to the int32 sums in Y11: the activation
// block's sum at ao (Acts.o), shifted right by X15.
#define OFFSET(ao) \
	VPBROADCASTD ao, Y12 \
	VPSRAD X15, Y12, Y12 \
	VPADDD Y12, Y11, Y11

// SCALE adds the int32 sums in Y11, times the weight scales and the
// activation scale at ad, to f.
#define SCALE(f, ad) \
	VCVTDQ2PS Y11, Y11 \
	VBROADCASTSS ad, Y12 \
	VMULPS Y13, Y12, Y12 \
	VFMADD231PS Y12, Y11, f

// MINS adds the weights' mins (at 288 of a block of 320) times the
// activation block's scaled sum at as (Acts.s) to f.
#define MINS(f, as) \
	VBROADCASTSS as, Y12 \
	VFMADD231PS 288(DX), Y12, f

// FINO(p, f, ad, ao) widens row pair sums p and adds them, with the
// codes' offset, to f; FINM(p, f, ad, as) with the weights' mins.
#define FINO(p, f, ad, ao) \
	VPMADDWD Y10, p, Y11 \
	OFFSET(ao) \
	SCALE(f, ad)

#define FINM(p, f, ad, as) \
	VPMADDWD Y10, p, Y11 \
	SCALE(f, ad) \
	MINS(f, as)

// FIN4(op) finishes the four rows' block by op (FINO or FINM), the
// offsets or the scaled sums at BX, BX+R9, BX+2*R9, R12.
#define FIN4(op) \
	op(Y4, Y0, (DI), (BX)) \
	op(Y5, Y1, (DI)(R9*1), (BX)(R9*1)) \
	op(Y6, Y2, (DI)(R9*2), (BX)(R9*2)) \
	op(Y7, Y3, (R11), (R12))

#define TILESETUP(o) \
	MOVQ p+0(FP), DX \
	MOVQ nb+8(FP), CX \
	MOVQ aq+16(FP), SI \
	MOVQ lda+24(FP), R8 \
	LEAQ (R8)(R8*2), R10 \
	MOVQ ad+32(FP), DI \
	MOVQ ldd+40(FP), R9 \
	LEAQ (R9)(R9*2), AX \
	LEAQ (DI)(AX*1), R11 \
	MOVQ o+48(FP), BX \
	LEAQ (BX)(AX*1), R12 \
	MOVQ shift+80(FP), AX \
	VMOVQ AX, X15 \
	VPCMPEQW Y10, Y10, Y10 \
	VPSRLW $15, Y10, Y10 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3

#define TILENEXT(ps) \
	ADDQ $ps, DX \
	ADDQ $32, SI \
	ADDQ $4, DI \
	ADDQ $4, R11 \
	ADDQ $4, BX \
	ADDQ $4, R12 \
	DECQ CX \
	JNZ  loop

// TILESTORE writes (or, when add is set, adds) the four rows' 8 sums to y.
#define STORE1(f) \
	TESTQ R9, R9 \
	JZ   2(PC) \
	VADDPS (DI), f, f \
	VMOVUPS f, (DI) \
	ADDQ R8, DI

#define TILESTORE \
	MOVQ y+56(FP), DI \
	MOVQ ldy+64(FP), R8 \
	MOVQ add+72(FP), R9 \
	STORE1(Y0) \
	STORE1(Y1) \
	STORE1(Y2) \
	STORE1(Y3)

// func packQ4_0x8(dst *byte, src *byte, lds int, nb int)
//
// Repacks nb blocks of the 8 Q4_0 rows at src (stride lds bytes) into
// dst, 288 bytes a block: eight vectors of codes (the nibbles), then the 8
// scales as f32.
TEXT ·packQ4_0x8(SB), NOSPLIT, $256-32
	PACK8SETUP
	TESTQ CX, CX
	JZ   done

loop:
	VBROADCASTI128 p8mask<>(SB), Y14
	VBROADCASTI128 p8ident<>(SB), Y15
	EXPAND8(2)
	TRANS8
	F16SCALES8(0, 256)
	NEXT8(18, 288)

done:
	VZEROUPPER
	RET

// Q5BITS ORs bit 4 into the codes of row j at 32*j(SP) where the block's
// 32 high bits at a (bit i for element i) are set: each bit's byte is
// spread over its eight elements (VPSHUFB by p8spread), selected by
// p8bits (Y13), compared and masked to 0x10 (Y12).
#define Q5BITS(a, j) \
	VPBROADCASTD a, Y0 \
	VPSHUFB Y11, Y0, Y0 \
	VPAND Y13, Y0, Y0 \
	VPCMPEQB Y13, Y0, Y0 \
	VPAND Y12, Y0, Y0 \
	VPOR (32*j)(SP), Y0, Y0 \
	VMOVDQU Y0, (32*j)(SP)

// Q5BITS8(off) is Q5BITS for the 8 rows, their high bits at offset off
// of each block.
#define Q5BITS8(off) \
	VMOVDQU p8spread<>(SB), Y11 \
	VPBROADCASTQ p8bits<>(SB), Y13 \
	VPBROADCASTB p8hi<>(SB), Y12 \
	Q5BITS(off(SI), 0) \
	Q5BITS(off(SI)(R8*1), 1) \
	Q5BITS(off(SI)(R8*2), 2) \
	Q5BITS(off(SI)(R9*1), 3) \
	Q5BITS(off(R10), 4) \
	Q5BITS(off(R10)(R8*1), 5) \
	Q5BITS(off(R10)(R8*2), 6) \
	Q5BITS(off(R10)(R9*1), 7)

// func packQ5_0x8(dst *byte, src *byte, lds int, nb int)
//
// Repacks nb blocks of the 8 Q5_0 rows at src into dst as packQ4_0x8 does,
// code q (the nibble and, as bit 4, bit i of the block's 32 high bits for
// element i) becoming the unsigned byte q (the value plus 16), for the
// tile of gemmMXFP4x8.
TEXT ·packQ5_0x8(SB), NOSPLIT, $256-32
	PACK8SETUP
	TESTQ CX, CX
	JZ   done

loop:
	VBROADCASTI128 p8mask<>(SB), Y14
	VBROADCASTI128 p8ident<>(SB), Y15
	EXPAND8(6)
	Q5BITS8(2)
	TRANS8
	F16SCALES8(0, 256)
	NEXT8(22, 288)

done:
	VZEROUPPER
	RET

// func packQ4_1x8(dst *byte, src *byte, lds int, nb int)
//
// Repacks nb blocks of the 8 Q4_1 rows at src into dst, 320 bytes a
// block: eight vectors of codes (the nibbles, the codes themselves), the
// 8 scales and then the 8 mins as f32.
TEXT ·packQ4_1x8(SB), NOSPLIT, $256-32
	PACK8SETUP
	TESTQ CX, CX
	JZ   done

loop:
	VBROADCASTI128 p8mask<>(SB), Y14
	VBROADCASTI128 p8ident<>(SB), Y15
	EXPAND8(4)
	TRANS8
	F16SCALES8(0, 256)
	F16SCALES8(2, 288)
	NEXT8(20, 320)

done:
	VZEROUPPER
	RET

// func packQ5_1x8(dst *byte, src *byte, lds int, nb int)
//
// Repacks nb blocks of the 8 Q5_1 rows at src into dst as packQ4_1x8
// does, each code with its high bit (as packQ5_0x8 takes it).
TEXT ·packQ5_1x8(SB), NOSPLIT, $256-32
	PACK8SETUP
	TESTQ CX, CX
	JZ   done

loop:
	VBROADCASTI128 p8mask<>(SB), Y14
	VBROADCASTI128 p8ident<>(SB), Y15
	EXPAND8(8)
	Q5BITS8(4)
	TRANS8
	F16SCALES8(0, 256)
	F16SCALES8(2, 288)
	NEXT8(24, 320)

done:
	VZEROUPPER
	RET

// COPY8(off) copies the 32 bytes at offset off of each of the 8 rows' blocks
// to 32*j(SP), row j, for TRANS8.
#define COPY8(off) \
	VMOVDQU off(SI), Y0 \
	VMOVDQU Y0, 0(SP) \
	VMOVDQU off(SI)(R8*1), Y0 \
	VMOVDQU Y0, 32(SP) \
	VMOVDQU off(SI)(R8*2), Y0 \
	VMOVDQU Y0, 64(SP) \
	VMOVDQU off(SI)(R9*1), Y0 \
	VMOVDQU Y0, 96(SP) \
	VMOVDQU off(R10), Y0 \
	VMOVDQU Y0, 128(SP) \
	VMOVDQU off(R10)(R8*1), Y0 \
	VMOVDQU Y0, 160(SP) \
	VMOVDQU off(R10)(R8*2), Y0 \
	VMOVDQU Y0, 192(SP) \
	VMOVDQU off(R10)(R9*1), Y0 \
	VMOVDQU Y0, 224(SP)

// SPLIT8(g) turns the g-th vector of codes at DI into their magnitudes,
// and writes their signs (0xff where a code is negative) 256 bytes on. Y14
// is zero.
#define SPLIT8(g) \
	VMOVDQU (32*g)(DI), Y0 \
	VPABSB Y0, Y1 \
	VPCMPGTB Y0, Y14, Y0 \
	VMOVDQU Y1, (32*g)(DI) \
	VMOVDQU Y0, (256+32*g)(DI)

// func packQ8_0x8(dst *byte, src *byte, lds int, nb int)
//
// Repacks nb blocks of the 8 Q8_0 rows at src into dst, 544 bytes a
// block: eight vectors of the codes' magnitudes, eight of their signs
// (0xff where a code is negative, 0 elsewhere), then the 8 scales as f32,
// for the tile of gemmQ8_0x8.
TEXT ·packQ8_0x8(SB), NOSPLIT, $256-32
	PACK8SETUP
	TESTQ CX, CX
	JZ   done

loop:
	COPY8(2)
	TRANS8
	VPXOR Y14, Y14, Y14
	SPLIT8(0)
	SPLIT8(1)
	SPLIT8(2)
	SPLIT8(3)
	SPLIT8(4)
	SPLIT8(5)
	SPLIT8(6)
	SPLIT8(7)
	F16SCALES8(0, 512)
	NEXT8(34, 544)

done:
	VZEROUPPER
	RET

// MXSCALE inserts the scale of the block at a (·e8m0Half indexed by its
// exponent byte; table at R13) as dword k of x.
#define MXSCALE(a, k, x) \
	MOVBLZX a, AX \
	VPINSRD $k, (R13)(AX*4), x, x

// func packMXFP4x8(dst *byte, src *byte, lds int, nb int, table *[16]byte)
//
// Repacks nb blocks of the 8 MXFP4 rows at src into dst as packQ4_0x8
// does, code c becoming table[c] (16 plus its doubled E2M1 value) and each
// block's exponent its scale from ·e8m0Half.
TEXT ·packMXFP4x8(SB), NOSPLIT, $256-40
	PACK8SETUP
	MOVQ table+32(FP), R11
	LEAQ ·e8m0Half(SB), R13
	TESTQ CX, CX
	JZ   done

loop:
	VBROADCASTI128 p8mask<>(SB), Y14
	VBROADCASTI128 (R11), Y15
	EXPAND8(1)
	TRANS8
	VPXOR X0, X0, X0
	VPXOR X1, X1, X1
	MXSCALE((SI), 0, X0)
	MXSCALE((SI)(R8*1), 1, X0)
	MXSCALE((SI)(R8*2), 2, X0)
	MXSCALE((SI)(R9*1), 3, X0)
	MXSCALE((R10), 0, X1)
	MXSCALE((R10)(R8*1), 1, X1)
	MXSCALE((R10)(R8*2), 2, X1)
	MXSCALE((R10)(R9*1), 3, X1)
	VINSERTI128 $1, X1, Y0, Y0
	VMOVUPS Y0, 256(DI)
	NEXT8(17, 288)

done:
	VZEROUPPER
	RET

// GROUPS8(fin) takes the block's eight groups to the four rows at once,
// their int16 sums over the whole block, and finishes them by fin (FINO
// or FINM): the tile for codes of at most 15.
#define GROUPS8(fin) \
	GROUP(0, G1) \
	GROUP(1, G) \
	GROUP(2, G) \
	GROUP(3, G) \
	GROUP(4, G) \
	GROUP(5, G) \
	GROUP(6, G) \
	GROUP(7, G) \
	FIN4(fin)

// TILE(o, body, ps, so) is a tile routine: the offsets' or scaled sums'
// argument o, the block's work body (GROUPS8, ROWS4 or Q8BLOCK), packed
// blocks of ps bytes with their weight scales at so.
#define TILE(o, body, ps, so) \
	TILESETUP(o) \
	TESTQ CX, CX \
	JZ   store \
loop: \
	VMOVUPS so(DX), Y13 \
	body \
	TILENEXT(ps) \
store: \
	TILESTORE \
	VZEROUPPER \
	RET

// func gemmQ4_0x8(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, add int, shift int)
//
// The tile for codes of at most 15 (Q4_0): eight groups a block add up in
// int16. shift is 4 (Acts.o/16: 8 times the sum).
TEXT ·gemmQ4_0x8(SB), NOSPLIT, $0-88
	TILE(ao, GROUPS8(FINO), 288, 256)

// MXG1 starts the int16 pair sums in Y11 with group g of the block for
// the activation row at a; MXG adds group g to them.
#define MXG1(g, a) \
	VMOVDQU (32*g)(DX), Y8 \
	VPBROADCASTD (4*g)a, Y9 \
	VPMADDUBSW Y9, Y8, Y11

#define MXG(g, a) \
	VMOVDQU (32*g)(DX), Y8 \
	VPBROADCASTD (4*g)a, Y9 \
	VPMADDUBSW Y9, Y8, Y12 \
	VPADDW Y12, Y11, Y11

// MXSUMS leaves in Y11 the int32 sums of the block with one activation
// row (quants at a): each half block's four groups add up in int16 and
// are widened, and the halves add up in int32, so that with the offset a
// row whose values are all zero gives exactly zero.
#define MXSUMS(a) \
	MXG1(0, a) \
	MXG(1, a) \
	MXG(2, a) \
	MXG(3, a) \
	VPMADDWD Y10, Y11, Y14 \
	MXG1(4, a) \
	MXG(5, a) \
	MXG(6, a) \
	MXG(7, a) \
	VPMADDWD Y10, Y11, Y11 \
	VPADDD Y14, Y11, Y11

// MXROW takes the block to one activation row (quants at a, scale at ad,
// offset at ao; sums f); MXROWM with the weights' mins (the row's scaled
// sum at as).
#define MXROW(a, f, ad, ao) \
	MXSUMS(a) \
	OFFSET(ao) \
	SCALE(f, ad)

#define MXROWM(a, f, ad, as) \
	MXSUMS(a) \
	SCALE(f, ad) \
	MINS(f, as)

// ROWS4(op) takes the block to the four rows one after another by op
// (MXROW or MXROWM).
#define ROWS4(op) \
	op((SI), Y0, (DI), (BX)) \
	op((SI)(R8*1), Y1, (DI)(R9*1), (BX)(R9*1)) \
	op((SI)(R8*2), Y2, (DI)(R9*2), (BX)(R9*2)) \
	op((SI)(R10*1), Y3, (R11), (R12))

// func gemmMXFP4x8(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, add int, shift int)
//
// The tile for codes of at most 31 (Q5_0, MXFP4): a pair sum may reach
// 2*31*127, so only four groups add up in int16, and the tile takes the
// block to one activation row after another, the packed codes (in L1)
// loaded again for each. shift is 3 (Acts.o/8: 16 times the sum).
TEXT ·gemmMXFP4x8(SB), NOSPLIT, $0-88
	TILE(ao, ROWS4(MXROW), 288, 256)

// func gemmQ4_1x8(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, as *float32, y *float32, ldy int, add int, shift int)
//
// gemmQ4_0x8 for Q4_1 (codes of at most 15, blocks of 320 bytes): no
// offset, and each row adds the weights' mins times its scaled sum (as).
// shift is not used.
TEXT ·gemmQ4_1x8(SB), NOSPLIT, $0-88
	TILE(as, GROUPS8(FINM), 320, 256)

// func gemmQ5_1x8(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, as *float32, y *float32, ldy int, add int, shift int)
//
// gemmMXFP4x8 for Q5_1 (codes of at most 31, blocks of 320 bytes): no
// offset, and each row adds the weights' mins times its scaled sum (as).
// shift is not used.
TEXT ·gemmQ5_1x8(SB), NOSPLIT, $0-88
	TILE(as, ROWS4(MXROWM), 320, 256)

// Q8R1(g, a, i) starts row i's int32 sums with group g of a Q8_0 block:
// the four quants at a are negated where the weights are negative (Y9:
// their signs, as 0 or -1 bytes; x^m-m), and meet the weights' magnitudes
// (Y8), pairs summed to int16 and widened at once (a pair reaches
// 2*128*127, so no two add up in int16); Q8R adds them. On the Zen 4
// VPSIGNB shares the two pipes that multiply, where the XOR and the
// subtraction take any of four.
#define Q8R1(g, a, i) \
	VPBROADCASTD (4*g)a, Y11 \
	VPXOR Y9, Y11, Y11 \
	VPSUBB Y9, Y11, Y11 \
	VPMADDUBSW Y11, Y8, Y11 \
	VPMADDWD Y10, Y11, i

#define Q8R(g, a, i) \
	Q8R1(g, a, Y11) \
	VPADDD Y11, i, i

// Q8GROUP(g, op) takes group g of a Q8_0 block to the four rows.
#define Q8GROUP(g, op) \
	VMOVDQU (32*g)(DX), Y8 \
	VMOVDQU (256+32*g)(DX), Y9 \
	op(g, (SI), Y4) \
	op(g, (SI)(R8*1), Y5) \
	op(g, (SI)(R8*2), Y6) \
	op(g, (SI)(R10*1), Y7)

// Q8FIN(p, f, ad) adds row sums p, times the weight scales and the
// activation scale at ad, to f.
#define Q8FIN(p, f, ad) \
	VCVTDQ2PS p, p \
	VBROADCASTSS ad, Y12 \
	VMULPS Y13, Y12, Y12 \
	VFMADD231PS Y12, p, f

#define Q8BLOCK \
	Q8GROUP(0, Q8R1) \
	Q8GROUP(1, Q8R) \
	Q8GROUP(2, Q8R) \
	Q8GROUP(3, Q8R) \
	Q8GROUP(4, Q8R) \
	Q8GROUP(5, Q8R) \
	Q8GROUP(6, Q8R) \
	Q8GROUP(7, Q8R) \
	Q8FIN(Y4, Y0, (DI)) \
	Q8FIN(Y5, Y1, (DI)(R9*1)) \
	Q8FIN(Y6, Y2, (DI)(R9*2)) \
	Q8FIN(Y7, Y3, (R11))

// func gemmQ8_0x8(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, add int, shift int)
//
// The tile for Q8_0 (blocks of 544 bytes from packQ8_0x8): the weights'
// magnitudes meet the quants negated where the weights are negative, so
// that a weight of -128 is exact, and every group's int16 pair sums are
// widened to int32 at once. ao and shift are not used (no offset).
TEXT ·gemmQ8_0x8(SB), NOSPLIT, $0-88
	TILE(ao, Q8BLOCK, 544, 512)
