// AVX-512 register-tiled products for F32, F16 and BF16 weights (prompt
// processing). A panel of 48 weight rows by up to 128 elements of K is
// converted to f32 once and stored transposed, element k's 48 row values
// side by side in three ZMM vectors; the tile then holds four activation
// rows by those 48 weight rows in twelve accumulators (Z0-Z11), each step
// loading the three panel vectors (Z12-Z14) and broadcasting one element of
// each activation row (Z15). Only Z0-Z15 are used and every routine ends
// with VZEROUPPER.
//
// The transpose works on 16 rows by 8 elements at a time: rows r and r+8
// share a register (elements 0-3, 4-7 of row r in 128-bit lanes 0 and 1,
// those of row r+8 in lanes 2 and 3), a 4x4 transpose runs in every
// 128-bit lane, and VSHUFF32X4 gathers each element's lanes. That leaves a
// panel vector's lanes in the row order 0-3, 8-11, 4-7, 12-15; the tile
// swaps 128-bit lanes 1 and 2 back (VSHUFF32X4 $0xD8) before it stores.

#include "textflag.h"
#include "gemm512_amd64.h"
#include "zero_amd64.h"

// Loaders: row r's 8 elements at a into the low half of Z register z (Y
// alias y, X alias x), row r+8's at b into the high half, as f32.
#define LDP_F32(a, b, z, y, x) \
	VMOVUPS a, y \
	VINSERTF64X4 $1, b, z, z

#define LDP_F16(a, b, z, y, x) \
	VMOVDQU a, x \
	VINSERTI128 $1, b, y, y \
	VCVTPH2PS y, z

#define LDP_BF16(a, b, z, y, x) \
	VMOVDQU a, x \
	VINSERTI128 $1, b, y, y \
	VPMOVZXWD y, z \
	VPSLLD $16, z, z

// PACK16 is the body of packF32Z, packF16Z and packBF16Z: 16 rows from src
// (stride lds bytes), k8 elements of each (a multiple of 8), into dst with
// 192 bytes between elements. ws is the element size in bytes.
#define PACK16(LDP, ws) \
	MOVQ dst+0(FP), DI \
	MOVQ src+8(FP), SI \
	MOVQ lds+16(FP), R8 \
	MOVQ k8+24(FP), CX \
	LEAQ (R8)(R8*2), R9 \
	LEAQ (SI)(R8*4), R10 \
	LEAQ (R10)(R8*4), R11 \
	LEAQ (R11)(R8*4), R12 \
	SHRQ $3, CX \
	JZ   done \
loop: \
	LDP((SI), (R11), Z0, Y0, X0) \
	LDP((SI)(R8*1), (R11)(R8*1), Z1, Y1, X1) \
	LDP((SI)(R8*2), (R11)(R8*2), Z2, Y2, X2) \
	LDP((SI)(R9*1), (R11)(R9*1), Z3, Y3, X3) \
	LDP((R10), (R12), Z4, Y4, X4) \
	LDP((R10)(R8*1), (R12)(R8*1), Z5, Y5, X5) \
	LDP((R10)(R8*2), (R12)(R8*2), Z6, Y6, X6) \
	LDP((R10)(R9*1), (R12)(R9*1), Z7, Y7, X7) \
	TRANS16X8 \
	VMOVUPS Z8, (DI) \
	VMOVUPS Z9, 192(DI) \
	VMOVUPS Z10, 384(DI) \
	VMOVUPS Z11, 576(DI) \
	VMOVUPS Z12, 768(DI) \
	VMOVUPS Z13, 960(DI) \
	VMOVUPS Z14, 1152(DI) \
	VMOVUPS Z15, 1344(DI) \
	ADDQ $(8*ws), SI \
	ADDQ $(8*ws), R10 \
	ADDQ $(8*ws), R11 \
	ADDQ $(8*ws), R12 \
	ADDQ $1536, DI \
	DECQ CX \
	JNZ  loop \
done: \
	VZEROUPPER \
	RET

// func packF32Z(dst *float32, src unsafe.Pointer, lds int, k8 int)
TEXT ·packF32Z(SB), NOSPLIT, $0-32
	PACK16(LDP_F32, 4)

// func packF16Z(dst *float32, src unsafe.Pointer, lds int, k8 int)
TEXT ·packF16Z(SB), NOSPLIT, $0-32
	PACK16(LDP_F16, 2)

// func packBF16Z(dst *float32, src unsafe.Pointer, lds int, k8 int)
TEXT ·packBF16Z(SB), NOSPLIT, $0-32
	PACK16(LDP_BF16, 2)

// FROW3 adds one k step of activation row (base a) to the row's three
// accumulators.
#define FROW3(a, z0, z1, z2) \
	VBROADCASTSS a, Z15 \
	VFMADD231PS Z12, Z15, z0 \
	VFMADD231PS Z13, Z15, z1 \
	VFMADD231PS Z14, Z15, z2

#define FROW2(a, z0, z1) \
	VBROADCASTSS a, Z15 \
	VFMADD231PS Z12, Z15, z0 \
	VFMADD231PS Z13, Z15, z1

#define FROW1(a, z0) \
	VBROADCASTSS a, Z15 \
	VFMADD231PS Z12, Z15, z0

// FSTORE writes (or, when add is set, adds) the three accumulators of one
// row to y at yp, lanes masked by K1-K3, after undoing the panel's lane
// order.
#define FSTORE(yp, z0, z1, z2) \
	VSHUFF32X4 $0xD8, z0, z0, z0 \
	VSHUFF32X4 $0xD8, z1, z1, z1 \
	VSHUFF32X4 $0xD8, z2, z2, z2 \
	TESTQ R9, R9 \
	JZ   4(PC) \
	VADDPS.Z (yp), z0, K1, z0 \
	VADDPS.Z 64(yp), z1, K2, z1 \
	VADDPS.Z 128(yp), z2, K3, z2 \
	VMOVUPS z0, K1, (yp) \
	VMOVUPS z1, K2, 64(yp) \
	VMOVUPS z2, K3, 128(yp)

// func gemmFloatZ(x *float32, ldx int, p *float32, kc int, y *float32, ldy int, rows int, nv int, mask uint64, add int)
//
// Four activation rows at x (stride ldx bytes; rows past rows repeat the
// last) by the panel p of nv vectors of 16 weight rows, kc elements, into
// rows rows of y (stride ldy bytes), the 48 lanes masked by mask.
TEXT ·gemmFloatZ(SB), NOSPLIT, $0-80
	MOVQ x+0(FP), SI
	MOVQ ldx+8(FP), R8
	MOVQ p+16(FP), DI
	MOVQ kc+24(FP), CX
	MOVQ rows+48(FP), AX
	MOVQ SI, R11
	MOVQ SI, R12
	MOVQ SI, R13
	CMPQ AX, $2
	JLT  rowsset
	LEAQ (SI)(R8*1), R11
	MOVQ R11, R12
	MOVQ R11, R13
	CMPQ AX, $3
	JLT  rowsset
	LEAQ (R11)(R8*1), R12
	MOVQ R12, R13
	CMPQ AX, $4
	JLT  rowsset
	LEAQ (R12)(R8*1), R13

rowsset:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	XORQ BX, BX
	TESTQ CX, CX
	JZ   store
	MOVQ nv+56(FP), DX
	CMPQ DX, $2
	JLT  loop1
	JEQ  loop2

loop3:
	VMOVUPS (DI), Z12
	VMOVUPS 64(DI), Z13
	VMOVUPS 128(DI), Z14
	FROW3((SI)(BX*4), Z0, Z1, Z2)
	FROW3((R11)(BX*4), Z3, Z4, Z5)
	FROW3((R12)(BX*4), Z6, Z7, Z8)
	FROW3((R13)(BX*4), Z9, Z10, Z11)
	ADDQ $192, DI
	INCQ BX
	CMPQ BX, CX
	JLT  loop3
	JMP  store

loop2:
	VMOVUPS (DI), Z12
	VMOVUPS 64(DI), Z13
	FROW2((SI)(BX*4), Z0, Z1)
	FROW2((R11)(BX*4), Z3, Z4)
	FROW2((R12)(BX*4), Z6, Z7)
	FROW2((R13)(BX*4), Z9, Z10)
	ADDQ $192, DI
	INCQ BX
	CMPQ BX, CX
	JLT  loop2
	JMP  store

loop1:
	VMOVUPS (DI), Z12
	FROW1((SI)(BX*4), Z0)
	FROW1((R11)(BX*4), Z3)
	FROW1((R12)(BX*4), Z6)
	FROW1((R13)(BX*4), Z9)
	ADDQ $192, DI
	INCQ BX
	CMPQ BX, CX
	JLT  loop1

store:
	MOVQ mask+64(FP), DX
	KMOVW DX, K1
	SHRQ $16, DX
	KMOVW DX, K2
	SHRQ $16, DX
	KMOVW DX, K3
	MOVQ y+32(FP), DI
	MOVQ ldy+40(FP), R8
	MOVQ add+72(FP), R9
	FSTORE(DI, Z0, Z1, Z2)
	CMPQ AX, $2
	JLT  done
	ADDQ R8, DI
	FSTORE(DI, Z3, Z4, Z5)
	CMPQ AX, $3
	JLT  done
	ADDQ R8, DI
	FSTORE(DI, Z6, Z7, Z8)
	CMPQ AX, $4
	JLT  done
	ADDQ R8, DI
	FSTORE(DI, Z9, Z10, Z11)

done:
	VZEROUPPER
	RET

// func prefetchRowsZ(src unsafe.Pointer, lds int, rows int, n int)
//
// Prefetches into L2 the n bytes at src of each of rows rows lds bytes
// apart: the weights a panel packs next, fetched from memory while the
// tiles work on the current one.
TEXT ·prefetchRowsZ(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ lds+8(FP), R8
	MOVQ rows+16(FP), CX
	MOVQ n+24(FP), DX
	TESTQ CX, CX
	JZ   pdone
	TESTQ DX, DX
	JZ   pdone

prow:
	XORQ AX, AX

pline:
	PREFETCHT1 (SI)(AX*1)
	ADDQ $64, AX
	CMPQ AX, DX
	JLT  pline
	ADDQ R8, SI
	DECQ CX
	JNZ  prow

pdone:
	RET

// FROW8 adds one k step of activation row (base a) to the row's three
// accumulators, broadcasting through register b.
#define FROW8(a, b, z0, z1, z2) \
	VBROADCASTSS a, b \
	VFMADD231PS Z24, b, z0 \
	VFMADD231PS Z25, b, z1 \
	VFMADD231PS Z26, b, z2

// func gemmFloatZ8(x *float32, ldx int, p *float32, kc int, y *float32, ldy int, mask uint64, add int)
//
// Eight activation rows at x (stride ldx bytes) by the 48 weight rows of
// the panel p, kc elements, into eight rows of y (stride ldy bytes), the
// 48 lanes masked by mask. Twenty-four accumulators (Z0-Z23) take each
// panel vector (Z24-Z26) eight times, twice as often as gemmFloatZ's
// twelve: the loads are then 11 for 24 FMAs, and y is read and written
// half as often. The panel's three vectors are always read (lanes past a
// short panel's rows are never stored).
TEXT ·gemmFloatZ8(SB), NOSPLIT, $0-64
	MOVQ x+0(FP), SI
	MOVQ ldx+8(FP), R8
	MOVQ p+16(FP), DI
	MOVQ kc+24(FP), CX
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R10
	ZERO0TO23
	TESTQ CX, CX
	JZ   store8

loop8:
	VMOVUPS (DI), Z24
	VMOVUPS 64(DI), Z25
	VMOVUPS 128(DI), Z26
	FROW8((SI), Z27, Z0, Z1, Z2)
	FROW8((SI)(R8*1), Z28, Z3, Z4, Z5)
	FROW8((SI)(R8*2), Z29, Z6, Z7, Z8)
	FROW8((SI)(R9*1), Z30, Z9, Z10, Z11)
	FROW8((R10), Z27, Z12, Z13, Z14)
	FROW8((R10)(R8*1), Z28, Z15, Z16, Z17)
	FROW8((R10)(R8*2), Z29, Z18, Z19, Z20)
	FROW8((R10)(R9*1), Z30, Z21, Z22, Z23)
	ADDQ $192, DI
	ADDQ $4, SI
	ADDQ $4, R10
	DECQ CX
	JNZ  loop8

store8:
	MOVQ mask+48(FP), DX
	KMOVW DX, K1
	SHRQ $16, DX
	KMOVW DX, K2
	SHRQ $16, DX
	KMOVW DX, K3
	MOVQ y+32(FP), DI
	MOVQ ldy+40(FP), R8
	MOVQ add+56(FP), R9
	FSTORE(DI, Z0, Z1, Z2)
	ADDQ R8, DI
	FSTORE(DI, Z3, Z4, Z5)
	ADDQ R8, DI
	FSTORE(DI, Z6, Z7, Z8)
	ADDQ R8, DI
	FSTORE(DI, Z9, Z10, Z11)
	ADDQ R8, DI
	FSTORE(DI, Z12, Z13, Z14)
	ADDQ R8, DI
	FSTORE(DI, Z15, Z16, Z17)
	ADDQ R8, DI
	FSTORE(DI, Z18, Z19, Z20)
	ADDQ R8, DI
	FSTORE(DI, Z21, Z22, Z23)
	VZEROUPPER
	RET
