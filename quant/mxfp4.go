package quant

import "math"

// MXFP4 is the OCP Microscaling format with FP4 elements, as ggml stores it
// (gpt-oss's expert matrices): 32 elements in 17 bytes,
//
//	e uint8 | 16 bytes of 4-bit codes.      x = fp4(code) · 2^(e−127)
//
// e is an E8M0 exponent (no sign, no mantissa, bias 127) shared by the
// block. A code is an E2M1 number: a sign bit above three magnitude bits
// that name 0, 0.5, 1, 1.5, 2, 3, 4 or 6. The nibbles are split as in the
// legacy formats: byte j holds element j in its low nibble and element
// j+16 in its high nibble.
//
// ggml keeps the E2M1 values doubled, as the integers of [MXFP4Value], so
// that they fit an int8 dot product, and halves the scale to match:
// x = MXFP4Value(code) · [E8M0Half](e), with E8M0Half(e) = 2^(e−128).
// The products are exact (a small integer times a power of two) unless e
// is 253 or more, where the largest codes overflow to ±inf; ggml reads the
// spec's NaN encoding e = 0xFF as the number 2^127 like any other exponent,
// and so does this package.
//
// The quantizer is ggml's reference one: the block's exponent is
// floor(log2f(amax)) − 2 + 127, which puts the largest magnitude in
// [4, 8) times the element scale 2^(e−127) (so up to a quarter of it is
// lost to the clamp at 6), and each element takes the code whose value is
// nearest, the first in table order on ties (so +0 over −0, and a value
// midway between two levels goes to the smaller magnitude).

// mxfp4Bytes is the size of one block: the exponent and 16 bytes of codes.
const mxfp4Bytes = 1 + legacyHalf

// mxfp4Values holds the value of each FP4 (E2M1) code doubled, as ggml's
// kvalues_mxfp4 does. Codes 8…15 are the negatives of 0…7 (code 8 is −0,
// which is 0 here).
var mxfp4Values = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// MXFP4Value returns twice the value of the FP4 (E2M1) code in the low four
// bits of code, as ggml's kvalues_mxfp4 table holds it: code c means
// MXFP4Value(c)/2, from 0 to ±6 (−12 … 12 doubled). Code 8, −0, gives 0.
func MXFP4Value(code byte) int8 { return mxfp4Values[code&15] }

// E8M0Half returns half the value of the E8M0 exponent e, 2^(e−128), exactly:
// the scale that multiplies the doubled values of [MXFP4Value]. e = 0 and 1
// give the float32 subnormals 2^−128 and 2^−127; e = 255 gives 2^127 (ggml
// does not treat it as NaN).
func E8M0Half(e uint8) float32 {
	if e < 2 {
		// Below the float32 normal range: the single mantissa bit that
		// stands for 2^-128 (bit 21) or 2^-127 (bit 22).
		return math.Float32frombits(1 << (21 + e))
	}
	// 2^(e-128) has the biased float32 exponent e-128+127 = e-1.
	return math.Float32frombits(uint32(e-1) << 23)
}

func dequantizeMXFP4(dst []float32, src []byte) {
	for len(dst) >= legacyElems && len(src) >= mxfp4Bytes {
		d := E8M0Half(src[0])
		qs := (*[legacyHalf]byte)(src[1:mxfp4Bytes])
		y := dst[:legacyElems]
		for j, q := range qs {
			y[j] = float32(mxfp4Values[q&0xf]) * d
			y[j+legacyHalf] = float32(mxfp4Values[q>>4]) * d
		}
		dst, src = dst[legacyElems:], src[mxfp4Bytes:]
	}
}

func quantizeMXFP4(dst []byte, src []float32) {
	for len(src) >= legacyElems && len(dst) >= mxfp4Bytes {
		x := src[:legacyElems]
		var amax float32
		for _, v := range x {
			// A NaN never compares greater, so it never becomes amax.
			if a := abs32(v); amax < a {
				amax = a
			}
		}
		var e uint8
		if amax > 0 {
			e = mxfp4Exponent(amax)
		}
		dst[0] = e
		qs := dst[1:mxfp4Bytes]
		if inv := math.Ldexp(1, 128-int(e)); e <= 252 && float64(amax)*inv < 16 {
			// The exponent fits amax (as it does unless amax is
			// infinite, or below 2^-125, or so close to the float32
			// maximum that 8·E8M0Half(e) overflows): the midpoints give
			// the search's codes.
			for j := range qs {
				qs[j] = nearestFP4Midpoints(x[j], inv) | nearestFP4Midpoints(x[j+legacyHalf], inv)<<4
			}
		} else {
			d := E8M0Half(e)
			for j := range qs {
				qs[j] = nearestFP4(x[j], d) | nearestFP4(x[j+legacyHalf], d)<<4
			}
		}
		src, dst = src[legacyElems:], dst[mxfp4Bytes:]
	}
}

// mxfp4Exponent is ggml's (uint8_t)(floorf(log2f(amax)) - 2 + 127) for
// amax > 0.
//
// log2f is rounded to float32 before the floor, which matters just below a
// power of two: log2(2^k·(1−2^−24)) rounds up to k itself when |k| ≥ 4, so
// such an amax takes the exponent of 2^k. Rounding the float64 logarithm
// to float32 reproduces that (glibc's log2f is correctly rounded there).
//
// The cast is undefined in C when the result is outside 0…255: for amax
// below 2^−125 (the exponent goes down to −24 for the smallest subnormal)
// and for +inf. This does what x86-64 compilers emit for it, a truncating
// conversion to a signed integer whose low byte is kept: −24 becomes 232,
// and infinity, whose conversion gives the "integer indefinite"
// 0x80000000, becomes 0. Such blocks decode to nonsense in ggml and here
// alike, and identically.
func mxfp4Exponent(amax float32) uint8 {
	if math.IsInf(float64(amax), 1) {
		return 0
	}
	l := float32(math.Log2(float64(amax)))
	f := float32(math.Floor(float64(l))) - 2 + 127
	return uint8(int32(f))
}

// fp4Midpoints are the midpoints between consecutive doubled E2M1
// magnitudes 0, 1, 2, 3, 4, 6, 8, 12.
var fp4Midpoints = [7]float64{0.5, 1.5, 2.5, 3.5, 5, 7, 10}

// nearestFP4Midpoints is nearestFP4 for x within 16 times the scale
// d = 1/inv, every candidate finite (e ≤ 252): it counts the midpoints
// strictly below |x|/d instead of comparing sixteen distances, and
// TestNearestFP4Midpoints checks that the two agree. They do because the
// search's float32 distances are exact for the two levels around x (both
// lie within a factor of two of x, or one is 0), and the other distances,
// at least d longer and at most 28d, cannot round down to the shortest: so
// the search picks the nearest level, the smaller magnitude on a tie. (For
// x far beyond 12d the long distances do round together, and the search's
// first-in-table-order rule picks a smaller level than the nearest; ggml
// meets that only in blocks whose exponent does not fit, which quantizeMXFP4
// leaves to the search.) A negative x takes the negative code of a nonzero
// level; zero is code 0, never −0; a NaN (every distance NaN) is code 0.
func nearestFP4Midpoints(x float32, inv float64) byte {
	t := math.Abs(float64(x)) * inv // exact: inv is a power of two
	if t != t {
		return 0
	}
	var c byte
	for _, m := range fp4Midpoints {
		if t > m {
			c++
		}
	}
	if c > 0 && x < 0 {
		c |= 8
	}
	return c
}

// nearestFP4 returns the code whose value mxfp4Values[c]·d is nearest to x,
// the first on ties; a NaN x gets code 0. The products are rounded to
// float32 before the subtraction, as in C: a fused multiply-add would turn
// an overflowed ±inf product into a finite difference.
func nearestFP4(x, d float32) byte {
	best := byte(0)
	bestErr := abs32(float32(float32(mxfp4Values[0])*d) - x)
	for c := 1; c < len(mxfp4Values); c++ {
		if err := abs32(float32(float32(mxfp4Values[c])*d) - x); err < bestErr {
			best, bestErr = byte(c), err
		}
	}
	return best
}
