package kernels

import (
	"math"
	"unsafe"
)

//go:noescape
func axpyF32(y *float32, x *float32, a float32, n int)

//go:noescape
func f16ToF32Row(dst *float32, src *uint16, n int)

//go:noescape
func xorWords(p *uint64, n int) uint64

//go:noescape
func nonFiniteF32(x *float32, n int) bool

//go:noescape
func nanF32(x *float32, n int) bool

// hasNaN reports whether x holds a NaN.
func hasNaN(x []float32) bool { return scan32(x, nanF32, hasNaNGo) }

// nonFiniteVec reports whether x holds an infinity or a NaN.
func nonFiniteVec(x []float32) bool { return scan32(x, nonFiniteF32, nonFiniteGo) }

// scan32 runs a scan for some kind of value over x: the assembly over
// whole 32-element runs when it is on, the Go loop over the rest.
func scan32(x []float32, vec func(*float32, int) bool, tail func([]float32) bool) bool {
	n32 := len(x) &^ 31
	if !useAsm {
		n32 = 0
	}
	if n32 > 0 && vec(&x[0], n32) {
		return true
	}
	return tail(x[n32:])
}

//go:noescape
func xorWords2(p, q *uint64, n, ahead int) uint64

// xorPairVec is xorVec of x and y (of one length) read side by side,
// asking for the lines ahead bytes on when ahead > 0.
func xorPairVec(x, y []uint64, ahead int) uint64 {
	y = y[:len(x)]
	n16 := len(x) &^ 15
	if !useAsm || n16 == 0 {
		return xorGo(x) ^ xorGo(y)
	}
	return xorWords2(&x[0], &y[0], n16, ahead) ^ xorGo(x[n16:]) ^ xorGo(y[n16:])
}

// xorVec is xorGo through the assembly when it is on.
func xorVec(x []uint64) uint64 {
	n16 := len(x) &^ 15
	if !useAsm || n16 == 0 {
		return xorGo(x)
	}
	return xorWords(&x[0], n16) ^ xorGo(x[n16:])
}

// dotVec is dotF32 through the assembly when it is on.
func dotVec(a, b []float32) float32 {
	n16 := len(a) &^ 15
	if !useAsm || n16 == 0 {
		return dotF32(a, b)
	}
	b = b[:len(a)]
	s := dotF32x1x1(&b[0], unsafePointer(&a[0]), n16)
	if n16 < len(a) {
		s += dotF32(a[n16:], b[n16:])
	}
	return s
}

// axpyVec is axpy through the assembly when it is on.
func axpyVec(y, x []float32, a float32) {
	n16 := len(y) &^ 15
	if !useAsm || n16 == 0 {
		axpy(y, x, a)
		return
	}
	x = x[:len(y)]
	axpyF32(&y[0], &x[0], a, n16)
	if n16 < len(y) {
		axpy(y[n16:], x[n16:], a)
	}
}

// f16RowVec converts with VCVTPH2PS when the assembly is on.
func f16RowVec(dst []float32, src []uint16) bool {
	n16 := len(src) &^ 15
	if !useAsm || n16 == 0 {
		return false
	}
	dst = dst[:len(src)]
	f16ToF32Row(&dst[0], &src[0], n16)
	t := f16Table
	for i := n16; i < len(src); i++ {
		dst[i] = t[src[i]]
	}
	return true
}

//go:noescape
func expSubSum(dst, src *float32, n int, sub float32) float32

//go:noescape
func siluMulF32(dst, gate, up *float32, n int)

// expSubSumVec sets x[i] = exp(x[i]-sub) and returns the sum.
func expSubSumVec(x []float32, sub float32) float32 {
	n8 := len(x) &^ 7
	var s float32
	if useAsm && n8 > 0 {
		s = expSubSum(&x[0], &x[0], n8, sub)
	} else {
		n8 = 0
	}
	for i := n8; i < len(x); i++ {
		e := expf(x[i] - sub)
		x[i] = e
		s += e
	}
	return s
}

// siluMulVec is SiLUMul's loop; the lengths are checked by the caller.
func siluMulVec(dst, gate, up []float32) {
	n8 := len(dst) &^ 7
	if useAsm && n8 > 0 {
		siluMulF32(&dst[0], &gate[0], &up[0], n8)
	} else {
		n8 = 0
	}
	siluMulGo(dst[n8:], gate[n8:], up[n8:])
}

//go:noescape
func absMaxF32(x *float32, n int) float32

//go:noescape
func inRangeF32(x *float32, n int, lo, hi float32) bool

// inRange reports whether every element of x lies in (lo, hi).
func inRange(x []float32, lo, hi float32) bool {
	n8 := len(x) &^ 7
	if useAsm && n8 > 0 {
		if !inRangeF32(&x[0], n8, lo, hi) {
			return false
		}
	} else {
		n8 = 0
	}
	return inRangeGo(x[n8:], lo, hi)
}

//go:noescape
func quantRound(q *int8, x *float32, n int, id float32)

//go:noescape
func sums16(q *int8, s *int16, n int)

// quantizeBlockVec is quantizeBlock through the assembly when it is on and
// len(x) is a multiple of 32; the results are identical.
func quantizeBlockVec(q []int8, x []float32, bs []int16) float32 {
	if !useAsm || len(x)%32 != 0 || len(x) == 0 {
		return quantizeBlock(q, x, bs)
	}
	q = q[:len(x)]
	amax := absMaxF32(&x[0], len(x))
	if amax == 0 {
		clear(q)
		clear(bs[:len(x)/16])
		return 0
	}
	quantRound(&q[0], &x[0], len(x), 127/amax)
	sums16(&q[0], &bs[0], len(x))
	return amax / 127
}

//go:noescape
func axpyF16(y *float32, x *uint16, a float32, n int)

// dotVecF16 returns sum a[i]*float32(h[i]) over len(a) elements.
func dotVecF16(a []float32, h []uint16) float32 {
	h = h[:len(a)]
	n16 := len(a) &^ 15
	var s float32
	if useAsm && n16 > 0 {
		s = dotF16x1x1(&a[0], unsafe.Pointer(&h[0]), n16)
	} else {
		n16 = 0
	}
	t := f16Table
	for i := n16; i < len(a); i++ {
		s += a[i] * t[h[i]]
	}
	return s
}

// axpyVecF16 adds c*float32(h[i]) to y[i].
func axpyVecF16(y []float32, h []uint16, c float32) {
	h = h[:len(y)]
	n16 := len(y) &^ 15
	if useAsm && n16 > 0 {
		axpyF16(&y[0], &h[0], c, n16)
	} else {
		n16 = 0
	}
	t := f16Table
	for i := n16; i < len(y); i++ {
		y[i] += c * t[h[i]]
	}
}

//go:noescape
func axpy4F32(y *float32, ldy int, x *float32, p *[4]float32, n int)

// dot4Heads returns the dots of k (d elements) with the four rows q[0:d],
// q[d:2d], q[2d:3d], q[3d:4d].
func dot4Heads(k, q []float32, d int, o *[4]float32) {
	k, q = k[:d], q[:4*d]
	n16 := d &^ 15
	if useAsm && n16 > 0 {
		dotF32x1x4(&k[0], unsafe.Pointer(&q[0]), 4*d, n16, o)
	} else {
		n16 = 0
		*o = [4]float32{}
	}
	if n16 < d {
		s0, s1, s2, s3 := dot4F32(k[n16:], q[n16:d], q[d+n16:2*d], q[2*d+n16:3*d], q[3*d+n16:4*d])
		o[0] += s0
		o[1] += s1
		o[2] += s2
		o[3] += s3
	}
}

// axpy4Heads adds p[r]*v to the four rows out[r*d:(r+1)*d].
func axpy4Heads(out, v []float32, d int, p *[4]float32) {
	out, v = out[:4*d], v[:d]
	n8 := d &^ 7
	if useAsm && n8 > 0 {
		axpy4F32(&out[0], 4*d, &v[0], p, n8)
	} else {
		n8 = 0
	}
	if n8 < d {
		for r := range 4 {
			axpy(out[r*d+n8:(r+1)*d], v[n8:], p[r])
		}
	}
}

//go:noescape
func maxF32(x *float32, n int) float32

//go:noescape
func scaleF32(dst, x *float32, s float32, n int)

// maxVec returns the largest element of x (-inf for an empty x); with a NaN
// in x the result is unspecified.
func maxVec(x []float32) float32 {
	n8 := len(x) &^ 7
	m := float32(math.Inf(-1))
	if useAsm && n8 > 0 {
		m = maxF32(&x[0], n8)
	} else {
		n8 = 0
	}
	for _, v := range x[n8:] {
		if v > m {
			m = v
		}
	}
	return m
}

// scaleVec sets dst[i] = x[i]*s for the len(dst) elements of dst.
func scaleVec(dst, x []float32, s float32) {
	x = x[:len(dst)]
	n8 := len(dst) &^ 7
	if useAsm && n8 > 0 {
		scaleF32(&dst[0], &x[0], s, n8)
	} else {
		n8 = 0
	}
	scaleTo(dst[n8:], x[n8:], s)
}

//go:noescape
func sumSquaresF32(x *float32, n int) float64

//go:noescape
func mulScaleF32(dst, x, w *float32, s float32, n int)

//go:noescape
func addF32(dst, a, b *float32, n int)

//go:noescape
func subF32(dst, a, b *float32, n int)

//go:noescape
func mulF32(dst, a, b *float32, n int)

//go:noescape
func divF32(dst, a, b *float32, n int)

// arithVec is arithGo through the assembly when it is on.
func arithVec(op ArithOp, dst, a, b []float32) {
	n8 := len(dst) &^ 7
	if useAsm && n8 > 0 {
		a, b = a[:len(dst)], b[:len(dst)]
		switch op {
		case ArithAdd:
			addF32(&dst[0], &a[0], &b[0], n8)
		case ArithSub:
			subF32(&dst[0], &a[0], &b[0], n8)
		case ArithMul:
			mulF32(&dst[0], &a[0], &b[0], n8)
		default:
			divF32(&dst[0], &a[0], &b[0], n8)
		}
	} else {
		n8 = 0
	}
	arithGo(op, dst[n8:], a[n8:], b[n8:])
}

// sumSquaresVec is sumSquares through the assembly when it is on.
func sumSquaresVec(x []float32) float64 {
	n8 := len(x) &^ 7
	if !useAsm || n8 == 0 {
		return sumSquares(x)
	}
	return sumSquaresF32(&x[0], n8) + sumSquares(x[n8:])
}

//go:noescape
func sumF32(x *float32, n int) float64

func sumVec(x []float32) float64 {
	n8 := len(x) &^ 7
	if !useAsm || n8 == 0 {
		return sumGo(x)
	}
	return sumF32(&x[0], n8) + sumGo(x[n8:])
}

// mulScaleVec sets dst[i] = x[i]*s*w[i]; x and w are at least len(dst) long.
func mulScaleVec(dst, x, w []float32, s float32) {
	n8 := len(dst) &^ 7
	if useAsm && n8 > 0 {
		x, w = x[:len(dst)], w[:len(dst)]
		mulScaleF32(&dst[0], &x[0], &w[0], s, n8)
	} else {
		n8 = 0
	}
	mulScaleGo(dst[n8:], x[n8:], w[n8:], s)
}

// addVec sets dst[i] = a[i]+b[i]; a and b are at least len(dst) long.
func addVec(dst, a, b []float32) {
	n8 := len(dst) &^ 7
	if useAsm && n8 > 0 {
		a, b = a[:len(dst)], b[:len(dst)]
		addF32(&dst[0], &a[0], &b[0], n8)
	} else {
		n8 = 0
	}
	addGo(dst[n8:], a[n8:], b[n8:])
}

//go:noescape
func f32ToF16Row(dst *uint16, src *float32, n int)

// f32ToF16RowVec converts with VCVTPS2PH when the assembly is on; it
// reports whether it did.
func f32ToF16RowVec(dst []uint16, src []float32) bool {
	n16 := len(src) &^ 15
	if !useAsm || n16 == 0 {
		return false
	}
	dst = dst[:len(src)]
	f32ToF16Row(&dst[0], &src[0], n16)
	for i, f := range src[:n16] {
		if f != f { // NaN: VCVTPS2PH keeps payload bits; F32ToF16 does not
			dst[i] = F32ToF16(f)
		}
	}
	for i := n16; i < len(src); i++ {
		dst[i] = F32ToF16(src[i])
	}
	return true
}

// expVec sets dst[i] = exp(x[i]) (the lengths equal).
func expVec(dst, x []float32) {
	n8 := len(x) &^ 7
	if useAsm && n8 > 0 {
		expSubSum(&dst[0], &x[0], n8, 0)
	} else {
		n8 = 0
	}
	for i := n8; i < len(x); i++ {
		dst[i] = expf(x[i])
	}
}
