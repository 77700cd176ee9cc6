package kernels

import (
	"math"

	"github.com/pootlabs/poot/quant"
)

// f16Table maps every binary16 bit pattern to its binary32 value; a table
// lookup is several times faster than bit manipulation in Go. Its values
// are quant's (a signalling NaN comes back quiet, as from VCVTPH2PS), so
// the Go and assembly paths and the dequantizer agree.
var f16Table = &f16Values

// f16Values is f16Table's storage. It is a package-level array, not a heap
// allocation made at start-up, so where it lands does not depend on what
// other packages allocate first; a heap table placed after quant's ran the
// Go lookup loop 20-30% slower.
var f16Values [1 << 16]float32

func init() {
	for i := range f16Values {
		f16Values[i] = quant.F16ToF32(uint16(i))
	}
}

// F16ToF32 returns the binary32 value of the binary16 bit pattern h: exact
// for every number; a signalling NaN comes back quiet.
func F16ToF32(h uint16) float32 { return f16Table[h] }

// F32ToF16 rounds f to the nearest binary16 (ties to even), producing
// subnormals and ±inf on overflow; a NaN becomes 0x7E00 with its sign. It
// is [quant.F32ToF16].
func F32ToF16(f float32) uint16 { return quant.F32ToF16(f) }

// BF16ToF32 returns the binary32 value of the bfloat16 bit pattern b.
func BF16ToF32(b uint16) float32 { return quant.BF16ToF32(b) }

// F32ToBF16 rounds f to bfloat16 with ties to even, keeping subnormals; a NaN
// keeps its top bits and is made quiet. It is [quant.F32ToBF16].
func F32ToBF16(f float32) uint16 { return quant.F32ToBF16(f) }

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
