// AVX-512 kernels for one activation row against weight rows (decode): the
// avx512 level's matrix-vector products. Each routine walks nr consecutive
// weight rows, one after the other in address order, against one prepared
// activation row and writes nr outputs; the two-stream forms (Rows2z) walk
// two such runs at once, a row of each side by side. Within a run the
// weights are one sequential stream, which the hardware prefetchers follow
// best: kernels that read four adjacent rows side by side (sharing the
// activation work between them) were up to twice as fast from L2 but up
// to a third slower from DRAM, where decode's weights come from. Two
// distant runs are two long sequential streams, and one core reads about
// a sixth more from DRAM through two than through one. The activation
// stays in L1 and is read from memory operands; where an f32 activation
// is too long for that, the float kernels read four distant runs at once
// (FROWS4).
//
// Integer block sums are exact, as the Go code computes them. VPDPBUSD
// multiplies unsigned by signed bytes: Q8_0 weights are offset by 128 (XOR
// 0x80) and Q4_0's nibbles are used as they are, and 128 (or 8) times each
// four activation quants' sum is subtracted. The K-quants' unsigned quants
// meet the activations in VPMADDUBSW (no saturation: at most 2*63*127) and
// their sub-block scales in VPDPWSSD.
//
// Only Z0-Z15 are used (VZEROUPPER clears their upper halves), and K1-K5,
// except by the multi-stream float kernels and the Q8_0, Q4_0, MXFP4, Q4_K
// and Q5_K ones, which also use Z16 and up and zero them before they
// return.

#include "textflag.h"
#include "zero_amd64.h"

#include "decode512_amd64.h"

// NIB2ROWS(ACTS, QUAD, ONE, bb) is the body of the Q4_0 and MXFP4 kernels
// (blocks of bb bytes; see q4_0Rows2z), for nr row pairs at BX and R8 into
// ya (DX) and yb, with their arguments as q4_0Rows2z's: for each pair,
// every group of four blocks by ACTS (the activation's part, shared) and
// QUAD for each row, then the blocks after them by ONE for each row
// (activation quants at SI), the rows' sums to ya and yb. Registers are
// short: yb and nr stay in the argument frame, and SI is set only for the
// last blocks. Uses R10, R11, DI, CX, SI, Z0, Z1 and, by QUAD, Z8-Z11 and
// Z16-Z19. (Here, before the first routine, since go vet checks a
// macro's argument offsets against the routine before it.)
#define NIB2ROWS(ACTS, QUAD, ONE, bb) \
	CMPQ nr+72(FP), $0 \
	JEQ end \
row: \
	MOVQ qx+32(FP), R10 \
	MOVQ ox+40(FP), R11 \
	MOVQ ad+48(FP), DI \
	MOVQ nb+16(FP), CX \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	SHRQ $2, CX \
	JZ tail \
quad: \
	PF2(BX, R12) \
	PF2(R8, R12) \
	ACTS \
	QUAD(BX, Z0, Z8, X8, Z9, Z10, Z11, X11, Y11) \
	QUAD(R8, Z1, Z16, X16, Z17, Z18, Z19, X19, Y19) \
	ADDQ $(4*bb), BX \
	ADDQ $(4*bb), R8 \
	ADDQ $128, R10 \
	ADDQ $64, R11 \
	ADDQ $16, DI \
	DECQ CX \
	JNZ quad \
tail: \
	MOVQ nb+16(FP), CX \
	MOVQ CX, SI \
	SHRQ $2, SI \
	SHLQ $7, SI \
	ADDQ aq+24(FP), SI \
	ANDQ $3, CX \
	JZ sum \
one: \
	ONE(BX, Z0) \
	ONE(R8, Z1) \
	ADDQ $bb, BX \
	ADDQ $bb, R8 \
	ADDQ $32, SI \
	ADDQ $4, DI \
	DECQ CX \
	JNZ one \
sum: \
	HSUM0 \
	VMOVSS X0, (DX) \
	ADDQ $4, DX \
	VMOVAPS Z1, Z0 \
	HSUM0 \
	MOVQ yb+64(FP), AX \
	VMOVSS X0, (AX) \
	ADDQ $4, yb+64(FP) \
	DECQ nr+72(FP) \
	JNZ row \
end:

// ---- F32, F16 and BF16 ---------------------------------------------------

// Sixteen weights at off(DI) as f32 in z; the masked forms load the first
// k mod 16 (K1) with the rest zero.
#define LDF32(off, z) VMOVUPS off(DI), z
#define LDF16(off, z) VCVTPH2PS off(DI), z
#define LDBF16(off, z) VPMOVZXWD off(DI), z; VPSLLD $16, z, z
#define LDMF32(z) VMOVUPS.Z (DI), K1, z
#define LDMF16(z) VCVTPH2PS.Z (DI), K1, z
#define LDMBF16(z) VPMOVZXWD.Z (DI), K1, z; VPSLLD $16, z, z

// FROWS(LD, LDM, ws) is the body of a float kernel for weights of ws bytes:
// 64 elements a step in four accumulators, then 16, then the last k mod 16
// under a mask. PF prefetches the 64·ws bytes of a step.
#define FROWS(LD, LDM, ws, PF) \
	MOVQ ·decodeAheadFloat(SB), R9 \
	MOVQ ·decodeNTAFloat(SB), R14 \
	MOVQ w+8(FP), DI \
	MOVQ y+24(FP), DX \
	MOVQ nr+32(FP), R8 \
	MOVQ k+16(FP), CX \
	ANDQ $15, CX \
	MOVL $1, AX \
	SHLL CX, AX \
	DECL AX \
	KMOVW AX, K1 \
	TESTQ R8, R8 \
	JZ end \
row: \
	MOVQ x+0(FP), SI \
	MOVQ k+16(FP), CX \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	SHRQ $6, CX \
	JZ by16 \
by64: \
	PF(DI) \
	LD(0, Z4) \
	LD(16*ws, Z5) \
	LD(32*ws, Z6) \
	LD(48*ws, Z7) \
	VFMADD231PS (SI), Z4, Z0 \
	VFMADD231PS 64(SI), Z5, Z1 \
	VFMADD231PS 128(SI), Z6, Z2 \
	VFMADD231PS 192(SI), Z7, Z3 \
	ADDQ $(64*ws), DI \
	ADDQ $256, SI \
	DECQ CX \
	JNZ by64 \
by16: \
	MOVQ k+16(FP), CX \
	SHRQ $4, CX \
	ANDQ $3, CX \
	JZ last \
step16: \
	LD(0, Z4) \
	VFMADD231PS (SI), Z4, Z0 \
	ADDQ $(16*ws), DI \
	ADDQ $64, SI \
	DECQ CX \
	JNZ step16 \
last: \
	MOVQ k+16(FP), CX \
	ANDQ $15, CX \
	JZ sum \
	VMOVUPS.Z (SI), K1, Z5 \
	LDM(Z4) \
	VFMADD231PS Z5, Z4, Z1 \
	LEAQ (DI)(CX*ws), DI \
sum: \
	VADDPS Z1, Z0, Z0 \
	VADDPS Z3, Z2, Z2 \
	VADDPS Z2, Z0, Z0 \
	HSUM0 \
	VMOVSS X0, (DX) \
	ADDQ $4, DX \
	DECQ R8 \
	JNZ row \
end: \
	VZEROUPPER \
	RET

// The two-stream float kernels (see q8_0Rows2z): FROWS2 is FROWS for nr
// rows at wa and nr rows at wb at once, into ya and yb, each row's sum
// taken exactly as FROWS takes it. Row A sums in Z0-Z3 and row B in
// Z8-Z11; the activation is loaded once into Z12-Z15 for both.
#define LD2F32(b, off, z) VMOVUPS off(b), z
#define LD2F16(b, off, z) VCVTPH2PS off(b), z
#define LD2BF16(b, off, z) VPMOVZXWD off(b), z; VPSLLD $16, z, z
#define LDM2F32(b, z) VMOVUPS.Z (b), K1, z
#define LDM2F16(b, z) VCVTPH2PS.Z (b), K1, z
#define LDM2BF16(b, z) VPMOVZXWD.Z (b), K1, z; VPSLLD $16, z, z

#define FROWS2(LD, LDM, ws, PF) \
	MOVQ ·decodeAheadFloat(SB), R9 \
	MOVQ ·decodeNTAFloat(SB), R14 \
	MOVQ wa+8(FP), DI \
	MOVQ wb+16(FP), R12 \
	MOVQ ya+32(FP), DX \
	MOVQ yb+40(FP), R13 \
	MOVQ nr+48(FP), R8 \
	MOVQ k+24(FP), CX \
	ANDQ $15, CX \
	MOVL $1, AX \
	SHLL CX, AX \
	DECL AX \
	KMOVW AX, K1 \
	TESTQ R8, R8 \
	JZ end \
row: \
	MOVQ x+0(FP), SI \
	MOVQ k+24(FP), CX \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	SHRQ $6, CX \
	JZ by16 \
by64: \
	PF(DI) \
	PF(R12) \
	VMOVUPS (SI), Z12 \
	VMOVUPS 64(SI), Z13 \
	VMOVUPS 128(SI), Z14 \
	VMOVUPS 192(SI), Z15 \
	LD(DI, 0, Z4) \
	LD(DI, 16*ws, Z5) \
	LD(DI, 32*ws, Z6) \
	LD(DI, 48*ws, Z7) \
	VFMADD231PS Z12, Z4, Z0 \
	VFMADD231PS Z13, Z5, Z1 \
	VFMADD231PS Z14, Z6, Z2 \
	VFMADD231PS Z15, Z7, Z3 \
	LD(R12, 0, Z4) \
	LD(R12, 16*ws, Z5) \
	LD(R12, 32*ws, Z6) \
	LD(R12, 48*ws, Z7) \
	VFMADD231PS Z12, Z4, Z8 \
	VFMADD231PS Z13, Z5, Z9 \
	VFMADD231PS Z14, Z6, Z10 \
	VFMADD231PS Z15, Z7, Z11 \
	ADDQ $(64*ws), DI \
	ADDQ $(64*ws), R12 \
	ADDQ $256, SI \
	DECQ CX \
	JNZ by64 \
by16: \
	MOVQ k+24(FP), CX \
	SHRQ $4, CX \
	ANDQ $3, CX \
	JZ last \
step16: \
	VMOVUPS (SI), Z12 \
	LD(DI, 0, Z4) \
	LD(R12, 0, Z5) \
	VFMADD231PS Z12, Z4, Z0 \
	VFMADD231PS Z12, Z5, Z8 \
	ADDQ $(16*ws), DI \
	ADDQ $(16*ws), R12 \
	ADDQ $64, SI \
	DECQ CX \
	JNZ step16 \
last: \
	MOVQ k+24(FP), CX \
	ANDQ $15, CX \
	JZ sum \
	VMOVUPS.Z (SI), K1, Z12 \
	LDM(DI, Z4) \
	LDM(R12, Z5) \
	VFMADD231PS Z12, Z4, Z1 \
	VFMADD231PS Z12, Z5, Z9 \
	LEAQ (DI)(CX*ws), DI \
	LEAQ (R12)(CX*ws), R12 \
sum: \
	VADDPS Z1, Z0, Z0 \
	VADDPS Z3, Z2, Z2 \
	VADDPS Z2, Z0, Z0 \
	HSUM0 \
	VMOVSS X0, (DX) \
	VADDPS Z9, Z8, Z0 \
	VADDPS Z11, Z10, Z2 \
	VADDPS Z2, Z0, Z0 \
	HSUM0 \
	VMOVSS X0, (R13) \
	ADDQ $4, DX \
	ADDQ $4, R13 \
	DECQ R8 \
	JNZ row \
end: \
	VZEROUPPER \
	RET

// The four-stream float kernels, for rows whose f32 activation fills a
// large part of L1 (see fourStreamsK): FROWS4 is FROWS for four runs of nr rows, the
// quarters of 4·nr consecutive rows at w, into the quarters of y, each
// row's sum taken exactly as FROWS takes it, in Z0-Z3, Z8-Z11, Z16-Z19
// and Z20-Z23 (zeroed at the end, as the other kernels that use the upper
// sixteen registers leave them). Two
// streams reload such an activation from L2 for every pair of rows, a
// line of it for each line of weights; four halve those reloads.
#define FROWS4(LD, LDM, ws, PF) \
	MOVQ ·decodeAheadFloat(SB), R9 \
	MOVQ ·decodeNTAFloat(SB), R14 \
	MOVQ w+8(FP), DI \
	MOVQ y+24(FP), DX \
	MOVQ nr+32(FP), R8 \
	MOVQ k+16(FP), AX \
	IMULQ R8, AX \
	LEAQ (DI)(AX*ws), R12 \
	LEAQ (R12)(AX*ws), BX \
	LEAQ (BX)(AX*ws), R11 \
	MOVQ R8, R13 \
	SHLQ $2, R13 \
	LEAQ (DX)(R13*2), R10 \
	MOVQ k+16(FP), CX \
	ANDQ $15, CX \
	MOVL $1, AX \
	SHLL CX, AX \
	DECL AX \
	KMOVW AX, K1 \
	TESTQ R8, R8 \
	JZ end \
row: \
	MOVQ x+0(FP), SI \
	MOVQ k+16(FP), CX \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	ZERO16TO23 \
	SHRQ $6, CX \
	JZ by16 \
by64: \
	PF(DI) \
	PF(R12) \
	PF(BX) \
	PF(R11) \
	VMOVUPS (SI), Z12 \
	VMOVUPS 64(SI), Z13 \
	VMOVUPS 128(SI), Z14 \
	VMOVUPS 192(SI), Z15 \
	FSTEP4(LD, DI, ws, Z0, Z1, Z2, Z3) \
	FSTEP4(LD, R12, ws, Z8, Z9, Z10, Z11) \
	FSTEP4(LD, BX, ws, Z16, Z17, Z18, Z19) \
	FSTEP4(LD, R11, ws, Z20, Z21, Z22, Z23) \
	ADDQ $(64*ws), DI \
	ADDQ $(64*ws), R12 \
	ADDQ $(64*ws), BX \
	ADDQ $(64*ws), R11 \
	ADDQ $256, SI \
	DECQ CX \
	JNZ by64 \
by16: \
	MOVQ k+16(FP), CX \
	SHRQ $4, CX \
	ANDQ $3, CX \
	JZ last \
step16: \
	VMOVUPS (SI), Z12 \
	LD(DI, 0, Z4) \
	LD(R12, 0, Z5) \
	LD(BX, 0, Z6) \
	LD(R11, 0, Z7) \
	VFMADD231PS Z12, Z4, Z0 \
	VFMADD231PS Z12, Z5, Z8 \
	VFMADD231PS Z12, Z6, Z16 \
	VFMADD231PS Z12, Z7, Z20 \
	ADDQ $(16*ws), DI \
	ADDQ $(16*ws), R12 \
	ADDQ $(16*ws), BX \
	ADDQ $(16*ws), R11 \
	ADDQ $64, SI \
	DECQ CX \
	JNZ step16 \
last: \
	MOVQ k+16(FP), CX \
	ANDQ $15, CX \
	JZ sum \
	VMOVUPS.Z (SI), K1, Z12 \
	LDM(DI, Z4) \
	LDM(R12, Z5) \
	LDM(BX, Z6) \
	LDM(R11, Z7) \
	VFMADD231PS Z12, Z4, Z1 \
	VFMADD231PS Z12, Z5, Z9 \
	VFMADD231PS Z12, Z6, Z17 \
	VFMADD231PS Z12, Z7, Z21 \
	LEAQ (DI)(CX*ws), DI \
	LEAQ (R12)(CX*ws), R12 \
	LEAQ (BX)(CX*ws), BX \
	LEAQ (R11)(CX*ws), R11 \
sum: \
	FSUM4(Z0, Z1, Z2, Z3) \
	VMOVSS X0, (DX) \
	FSUM4(Z8, Z9, Z10, Z11) \
	VMOVSS X0, (DX)(R13*1) \
	FSUM4(Z16, Z17, Z18, Z19) \
	VMOVSS X0, (R10) \
	FSUM4(Z20, Z21, Z22, Z23) \
	VMOVSS X0, (R10)(R13*1) \
	ADDQ $4, DX \
	ADDQ $4, R10 \
	DECQ R8 \
	JNZ row \
end: \
	ZERO16TO23 \
	VZEROUPPER \
	RET

// The six-stream float kernels, for rows whose f32 activation fills L1
// (see sixStreamsK): FROWS6 is FROWS4 for six runs of nr rows, the sixths
// of 6·nr consecutive rows at w, into the sixths of y, each row's sum
// taken exactly as FROWS takes it, in Z0-Z3, Z8-Z11, Z16-Z19, Z20-Z23,
// Z24-Z27 and Z28-Z31 (zeroed at the end). Each activation load serves
// six rows, a third fewer reloads from L2 than four streams. They ask
// for their lines by PREFETCHNTA only (PF), as on AMD, the one vendor
// they run on: the register that holds the PREFETCHT0 distance elsewhere
// holds the sixth run's weights.
#define FROWS6(LD, LDM, ws, PF) \
	MOVQ ·decodeNTAFloat(SB), R14 \
	MOVQ k+16(FP), CX \
	ANDQ $15, CX \
	MOVL $1, R9 \
	SHLL CX, R9 \
	DECL R9 \
	KMOVW R9, K1 \
	MOVQ w+8(FP), DI \
	MOVQ y+24(FP), DX \
	MOVQ nr+32(FP), R8 \
	MOVQ k+16(FP), CX \
	IMULQ R8, CX \
	LEAQ (DI)(CX*ws), R12 \
	LEAQ (R12)(CX*ws), BX \
	LEAQ (BX)(CX*ws), R11 \
	LEAQ (R11)(CX*ws), AX \
	LEAQ (AX)(CX*ws), R9 \
	MOVQ R8, R13 \
	SHLQ $2, R13 \
	LEAQ (R13)(R13*2), R10 \
	ADDQ DX, R10 \
	TESTQ R8, R8 \
	JZ end \
row: \
	MOVQ x+0(FP), SI \
	MOVQ k+16(FP), CX \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	ZERO16TO31 \
	SHRQ $6, CX \
	JZ by16 \
by64: \
	PF(DI) \
	PF(R12) \
	PF(BX) \
	PF(R11) \
	PF(AX) \
	PF(R9) \
	VMOVUPS (SI), Z12 \
	VMOVUPS 64(SI), Z13 \
	VMOVUPS 128(SI), Z14 \
	VMOVUPS 192(SI), Z15 \
	FSTEP4(LD, DI, ws, Z0, Z1, Z2, Z3) \
	FSTEP4(LD, R12, ws, Z8, Z9, Z10, Z11) \
	FSTEP4(LD, BX, ws, Z16, Z17, Z18, Z19) \
	FSTEP4(LD, R11, ws, Z20, Z21, Z22, Z23) \
	FSTEP4(LD, AX, ws, Z24, Z25, Z26, Z27) \
	FSTEP4(LD, R9, ws, Z28, Z29, Z30, Z31) \
	ADDQ $(64*ws), DI \
	ADDQ $(64*ws), R12 \
	ADDQ $(64*ws), BX \
	ADDQ $(64*ws), R11 \
	ADDQ $(64*ws), AX \
	ADDQ $(64*ws), R9 \
	ADDQ $256, SI \
	DECQ CX \
	JNZ by64 \
by16: \
	MOVQ k+16(FP), CX \
	SHRQ $4, CX \
	ANDQ $3, CX \
	JZ last \
step16: \
	VMOVUPS (SI), Z12 \
	LD(DI, 0, Z4) \
	LD(R12, 0, Z5) \
	LD(BX, 0, Z6) \
	LD(R11, 0, Z7) \
	VFMADD231PS Z12, Z4, Z0 \
	VFMADD231PS Z12, Z5, Z8 \
	VFMADD231PS Z12, Z6, Z16 \
	VFMADD231PS Z12, Z7, Z20 \
	LD(AX, 0, Z4) \
	LD(R9, 0, Z5) \
	VFMADD231PS Z12, Z4, Z24 \
	VFMADD231PS Z12, Z5, Z28 \
	ADDQ $(16*ws), DI \
	ADDQ $(16*ws), R12 \
	ADDQ $(16*ws), BX \
	ADDQ $(16*ws), R11 \
	ADDQ $(16*ws), AX \
	ADDQ $(16*ws), R9 \
	ADDQ $64, SI \
	DECQ CX \
	JNZ step16 \
last: \
	MOVQ k+16(FP), CX \
	ANDQ $15, CX \
	JZ sum \
	VMOVUPS.Z (SI), K1, Z12 \
	LDM(DI, Z4) \
	LDM(R12, Z5) \
	LDM(BX, Z6) \
	LDM(R11, Z7) \
	VFMADD231PS Z12, Z4, Z1 \
	VFMADD231PS Z12, Z5, Z9 \
	VFMADD231PS Z12, Z6, Z17 \
	VFMADD231PS Z12, Z7, Z21 \
	LDM(AX, Z4) \
	LDM(R9, Z5) \
	VFMADD231PS Z12, Z4, Z25 \
	VFMADD231PS Z12, Z5, Z29 \
	LEAQ (DI)(CX*ws), DI \
	LEAQ (R12)(CX*ws), R12 \
	LEAQ (BX)(CX*ws), BX \
	LEAQ (R11)(CX*ws), R11 \
	LEAQ (AX)(CX*ws), AX \
	LEAQ (R9)(CX*ws), R9 \
sum: \
	FSUM4(Z0, Z1, Z2, Z3) \
	VMOVSS X0, (DX) \
	FSUM4(Z8, Z9, Z10, Z11) \
	VMOVSS X0, (DX)(R13*1) \
	FSUM4(Z16, Z17, Z18, Z19) \
	VMOVSS X0, (DX)(R13*2) \
	FSUM4(Z20, Z21, Z22, Z23) \
	VMOVSS X0, (R10) \
	FSUM4(Z24, Z25, Z26, Z27) \
	VMOVSS X0, (R10)(R13*1) \
	FSUM4(Z28, Z29, Z30, Z31) \
	VMOVSS X0, (R10)(R13*2) \
	ADDQ $4, DX \
	ADDQ $4, R10 \
	DECQ R8 \
	JNZ row \
end: \
	ZERO16TO31 \
	VZEROUPPER \
	RET

// FSTEP4 multiplies 64 weights at b (four registers' worth) by the
// activation in Z12-Z15 into a0-a3, using Z4-Z7.
#define FSTEP4(LD, b, ws, a0, a1, a2, a3) \
	LD(b, 0, Z4) \
	LD(b, 16*ws, Z5) \
	LD(b, 32*ws, Z6) \
	LD(b, 48*ws, Z7) \
	VFMADD231PS Z12, Z4, a0 \
	VFMADD231PS Z13, Z5, a1 \
	VFMADD231PS Z14, Z6, a2 \
	VFMADD231PS Z15, Z7, a3

// FSUM4 leaves in X0 the sum of a row's four accumulators, as FROWS adds
// them: (a0 + a1) + (a2 + a3), then the lanes.
#define FSUM4(a0, a1, a2, a3) \
	VADDPS a1, a0, Z0 \
	VADDPS a3, a2, Z2 \
	VADDPS Z2, Z0, Z0 \
	HSUM0

// func f32Rows4z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)
TEXT ·f32Rows4z(SB), NOSPLIT, $0-40
	FROWS4(LD2F32, LDM2F32, 4, PFF4)

// func f16Rows4z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)
TEXT ·f16Rows4z(SB), NOSPLIT, $0-40
	FROWS4(LD2F16, LDM2F16, 2, PFF2)

// func bf16Rows4z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)
TEXT ·bf16Rows4z(SB), NOSPLIT, $0-40
	FROWS4(LD2BF16, LDM2BF16, 2, PFF2)

// func f32Rows6z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)
TEXT ·f32Rows6z(SB), NOSPLIT, $0-40
	FROWS6(LD2F32, LDM2F32, 4, PFN4)

// func f16Rows6z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)
TEXT ·f16Rows6z(SB), NOSPLIT, $0-40
	FROWS6(LD2F16, LDM2F16, 2, PFN2)

// func bf16Rows6z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)
TEXT ·bf16Rows6z(SB), NOSPLIT, $0-40
	FROWS6(LD2BF16, LDM2BF16, 2, PFN2)

// func f32Rowsz(x *float32, w unsafe.Pointer, k int, y *float32, nr int)
TEXT ·f32Rowsz(SB), NOSPLIT, $0-40
	FROWS(LDF32, LDMF32, 4, PFF4)

// func f16Rowsz(x *float32, w unsafe.Pointer, k int, y *float32, nr int)
TEXT ·f16Rowsz(SB), NOSPLIT, $0-40
	FROWS(LDF16, LDMF16, 2, PFF2)

// func bf16Rowsz(x *float32, w unsafe.Pointer, k int, y *float32, nr int)
TEXT ·bf16Rowsz(SB), NOSPLIT, $0-40
	FROWS(LDBF16, LDMBF16, 2, PFF2)

// func f32Rows2z(x *float32, wa, wb unsafe.Pointer, k int, ya, yb *float32, nr int)
TEXT ·f32Rows2z(SB), NOSPLIT, $0-56
	FROWS2(LD2F32, LDM2F32, 4, PFF4)

// func f16Rows2z(x *float32, wa, wb unsafe.Pointer, k int, ya, yb *float32, nr int)
TEXT ·f16Rows2z(SB), NOSPLIT, $0-56
	FROWS2(LD2F16, LDM2F16, 2, PFF2)

// func bf16Rows2z(x *float32, wa, wb unsafe.Pointer, k int, ya, yb *float32, nr int)
TEXT ·bf16Rows2z(SB), NOSPLIT, $0-56
	FROWS2(LD2BF16, LDM2BF16, 2, PFF2)

// ---- Q8_0 ----------------------------------------------------------------

// Four blocks an iteration, a pair to a register: lanes 0-7 take the
// first block of the pair, 8-15 the second. The first lane of each block
// starts from the activation's offset for the block (o: -128 times its
// quants' sum, which the 0x80 added to the weights puts in), the others
// from zero: the offsets are read as one int32 a block, a quarter of a
// row's quant bytes, so that a long row's activation stays in L1 beside
// the weight rows streaming through it. The four
// weight scales are gathered as four words (Q8SCALES), converted and
// multiplied by the activation's block scales as four floats, and only
// then spread over the lanes.

// VPERMPS indices: element 0 to lanes 0-7 and 1 to 8-15, then 2 and 3
// (decode32_amd64.s's kernels read them too).
DATA ·q8lane+0(SB)/8, $0
DATA ·q8lane+8(SB)/8, $0
DATA ·q8lane+16(SB)/8, $0
DATA ·q8lane+24(SB)/8, $0
DATA ·q8lane+32(SB)/8, $0x0000000100000001
DATA ·q8lane+40(SB)/8, $0x0000000100000001
DATA ·q8lane+48(SB)/8, $0x0000000100000001
DATA ·q8lane+56(SB)/8, $0x0000000100000001
DATA ·q8lane+64(SB)/8, $0x0000000200000002
DATA ·q8lane+72(SB)/8, $0x0000000200000002
DATA ·q8lane+80(SB)/8, $0x0000000200000002
DATA ·q8lane+88(SB)/8, $0x0000000200000002
DATA ·q8lane+96(SB)/8, $0x0000000300000003
DATA ·q8lane+104(SB)/8, $0x0000000300000003
DATA ·q8lane+112(SB)/8, $0x0000000300000003
DATA ·q8lane+120(SB)/8, $0x0000000300000003
GLOBL ·q8lane(SB), RODATA|NOPTR, $128

// Q8CONSTS sets what the Q8_0 decode kernels keep for every row: Z7 the
// 0x80 bytes, K4 lanes 0 and 9, K2 the low 32 bytes, Z13 and Z14 the lane
// indices (q8lane); AX is scratch.
#define Q8CONSTS \
	MOVL $0x80808080, AX \
	VPBROADCASTD AX, Z7 \
	MOVL $0x0201, AX \
	KMOVW AX, K4 \
	MOVL $0xffffffff, AX \
	KMOVQ AX, K2 \
	VMOVDQU64 ·q8lane(SB), Z13 \
	VMOVDQU64 ·q8lane+64(SB), Z14

// Q8ACTS loads what a quad of the multi-stream Q8_0 kernels shares between
// its rows: the four blocks' activation offsets (Z16, Z17, lanes 0 and 9
// of each pair), quants (Z18, Z19) and scales (X20).
#define Q8ACTS \
	VBROADCASTI32X2.Z (DI)(R10*1), K4, Z16 \
	VBROADCASTI32X2.Z 8(DI)(R10*1), K4, Z17 \
	VMOVDQU64 (SI)(R11*1), Z18 \
	VMOVDQU64 64(SI)(R11*1), Z19 \
	VMOVUPS (DI), X20

// Q8SCALES(base, x) leaves in x the f16 scales of the four blocks at
// base (bytes 0, 34, 68 and 102) as four words, gathered through AX by
// scalar loads: a two-source word permute of the quad's first 128 bytes
// (VPERMT2W) did the same, and on the Zen 5 two threads read Q8_0 rows
// from L3 at 97-106 GB/s that way and 112-130 this way
// (BenchmarkMatVec, three rounds alternating binaries).
#define Q8SCALES(base, x) \
	MOVWLZX 102(base), AX \
	SHLQ $16, AX \
	MOVW 68(base), AX \
	SHLQ $16, AX \
	MOVW 34(base), AX \
	SHLQ $16, AX \
	MOVW (base), AX \
	VMOVQ AX, x

// Q8SUM leaves in zi the lane sums of the block pair at wo(BX) against
// the activation quants at byte ao of SI (indexed by R11) and the pair's
// block offsets at byte oo of the offsets (R10 bytes past the block
// scales at DI; K4 selects lanes 0 and 9 of their broadcast). Z7 holds
// 0x80 bytes; zw (yw) is scratch.
#define Q8SUM(wo, ao, oo, zw, yw, zi) \
	VMOVDQU (wo+2)(BX), yw \
	VINSERTI64X4 $1, (wo+36)(BX), zw, zw \
	VPXORD Z7, zw, zw \
	VBROADCASTI32X2.Z oo(DI)(R10*1), K4, zi \
	VPDPBUSD ao(SI)(R11*1), zw, zi \
	VCVTDQ2PS zi, zi

// Q8QUAD adds the four blocks at (BX) to Z0 and Z1 (block scales at
// (DI)). Z13 and Z14 hold the lane indices; AX is scratch.
#define Q8QUAD \
	Q8SCALES(BX, X4) \
	VCVTPH2PS X4, X4 \
	VMULPS (DI), X4, X4 \
	Q8SUM(0, 0, 0, Z8, Y8, Z9) \
	VPERMPS Z4, Z13, Z5 \
	VFMADD231PS Z9, Z5, Z0 \
	Q8SUM(68, 64, 8, Z2, Y2, Z3) \
	VPERMPS Z4, Z14, Z6 \
	VFMADD231PS Z3, Z6, Z1

// Q8ONE adds the single block at (BX) to Z1, in lanes 0-7 (K2 = the low
// 32 bytes; the block's offset starts lane 0, and the zero upper half
// adds nothing).
#define Q8ONE \
	VMOVDQU8.Z 2(BX), K2, Z2 \
	VMOVDQU8.Z (SI)(R11*1), K2, Z5 \
	VPXORD Z7, Z2, Z2 \
	VMOVD (DI)(R10*1), X3 \
	VPDPBUSD Z5, Z2, Z3 \
	VCVTDQ2PS Z3, Z3 \
	VPBROADCASTW (BX), Y4 \
	VCVTPH2PS Y4, Z4 \
	VMULPS.BCST (DI), Z4, Z4 \
	VFMADD231PS Z3, Z4, Z1

// func q8_0Rowsz(w *byte, nb int, aq *int8, o *int32, ad *float32, y *float32, nr int)
TEXT ·q8_0Rowsz(SB), NOSPLIT, $0-56
	MOVQ ·decodeAheadQ8(SB), R12
	MOVQ w+0(FP), BX
	MOVQ aq+16(FP), SI
	MOVQ o+24(FP), R10
	MOVQ ad+32(FP), AX
	SUBQ AX, R10
	MOVQ y+40(FP), DX
	MOVQ nr+48(FP), R9
	Q8CONSTS
	TESTQ R9, R9
	JZ end

row:
	XORQ R11, R11
	MOVQ ad+32(FP), DI
	MOVQ nb+8(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	SHRQ $2, CX
	JZ tail

quad:
	PF3(BX, R12)
	Q8QUAD
	ADDQ $136, BX
	ADDQ $128, R11
	ADDQ $16, DI
	DECQ CX
	JNZ quad

tail:
	MOVQ nb+8(FP), CX
	ANDQ $3, CX
	JZ sum

one:
	Q8ONE
	ADDQ $34, BX
	ADDQ $32, R11
	ADDQ $4, DI
	DECQ CX
	JNZ one

sum:
	VADDPS Z1, Z0, Z0
	HSUM0
	VMOVSS X0, (DX)
	ADDQ $4, DX
	DECQ R9
	JNZ row

end:
	VZEROUPPER
	RET

// The two-stream kernel: q8_0Rows2z walks two runs of rows at once, row i
// of the first beside row i of the second, reading the activation once
// for both. One core streams about a sixth more from DRAM through two
// sequential streams than through one, and the two rows' sums are
// independent chains. Each row's sum is taken exactly as q8_0Rowsz takes
// it, so the outputs do not depend on which rows are paired.

// Q8SUM2(base, wo, oz, az, zw, yw, zi) is Q8SUM for weights at wo(base)
// with the block offsets in oz (lanes 0 and 9) and the activation quants
// in az.
#define Q8SUM2(base, wo, oz, az, zw, yw, zi) \
	VMOVDQU32 (wo+2)(base), yw \
	VINSERTI64X4 $1, (wo+36)(base), zw, zw \
	VPXORD Z7, zw, zw \
	VMOVDQA32 oz, zi \
	VPDPBUSD az, zw, zi \
	VCVTDQ2PS zi, zi

// Q8QUAD2(base, a0, a1, zsc, xsc, zl0, zl1, w0, y0, i0, w1, y1, i1) is
// Q8QUAD for the row at base with accumulators a0 and a1, the four
// activation block scales in X20 and its quants and offsets in Z16-Z19.
#define Q8QUAD2(base, a0, a1, zsc, xsc, zl0, zl1, w0, y0, i0, w1, y1, i1) \
	Q8SCALES(base, xsc) \
	VCVTPH2PS xsc, xsc \
	VMULPS X20, xsc, xsc \
	Q8SUM2(base, 0, Z16, Z18, w0, y0, i0) \
	VPERMPS zsc, Z13, zl0 \
	VFMADD231PS i0, zl0, a0 \
	Q8SUM2(base, 68, Z17, Z19, w1, y1, i1) \
	VPERMPS zsc, Z14, zl1 \
	VFMADD231PS i1, zl1, a1

// Q8ONE2(base, acc) is Q8ONE for the block at (base).
#define Q8ONE2(base, acc) \
	VMOVDQU8.Z 2(base), K2, Z8 \
	VMOVDQU8.Z (SI)(R11*1), K2, Z11 \
	VPXORD Z7, Z8, Z8 \
	VMOVD (DI)(R10*1), X9 \
	VPDPBUSD Z11, Z8, Z9 \
	VCVTDQ2PS Z9, Z9 \
	VPBROADCASTW (base), Y10 \
	VCVTPH2PS Y10, Z10 \
	VMULPS.BCST (DI), Z10, Z10 \
	VFMADD231PS Z9, Z10, acc

// func q8_0Rows2z(wa, wb *byte, nb int, aq *int8, o *int32, ad *float32, ya, yb *float32, nr int)
TEXT ·q8_0Rows2z(SB), NOSPLIT, $0-72
	MOVQ ·decodeAheadQ8(SB), R8
	MOVQ wa+0(FP), BX
	MOVQ wb+8(FP), R12
	MOVQ aq+24(FP), SI
	MOVQ o+32(FP), R10
	MOVQ ad+40(FP), AX
	SUBQ AX, R10
	MOVQ ya+48(FP), DX
	MOVQ yb+56(FP), R13
	MOVQ nr+64(FP), R9
	Q8CONSTS
	TESTQ R9, R9
	JZ end

row:
	XORQ R11, R11
	MOVQ ad+40(FP), DI
	MOVQ nb+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	SHRQ $2, CX
	JZ tail

quad:
	PF3(BX, R8)
	PF3(R12, R8)
	Q8ACTS
	Q8QUAD2(BX, Z0, Z1, Z4, X4, Z5, Z6, Z8, Y8, Z9, Z10, Y10, Z11)
	Q8QUAD2(R12, Z2, Z3, Z21, X21, Z22, Z23, Z24, Y24, Z25, Z26, Y26, Z27)
	ADDQ $136, BX
	ADDQ $136, R12
	ADDQ $128, R11
	ADDQ $16, DI
	DECQ CX
	JNZ quad

tail:
	MOVQ nb+16(FP), CX
	ANDQ $3, CX
	JZ sum

one:
	Q8ONE2(BX, Z1)
	Q8ONE2(R12, Z3)
	ADDQ $34, BX
	ADDQ $34, R12
	ADDQ $32, R11
	ADDQ $4, DI
	DECQ CX
	JNZ one

sum:
	VADDPS Z1, Z0, Z0
	HSUM0
	VMOVSS X0, (DX)
	VADDPS Z3, Z2, Z0
	HSUM0
	VMOVSS X0, (R13)
	ADDQ $4, DX
	ADDQ $4, R13
	DECQ R9
	JNZ row

end:
	ZERO16TO27
	VZEROUPPER
	RET

// The four-stream kernel: q8_0Rows4z walks four runs of nr rows at once,
// s bytes apart, row i of each beside the others, into y[i], y[nr+i],
// y[2nr+i] and y[3nr+i]. Each row's sum is taken exactly as q8_0Rowsz
// takes it. The second pair of rows reuses the first pair's scratch
// registers (renamed apart by the core).

// func q8_0Rows4z(w *byte, s, nb int, aq *int8, o *int32, ad *float32, y *float32, nr int)
TEXT ·q8_0Rows4z(SB), NOSPLIT, $0-64
	MOVQ ·decodeAheadQ8(SB), R8
	MOVQ w+0(FP), BX
	MOVQ s+8(FP), AX
	LEAQ (BX)(AX*1), R12
	LEAQ (R12)(AX*1), R13
	LEAQ (R13)(AX*1), R14
	MOVQ aq+24(FP), SI
	MOVQ o+32(FP), R10
	MOVQ ad+40(FP), AX
	SUBQ AX, R10
	MOVQ y+48(FP), DX
	MOVQ nr+56(FP), R9
	Q8CONSTS
	TESTQ R9, R9
	JZ end

row:
	XORQ R11, R11
	MOVQ ad+40(FP), DI
	MOVQ nb+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z12, Z12, Z12
	VPXORD Z30, Z30, Z30
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	SHRQ $2, CX
	JZ tail

quad:
	PF3(BX, R8)
	PF3(R12, R8)
	PF3(R13, R8)
	PF3(R14, R8)
	Q8ACTS
	Q8QUAD2(BX, Z0, Z1, Z4, X4, Z5, Z6, Z8, Y8, Z9, Z10, Y10, Z11)
	Q8QUAD2(R12, Z2, Z3, Z21, X21, Z22, Z23, Z24, Y24, Z25, Z26, Y26, Z27)
	Q8QUAD2(R13, Z12, Z30, Z4, X4, Z5, Z6, Z8, Y8, Z9, Z10, Y10, Z11)
	Q8QUAD2(R14, Z28, Z29, Z21, X21, Z22, Z23, Z24, Y24, Z25, Z26, Y26, Z27)
	ADDQ $136, BX
	ADDQ $136, R12
	ADDQ $136, R13
	ADDQ $136, R14
	ADDQ $128, R11
	ADDQ $16, DI
	DECQ CX
	JNZ quad

tail:
	MOVQ nb+16(FP), CX
	ANDQ $3, CX
	JZ sum

one:
	Q8ONE2(BX, Z1)
	Q8ONE2(R12, Z3)
	Q8ONE2(R13, Z30)
	Q8ONE2(R14, Z29)
	ADDQ $34, BX
	ADDQ $34, R12
	ADDQ $34, R13
	ADDQ $34, R14
	ADDQ $32, R11
	ADDQ $4, DI
	DECQ CX
	JNZ one

sum:
	MOVQ nr+56(FP), AX
	SHLQ $2, AX
	VADDPS Z1, Z0, Z0
	HSUM0
	VMOVSS X0, (DX)
	VADDPS Z3, Z2, Z0
	HSUM0
	VMOVSS X0, (DX)(AX*1)
	VADDPS Z30, Z12, Z0
	HSUM0
	VMOVSS X0, (DX)(AX*2)
	LEAQ (AX)(AX*2), AX
	VADDPS Z29, Z28, Z0
	HSUM0
	VMOVSS X0, (DX)(AX*1)
	ADDQ $4, DX
	DECQ R9
	JNZ row

end:
	ZERO16TO27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VZEROUPPER
	RET

// ---- Q4_0 ----------------------------------------------------------------

// Four blocks an iteration: block b's low and high nibbles go to 128-bit
// lane b of two registers, so one scale vector (lane b: block b's scales)
// serves both; the activations are shuffled to match. The kernel walks two
// runs of rows at once (see q8_0Rows2z), a row of each side by side: the
// activation's quants, offsets and scales are loaded once for both. On
// the Zen 5, against one row at a time, that made the product a third
// faster from L2 (BenchmarkMatVecL2, 30-33 to 40-43 GB/s) and from DRAM
// (BenchmarkMatVecCold, one thread, 21-24 to 28-30 GB/s). The four blocks'
// codes are gathered by 16-byte loads: one 64-byte load and a two-source
// byte permute (VPERMT2B of the bytes at w and w+8) were 5% faster from
// L2 but a fifth slower from DRAM, where each such load spans two cache
// lines.

// VPERMILPS indices: lane b of 64 bytes takes element b.
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

// Q40ACTS loads the activation's part of four blocks for both rows:
// quants in the order Acts.qx keeps them (R10) in Z4 and Z5, -8 times
// their sums of four (R11) in Z6, the block scales (DI) spread over the
// lanes in Z7.
#define Q40ACTS \
	VMOVDQU64 (R10), Z4 \
	VMOVDQU64 64(R10), Z5 \
	VMOVDQU64 (R11), Z6 \
	VBROADCASTF32X4 (DI), Z7 \
	VPERMILPS q40lane<>(SB), Z7, Z7

// Q40QUAD(b, acc, c, cx, h, s, f, fx, fy) adds the four blocks at (b) to acc,
// using c, h, s and f (fy the lower half of f): the offsets start the
// int32 sums, taking out the 8 the codes are stored above their values.
// Z3 holds the code indices, Z12 0x0f bytes, Z13 the scale indices.
#define Q40QUAD(b, acc, c, cx, h, s, f, fx, fy) \
	VMOVDQU32 2(b), cx \
	VINSERTI32X4 $1, 20(b), c, c \
	VINSERTI32X4 $2, 38(b), c, c \
	VINSERTI32X4 $3, 56(b), c, c \
	VPSRLW $4, c, h \
	VPANDD Z12, c, c \
	VPANDD Z12, h, h \
	VMOVDQA64 Z6, s \
	VPDPBUSD Z4, c, s \
	VPDPBUSD Z5, h, s \
	VCVTDQ2PS s, s \
	VPERMW (b), Z13, f \
	VCVTPH2PS fy, f \
	VMULPS Z7, f, f \
	VFMADD231PS s, f, acc

// Q40ONE(b, acc) adds the one block at (b) (activation quants at (SI)) to
// lane 0 of acc, with the 8 taken out by its own sums (Z14 holds 0x08
// bytes).
#define Q40ONE(b, acc) \
	VMOVDQU (SI), X4 \
	VMOVDQU 16(SI), X5 \
	VMOVDQU 2(b), X8 \
	VPSRLW $4, Z8, Z9 \
	VPANDD Z12, Z8, Z8 \
	VPANDD Z12, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPDPBUSD Z4, Z8, Z10 \
	VPDPBUSD Z5, Z9, Z10 \
	VPXORD Z6, Z6, Z6 \
	VPDPBUSD Z4, Z14, Z6 \
	VPDPBUSD Z5, Z14, Z6 \
	VPSUBD Z6, Z10, Z10 \
	VCVTDQ2PS Z10, Z10 \
	VPBROADCASTW (b), Y11 \
	VCVTPH2PS Y11, Z11 \
	VMULPS.BCST (DI), Z11, Z11 \
	VFMADD231PS Z10, Z11, acc

// func q4_0Rows2z(wa, wb *byte, nb int, aq, qx *int8, ox *int32, ad *float32, ya, yb *float32, nr int)
TEXT ·q4_0Rows2z(SB), NOSPLIT, $0-80
	MOVQ ·decodeAheadNib(SB), R12
	MOVQ wa+0(FP), BX
	MOVQ wb+8(FP), R8
	MOVQ ya+56(FP), DX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z12
	MOVL $0x08080808, AX
	VPBROADCASTD AX, Z14
	VMOVDQU64 q40scw<>(SB), Z13
	NIB2ROWS(Q40ACTS, Q40QUAD, Q40ONE, 18)
	ZERO16TO23
	VZEROUPPER
	RET

// ---- MXFP4 ----------------------------------------------------------------

// Four blocks of 17 bytes an iteration, one block a 128-bit lane (as
// Q4_0's): the low nibbles against the first halves of the activation
// blocks, the high ones against the second halves, which Prepare keeps in
// that order for MXFP4 (Acts.qx). VPSHUFB turns each 4-bit code into 128
// plus its doubled E2M1 value (116…140, unsigned for VPDPBUSD), and -128
// times the activations' sums of four, taken the same way (16 times
// Acts.ox), start the int32 sums: every sum is then exactly that of the weights'
// own values, where an offset added to one lane of a block (as the Q8_0
// kernels add the activation's) would be rounded with the other lanes' in
// floats and leave a zero row a little off zero. The four exponent bytes
// index e8m0Half (mxfp4.go) for the scales, which are multiplied by the
// activation's block scales as four floats before they are spread over
// the lanes. The blocks after the last four take their offsets from
// sums of their own. Two runs of rows at once, as Q4_0's: on the Zen 5,
// against one row at a time, a quarter faster from L2 (26 to 32-33 GB/s a
// thread) and from DRAM (one thread 22 to 25-27 GB/s), and a 1B Llama's
// decode 51-57 to 69 tokens/s on two threads.

// The VPSHUFB table is ·mx4Lanes (decode512_amd64.go).

// MXCODES(c, h) leaves in c and h the table values of the low and high
// nibbles of the bytes in c. Z12 holds 0x0f bytes, Z14 the table.
#define MXCODES(c, h) \
	VPSRLW $4, c, h \
	VPANDD Z12, c, c \
	VPANDD Z12, h, h \
	VPSHUFB c, Z14, c \
	VPSHUFB h, Z14, h

// MXHUGE ORs the exponent byte in AX plus 3 into R9, whose bit 8 is then
// set once a block is scaled by 2^125 or more (253 and up), whose values
// may decode past float32's range: those rows are computed again exactly
// (exactNonFinite).
#define MXHUGE \
	LEAL 3(AX), R14 \
	ORL R14, R9

// MXSCALES(b, x, z) leaves in lanes 4j to 4j+3 of z the scale of block j
// of the four at (b), e8m0Half of its exponent byte (R13 points at the
// table), times the activation's block scale at (DI); x is z's lower
// quarter. Z13 holds the lane indices.
#define MXSCALES(b, x, z) \
	MOVBLZX (b), AX \
	VMOVSS (R13)(AX*4), x \
	MXHUGE \
	MOVBLZX 17(b), AX \
	VINSERTPS $0x10, (R13)(AX*4), x, x \
	MXHUGE \
	MOVBLZX 34(b), AX \
	VINSERTPS $0x20, (R13)(AX*4), x, x \
	MXHUGE \
	MOVBLZX 51(b), AX \
	VINSERTPS $0x30, (R13)(AX*4), x, x \
	MXHUGE \
	VMULPS (DI), x, x \
	VPERMPS z, Z13, z

// MXONE(b, acc) adds the one block at (b) (activation quants at (SI),
// block scale at (DI)) to lane 0 of acc (its other lanes add nothing):
// -128 times its activation quants' sums of four (Z7 holds 0x80 bytes)
// start the sums.
#define MXONE(b, acc) \
	VMOVDQU (SI), X4 \
	VMOVDQU 16(SI), X5 \
	VMOVDQU 1(b), X8 \
	MXCODES(Z8, Z9) \
	VPXORD Z10, Z10, Z10 \
	VPDPBUSD Z4, Z8, Z10 \
	VPDPBUSD Z5, Z9, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPDPBUSD Z4, Z7, Z11 \
	VPDPBUSD Z5, Z7, Z11 \
	VPSUBD Z11, Z10, Z10 \
	VCVTDQ2PS Z10, Z10 \
	MOVBLZX (b), AX \
	VMOVSS (R13)(AX*4), X6 \
	MXHUGE \
	VMULSS (DI), X6, X6 \
	VBROADCASTSS X6, Z6 \
	VFMADD231PS Z10, Z6, acc

// MXACTS loads the activation's part of four blocks for both rows: quants
// in the kernel's order (R10) in Z4 and Z5, 16 times Acts.ox (R11) in Z6.
#define MXACTS \
	VMOVDQU64 (R10), Z4 \
	VMOVDQU64 64(R10), Z5 \
	VPSLLD $4, (R11), Z6

// MXQUAD(b, acc, c, cx, h, s, f, fx, fy) adds the four blocks at (b) to acc,
// using c, h, s and f (cx and fx their lower quarters). (On the Zen 4,
// from L2, two other ways to the scales were slower than MXSCALES' four
// scalar loads: the exponents spread over the lanes from one 64-byte load
// by VPSHUFB, and activation scales kept spread scaled by VSCALEFPS, 8%;
// four masked broadcasts from e8m0Half, 13%; and the four blocks' codes
// gathered from two 64-byte loads by one VPERMT2B no faster than the
// inserts here, and slower from DRAM, as Q4_0's.)
#define MXQUAD(b, acc, c, cx, h, s, f, fx, fy) \
	VMOVDQU32 1(b), cx \
	VINSERTI32X4 $1, 18(b), c, c \
	VINSERTI32X4 $2, 35(b), c, c \
	VINSERTI32X4 $3, 52(b), c, c \
	MXCODES(c, h) \
	VMOVDQA64 Z6, s \
	VPDPBUSD Z4, c, s \
	VPDPBUSD Z5, h, s \
	VCVTDQ2PS s, s \
	MXSCALES(b, fx, f) \
	VFMADD231PS s, f, acc

// func mxfp4Rows2z(wa, wb *byte, nb int, aq, qx *int8, ox *int32, ad *float32, ya, yb *float32, nr int) (eor int)
//
// Two runs of rows at once, as q4_0Rows2z.
TEXT ·mxfp4Rows2z(SB), NOSPLIT, $0-88
	MOVQ ·decodeAheadNib(SB), R12
	XORL R9, R9
	MOVQ wa+0(FP), BX
	MOVQ wb+8(FP), R8
	MOVQ ya+56(FP), DX
	LEAQ ·e8m0Half(SB), R13
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z12
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z7
	VMOVDQU64 ·mx4Lanes(SB), Z14
	VMOVDQU64 q40lane<>(SB), Z13
	NIB2ROWS(MXACTS, MXQUAD, MXONE, 17)
	MOVQ R9, eor+80(FP)
	ZERO16TO23
	VZEROUPPER
	RET

// ---- Q4_K and Q5_K -------------------------------------------------------

// Each 64 elements of a super-block are one register: its 32 quant bytes
// in both halves, the upper half shifted down a nibble, so that the
// activations are read as they are. The twelve scale bytes of four
// consecutive super-blocks are unpacked together (super-block j in 128-bit
// lane j: [8 scales, 8 mins]), as are their (d, dmin) pairs, which are
// multiplied by the activation scales and kept at 0(SP); VPSHUFB spreads
// a super-block's scales over the int16 lanes that VPDPWSSD takes. The
// mins meet the sums of the activation sub-blocks (Acts.s32) in VPMADDWD.

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

// LANES(name, lo, hi) is a 64-byte table of the 16 bytes (lo, hi) in each
// 128-bit lane.
#define LANES(name, lo, hi) \
	DATA name+0(SB)/8, lo \
	DATA name+8(SB)/8, hi \
	DATA name+16(SB)/8, lo \
	DATA name+24(SB)/8, hi \
	DATA name+32(SB)/8, lo \
	DATA name+40(SB)/8, hi \
	DATA name+48(SB)/8, lo \
	DATA name+56(SB)/8, hi \
	GLOBL name(SB), RODATA|NOPTR, $64

// K5UNPACK's tables: kq4_amd64.h's k4shift, k4mask and k4high in each lane.
LANES(k5shift<>, $0, $0x0000000400000000)
LANES(k5mask<>, $0x0f0f0f0f3f3f3f3f, $0x0f0f0f0f3f3f3f3f)
LANES(k5high<>, $0x3030303000000000, $0x3030303000000000)
// bytes 8-15 of each lane (the mins) zero-extended to words
LANES(k5minw<>, $0x800b800a80098008, $0x800f800e800d800c)

// VPSHUFB indices that spread scale 2c over the int16 lanes of the first
// half and 2c+1 over the second, for the register of elements 64c..64c+63.
#define K5SC(c) \
	DATA k5sc<>+(64*c)(SB)/8, $(0x8000800080008000 + 2*c*0x0001000100010001) \
	DATA k5sc<>+(64*c+8)(SB)/8, $(0x8000800080008000 + 2*c*0x0001000100010001) \
	DATA k5sc<>+(64*c+16)(SB)/8, $(0x8000800080008000 + 2*c*0x0001000100010001) \
	DATA k5sc<>+(64*c+24)(SB)/8, $(0x8000800080008000 + 2*c*0x0001000100010001) \
	DATA k5sc<>+(64*c+32)(SB)/8, $(0x8000800080008000 + (2*c+1)*0x0001000100010001) \
	DATA k5sc<>+(64*c+40)(SB)/8, $(0x8000800080008000 + (2*c+1)*0x0001000100010001) \
	DATA k5sc<>+(64*c+48)(SB)/8, $(0x8000800080008000 + (2*c+1)*0x0001000100010001) \
	DATA k5sc<>+(64*c+56)(SB)/8, $(0x8000800080008000 + (2*c+1)*0x0001000100010001)
K5SC(0)
K5SC(1)
K5SC(2)
K5SC(3)
GLOBL k5sc<>(SB), RODATA|NOPTR, $256

// Q5_K: the qh bit that each byte of the register of elements 64c..64c+63
// takes (qh byte l in both halves): 2c in the first half, 2c+1 in the
// second.
#define K5BIT(c) \
	DATA k5bit<>+(64*c)(SB)/8, $((1<<(2*c))*0x0101010101010101) \
	DATA k5bit<>+(64*c+8)(SB)/8, $((1<<(2*c))*0x0101010101010101) \
	DATA k5bit<>+(64*c+16)(SB)/8, $((1<<(2*c))*0x0101010101010101) \
	DATA k5bit<>+(64*c+24)(SB)/8, $((1<<(2*c))*0x0101010101010101) \
	DATA k5bit<>+(64*c+32)(SB)/8, $((1<<(2*c+1))*0x0101010101010101) \
	DATA k5bit<>+(64*c+40)(SB)/8, $((1<<(2*c+1))*0x0101010101010101) \
	DATA k5bit<>+(64*c+48)(SB)/8, $((1<<(2*c+1))*0x0101010101010101) \
	DATA k5bit<>+(64*c+56)(SB)/8, $((1<<(2*c+1))*0x0101010101010101)
K5BIT(0)
K5BIT(1)
K5BIT(2)
K5BIT(3)
GLOBL k5bit<>(SB), RODATA|NOPTR, $256

// K4NIBG's matrices: bits 0-3 of each byte in the lower half, bits 4-7
// (moved down) in the upper.
DATA k4gf<>+0(SB)/8, $0x0102040800000000
DATA k4gf<>+8(SB)/8, $0x0102040800000000
DATA k4gf<>+16(SB)/8, $0x0102040800000000
DATA k4gf<>+24(SB)/8, $0x0102040800000000
DATA k4gf<>+32(SB)/8, $0x1020408000000000
DATA k4gf<>+40(SB)/8, $0x1020408000000000
DATA k4gf<>+48(SB)/8, $0x1020408000000000
DATA k4gf<>+56(SB)/8, $0x1020408000000000
GLOBL k4gf<>(SB), RODATA|NOPTR, $64

// bytes of 16, the fifth bit
HALVES(k5sixteen<>, $0x1010101010101010, $0x1010101010101010)

// K5CONSTS sets Z10 = 0x0f bytes, Z7 = int16 ones, K1-K3 the dword masks
// that gather the (d, dmin) pairs of super-blocks 1-3, K5 the upper 16
// words, and keeps the tables the loops read in registers: k5sc's four in
// Z1-Z4, k5shift, k5mask and k5high in Z5, Z6 and Z8, k4gf in Z18.
#define K5CONSTS \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z10 \
	MOVL $0x00010001, AX \
	VPBROADCASTD AX, Z7 \
	MOVL $0x0c, AX \
	KMOVW AX, K1 \
	MOVL $0x30, AX \
	KMOVW AX, K2 \
	MOVL $0xc0, AX \
	KMOVW AX, K3 \
	MOVL $0xffff0000, AX \
	KMOVD AX, K5 \
	VMOVDQU64 k5sc<>+0(SB), Z1 \
	VMOVDQU64 k5sc<>+64(SB), Z2 \
	VMOVDQU64 k5sc<>+128(SB), Z3 \
	VMOVDQU64 k5sc<>+192(SB), Z4 \
	VMOVDQU64 k5shift<>(SB), Z5 \
	VMOVDQU64 k5mask<>(SB), Z6 \
	VMOVDQU64 k5high<>(SB), Z8 \
	VMOVDQU64 k4gf<>(SB), Z18

// K5UNPACK: the scales and mins of the super-blocks whose twelve scale
// bytes start lanes 0-3 of Z9, as [8 scales, 8 mins] bytes (as K4UNPACK).
#define K5UNPACK \
	VPSHUFD $0x50, Z9, Z12 \
	VPSHUFD $0x98, Z9, Z9 \
	VPSRLVD Z5, Z9, Z9 \
	VPANDD Z6, Z9, Z9 \
	VPSRLD $2, Z12, Z12 \
	VPANDD Z8, Z12, Z12 \
	VPORD Z12, Z9, Z9

// K5HEAD4(bb) prepares four super-blocks of bb bytes at (BX): Z9 their
// scales and mins, 0(SP) lane j = [d, dmin, d, dmin] of super-block j
// times its activation scale, and their min terms subtracted from Z0.
#define K5HEAD4(bb) \
	VMOVDQU 4(BX), X9 \
	VINSERTI32X4 $1, (bb+4)(BX), Z9, Z9 \
	VINSERTI32X4 $2, (2*bb+4)(BX), Z9, Z9 \
	VINSERTI32X4 $3, (3*bb+4)(BX), Z9, Z9 \
	K5UNPACK \
	VPBROADCASTD (BX), Y12 \
	VPBROADCASTD bb(BX), K1, Y12 \
	VPBROADCASTD (2*bb)(BX), K2, Y12 \
	VPBROADCASTD (3*bb)(BX), K3, Y12 \
	VCVTPH2PS Y12, Z12 \
	VBROADCASTF32X4 (DI), Z13 \
	VPERMILPS q40lane<>(SB), Z13, Z13 \
	VMULPS Z13, Z12, Z12 \
	VMOVUPS Z12, 0(SP) \
	VMOVSHDUP Z12, Z12 \
	VMOVDQU64 (R9), Z13 \
	VPSHUFB k5minw<>(SB), Z9, Z14 \
	VPMADDWD Z13, Z14, Z14 \
	VCVTDQ2PS Z14, Z14 \
	VFNMADD231PS Z14, Z12, Z0

// K5HEAD1 is K5HEAD4 for one super-block, in lane 0.
#define K5HEAD1 \
	VMOVDQU 4(BX), X9 \
	K5UNPACK \
	VPBROADCASTD (BX), Y12 \
	VCVTPH2PS Y12, Z12 \
	VMULPS.BCST (DI), Z12, Z12 \
	VMOVUPS Z12, 0(SP) \
	VMOVSHDUP Z12, Z12 \
	VMOVDQU (R9), X13 \
	VPSHUFB k5minw<>(SB), Z9, Z14 \
	VPMADDWD Z13, Z14, Z14 \
	VCVTDQ2PS Z14, Z14 \
	VFNMADD231PS Z14, Z12, Z0

// K4NIB spreads the 64 nibbles of the 32 bytes broadcast to both halves
// of Z13 into its bytes, the low nibbles in the lower half and the high
// ones in the upper; K4NIBG does it by one GF(2) affine transform (GFNI),
// a matrix a half in Z18 (k4gf).
#define K4NIB \
	VPSRLW $4, Z13, K5, Z13 \
	VPANDD Z10, Z13, Z13

#define K4NIBG \
	VGF2P8AFFINEQB $0, Z18, Z13, Z13

// K4PART(wo, ao, t, NIB) adds elements 64c..64c+63 (quant bytes at wo(BX),
// activations at ao(SI)) with the super-block's scales in Z12, spread by
// k5sc's table c (in t), to the int32 sums in Z15, its nibbles spread by
// NIB. K5PART is the same
// for Q5_K, with the qh bytes in Z14.
#define K4PART(wo, ao, t, NIB) \
	VBROADCASTI64X4 wo(BX), Z13 \
	NIB \
	VPMADDUBSW ao(SI), Z13, Z13 \
	VPSHUFB t, Z12, Z11 \
	VPDPWSSD Z11, Z13, Z15

#define K5PART(wo, ao, c, t, NIB) \
	VBROADCASTI64X4 wo(BX), Z13 \
	NIB \
	VPTESTMB k5bit<>+(64*c)(SB), Z14, K4 \
	VPADDB k5sixteen<>(SB), Z13, K4, Z13 \
	VPMADDUBSW ao(SI), Z13, Z13 \
	VPSHUFB t, Z12, Z11 \
	VPDPWSSD Z11, Z13, Z15

// K4SB(j, bb, NIB) adds super-block j of the four (at j*bb(BX)) to Z0.
#define K4SB(j, bb, NIB) \
	VSHUFI64X2 $(0x55*j), Z9, Z9, Z12 \
	VPXORD Z15, Z15, Z15 \
	K4PART(j*bb+16, j*256, Z1, NIB) \
	K4PART(j*bb+48, j*256+64, Z2, NIB) \
	K4PART(j*bb+80, j*256+128, Z3, NIB) \
	K4PART(j*bb+112, j*256+192, Z4, NIB) \
	VCVTDQ2PS Z15, Z15 \
	VFMADD231PS.BCST (16*j)(SP), Z15, Z0

#define K5SB(j, bb, NIB) \
	VSHUFI64X2 $(0x55*j), Z9, Z9, Z12 \
	VPXORD Z15, Z15, Z15 \
	VBROADCASTI64X4 (j*bb+16)(BX), Z14 \
	K5PART(j*bb+48, j*256, 0, Z1, NIB) \
	K5PART(j*bb+80, j*256+64, 1, Z2, NIB) \
	K5PART(j*bb+112, j*256+128, 2, Z3, NIB) \
	K5PART(j*bb+144, j*256+192, 3, Z4, NIB) \
	VCVTDQ2PS Z15, Z15 \
	VFMADD231PS.BCST (16*j)(SP), Z15, Z0

// KROWS2(SBLK, NIB, bb, PF) is the body of a Q4_K or Q5_K kernel (super-blocks
// of bb bytes, nibbles spread by NIB) for nr rows at wa and nr rows at wb at once
// (see q8_0Rows2z), into ya and yb: four super-blocks of a row of the
// first run, then the same four of a row of the second, whose weights
// pointer (R12) and sum (Z16) are swapped with BX and Z0 for the time.
#define KSWAP \
	XCHGQ BX, R12 \
	VMOVAPS Z0, Z17 \
	VMOVAPS Z16, Z0 \
	VMOVAPS Z17, Z16

#define KROWS2(SBLK, NIB, bb, PF) \
	MOVQ ·decodeAhead(SB), R10 \
	MOVQ wa+0(FP), BX \
	MOVQ wb+8(FP), R12 \
	MOVQ ya+48(FP), DX \
	MOVQ yb+56(FP), R13 \
	MOVQ nr+64(FP), R8 \
	K5CONSTS \
	TESTQ R8, R8 \
	JZ end \
row: \
	MOVQ aq+24(FP), SI \
	MOVQ ad+32(FP), DI \
	MOVQ s32+40(FP), R9 \
	MOVQ nb+16(FP), CX \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z16, Z16, Z16 \
	SHRQ $2, CX \
	JZ tail \
quad: \
	PF(BX) \
	K5HEAD4(bb) \
	SBLK(0, bb, NIB) \
	SBLK(1, bb, NIB) \
	SBLK(2, bb, NIB) \
	SBLK(3, bb, NIB) \
	KSWAP \
	PF(BX) \
	K5HEAD4(bb) \
	SBLK(0, bb, NIB) \
	SBLK(1, bb, NIB) \
	SBLK(2, bb, NIB) \
	SBLK(3, bb, NIB) \
	KSWAP \
	ADDQ $(4*bb), BX \
	ADDQ $(4*bb), R12 \
	ADDQ $1024, SI \
	ADDQ $16, DI \
	ADDQ $64, R9 \
	DECQ CX \
	JNZ quad \
tail: \
	MOVQ nb+16(FP), CX \
	ANDQ $3, CX \
	JZ sum \
one: \
	K5HEAD1 \
	SBLK(0, bb, NIB) \
	KSWAP \
	K5HEAD1 \
	SBLK(0, bb, NIB) \
	KSWAP \
	ADDQ $bb, BX \
	ADDQ $bb, R12 \
	ADDQ $256, SI \
	ADDQ $4, DI \
	ADDQ $16, R9 \
	DECQ CX \
	JNZ one \
sum: \
	HSUM0 \
	VMOVSS X0, (DX) \
	VMOVAPS Z16, Z0 \
	HSUM0 \
	VMOVSS X0, (R13) \
	ADDQ $4, DX \
	ADDQ $4, R13 \
	DECQ R8 \
	JNZ row \
end: \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17 \
	VZEROUPPER \
	RET

// The Q4_K and Q5_K kernels, two runs of rows at once (an odd last row
// runs as both); the g forms spread nibbles by GFNI.

// func q4_KRows2z(wa, wb *byte, nb int, aq *int8, ad *float32, s32 *int16, ya, yb *float32, nr int)
TEXT ·q4_KRows2z(SB), NOSPLIT, $64-72
	KROWS2(K4SB, K4NIB, 144, PFQ9)

// func q4_KRows2zg(wa, wb *byte, nb int, aq *int8, ad *float32, s32 *int16, ya, yb *float32, nr int)
TEXT ·q4_KRows2zg(SB), NOSPLIT, $64-72
	KROWS2(K4SB, K4NIBG, 144, PFQ9)

// func q5_KRows2z(wa, wb *byte, nb int, aq *int8, ad *float32, s32 *int16, ya, yb *float32, nr int)
TEXT ·q5_KRows2z(SB), NOSPLIT, $64-72
	KROWS2(K5SB, K4NIB, 176, PFQ11)

// func q5_KRows2zg(wa, wb *byte, nb int, aq *int8, ad *float32, s32 *int16, ya, yb *float32, nr int)
TEXT ·q5_KRows2zg(SB), NOSPLIT, $64-72
	KROWS2(K5SB, K4NIBG, 176, PFQ11)

// ---- Q6_K ----------------------------------------------------------------

// Each half super-block (128 elements) is two registers of 64 quants in
// element order: the low nibbles of its 64 ql bytes with qh bits 0-1
// (first 32) and 2-3 (last 32) above them, and the high nibbles with bits
// 4-5 and 6-7. The int8 group scales are sign-extended to words and spread
// over 128-bit lanes (one group of 16 a lane) for VPDPWSSD; the -32 offset
// is 32 times the scales times the activation sums of 16, subtracted at
// the start.

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

// K6HALF(b, h, zs) adds half h of the super-block at (b) to Z9, with the
// scales for it (words 8h..8h+7) in each 128-bit lane of zs. Z4 holds 0x0f
// bytes, Z5 0x30.
#define K6HALF(b, h, zs) \
	VMOVDQU64 (64*h)(b), Z14 \
	VBROADCASTI64X4 (128+32*h)(b), Z15 \
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

// K6SB(b, acc) adds the super-block at (b) to acc (activation quants at
// (SI), its scale at (DI), sums of 16 at (R9)).
#define K6SB(b, acc) \
	VPMOVSXBW 192(b), Y12 \
	VPMADDWD (R9), Y12, Y11 \
	VPSLLD $5, Y11, Y11 \
	VPXORD Z9, Z9, Z9 \
	VPSUBD Z11, Z9, Z9 \
	VSHUFI64X2 $0x55, Z12, Z12, Z13 \
	VSHUFI64X2 $0x00, Z12, Z12, Z12 \
	K6HALF(b, 0, Z12) \
	K6HALF(b, 1, Z13) \
	VCVTDQ2PS Z9, Z9 \
	VPBROADCASTW 208(b), Y11 \
	VCVTPH2PS Y11, Z11 \
	VMULPS.BCST (DI), Z11, Z11 \
	VFMADD231PS Z9, Z11, acc

// The Q6_K kernel walks two runs of rows at once (see q8_0Rows2z): nr
// rows at wa and nr at wb, a super-block of each in turn against the same
// activation, each row's sum taken the same way whichever run it is in
// (a single row is passed as both runs).

// func q6_KRows2z(wa, wb *byte, nb int, aq *int8, ad *float32, bs *int16, ya, yb *float32, nr int)
TEXT ·q6_KRows2z(SB), NOSPLIT, $0-72
	MOVQ ·decodeAhead(SB), R12
	MOVQ wa+0(FP), BX
	MOVQ wb+8(FP), R13
	MOVQ ya+48(FP), DX
	MOVQ yb+56(FP), R11
	MOVQ nr+64(FP), R8
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z4
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z5
	TESTQ R8, R8
	JZ end

row:
	MOVQ aq+24(FP), SI
	MOVQ ad+32(FP), DI
	MOVQ bs+40(FP), R9
	MOVQ nb+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ CX, CX
	JZ sum

sb:
	PF4(BX, R12)
	PF4(R13, R12)
	K6SB(BX, Z0)
	K6SB(R13, Z1)
	ADDQ $210, BX
	ADDQ $210, R13
	ADDQ $256, SI
	ADDQ $4, DI
	ADDQ $32, R9
	DECQ CX
	JNZ sb

sum:
	HSUM0
	VMOVSS X0, (DX)
	VMOVAPS Z1, Z0
	HSUM0
	VMOVSS X0, (R11)
	ADDQ $4, DX
	ADDQ $4, R11
	DECQ R8
	JNZ row

end:
	VZEROUPPER
	RET

