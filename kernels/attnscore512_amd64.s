// Decode attention's scores for four query heads that share one kv head,
// 64 elements of the head dimension a call, at the avx512 level (longer
// heads take a call for each 64, adding into the scores). The four
// heads' query rows stay in Z16-Z31 over the whole run of positions.
// Each position's key row is loaded once (Z0-Z3, converted from binary16 as loaded) and meets the four
// heads: one vector of sixteen partial products a head (Z4-Z7). Those four
// are folded into one vector (chunk c holding the four heads' sums of
// their chunk c) by in-chunk shuffles; four positions' such vectors are
// then folded across chunks into one vector of the sixteen scores,
// position-major, which one permute turns head-major for four 16-byte
// stores. A dot product thus costs four multiply-adds and under three
// shuffles or adds, where the general tile (gemmDotF16Z) sums each of its
// 24 accumulators' lanes apart and loads the queries again every call.

#include "textflag.h"
#include "zero_amd64.h"

#define KLD_F16(off, z) VCVTPH2PS off(AX), z
#define KLD_F32(off, z) VMOVUPS off(AX), z

// HEAD(acc, q0, q1, q2, q3) is one head's sixteen partial products of the
// key row in Z0-Z3.
#define HEAD(acc, q0, q1, q2, q3) \
	VMULPS q0, Z0, acc \
	VFMADD231PS q1, Z1, acc \
	VFMADD231PS q2, Z2, acc \
	VFMADD231PS q3, Z3, acc

// POS(KLD, ks, r) folds the four heads' products for the key row at AX
// (elements ks bytes each) into r: chunk c of r is [h0 h1 h2 h3], each
// head's sum of its lanes 4c..4c+3. AX moves on to the next position.
#define POS(KLD, ks, r) \
	KLD(0, Z0) \
	KLD(16*ks, Z1) \
	KLD(32*ks, Z2) \
	KLD(48*ks, Z3) \
	HEAD(Z4, Z16, Z17, Z18, Z19) \
	HEAD(Z5, Z20, Z21, Z22, Z23) \
	HEAD(Z6, Z24, Z25, Z26, Z27) \
	HEAD(Z7, Z28, Z29, Z30, Z31) \
	VUNPCKLPD Z5, Z4, Z8 \
	VUNPCKHPD Z5, Z4, Z9 \
	VADDPS Z9, Z8, Z8 \
	VUNPCKLPD Z7, Z6, Z9 \
	VUNPCKHPD Z7, Z6, Z4 \
	VADDPS Z4, Z9, Z9 \
	VSHUFPS $0x88, Z9, Z8, Z4 \
	VSHUFPS $0xDD, Z9, Z8, Z5 \
	VADDPS Z5, Z4, r \
	ADDQ DX, AX

// QROW(z0, z1, z2, z3) loads the query row at SI and moves SI on by BX.
#define QROW(z0, z1, z2, z3) \
	VMOVUPS (SI), z0 \
	VMOVUPS 64(SI), z1 \
	VMOVUPS 128(SI), z2 \
	VMOVUPS 192(SI), z3 \
	ADDQ BX, SI

// SCORES(KLD, ks) is the body of attnScores4F16Z and attnScores4F32Z.
#define SCORES(KLD, ks) \
	MOVQ q+0(FP), SI \
	MOVQ ldq+8(FP), BX \
	QROW(Z16, Z17, Z18, Z19) \
	QROW(Z20, Z21, Z22, Z23) \
	QROW(Z24, Z25, Z26, Z27) \
	QROW(Z28, Z29, Z30, Z31) \
	VMOVDQU32 ·attnScoreLanes(SB), Z14 \
	MOVQ k+16(FP), AX \
	MOVQ ldk+24(FP), DX \
	MOVQ n+32(FP), CX \
	MOVQ sc+40(FP), DI \
	MOVQ ldsc+48(FP), R8 \
	LEAQ (R8)(R8*2), R9 \
	MOVQ add+56(FP), R10 \
	SHRQ $2, CX \
	JZ   done \
loop: \
	POS(KLD, ks, Z10) \
	POS(KLD, ks, Z11) \
	POS(KLD, ks, Z12) \
	POS(KLD, ks, Z13) \
	VSHUFF32X4 $0x44, Z11, Z10, Z0 \
	VSHUFF32X4 $0xEE, Z11, Z10, Z1 \
	VADDPS Z1, Z0, Z0 \
	VSHUFF32X4 $0x44, Z13, Z12, Z2 \
	VSHUFF32X4 $0xEE, Z13, Z12, Z3 \
	VADDPS Z3, Z2, Z2 \
	VSHUFF32X4 $0x88, Z2, Z0, Z3 \
	VSHUFF32X4 $0xDD, Z2, Z0, Z1 \
	VADDPS Z1, Z3, Z3 \
	VPERMPS Z3, Z14, Z3 \
	TESTQ R10, R10 \
	JZ   noadd \
	VMOVUPS (DI), X0 \
	VINSERTF32X4 $1, (DI)(R8*1), Z0, Z0 \
	VINSERTF32X4 $2, (DI)(R8*2), Z0, Z0 \
	VINSERTF32X4 $3, (DI)(R9*1), Z0, Z0 \
	VADDPS Z0, Z3, Z3 \
noadd: \
	VMOVUPS X3, (DI) \
	VEXTRACTF32X4 $1, Z3, (DI)(R8*1) \
	VEXTRACTF32X4 $2, Z3, (DI)(R8*2) \
	VEXTRACTF32X4 $3, Z3, (DI)(R9*1) \
	ADDQ $16, DI \
	DECQ CX \
	JNZ  loop \
done: \
	ZERO16TO31 \
	VZEROUPPER \
	RET

// func attnScores4F16Z(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, sc *float32, ldsc int, add int)
//
// The dot products of four query rows of 64 elements (q, ldq bytes apart)
// with the binary16 key rows of n positions (k, 64 elements each, ldk
// bytes apart; n a multiple of four, any rest is not computed): head h's
// at sc, ldsc bytes a head, written, or added to what is there where add
// is set.
TEXT ·attnScores4F16Z(SB), NOSPLIT, $0-64
	SCORES(KLD_F16, 2)

// func attnScores4F32Z(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, sc *float32, ldsc int, add int)
//
// attnScores4F16Z for f32 key rows.
TEXT ·attnScores4F32Z(SB), NOSPLIT, $0-64
	SCORES(KLD_F32, 4)
