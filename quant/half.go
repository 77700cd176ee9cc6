package quant

import (
	"encoding/binary"
	"math"
)

// f16Table maps every binary16 bit pattern to its float32 value. Decoding is
// the hot path of every F16 weight and of every block scale, and 256 KiB of
// table turns it into one load. It is computed at package initialisation
// from f16ToF32Slow, so it cannot drift from the definition.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = f16ToF32Slow(uint16(h))
	}
	return &t
}()

// f16ToF32Slow widens a binary16 exactly, by moving its fields into binary32
// positions. A NaN keeps its payload (shifted left by 13) and is made quiet,
// as ggml's scalar conversion and x86's F16C instructions both do.
func f16ToF32Slow(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f && mant != 0: // NaN
		return math.Float32frombits(sign | 0x7fc00000 | mant<<13)
	case exp == 0x1f: // infinity
		return math.Float32frombits(sign | 0x7f800000)
	case exp != 0: // normal: rebias the exponent from 15 to 127
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: mant·2^-24. Shift the leading one into the implicit-bit
	// position and lower the exponent by the same amount.
	e := uint32(113)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// F16ToF32 widens an IEEE binary16 bit pattern to float32. The conversion is
// exact for every number, subnormals and infinities included; a signalling
// NaN comes back quiet, as it does from ggml.
func F16ToF32(h uint16) float32 { return f16Table[h] }

// F32ToF16 narrows f to IEEE binary16 the way ggml does: round to nearest,
// ties to even; magnitudes that round past 65504 become ±inf; results below
// the smallest normal are produced as subnormals rather than flushed to zero;
// every NaN becomes the quiet NaN 0x7E00 with f's sign.
func F32ToF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN
		return sign | 0x7e00
	case a >= 0x477ff000: // ≥ 65520, the tie between 65504 and 2^16, rounds to inf
		return sign | 0x7c00
	case a >= 0x38800000: // ≥ 2^-14: stays normal in binary16
		// Rebias the exponent, then round the 13 dropped bits to nearest
		// even; a carry out of the mantissa correctly bumps the exponent.
		a -= 112 << 23
		a += 0xfff + (a>>13)&1
		return sign | uint16(a>>13)
	case a <= 0x33000000: // ≤ 2^-25: half the smallest subnormal or less, ties to 0
		return sign
	}
	// Subnormal result, in units of 2^-24: the 24-bit significand shifted
	// right by 14…24 places, rounded to nearest even by hand.
	mant := a&0x7fffff | 0x800000
	shift := 126 - a>>23
	q := mant >> shift
	rem := mant & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && q&1 == 1 {
		q++
	}
	return sign | uint16(q)
}

// BF16ToF32 widens a bfloat16 bit pattern to float32; bfloat16 is the top
// half of a binary32, so this is exact.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 narrows f to bfloat16 with ggml's rule: round to nearest, ties
// to even, on the raw bits (so overflow reaches ±inf and subnormals are kept),
// and a NaN keeps its top bits with the quiet bit forced on, so it never
// collapses into an infinity.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// F16RowToF32 decodes little-endian binary16 values from src into dst. It
// converts min(len(dst), len(src)/2) elements; callers that need a size check
// use [DequantizeRow].
func F16RowToF32(dst []float32, src []byte) {
	n := min(len(dst), len(src)/2)
	dst, src = dst[:n], src[:2*n]
	for i := range dst {
		dst[i] = f16Table[binary.LittleEndian.Uint16(src[2*i:])]
	}
}

// BF16RowToF32 decodes little-endian bfloat16 values from src into dst. It
// converts min(len(dst), len(src)/2) elements.
func BF16RowToF32(dst []float32, src []byte) {
	n := min(len(dst), len(src)/2)
	dst, src = dst[:n], src[:2*n]
	for i := range dst {
		dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
	}
}

// F32RowToF16 encodes src as little-endian binary16 into dst with
// [F32ToF16]. It converts min(len(dst)/2, len(src)) elements.
func F32RowToF16(dst []byte, src []float32) {
	n := min(len(dst)/2, len(src))
	dst, src = dst[:2*n], src[:n]
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
	}
}

// F32RowToBF16 encodes src as little-endian bfloat16 into dst with
// [F32ToBF16]. It converts min(len(dst)/2, len(src)) elements.
func F32RowToBF16(dst []byte, src []float32) {
	n := min(len(dst)/2, len(src))
	dst, src = dst[:2*n], src[:n]
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
	}
}
