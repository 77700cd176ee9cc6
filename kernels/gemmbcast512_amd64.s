// AVX-512 F16 and BF16 products of 48 to 127 activation rows (prompt
// processing) over transposed activations: the tile broadcasts one weight
// of each of six weight rows a step, read in place and converted to f32,
// against three or four vectors of sixteen activation rows (Acts.xt holds
// them k-major), so that each accumulator is one weight row's outputs for
// sixteen activation rows, and nothing is packed or transposed per
// product. Six rows by four vectors are 24 accumulators (Z0-Z23, row j's
// vector i in Z(4j+i)); Z24-Z25 hold the broadcasts (Z26 an F16 one
// before its conversion), Z28-Z31 the activations. On the Zen 5, in L1,
// it runs as fast as with the weights converted beforehand (213 GFLOP/s a
// core): the conversions run beside the FMAs. Every routine ends with
// VZEROUPPER.

#include "textflag.h"
#include "zero_amd64.h"
#include "tile_amd64.h"

// BF16W and BBF16W broadcast the weight at a+BX as f32 to z.
#define BF16W(a, z) VPBROADCASTW (a)(BX*1), Y26; VCVTPH2PS Y26, z
#define BBF16W(a, z) VPBROADCASTW (a)(BX*1), z; VPSLLD $16, z, z

// B1-B4 add one weight broadcast times one to four activation vectors
// into one weight row's accumulators; L1-L4 load the vectors (B3, B4, L3
// and L4 serve the tiles).
#define B1(z, a0, a1, a2, a3) VFMADD231PS z, Z28, a0
#define B2(z, a0, a1, a2, a3) B1(z, a0, a1, a2, a3); VFMADD231PS z, Z29, a1
#define B3(z, a0, a1, a2, a3) B2(z, a0, a1, a2, a3); VFMADD231PS z, Z30, a2
#define B4(z, a0, a1, a2, a3) B3(z, a0, a1, a2, a3); VFMADD231PS z, Z31, a3
#define L1 VMOVUPS (SI), Z28
#define L2 L1; VMOVUPS 64(SI), Z29
#define L3 L2; VMOVUPS 128(SI), Z30
#define L4 L3; VMOVUPS 192(SI), Z31

// BLOOP is the k loop for v activation vectors (LD loads them, BV adds one
// row's products, BCAST broadcasts a weight); the loop is at label lab.
#define BLOOP(BCAST, LD, BV, lab) \
lab: \
	LD \
	BCAST(DI, Z24) \
	BCAST(R8, Z25) \
	BV(Z24, Z0, Z1, Z2, Z3) \
	BV(Z25, Z4, Z5, Z6, Z7) \
	BCAST(R9, Z24) \
	BCAST(R10, Z25) \
	BV(Z24, Z8, Z9, Z10, Z11) \
	BV(Z25, Z12, Z13, Z14, Z15) \
	BCAST(R11, Z24) \
	BCAST(R12, Z25) \
	BV(Z24, Z16, Z17, Z18, Z19) \
	BV(Z25, Z20, Z21, Z22, Z23) \
	ADDQ DX, SI \
	ADDQ $2, BX \
	DECQ CX \
	JNZ  lab \
	JMP  out

// BOUT stores row j's four accumulators to the tile (AX) at j*256.
#define BOUT(j, a0, a1, a2, a3) \
	VMOVUPS a0, (j*256)(AX) \
	VMOVUPS a1, (j*256+64)(AX) \
	VMOVUPS a2, (j*256+128)(AX) \
	VMOVUPS a3, (j*256+192)(AX)

// WPTR sets r to weight row i (DI, stride DX bytes), or to the last one
// (CX, the rows) when i is past it. BX is scratch.
#define WPTR(i, r) \
	MOVQ $i, BX \
	CMPQ BX, CX \
	JLT  3(PC) \
	MOVQ CX, BX \
	DECQ BX \
	IMULQ DX, BX \
	LEAQ (DI)(BX*1), r

// BMUL is the body of gemmBcastF16Z and gemmBcastBF16Z: the products of
// nw weight rows (one to six, at w, stride ldw bytes; the tile repeats
// the last for the rest) with 16*v activation rows (v three or four; xt:
// kc steps of 16*v elements, one element of each row a step) over kc
// elements, into 16*v rows of nw outputs of y (stride ldy bytes), added to
// what is there when add is set. tile is 384 floats of scratch: the
// accumulators go there, and row t of the outputs is its column t
// (y[t*ldy+4j] = tile[64j+t]). In the loop DX is the bytes of a step of
// xt (64*v).
#define BMUL(BCAST) \
	MOVQ xt+0(FP), SI \
	MOVQ v+8(FP), AX \
	MOVQ w+16(FP), DI \
	MOVQ ldw+24(FP), DX \
	MOVQ nw+64(FP), CX \
	WPTR(1, R8) \
	WPTR(2, R9) \
	WPTR(3, R10) \
	WPTR(4, R11) \
	WPTR(5, R12) \
	MOVQ AX, DX \
	SHLQ $6, DX \
	MOVQ kc+32(FP), CX \
	XORQ BX, BX \
	ZERO0TO23 \
	TESTQ CX, CX \
	JZ   out \
	CMPQ AX, $4 \
	JEQ  v4 \
	BLOOP(BCAST, L3, B3, v3) \
	BLOOP(BCAST, L4, B4, v4) \
out: \
	MOVQ tile+40(FP), AX \
	BOUT(0, Z0, Z1, Z2, Z3) \
	BOUT(1, Z4, Z5, Z6, Z7) \
	BOUT(2, Z8, Z9, Z10, Z11) \
	BOUT(3, Z12, Z13, Z14, Z15) \
	BOUT(4, Z16, Z17, Z18, Z19) \
	BOUT(5, Z20, Z21, Z22, Z23) \
	MOVQ y+48(FP), DX \
	MOVQ ldy+56(FP), R8 \
	MOVQ v+8(FP), R9 \
	SHLQ $4, R9 \
	MOVQ add+72(FP), R10 \
	MOVQ nw+64(FP), R11 \
	TILESCATTER(256) \
	VZEROUPPER \
	RET

// func gemmBcastF16Z(xt *float32, v int, w unsafe.Pointer, ldw int, kc int, tile *float32, y *float32, ldy int, nw int, add int)
TEXT ·gemmBcastF16Z(SB), NOSPLIT, $0-80
	BMUL(BF16W)

// func gemmBcastBF16Z(xt *float32, v int, w unsafe.Pointer, ldw int, kc int, tile *float32, y *float32, ldy int, nw int, add int)
TEXT ·gemmBcastBF16Z(SB), NOSPLIT, $0-80
	BMUL(BBF16W)

// func transposeZ(dst *float32, ldd int, src *float32, lds int, k16 int)
//
// Transposes sixteen rows of 16*k16 f32 at src (stride lds bytes) into
// 16*k16 rows of sixteen at dst (stride ldd bytes): dst row k holds
// element k of each source row. Each sixteen by sixteen block takes four
// rounds of shuffles: pairs of rows interleaved by element, then by pairs
// of elements (each 128-bit lane then holds four rows' element), then two
// rounds of lane shuffles that gather the four lanes of each element.
TEXT ·transposeZ(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), CX
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), AX
	MOVQ k16+32(FP), DX
	LEAQ (AX)(AX*2), BX
	LEAQ (AX)(AX*4), R10
	LEAQ (BX)(AX*4), R11
	LEAQ (SI)(AX*8), R8
	LEAQ (CX)(CX*2), R12
	LEAQ (CX)(CX*4), R13
	LEAQ (R12)(CX*4), R14
	LEAQ (DI)(CX*8), R9
	TESTQ DX, DX
	JZ   tdone
tloop:
	VMOVUPS (SI), Z0
	VMOVUPS (SI)(AX*1), Z1
	VMOVUPS (SI)(AX*2), Z2
	VMOVUPS (SI)(BX*1), Z3
	VMOVUPS (SI)(AX*4), Z4
	VMOVUPS (SI)(R10*1), Z5
	VMOVUPS (SI)(BX*2), Z6
	VMOVUPS (SI)(R11*1), Z7
	VMOVUPS (R8), Z8
	VMOVUPS (R8)(AX*1), Z9
	VMOVUPS (R8)(AX*2), Z10
	VMOVUPS (R8)(BX*1), Z11
	VMOVUPS (R8)(AX*4), Z12
	VMOVUPS (R8)(R10*1), Z13
	VMOVUPS (R8)(BX*2), Z14
	VMOVUPS (R8)(R11*1), Z15
	VUNPCKLPS Z1, Z0, Z16
	VUNPCKHPS Z1, Z0, Z17
	VUNPCKLPS Z3, Z2, Z18
	VUNPCKHPS Z3, Z2, Z19
	VUNPCKLPS Z5, Z4, Z20
	VUNPCKHPS Z5, Z4, Z21
	VUNPCKLPS Z7, Z6, Z22
	VUNPCKHPS Z7, Z6, Z23
	VUNPCKLPS Z9, Z8, Z24
	VUNPCKHPS Z9, Z8, Z25
	VUNPCKLPS Z11, Z10, Z26
	VUNPCKHPS Z11, Z10, Z27
	VUNPCKLPS Z13, Z12, Z28
	VUNPCKHPS Z13, Z12, Z29
	VUNPCKLPS Z15, Z14, Z30
	VUNPCKHPS Z15, Z14, Z31
	VUNPCKLPD Z18, Z16, Z0
	VUNPCKHPD Z18, Z16, Z1
	VUNPCKLPD Z19, Z17, Z2
	VUNPCKHPD Z19, Z17, Z3
	VUNPCKLPD Z22, Z20, Z4
	VUNPCKHPD Z22, Z20, Z5
	VUNPCKLPD Z23, Z21, Z6
	VUNPCKHPD Z23, Z21, Z7
	VUNPCKLPD Z26, Z24, Z8
	VUNPCKHPD Z26, Z24, Z9
	VUNPCKLPD Z27, Z25, Z10
	VUNPCKHPD Z27, Z25, Z11
	VUNPCKLPD Z30, Z28, Z12
	VUNPCKHPD Z30, Z28, Z13
	VUNPCKLPD Z31, Z29, Z14
	VUNPCKHPD Z31, Z29, Z15
	VSHUFF32X4 $0x88, Z4, Z0, Z16
	VSHUFF32X4 $0xDD, Z4, Z0, Z20
	VSHUFF32X4 $0x88, Z12, Z8, Z24
	VSHUFF32X4 $0xDD, Z12, Z8, Z28
	VSHUFF32X4 $0x88, Z5, Z1, Z17
	VSHUFF32X4 $0xDD, Z5, Z1, Z21
	VSHUFF32X4 $0x88, Z13, Z9, Z25
	VSHUFF32X4 $0xDD, Z13, Z9, Z29
	VSHUFF32X4 $0x88, Z6, Z2, Z18
	VSHUFF32X4 $0xDD, Z6, Z2, Z22
	VSHUFF32X4 $0x88, Z14, Z10, Z26
	VSHUFF32X4 $0xDD, Z14, Z10, Z30
	VSHUFF32X4 $0x88, Z7, Z3, Z19
	VSHUFF32X4 $0xDD, Z7, Z3, Z23
	VSHUFF32X4 $0x88, Z15, Z11, Z27
	VSHUFF32X4 $0xDD, Z15, Z11, Z31
	VSHUFF32X4 $0x88, Z24, Z16, Z0
	VSHUFF32X4 $0xDD, Z24, Z16, Z8
	VSHUFF32X4 $0x88, Z28, Z20, Z4
	VSHUFF32X4 $0xDD, Z28, Z20, Z12
	VSHUFF32X4 $0x88, Z25, Z17, Z1
	VSHUFF32X4 $0xDD, Z25, Z17, Z9
	VSHUFF32X4 $0x88, Z29, Z21, Z5
	VSHUFF32X4 $0xDD, Z29, Z21, Z13
	VSHUFF32X4 $0x88, Z26, Z18, Z2
	VSHUFF32X4 $0xDD, Z26, Z18, Z10
	VSHUFF32X4 $0x88, Z30, Z22, Z6
	VSHUFF32X4 $0xDD, Z30, Z22, Z14
	VSHUFF32X4 $0x88, Z27, Z19, Z3
	VSHUFF32X4 $0xDD, Z27, Z19, Z11
	VSHUFF32X4 $0x88, Z31, Z23, Z7
	VSHUFF32X4 $0xDD, Z31, Z23, Z15
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, (DI)(CX*1)
	VMOVUPS Z2, (DI)(CX*2)
	VMOVUPS Z3, (DI)(R12*1)
	VMOVUPS Z4, (DI)(CX*4)
	VMOVUPS Z5, (DI)(R13*1)
	VMOVUPS Z6, (DI)(R12*2)
	VMOVUPS Z7, (DI)(R14*1)
	VMOVUPS Z8, (R9)
	VMOVUPS Z9, (R9)(CX*1)
	VMOVUPS Z10, (R9)(CX*2)
	VMOVUPS Z11, (R9)(R12*1)
	VMOVUPS Z12, (R9)(CX*4)
	VMOVUPS Z13, (R9)(R13*1)
	VMOVUPS Z14, (R9)(R12*2)
	VMOVUPS Z15, (R9)(R14*1)
	ADDQ $64, SI
	ADDQ $64, R8
	LEAQ (DI)(CX*8), DI
	LEAQ (DI)(CX*8), DI
	LEAQ (R9)(CX*8), R9
	LEAQ (R9)(CX*8), R9
	DECQ DX
	JNZ  tloop
tdone:
	VZEROUPPER
	RET
