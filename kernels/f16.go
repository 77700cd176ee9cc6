package kernels

import "math"

// f16Table maps every binary16 bit pattern to its exact binary32 value; a
// table lookup is several times faster than bit manipulation in Go.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = f16ToF32Bits(uint16(i))
	}
	return &t
}()

// f16ToF32Bits converts one binary16 value exactly, subnormals included.
func f16ToF32Bits(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: mant * 2^-24, exact in binary32.
	f := float32(mant) * (1.0 / (1 << 24))
	return math.Float32frombits(sign | math.Float32bits(f))
}

// F16ToF32 returns the binary32 value of the binary16 bit pattern h (exact).
func F16ToF32(h uint16) float32 { return f16Table[h] }

// F32ToF16 rounds f to the nearest binary16 (ties to even), producing
// subnormals and ±inf on overflow; a NaN becomes 0x7E00 with its sign.
func F32ToF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000:
		return sign | 0x7e00
	case a >= 0x477ff000: // 65520 and above round to inf
		return sign | 0x7c00
	case a >= 0x38800000: // normal binary16
		a -= 112 << 23
		return sign | uint16((a+0xfff+(a>>13)&1)>>13)
	}
	// Subnormal or zero: adding 0.5 rounds to a multiple of 2^-24 (the ulp
	// of binary32 in [0.5,1)) with ties to even.
	r := math.Float32frombits(a) + 0.5
	return sign | uint16(math.Float32bits(r)-0x3f000000)
}

// BF16ToF32 returns the binary32 value of the bfloat16 bit pattern b.
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F32ToBF16 rounds f to bfloat16 with ties to even, keeping subnormals; a NaN
// keeps its top bits and is made quiet.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// F16RowToF32 converts min(len(dst), len(src)) binary16 values to binary32.
func F16RowToF32(dst []float32, src []uint16) {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	if f16RowVec(dst, src) {
		return
	}
	t := f16Table
	for i, h := range src {
		dst[i] = t[h]
	}
}

// F32RowToF16 converts min(len(dst), len(src)) values to binary16 with
// [F32ToF16]'s rounding.
func F32RowToF16(dst []uint16, src []float32) {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	if f32ToF16RowVec(dst, src) {
		return
	}
	for i, f := range src {
		dst[i] = F32ToF16(f)
	}
}

// BF16RowToF32 converts min(len(dst), len(src)) bfloat16 values to binary32.
func BF16RowToF32(dst []float32, src []uint16) {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}

// F32RowToBF16 converts min(len(dst), len(src)) values to bfloat16 with
// [F32ToBF16]'s rounding.
func F32RowToBF16(dst []uint16, src []float32) {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i, f := range src {
		dst[i] = F32ToBF16(f)
	}
}
