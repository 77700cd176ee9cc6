// AVX2 F32, F16 and BF16 products of sixteen activation rows at a time
// (prompt processing) over transposed activations (Acts.xt in panels of
// sixteen rows): the tile broadcasts one weight of each of six weight
// rows a step (F32 read in place; BF16 read in place and shifted to f32;
// F16 converted beforehand, six rows' block of K at a time, since on the Zen 4 a
// VCVTPH2PS from a register shares the pipes of the FMAs: converting
// each broadcast ran 65% of the FMA peak) against two vectors of the
// sixteen rows' elements, so that each accumulator is one weight
// row's outputs for eight activation rows, and nothing is summed across
// lanes. Six rows by two vectors are twelve accumulators (row j's vector
// i in Y(2j+i)); Y12-Y13 hold the activations, Y14-Y15 the broadcasts.
// Every routine ends with VZEROUPPER.

#include "textflag.h"
#include "tile_amd64.h"

// YBF16W broadcasts the BF16 weight at a+BX as f32 to y; YF32W the f32
// weight at a+2*BX (BX counts two bytes a step).
#define YBF16W(a, y) VPBROADCASTW (a)(BX*1), y; VPSLLD $16, y, y
#define YF32W(a, y) VBROADCASTSS (a)(BX*2), y

// YWPTR sets r to weight row i (DI, stride DX bytes), or to the last one
// (CX, the rows) when i is past it. BX is scratch.
#define YWPTR(i, r) \
	MOVQ $i, BX \
	CMPQ BX, CX \
	JLT  3(PC) \
	MOVQ CX, BX \
	DECQ BX \
	IMULQ DX, BX \
	LEAQ (DI)(BX*1), r

// YBMUL is the body of gemmBcastF32Y and gemmBcastBF16Y: the products of
// nw weight rows (one to six, at w, stride ldw bytes; the tile repeats
// the last for the rest) with sixteen activation rows (xt: kc steps of
// sixteen elements, one of each row a step) over kc elements, into
// sixteen rows of nw outputs of y (stride ldy bytes), added to what is
// there when add is set. tile is 96 floats of scratch: the accumulators
// go there, and row t of the outputs is its column t (y[t*ldy+4j] =
// tile[16j+t]).
#define YBMUL(BCAST) \
	MOVQ xt+0(FP), SI \
	MOVQ w+8(FP), DI \
	MOVQ ldw+16(FP), DX \
	MOVQ nw+56(FP), CX \
	YWPTR(1, R8) \
	YWPTR(2, R9) \
	YWPTR(3, R10) \
	YWPTR(4, R11) \
	YWPTR(5, R12) \
	MOVQ kc+24(FP), CX \
	XORQ BX, BX \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1; VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3; VXORPS Y4, Y4, Y4; VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6; VXORPS Y7, Y7, Y7; VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9; VXORPS Y10, Y10, Y10; VXORPS Y11, Y11, Y11 \
	TESTQ CX, CX \
	JZ   out \
	PCALIGN $64 \
loop: \
	VMOVUPS (SI), Y12 \
	VMOVUPS 32(SI), Y13 \
	BCAST(DI, Y14) \
	BCAST(R8, Y15) \
	VFMADD231PS Y14, Y12, Y0; VFMADD231PS Y14, Y13, Y1 \
	VFMADD231PS Y15, Y12, Y2; VFMADD231PS Y15, Y13, Y3 \
	BCAST(R9, Y14) \
	BCAST(R10, Y15) \
	VFMADD231PS Y14, Y12, Y4; VFMADD231PS Y14, Y13, Y5 \
	VFMADD231PS Y15, Y12, Y6; VFMADD231PS Y15, Y13, Y7 \
	BCAST(R11, Y14) \
	BCAST(R12, Y15) \
	VFMADD231PS Y14, Y12, Y8; VFMADD231PS Y14, Y13, Y9 \
	VFMADD231PS Y15, Y12, Y10; VFMADD231PS Y15, Y13, Y11 \
	ADDQ $64, SI \
	ADDQ $2, BX \
	DECQ CX \
	JNZ  loop \
out: \
	MOVQ tile+32(FP), AX \
	VMOVUPS Y0, 0(AX); VMOVUPS Y1, 32(AX) \
	VMOVUPS Y2, 64(AX); VMOVUPS Y3, 96(AX) \
	VMOVUPS Y4, 128(AX); VMOVUPS Y5, 160(AX) \
	VMOVUPS Y6, 192(AX); VMOVUPS Y7, 224(AX) \
	VMOVUPS Y8, 256(AX); VMOVUPS Y9, 288(AX) \
	VMOVUPS Y10, 320(AX); VMOVUPS Y11, 352(AX) \
	MOVQ y+40(FP), DX \
	MOVQ ldy+48(FP), R8 \
	MOVQ $16, R9 \
	MOVQ add+64(FP), R10 \
	MOVQ nw+56(FP), R11 \
	TILESCATTER(64) \
	VZEROUPPER \
	RET

// func gemmBcastF32Y(xt *float32, w unsafe.Pointer, ldw int, kc int, tile *float32, y *float32, ldy int, nw int, add int)
TEXT ·gemmBcastF32Y(SB), NOSPLIT, $0-72
	YBMUL(YF32W)

// func gemmBcastBF16Y(xt *float32, w unsafe.Pointer, ldw int, kc int, tile *float32, y *float32, ldy int, nw int, add int)
TEXT ·gemmBcastBF16Y(SB), NOSPLIT, $0-72
	YBMUL(YBF16W)

// func transposeY(dst *float32, ldd int, src *float32, lds int, k8 int)
//
// Transposes eight rows of 8*k8 f32 at src (stride lds bytes) into 8*k8
// rows of eight at dst (stride ldd bytes): dst row k holds element k of
// each source row, eight by eight (TRANSPOSE8).
TEXT ·transposeY(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), CX
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), AX
	MOVQ k8+32(FP), DX
	LEAQ (AX)(AX*2), BX
	LEAQ (SI)(AX*4), R8
	LEAQ (CX)(CX*2), R12
	LEAQ (DI)(CX*4), R9
	TESTQ DX, DX
	JZ   tdone
tloop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(AX*1), Y1
	VMOVUPS (SI)(AX*2), Y2
	VMOVUPS (SI)(BX*1), Y3
	VMOVUPS (R8), Y4
	VMOVUPS (R8)(AX*1), Y5
	VMOVUPS (R8)(AX*2), Y6
	VMOVUPS (R8)(BX*1), Y7
	TRANSPOSE8
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(CX*1)
	VMOVUPS Y10, (DI)(CX*2)
	VMOVUPS Y11, (DI)(R12*1)
	VMOVUPS Y12, (R9)
	VMOVUPS Y13, (R9)(CX*1)
	VMOVUPS Y14, (R9)(CX*2)
	VMOVUPS Y15, (R9)(R12*1)
	ADDQ $32, SI
	ADDQ $32, R8
	LEAQ (DI)(CX*8), DI
	LEAQ (R9)(CX*8), R9
	DECQ DX
	JNZ  tloop
tdone:
	VZEROUPPER
	RET
