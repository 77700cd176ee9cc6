//go:build !amd64

package kernels

import "math"

func dotVec(a, b []float32) float32              { return dotF32(a, b) }
func axpyVec(y, x []float32, a float32)          { axpy(y, x, a) }
func f16RowVec(dst []float32, src []uint16) bool { return false }
func xorVec(x []uint64) uint64                   { return xorGo(x) }
func nonFiniteVec(x []float32) bool              { return nonFiniteGo(x) }
func hasNaN(x []float32) bool                    { return hasNaNGo(x) }
func xorPairVec(x, y []uint64, _ int) uint64     { return xorGo(x) ^ xorGo(y[:len(x)]) }

func expSubSumVec(x []float32, sub float32) float32 {
	var s float32
	for i, v := range x {
		e := expf(v - sub)
		x[i] = e
		s += e
	}
	return s
}

func siluMulVec(dst, gate, up []float32) { siluMulGo(dst, gate, up) }

func quantizeBlockVec(q []int8, x []float32, bs []int16) float32 { return quantizeBlock(q, x, bs) }

func dotVecF16(a []float32, h []uint16) float32 {
	h = h[:len(a)]
	t := f16Table
	var s float32
	for i, v := range a {
		s += v * t[h[i]]
	}
	return s
}

func axpyVecF16(y []float32, h []uint16, c float32) {
	h = h[:len(y)]
	t := f16Table
	for i := range y {
		y[i] += c * t[h[i]]
	}
}

func dot4Heads(k, q []float32, d int, o *[4]float32) {
	k, q = k[:d], q[:4*d]
	o[0], o[1], o[2], o[3] = dot4F32(k, q[:d], q[d:2*d], q[2*d:3*d], q[3*d:4*d])
}

func axpy4Heads(out, v []float32, d int, p *[4]float32) {
	for r := range 4 {
		axpy(out[r*d:(r+1)*d], v[:d], p[r])
	}
}

func maxVec(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

func scaleVec(dst, x []float32, s float32) { scaleTo(dst, x, s) }

func sumSquaresVec(x []float32) float64          { return sumSquares(x) }
func sumVec(x []float32) float64                 { return sumGo(x) }
func mulScaleVec(dst, x, w []float32, s float32) { mulScaleGo(dst, x, w, s) }
func addVec(dst, a, b []float32)                 { addGo(dst, a, b) }
func arithVec(op ArithOp, dst, a, b []float32)   { arithGo(op, dst, a, b) }

func f32ToF16RowVec(dst []uint16, src []float32) bool { return false }

func inRange(x []float32, lo, hi float32) bool { return inRangeGo(x, lo, hi) }

func expVec(dst, x []float32) {
	for i, v := range x {
		dst[i] = expf(v)
	}
}
