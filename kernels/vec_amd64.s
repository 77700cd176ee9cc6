// Small AVX2 vector helpers for the row kernels.

#include "textflag.h"

// func axpyF32(y *float32, x *float32, a float32, n int)
// y[i] += a*x[i] for i < n; n a multiple of 16.
TEXT ·axpyF32(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	VBROADCASTSS a+16(FP), Y0
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ done
loop:
	VMOVUPS (DI), Y1
	VMOVUPS 32(DI), Y2
	VFMADD231PS (SI), Y0, Y1
	VFMADD231PS 32(SI), Y0, Y2
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func f16ToF32Row(dst *float32, src *uint16, n int)
// n a multiple of 16.
TEXT ·f16ToF32Row(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ done
loop:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// Constants for EXPF, each a full vector so FMAs can take them from memory.
#define VEC8(name, bits) \
	DATA name+0(SB)/4, $bits; DATA name+4(SB)/4, $bits; DATA name+8(SB)/4, $bits; DATA name+12(SB)/4, $bits \
	DATA name+16(SB)/4, $bits; DATA name+20(SB)/4, $bits; DATA name+24(SB)/4, $bits; DATA name+28(SB)/4, $bits \
	GLOBL name(SB), RODATA|NOPTR, $32

// ARITH8(OP) is the body of func(dst, a, b *float32, n int): dst[i] =
// a[i] OP b[i] for i < n (a multiple of 8), 16 a step while it can. The
// AVX instructions round as Go's float32 operators do.
#define ARITH8(OP) \
	MOVQ dst+0(FP), DI \
	MOVQ a+8(FP), SI \
	MOVQ b+16(FP), DX \
	MOVQ n+24(FP), CX \
	SHRQ $3, CX \
	JZ done \
loop2: \
	CMPQ CX, $2 \
	JLT one \
	VMOVUPS (SI), Y0 \
	VMOVUPS 32(SI), Y1 \
	OP (DX), Y0, Y0 \
	OP 32(DX), Y1, Y1 \
	VMOVUPS Y0, (DI) \
	VMOVUPS Y1, 32(DI) \
	ADDQ $64, SI \
	ADDQ $64, DX \
	ADDQ $64, DI \
	SUBQ $2, CX \
	JMP loop2 \
one: \
	TESTQ CX, CX \
	JZ done \
	VMOVUPS (SI), Y0 \
	OP (DX), Y0, Y0 \
	VMOVUPS Y0, (DI) \
done: \
	VZEROUPPER \
	RET

VEC8(exphi<>, 0x42b17217)    // 88.72283
VEC8(explo<>, 0xc2aeac4f)    // -87.33654
VEC8(explog2e<>, 0x3fb8aa3b) // log2(e)
VEC8(expln2hi<>, 0x3f317200) // 0.693145751953125
VEC8(expln2lo<>, 0x35bfbe8e) // 1.42860682e-6
VEC8(expc720<>, 0x3ab60b61)  // 1/720
VEC8(expc120<>, 0x3c088889)  // 1/120
VEC8(expc24<>, 0x3d2aaaab)   // 1/24
VEC8(expc6<>, 0x3e2aaaab)    // 1/6
VEC8(expc2<>, 0x3f000000)    // 1/2
VEC8(expone<>, 0x3f800000)   // 1
VEC8(exp127<>, 0x0000007f)   // int32 127

// EXPF replaces Y0 with exp(Y0), as expf in rowops.go: 2^n * p(r) with a
// degree-6 polynomial; inputs below -87.33654 (and -inf) give 0. Uses Y1..Y4.
#define EXPF \
	VMINPS exphi<>(SB), Y0, Y1 \
	VMAXPS explo<>(SB), Y1, Y1 \
	VMULPS explog2e<>(SB), Y1, Y2 \
	VROUNDPS $0, Y2, Y2 \
	VFNMADD231PS expln2hi<>(SB), Y2, Y1 \
	VFNMADD231PS expln2lo<>(SB), Y2, Y1 \
	VMOVUPS expc720<>(SB), Y3 \
	VFMADD213PS expc120<>(SB), Y1, Y3 \
	VFMADD213PS expc24<>(SB), Y1, Y3 \
	VFMADD213PS expc6<>(SB), Y1, Y3 \
	VFMADD213PS expc2<>(SB), Y1, Y3 \
	VFMADD213PS expone<>(SB), Y1, Y3 \
	VFMADD213PS expone<>(SB), Y1, Y3 \
	VCVTPS2DQ Y2, Y2 \
	VPADDD exp127<>(SB), Y2, Y2 \
	VPSLLD $23, Y2, Y2 \
	VMULPS Y2, Y3, Y3 \
	VCMPPS $1, explo<>(SB), Y0, Y4 \
	VANDNPS Y3, Y4, Y0

// func expSubSum(dst, src *float32, n int, sub float32) float32
// dst[i] = exp(src[i] - sub) for i < n (a multiple of 8); returns the sum.
TEXT ·expSubSum(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS sub+24(FP), Y7
	VXORPS Y6, Y6, Y6
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (SI), Y0
	VSUBPS Y7, Y0, Y0
	EXPF
	VMOVUPS Y0, (DI)
	VADDPS Y0, Y6, Y6
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VEXTRACTF128 $1, Y6, X7
	VADDPS X7, X6, X6
	VHADDPS X6, X6, X6
	VHADDPS X6, X6, X6
	VMOVSS X6, ret+32(FP)
	VZEROUPPER
	RET

// func inRangeF32(x *float32, n int, lo, hi float32) bool
// Whether every x[i] for i < n (a multiple of 8) lies in (lo, hi): the
// ordered comparisons are false for a NaN.
TEXT ·inRangeF32(SB), NOSPLIT, $0-25
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS lo+16(FP), Y4
	VBROADCASTSS hi+20(FP), Y5
	VPCMPEQD Y6, Y6, Y6
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (SI), Y0
	VCMPPS $0x1e, Y4, Y0, Y1
	VCMPPS $0x11, Y5, Y0, Y2
	VANDPS Y1, Y6, Y6
	VANDPS Y2, Y6, Y6
	ADDQ $32, SI
	DECQ CX
	JNZ loop
done:
	VMOVMSKPS Y6, AX
	CMPL AX, $0xff
	SETEQ ret+24(FP)
	VZEROUPPER
	RET

// func siluMulF32(dst, gate, up *float32, n int)
// dst[i] = gate[i] / (1 + exp(-gate[i])) * up[i] for i < n (a multiple of 8).
TEXT ·siluMulF32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n+24(FP), CX
	VXORPS Y6, Y6, Y6
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (SI), Y5
	VSUBPS Y5, Y6, Y0
	EXPF
	VADDPS expone<>(SB), Y0, Y0
	VDIVPS Y0, Y5, Y5
	VMULPS (DX), Y5, Y5
	VMOVUPS Y5, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

VEC8(absmask<>, 0x7fffffff)
VEC8(signmask<>, 0x80000000)
VEC8(half<>, 0x3f000000)

// func absMaxF32(x *float32, n int) float32
// max |x[i]| for i < n (a multiple of 8).
TEXT ·absMaxF32(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPS Y0, Y0, Y0
	VMOVUPS absmask<>(SB), Y2
	SHRQ $3, CX
	JZ done
loop:
	VANDPS (SI), Y2, Y1
	VMAXPS Y1, Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ loop
done:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func quantRound(q *int8, x *float32, n int, id float32)
// q[i] = clamp(trunc(x[i]*id ± 0.5), -127, 127) for i < n (a multiple of
// 32): round half away from zero, as quantizeBlock.
TEXT ·quantRound(SB), NOSPLIT, $0-28
	MOVQ q+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS id+24(FP), Y7
	VMOVUPS signmask<>(SB), Y6
	VMOVUPS half<>(SB), Y5
	SHRQ $5, CX
	JZ done
loop:
	VMULPS (SI), Y7, Y0
	VMULPS 32(SI), Y7, Y1
	VMULPS 64(SI), Y7, Y2
	VMULPS 96(SI), Y7, Y3
	VANDPS Y6, Y0, Y8
	VORPS Y5, Y8, Y8
	VADDPS Y8, Y0, Y0
	VANDPS Y6, Y1, Y8
	VORPS Y5, Y8, Y8
	VADDPS Y8, Y1, Y1
	VANDPS Y6, Y2, Y8
	VORPS Y5, Y8, Y8
	VADDPS Y8, Y2, Y2
	VANDPS Y6, Y3, Y8
	VORPS Y5, Y8, Y8
	VADDPS Y8, Y3, Y3
	VCVTTPS2DQ Y0, Y0
	VCVTTPS2DQ Y1, Y1
	VCVTTPS2DQ Y2, Y2
	VCVTTPS2DQ Y3, Y3
	// Saturating packs work within 128-bit lanes; VPERMD restores order.
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VMOVDQU packperm<>(SB), Y9
	VPERMD Y0, Y9, Y0
	// -128 cannot arise from |x*id| <= 127, but the dot kernels rely on
	// its absence, so clamp anyway.
	VPMAXSB minus127<>(SB), Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ $128, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

DATA packperm<>+0(SB)/4, $0
DATA packperm<>+4(SB)/4, $4
DATA packperm<>+8(SB)/4, $1
DATA packperm<>+12(SB)/4, $5
DATA packperm<>+16(SB)/4, $2
DATA packperm<>+20(SB)/4, $6
DATA packperm<>+24(SB)/4, $3
DATA packperm<>+28(SB)/4, $7
GLOBL packperm<>(SB), RODATA|NOPTR, $32

DATA minus127<>+0(SB)/8, $0x8181818181818181
DATA minus127<>+8(SB)/8, $0x8181818181818181
DATA minus127<>+16(SB)/8, $0x8181818181818181
DATA minus127<>+24(SB)/8, $0x8181818181818181
GLOBL minus127<>(SB), RODATA|NOPTR, $32

// func axpyF16(y *float32, x *uint16, a float32, n int)
// y[i] += a*float32(x[i]) for i < n (a multiple of 16), x binary16.
TEXT ·axpyF16(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	VBROADCASTSS a+16(FP), Y0
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ done
loop:
	VCVTPH2PS (SI), Y3
	VCVTPH2PS 16(SI), Y4
	VMOVUPS (DI), Y1
	VMOVUPS 32(DI), Y2
	VFMADD231PS Y3, Y0, Y1
	VFMADD231PS Y4, Y0, Y2
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ $64, DI
	ADDQ $32, SI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func axpy4F32(y *float32, ldy int, x *float32, p *[4]float32, n int)
// y[r*ldy/4 + i] += p[r]*x[i] for r < 4, i < n (a multiple of 8); ldy in
// bytes. One load of x serves four output rows.
TEXT ·axpy4F32(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	MOVQ ldy+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ p+24(FP), DX
	MOVQ n+32(FP), CX
	LEAQ (R8)(R8*2), R9
	VBROADCASTSS 0(DX), Y0
	VBROADCASTSS 4(DX), Y1
	VBROADCASTSS 8(DX), Y2
	VBROADCASTSS 12(DX), Y3
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (SI), Y4
	VMOVUPS (DI), Y5
	VFMADD231PS Y4, Y0, Y5
	VMOVUPS Y5, (DI)
	VMOVUPS (DI)(R8*1), Y6
	VFMADD231PS Y4, Y1, Y6
	VMOVUPS Y6, (DI)(R8*1)
	VMOVUPS (DI)(R8*2), Y7
	VFMADD231PS Y4, Y2, Y7
	VMOVUPS Y7, (DI)(R8*2)
	VMOVUPS (DI)(R9*1), Y8
	VFMADD231PS Y4, Y3, Y8
	VMOVUPS Y8, (DI)(R9*1)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func maxF32(x *float32, n int) float32
// max x[i] for i < n (a multiple of 8, at least 8); NaNs are not expected.
TEXT ·maxF32(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVUPS (SI), Y0
	VMOVAPS Y0, Y1
	SHRQ $3, CX
loop:
	VMAXPS (SI), Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ loop
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func scaleF32(dst, x *float32, s float32, n int)
// dst[i] = x[i]*s for i < n (a multiple of 8).
TEXT ·scaleF32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	VBROADCASTSS s+16(FP), Y0
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ done
loop:
	VMULPS (SI), Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func sumSquaresF32(x *float32, n int) float64
// sum of float64(x[i]*x[i]) for i < n (a multiple of 8): the squares are
// rounded to float32 as in sumSquares, then accumulated in float64.
TEXT ·sumSquaresF32(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (SI), Y2
	VMULPS Y2, Y2, Y2
	VCVTPS2PD X2, Y3
	VEXTRACTF128 $1, Y2, X2
	VCVTPS2PD X2, Y4
	VADDPD Y3, Y0, Y0
	VADDPD Y4, Y1, Y1
	ADDQ $32, SI
	DECQ CX
	JNZ loop
done:
	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VMOVSD X0, ret+16(FP)
	VZEROUPPER
	RET

// func sums16(q *int8, s *int16, n int)
// s[g] = the sum of q[16g:16g+16] for g < n/16 (n a multiple of 32): the
// bytes offset by 128 and summed unsigned by VPSADBW, eight at a time,
// then the pairs added and 16·128 taken off.
TEXT ·sums16(SB), NOSPLIT, $0-24
	MOVQ q+0(FP), SI
	MOVQ s+8(FP), DI
	MOVQ n+16(FP), CX
	MOVL $0x80808080, AX
	VMOVD AX, X5
	VPBROADCASTD X5, Y5
	VPXOR Y4, Y4, Y4
	SHRQ $5, CX
	JZ done
loop:
	VPXOR (SI), Y5, Y0
	VPSADBW Y4, Y0, Y0
	VPSHUFD $0x4e, Y0, Y1
	VPADDQ Y1, Y0, Y0
	VMOVD X0, AX
	VEXTRACTI128 $1, Y0, X1
	VMOVD X1, BX
	SUBL $2048, AX
	SUBL $2048, BX
	MOVW AX, (DI)
	MOVW BX, 2(DI)
	ADDQ $32, SI
	ADDQ $4, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func sumF32(x *float32, n int) float64
// The sum of x[i] for i < n (a multiple of 8), in float64.
TEXT ·sumF32(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	SHRQ $3, CX
	JZ done
loop:
	VCVTPS2PD (SI), Y3
	VCVTPS2PD 16(SI), Y4
	VADDPD Y3, Y0, Y0
	VADDPD Y4, Y1, Y1
	ADDQ $32, SI
	DECQ CX
	JNZ loop
done:
	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VMOVSD X0, ret+16(FP)
	VZEROUPPER
	RET

// func mulScaleF32(dst, x, w *float32, s float32, n int)
// dst[i] = x[i]*s*w[i] (rounded in that order) for i < n (a multiple of 8).
TEXT ·mulScaleF32(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	VBROADCASTSS s+24(FP), Y0
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ done
loop:
	VMULPS (SI), Y0, Y1
	VMULPS (DX), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func addF32(dst, a, b *float32, n int)
// dst[i] = a[i] + b[i] for i < n (a multiple of 8).
TEXT ·addF32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (SI), Y0
	VADDPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func f32ToF16Row(dst *uint16, src *float32, n int)
// n a multiple of 16; rounds to nearest even (imm 0), as F32ToF16 except
// for NaN payloads, which the caller fixes.
TEXT ·f32ToF16Row(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ done
loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VCVTPS2PH $0, Y0, (DI)
	VCVTPS2PH $0, Y1, 16(DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// XOR2STEP folds 128 bytes at SI and 128 at DI into Y0-Y3 and moves on.
#define XOR2STEP \
	VPXOR (SI), Y0, Y0 \
	VPXOR 32(SI), Y1, Y1 \
	VPXOR 64(SI), Y2, Y2 \
	VPXOR 96(SI), Y3, Y3 \
	VPXOR (DI), Y0, Y0 \
	VPXOR 32(DI), Y1, Y1 \
	VPXOR 64(DI), Y2, Y2 \
	VPXOR 96(DI), Y3, Y3 \
	ADDQ $128, SI \
	ADDQ $128, DI

// func xorWords2(p, q *uint64, n, ahead int) uint64
// The xor of n words (a multiple of 16) at p and n at q, read side by
// side: two sequential streams. With ahead > 0 each step's four cache
// lines are asked for ahead bytes on (PREFETCHT0), as the decode kernels
// ask for their weights.
TEXT ·xorWords2(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ ahead+24(FP), DX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	SHRQ $4, CX
	JZ x2done
	TESTQ DX, DX
	JLE x2loop
x2ahead:
	PREFETCHT0 (SI)(DX*1)
	PREFETCHT0 64(SI)(DX*1)
	PREFETCHT0 (DI)(DX*1)
	PREFETCHT0 64(DI)(DX*1)
	XOR2STEP
	DECQ CX
	JNZ x2ahead
	JMP x2done
x2loop:
	XOR2STEP
	DECQ CX
	JNZ x2loop
x2done:
	VPXOR Y1, Y0, Y0
	VPXOR Y3, Y2, Y2
	VPXOR Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR X1, X0, X0
	VPSRLDQ $8, X0, X1
	VPXOR X1, X0, X0
	VMOVQ X0, ret+32(FP)
	VZEROUPPER
	RET

// func xorWords(p *uint64, n int) uint64
// The xor of p[i] for i < n (a multiple of 16): four 32-byte loads a
// step into independent accumulators, a streaming read.
TEXT ·xorWords(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	SHRQ $4, CX
	JZ xdone
xloop:
	VPXOR (SI), Y0, Y0
	VPXOR 32(SI), Y1, Y1
	VPXOR 64(SI), Y2, Y2
	VPXOR 96(SI), Y3, Y3
	ADDQ $128, SI
	DECQ CX
	JNZ xloop
xdone:
	VPXOR Y1, Y0, Y0
	VPXOR Y3, Y2, Y2
	VPXOR Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR X1, X0, X0
	VPSRLDQ $8, X0, X1
	VPXOR X1, X0, X0
	VMOVQ X0, ret+16(FP)
	VZEROUPPER
	RET

VEC8(expmask<>, 0x7f800000)

// func nonFiniteF32(x *float32, n int) bool
// Reports whether any of x[:n] (n a multiple of 32) is an infinity or a
// NaN: its exponent field all ones.
TEXT ·nonFiniteF32(SB), NOSPLIT, $0-17
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VPXOR Y0, Y0, Y0
	VMOVDQU expmask<>(SB), Y5
	SHRQ $5, CX
	JZ done
loop:
	VPAND (SI), Y5, Y1
	VPAND 32(SI), Y5, Y2
	VPAND 64(SI), Y5, Y3
	VPAND 96(SI), Y5, Y4
	VPCMPEQD Y5, Y1, Y1
	VPCMPEQD Y5, Y2, Y2
	VPCMPEQD Y5, Y3, Y3
	VPCMPEQD Y5, Y4, Y4
	VPOR Y1, Y2, Y2
	VPOR Y3, Y4, Y4
	VPOR Y2, Y0, Y0
	VPOR Y4, Y0, Y0
	ADDQ $128, SI
	DECQ CX
	JNZ loop
done:
	VPTEST Y0, Y0
	SETNE ret+16(FP)
	VZEROUPPER
	RET

// func subF32(dst, a, b *float32, n int)
TEXT ·subF32(SB), NOSPLIT, $0-32
	ARITH8(VSUBPS)

// func mulF32(dst, a, b *float32, n int)
TEXT ·mulF32(SB), NOSPLIT, $0-32
	ARITH8(VMULPS)

// func divF32(dst, a, b *float32, n int)
TEXT ·divF32(SB), NOSPLIT, $0-32
	ARITH8(VDIVPS)

// func nanF32(x *float32, n int) bool
// Reports whether any of x[:n] (n a multiple of 32) is a NaN.
TEXT ·nanF32(SB), NOSPLIT, $0-17
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VPXOR Y0, Y0, Y0
	SHRQ $5, CX
	JZ done
loop:
	VMOVUPS (SI), Y1
	VMOVUPS 32(SI), Y2
	VMOVUPS 64(SI), Y3
	VMOVUPS 96(SI), Y4
	VCMPPS $3, Y1, Y1, Y1
	VCMPPS $3, Y2, Y2, Y2
	VCMPPS $3, Y3, Y3, Y3
	VCMPPS $3, Y4, Y4, Y4
	VORPS Y1, Y2, Y2
	VORPS Y3, Y4, Y4
	VORPS Y2, Y0, Y0
	VORPS Y4, Y0, Y0
	ADDQ $128, SI
	DECQ CX
	JNZ loop
done:
	VPTEST Y0, Y0
	SETNE ret+16(FP)
	VZEROUPPER
	RET
