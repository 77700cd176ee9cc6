package kernels

import "math"

// RMSNorm writes dst[i] = x[i] / sqrt(mean(x²) + eps) * weight[i] for the
// len(x) elements of x; a nil weight means all ones. dst may be x. It
// rounds as ops.RMSNorm's body does: each square, and the sum of squares
// (taken in float64), to float32, which overflows to +Inf past
// float32's range (the output is then ±0, or NaN where x is infinite);
// the mean as that sum times 1/n rounded to float32, then plus eps; the
// reciprocal root and each product x[i]·r to float32.
func RMSNorm(dst, x, weight []float32, eps float32) error {
	n := len(x)
	if len(dst) < n {
		return errShort("RMSNorm", "dst", len(dst), n)
	}
	if weight != nil && len(weight) < n {
		return errShort("RMSNorm", "weight", len(weight), n)
	}
	if n == 0 {
		return nil
	}
	mean := float32(sumSquaresVec(x)) * float32(1/float64(n))
	inv := float32(1 / math.Sqrt(float64(mean+eps)))
	dst = dst[:n]
	if weight == nil {
		scaleVec(dst, x, inv)
		return nil
	}
	mulScaleVec(dst, x, weight, inv)
	return nil
}

// mulScaleGo sets dst[i] = x[i]*s*w[i], rounding the first product.
func mulScaleGo(dst, x, w []float32, s float32) {
	x, w = x[:len(dst)], w[:len(dst)]
	for i := range dst {
		dst[i] = float32(x[i]*s) * w[i]
	}
}

// sumSquares accumulates in float64 so long rows lose nothing.
func sumSquares(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := (*[4]float32)(x[i : i+4])
		// Each square is rounded to float32, as the assembly computes it.
		s0 += float64(v[0] * v[0])
		s1 += float64(v[1] * v[1])
		s2 += float64(v[2] * v[2])
		s3 += float64(v[3] * v[3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i] * x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// Sum returns the sum of x in float64: four or eight partial sums, added
// at the end (the order differs from a sequential sum by float64
// rounding, far below a float32 result's).
func Sum(x []float32) float64 { return sumVec(x) }

func sumGo(x []float32) float64 {
	var s [4]float64
	for i, v := range x {
		s[i&3] += float64(v)
	}
	return (s[0] + s[1]) + (s[2] + s[3])
}

func scaleTo(dst, x []float32, s float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = x[i] * s
	}
}

// Softmax replaces x with exp(x-max)/sum(exp(x-max)), as ops.Softmax
// defines it: elements equal to -inf become 0; a row holding a NaN or
// +inf, or only -inf, becomes all NaN (exp(x-max) is NaN for every
// element of it).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	m := maxVec(x)
	if math.IsInf(float64(m), 0) || hasNaN(x) {
		for i := range x {
			x[i] = float32(math.NaN())
		}
		return
	}
	sum := expSubSumVec(x, m)
	scaleVec(x, x, 1/sum)
}

// hasNaNGo reports whether x holds a NaN (maxVec may miss one).
func hasNaNGo(x []float32) bool {
	for _, v := range x {
		if v != v {
			return true
		}
	}
	return false
}

// SiLUMul writes dst[i] = silu(gate[i]) * up[i] (SwiGLU's gating) for the
// len(dst) elements of dst. dst may alias gate or up.
func SiLUMul(dst, gate, up []float32) error {
	n := len(dst)
	if len(gate) < n || len(up) < n {
		return errShort("SiLUMul", "input", min(len(gate), len(up)), n)
	}
	siluMulVec(dst, gate[:n], up[:n])
	return nil
}

func siluMulGo(dst, gate, up []float32) {
	gate, up = gate[:len(dst)], up[:len(dst)]
	for i := range dst {
		g := gate[i]
		dst[i] = g / (1 + expf(-g)) * up[i]
	}
}

// Add writes dst[i] = a[i] + b[i] for the len(dst) elements of dst; dst may
// alias a or b.
func Add(dst, a, b []float32) error {
	n := len(dst)
	if len(a) < n || len(b) < n {
		return errShort("Add", "input", min(len(a), len(b)), n)
	}
	addVec(dst, a[:n], b[:n])
	return nil
}

// HasNonFinite reports whether x holds an infinity or a NaN.
func HasNonFinite(x []float32) bool { return nonFiniteVec(x) }

// ArgMax returns the index of x's largest value, the lowest on ties; a
// NaN never wins (x of NaNs only, or empty: 0). Over finite values it
// takes the maximum through the vector kernels and then looks for its
// first place: a greedy pick over a 128,256-entry vocabulary took about
// 100 us in one scalar pass, a token's half percent of a 1B decode step.
func ArgMax(x []float32) int {
	if len(x) == 0 {
		return 0
	}
	if nonFiniteVec(x) {
		best := 0
		for i, v := range x {
			if v > x[best] || x[best] != x[best] && v == v {
				best = i
			}
		}
		return best
	}
	m := maxVec(x)
	for i, v := range x {
		if v == m {
			return i
		}
	}
	return 0
}

// ArithOp is the operator of [Arith].
type ArithOp uint8

// The operators of [Arith].
const (
	ArithAdd ArithOp = iota
	ArithSub
	ArithMul
	ArithDiv
)

// Arith writes dst[i] = a[i] op b[i] for the len(dst) elements of dst,
// rounded as Go's float32 operators round (IEEE 754, to nearest even);
// dst may alias a or b. Elementwise programs run their arithmetic on it.
func Arith(op ArithOp, dst, a, b []float32) error {
	n := len(dst)
	if len(a) < n || len(b) < n {
		return errShort("Arith", "input", min(len(a), len(b)), n)
	}
	if op > ArithDiv {
		return sizeError("Arith", "unknown operator %d", op)
	}
	arithVec(op, dst, a[:n], b[:n])
	return nil
}

func arithGo(op ArithOp, dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	switch op {
	case ArithAdd:
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	case ArithSub:
		for i := range dst {
			dst[i] = a[i] - b[i]
		}
	case ArithMul:
		for i := range dst {
			dst[i] = a[i] * b[i]
		}
	default:
		for i := range dst {
			dst[i] = a[i] / b[i]
		}
	}
}

func addGo(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

// expf is a float32 exp with a relative error below 1e-6 over the finite
// range: 2^n·p(r) with r = x - n·ln2 in [-ln2/2, ln2/2] and a degree-6
// polynomial. Below -87.3 it returns 0 and above 88.7 +inf.
func expf(x float32) float32 {
	switch {
	case x < -87.33654:
		return 0
	case x > 88.72283:
		return float32(math.Inf(1))
	case x != x:
		return x
	}
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693145751953125
		ln2lo = 1.42860682030941723212e-6
	)
	// Round half away from zero without math.Round.
	t := x * log2e
	var n int32
	if t >= 0 {
		n = int32(t + 0.5)
	} else {
		n = int32(t - 0.5)
	}
	fn := float32(n)
	r := x - fn*ln2hi - fn*ln2lo
	p := 1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720))))))
	// 2^n may be a subnormal for n < -126: split it in two factors.
	if n < -126 {
		return p * math.Float32frombits(uint32(n+127+64)<<23) * (1.0 / (1 << 64))
	}
	if n > 127 {
		return p * 2 * math.Float32frombits(uint32(n-1+127)<<23)
	}
	return p * math.Float32frombits(uint32(n+127)<<23)
}

// RoPETable fills cos[i] and sin[i], i < len(cos), with the rotation of pair
// i at position pos: angle = pos * base^(-2i/dims), where dims is the number
// of rotated dimensions (2*len(cos) for the usual full rotation).
func RoPETable(cos, sin []float32, pos int, base float64, dims int) error {
	if len(sin) < len(cos) {
		return errShort("RoPETable", "sin", len(sin), len(cos))
	}
	if dims <= 0 {
		return sizeError("RoPETable", "rotation over %d dimensions", dims)
	}
	for i := range cos {
		theta := float64(pos) * math.Pow(base, -2*float64(i)/float64(dims))
		s, c := math.Sincos(theta)
		cos[i], sin[i] = float32(c), float32(s)
	}
	return nil
}

// RoPE rotates each head of x (heads of headDim elements, back to back) in
// place by the angles in cos and sin (as from [RoPETable]). Only the first
// 2*len(cos) dimensions of each head rotate. With neox false, pairs are
// adjacent elements (2i, 2i+1), as llama.cpp's normal mode; with neox true,
// pair i is (i, i+len(cos)), as its NeoX mode. Each product is rounded to
// float32 before the sum or difference (no fused multiply-add), as
// ops.RoPE's body computes it.
func RoPE(x []float32, headDim int, cos, sin []float32, neox bool) error {
	half := len(cos)
	if len(sin) < half {
		return errShort("RoPE", "sin", len(sin), half)
	}
	if headDim <= 0 || 2*half > headDim || len(x)%headDim != 0 {
		return sizeError("RoPE", "%d rotated dims over heads of %d in %d elements", 2*half, headDim, len(x))
	}
	sin = sin[:half]
	for h := 0; h < len(x); h += headDim {
		v := x[h : h+2*half]
		if neox {
			lo, hi := v[:half], v[half:2*half]
			for i, c := range cos {
				s := sin[i]
				a, b := lo[i], hi[i]
				lo[i] = float32(a*c) - float32(b*s)
				hi[i] = float32(a*s) + float32(b*c)
			}
			continue
		}
		for i, c := range cos {
			s := sin[i]
			p := (*[2]float32)(v[2*i : 2*i+2])
			a, b := p[0], p[1]
			p[0] = float32(a*c) - float32(b*s)
			p[1] = float32(a*s) + float32(b*c)
		}
	}
	return nil
}

// XorWords returns the xor of every word of x, read with the widest loads
// the kernel level has: a streaming read no compiler can leave out, for
// measuring the machine's read bandwidth.
func XorWords(x []uint64) uint64 { return xorVec(x) }

// XorWordsPair is the xor of every word of x and of y, their common
// length read side by side as two sequential streams: one core reads more
// from DRAM that way (a sixth more on Zen 5) than through one stream, as
// the decode kernels read their weights.
func XorWordsPair(x, y []uint64) uint64 { return XorWordsPairAhead(x, y, 0) }

// XorWordsPairAhead is XorWordsPair with each stream's cache lines asked
// for ahead bytes before they are read (software prefetch, where the
// kernel level has it; ahead <= 0 asks for none), as the decode kernels
// ask for their weights: on the Intel Xeon two threads read about a tenth
// more that way than through the hardware prefetchers alone.
func XorWordsPairAhead(x, y []uint64, ahead int) uint64 {
	n := min(len(x), len(y))
	return xorPairVec(x[:n], y[:n], ahead) ^ xorVec(x[n:]) ^ xorVec(y[n:])
}

func xorGo(x []uint64) uint64 {
	var s [4]uint64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s[0] ^= x[i]
		s[1] ^= x[i+1]
		s[2] ^= x[i+2]
		s[3] ^= x[i+3]
	}
	for ; i < len(x); i++ {
		s[0] ^= x[i]
	}
	return s[0] ^ s[1] ^ s[2] ^ s[3]
}

// ExpInRange writes dst[i] = e^x[i] for the len(x) elements of x, within
// 1e-6 relative, when every one lies in (-87, 88) (where e^x is a normal
// float32), and reports whether it did; a NaN or a value outside leaves
// dst as it was and returns false, for a caller whose exp must treat them
// as the definition does. dst may alias x.
func ExpInRange(dst, x []float32) bool {
	if len(dst) < len(x) || !inRange(x, -87, 88) {
		return false
	}
	expVec(dst[:len(x)], x)
	return true
}

// SiLUMulInRange is [SiLUMul] when every gate lies in (-88, 87), where
// e^-gate is a normal float32, and reports whether it wrote dst: each
// element as the definition's operations give it in float32 (negate, exp
// within 1e-6 as [ExpInRange], add one, divide, multiply); a NaN, an
// infinity or a gate outside leaves dst as it was. dst may alias gate or
// up.
func SiLUMulInRange(dst, gate, up []float32) bool {
	n := len(dst)
	if len(gate) < n || len(up) < n || !inRange(gate[:n], -88, 87) {
		return false
	}
	siluMulVec(dst, gate[:n], up[:n])
	return true
}

func inRangeGo(x []float32, lo, hi float32) bool {
	for _, v := range x {
		if !(v > lo && v < hi) {
			return false
		}
	}
	return true
}
