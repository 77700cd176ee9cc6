// AVX-512 decode kernels for the 32-element dtypes with a min or a fifth
// bit (Q4_1, Q5_0, Q5_1): one activation row (Acts.q, d, o and s, as the
// Q8_0 kernels read them) against two runs of nr weight rows at once, a
// row of each side by side (see q8_0Rows2z), into ya and yb.
//
// A pair of blocks is one register, as the Q8_0 kernels have it: block
// 2p in bytes 0-31 and 2p+1 in 32-63, each as its 32 codes in element
// order (the 16 code bytes broadcast to both 16-byte lanes of its half,
// the second lane shifted down a nibble), so the activation quants are
// read as they are. A fifth bit is added from the block's 32 high bits,
// which are the mask of its half (KMOVD, two blocks' joined by KUNPCKDQ).
// The codes are unsigned, so VPDPBUSD takes them against the signed
// activation quants as they are: Q5_0's offset of 16 is taken out by
// starting the block's first int32 lane at -16 times the activation
// block's sum (Acts.o, -128 times it, shifted right by 3); Q4_1's and
// Q5_1's min times the activation block's scaled sum (Acts.s) is added
// once a block, in a sum of its own (lanes 0-3 of an xmm register). Every
// int32 lane sum is exact.
//
// The four blocks' f16 scales (and mins) are gathered as four words by
// scalar loads (as Q8SCALES), converted and multiplied by the activation's
// block scales as four floats, and spread over the lanes by VPERMPS
// (q8lane, decode512_amd64.s). On the Zen 5, from L2, one thread
// (BenchmarkMatVecL2), these kernels read Q4_1 at 34-36 GB/s, Q5_0 at
// 19-31 and Q5_1 at 31-32, where the avx2 level's one-row kernels (which
// the avx512 level ran before) read 15-16, 12-13 and 13; a 1B Llama
// decodes on two threads at 45 tokens/s in Q5_0 (25 before) and 42-50 in
// Q4_1 (26-31). The weights are asked for 2048 bytes ahead
// (decodeAheadNib; asking for the lines being loaded was the same within
// the noise, BenchmarkDecodeLayers).

#include "textflag.h"
#include "zero_amd64.h"
#include "decode512_amd64.h"

// P32CONSTS sets what every row keeps: Z12 0x0f bytes, Z11 0x10 bytes,
// Z13 and Z14 the lane indices, K5 the words of the second 16-byte lane of
// each half (shifted a nibble down), K6 the dwords of the upper half, K7
// those of the lower half, K4 lanes 0 and 9 (the offsets' broadcast), K3
// the low 32 bytes.
#define P32CONSTS \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z12 \
	MOVL $0x10101010, AX \
	VPBROADCASTD AX, Z11 \
	VMOVDQU64 ·q8lane(SB), Z13 \
	VMOVDQU64 ·q8lane+64(SB), Z14 \
	MOVL $0xff00ff00, AX \
	KMOVD AX, K5 \
	MOVL $0xff00, AX \
	KMOVW AX, K6 \
	MOVL $0x00ff, AX \
	KMOVW AX, K7 \
	MOVL $0x0201, AX \
	KMOVW AX, K4 \
	MOVL $0xffffffff, AX \
	KMOVQ AX, K3

// W4(b, off, bb, x) leaves in x the four f16 words at off(b), (off+bb)(b),
// (off+2bb)(b) and (off+3bb)(b), gathered through AX.
#define W4(b, off, bb, x) \
	MOVWLZX (off+3*bb)(b), AX \
	SHLQ $16, AX \
	MOVW (off+2*bb)(b), AX \
	SHLQ $16, AX \
	MOVW (off+bb)(b), AX \
	SHLQ $16, AX \
	MOVW off(b), AX \
	VMOVQ AX, x

// CODES2(b, o0, o1, c) leaves in c the codes of the block pair whose code
// bytes are at o0(b) and o1(b), nibbles only.
#define CODES2(b, o0, o1, c) \
	VBROADCASTI32X4 (o0)(b), c \
	VBROADCASTI32X4 (o1)(b), K6, c \
	VPSRLW $4, c, K5, c \
	VPANDD Z12, c, c

// HIGH2(b, h0, h1, c) adds 16 to the codes in c whose bit is set in the
// blocks' 32 high bits at h0(b) and h1(b).
#define HIGH2(b, h0, h1, c) \
	KMOVD (h0)(b), K1 \
	KMOVD (h1)(b), K2 \
	KUNPCKDQ K1, K2, K1 \
	VPADDB Z11, c, K1, c

#define NOHIGH2(b, h0, h1, c)

// The int32 sums of a block pair start at the pair's offsets (OFFS: Z6
// and Z7 for pairs 0 and 1, set by the quad's OFFSETS) or at zero.
#define OFFS(z, s) VMOVDQA64 z, s
#define ZEROS(z, s) VPXORD s, s, s

// OFFSETS loads Q5_0's offsets of the quad's two pairs into lanes 0 and 9
// of Z6 and Z7: Acts.o (R10) shifted right by 3.
#define OFFSETS \
	VBROADCASTI32X2.Z (R10), K4, Z6 \
	VBROADCASTI32X2.Z 8(R10), K4, Z7 \
	VPSRAD $3, Z6, Z6 \
	VPSRAD $3, Z7, Z7

#define NOOFFSETS

// MINS(b, mo, bb, m) adds the four blocks' mins at mo(b) times the
// activation's scaled sums (R11) to lanes 0-3 of m (using X8).
#define MINS(b, mo, bb, m) \
	W4(b, mo, bb, X8) \
	VCVTPH2PS X8, X8 \
	VFMADD231PS (R11), X8, m

#define NOMINS(b, mo, bb, m)

// QUAD32(b, acc, m, bb, qo, ho, mo, HIGH, START, MIN) adds the four blocks
// at (b) to acc (and their min terms to m): code bytes at qo, high bits
// at ho and mins at mo of each block of bb bytes, the scale at 0. Uses
// Z8-Z10 and Z15-Z19.
#define QUAD32(b, acc, m, bb, qo, ho, mo, HIGH, START, MIN) \
	W4(b, 0, bb, X8) \
	VCVTPH2PS X8, X8 \
	VMULPS (DI), X8, X8 \
	VPERMPS Z8, Z13, Z9 \
	VPERMPS Z8, Z14, Z10 \
	CODES2(b, qo, qo+bb, Z16) \
	HIGH(b, ho, ho+bb, Z16) \
	START(Z6, Z17) \
	VPDPBUSD (SI), Z16, Z17 \
	VCVTDQ2PS Z17, Z17 \
	VFMADD231PS Z17, Z9, acc \
	CODES2(b, qo+2*bb, qo+3*bb, Z18) \
	HIGH(b, ho+2*bb, ho+3*bb, Z18) \
	START(Z7, Z19) \
	VPDPBUSD 64(SI), Z18, Z19 \
	VCVTDQ2PS Z19, Z19 \
	VFMADD231PS Z19, Z10, acc \
	MIN(b, mo, bb, m)

// ONE32(b, acc, m, qo, ho, mo, HIGH1, START1, MIN1) adds the one block at
// (b) to lanes 0-7 of acc (its min term to lane 0 of m).
#define ONE32(b, acc, m, qo, ho, mo, HIGH1, START1, MIN1) \
	VBROADCASTI32X4.Z qo(b), K7, Z16 \
	VPSRLW $4, Z16, K5, Z16 \
	VPANDD Z12, Z16, Z16 \
	HIGH1(b, ho, Z16) \
	START1(X17) \
	VMOVDQU8.Z (SI), K3, Z18 \
	VPDPBUSD Z18, Z16, Z17 \
	VCVTDQ2PS Z17, Z17 \
	MOVWLZX (b), AX \
	VMOVD AX, X8 \
	VCVTPH2PS X8, X8 \
	VMULSS (DI), X8, X8 \
	VBROADCASTSS X8, Z8 \
	VFMADD231PS Z17, Z8, acc \
	MIN1(b, mo, m)

#define HIGH1(b, ho, c) \
	KMOVD ho(b), K1 \
	VPADDB Z11, c, K1, c

#define NOHIGH1(b, ho, c)

#define START1(s) \
	VMOVD (R10), s \
	VPSRAD $3, s, s

#define ZERO1(s) VPXORD s, s, s

#define MIN1(b, mo, m) \
	MOVWLZX mo(b), AX \
	VMOVD AX, X8 \
	VCVTPH2PS X8, X8 \
	VFMADD231SS (R11), X8, m

#define NOMIN1(b, mo, m)

// ROWS32(bb, qo, ho, mo, HIGH, START, MIN, OFFS4, HIGH1, START1, MIN1)
// is the body of a kernel: for each of nr row pairs (wa at BX, wb at R8),
// its whole quads by QUAD32, then the blocks after them by ONE32, each
// row's sums (with its mins' in X2 and X3) to (DX) and (R13).
#define ROWS32(bb, qo, ho, mo, HIGH, START, MIN, OFFS4, HIGH1, START1, MIN1) \
	MOVQ ·decodeAheadNib(SB), R12 \
	MOVQ wa+0(FP), BX \
	MOVQ wb+8(FP), R8 \
	MOVQ ya+56(FP), DX \
	MOVQ yb+64(FP), R13 \
	MOVQ nr+72(FP), R9 \
	P32CONSTS \
	TESTQ R9, R9 \
	JZ end \
row: \
	MOVQ aq+24(FP), SI \
	MOVQ o+32(FP), R10 \
	MOVQ ad+40(FP), DI \
	MOVQ as+48(FP), R11 \
	MOVQ nb+16(FP), CX \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	SHRQ $2, CX \
	JZ tail \
quad: \
	PF2(BX, R12) \
	PF2(R8, R12) \
	OFFS4 \
	QUAD32(BX, Z0, X2, bb, qo, ho, mo, HIGH, START, MIN) \
	QUAD32(R8, Z1, X3, bb, qo, ho, mo, HIGH, START, MIN) \
	ADDQ $(4*bb), BX \
	ADDQ $(4*bb), R8 \
	ADDQ $128, SI \
	ADDQ $16, R10 \
	ADDQ $16, DI \
	ADDQ $16, R11 \
	DECQ CX \
	JNZ quad \
tail: \
	MOVQ nb+16(FP), CX \
	ANDQ $3, CX \
	JZ sum \
one: \
	ONE32(BX, Z0, X2, qo, ho, mo, HIGH1, START1, MIN1) \
	ONE32(R8, Z1, X3, qo, ho, mo, HIGH1, START1, MIN1) \
	ADDQ $bb, BX \
	ADDQ $bb, R8 \
	ADDQ $32, SI \
	ADDQ $4, R10 \
	ADDQ $4, DI \
	ADDQ $4, R11 \
	DECQ CX \
	JNZ one \
sum: \
	VADDPS Z2, Z0, Z0 \
	HSUM0 \
	VMOVSS X0, (DX) \
	VADDPS Z3, Z1, Z0 \
	HSUM0 \
	VMOVSS X0, (R13) \
	ADDQ $4, DX \
	ADDQ $4, R13 \
	DECQ R9 \
	JNZ row \
end: \
	ZERO16TO23 \
	VZEROUPPER \
	RET

// func q4_1Rows2z(wa, wb *byte, nb int, aq *int8, o *int32, ad, as *float32, ya, yb *float32, nr int)
TEXT ·q4_1Rows2z(SB), NOSPLIT, $0-80
	ROWS32(20, 4, 0, 2, NOHIGH2, ZEROS, MINS, NOOFFSETS, NOHIGH1, ZERO1, MIN1)

// func q5_0Rows2z(wa, wb *byte, nb int, aq *int8, o *int32, ad, as *float32, ya, yb *float32, nr int)
TEXT ·q5_0Rows2z(SB), NOSPLIT, $0-80
	ROWS32(22, 6, 2, 0, HIGH2, OFFS, NOMINS, OFFSETS, HIGH1, START1, NOMIN1)

// func q5_1Rows2z(wa, wb *byte, nb int, aq *int8, o *int32, ad, as *float32, ya, yb *float32, nr int)
TEXT ·q5_1Rows2z(SB), NOSPLIT, $0-80
	ROWS32(24, 8, 4, 2, HIGH2, ZEROS, MINS, NOOFFSETS, HIGH1, ZERO1, MIN1)
