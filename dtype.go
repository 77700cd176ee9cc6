package poot

import (
	"fmt"
	"strconv"
	"strings"
)

// DType is the element type of a tensor. The plain types (F32, F16, BF16, I32,
// Bool) hold one element per storage unit; the packed types (Q8_0 … MXFP4)
// hold elements in fixed-size blocks along a tensor's last axis, exactly as
// GGUF stores them. Packed types appear on constants read by a contraction, a
// gather or a cast, and on quantized caches: a state of Q8_0 rows written by
// WriteRows from a cast of F32 to Q8_0 and read through a cast to F32. Every
// other computed value is F32, I32 or Bool (or F16/BF16 when produced by an
// explicit cast).
type DType uint8

// The element types. The numbering is poot's own; loaders translate the ids of
// their containers.
const (
	Invalid DType = iota // the zero DType; never valid in a graph
	F32                  // IEEE binary32
	F16                  // IEEE binary16
	BF16                 // bfloat16: the top 16 bits of a binary32
	I32                  // two's-complement 32-bit integer
	Bool                 // one byte, 0 or 1
	Q8_0                 // blocks of 32: f16 scale, 32 int8
	Q4_0                 // blocks of 32: f16 scale, 16 bytes of 4-bit quants offset by 8
	Q4_1                 // blocks of 32: f16 scale, f16 min, 16 bytes of 4-bit quants
	Q5_0                 // blocks of 32: f16 scale, 32 high bits, 16 bytes of low nibbles, offset by 16
	Q5_1                 // blocks of 32: f16 scale, f16 min, 32 high bits, 16 bytes of low nibbles
	Q4_K                 // super-blocks of 256: f16 scale and min, 6-bit sub-scales, 4-bit quants
	Q5_K                 // super-blocks of 256: as Q4_K plus one high bit a quant
	Q6_K                 // super-blocks of 256: 6-bit quants, int8 sub-scales, f16 scale last
	Q8_K                 // super-blocks of 256: f32 scale, 256 int8, 16 int16 block sums
	MXFP4                // blocks of 32: E8M0 power-of-two scale, 16 bytes of FP4 (E2M1) codes
	numDTypes
)

type dtypeInfo struct {
	name       string
	blockElems int // elements per block (1 for plain types)
	blockBytes int // bytes per block
}

var dtypeInfos = [numDTypes]dtypeInfo{
	Invalid: {"invalid", 0, 0},
	F32:     {"f32", 1, 4},
	F16:     {"f16", 1, 2},
	BF16:    {"bf16", 1, 2},
	I32:     {"i32", 1, 4},
	Bool:    {"bool", 1, 1},
	Q8_0:    {"q8_0", 32, 34},
	Q4_0:    {"q4_0", 32, 18},
	Q4_1:    {"q4_1", 32, 20},
	Q5_0:    {"q5_0", 32, 22},
	Q5_1:    {"q5_1", 32, 24},
	Q4_K:    {"q4_K", 256, 144},
	Q5_K:    {"q5_K", 256, 176},
	Q6_K:    {"q6_K", 256, 210},
	Q8_K:    {"q8_K", 256, 292},
	MXFP4:   {"mxfp4", 32, 17},
}

// DTypes lists every valid DType in order.
func DTypes() []DType {
	out := make([]DType, 0, numDTypes-1)
	for d := F32; d < numDTypes; d++ {
		out = append(out, d)
	}
	return out
}

// Valid reports whether d is one of the defined element types.
func (d DType) Valid() bool { return d > Invalid && d < numDTypes }

// String returns the lower-case name used by the printer and by GGUF tools
// ("f32", "q4_K").
func (d DType) String() string {
	if d < numDTypes {
		return dtypeInfos[d].name
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// ParseDType is the inverse of String; it accepts any letter case.
func ParseDType(s string) (DType, error) {
	for d := F32; d < numDTypes; d++ {
		if strings.EqualFold(dtypeInfos[d].name, s) {
			return d, nil
		}
	}
	return Invalid, fmt.Errorf("poot: unknown dtype %q", s)
}

// Packed reports whether d stores elements in multi-element blocks.
func (d DType) Packed() bool { return d.Valid() && dtypeInfos[d].blockElems > 1 }

// Float reports whether d holds real numbers (plain or packed), as opposed to
// I32 and Bool.
func (d DType) Float() bool { return d.Valid() && d != I32 && d != Bool }

// BlockElems is the number of elements in one storage block: 1 for plain types,
// 32 or 256 for packed types, 0 for Invalid.
func (d DType) BlockElems() int {
	if d < numDTypes {
		return dtypeInfos[d].blockElems
	}
	return 0
}

// BlockBytes is the number of bytes one storage block occupies.
func (d DType) BlockBytes() int {
	if d < numDTypes {
		return dtypeInfos[d].blockBytes
	}
	return 0
}

// RowBytes returns the bytes taken by n consecutive elements of d along the
// last axis, or -1 when n is not a whole number of blocks.
func (d DType) RowBytes(n int64) int64 {
	be := int64(d.BlockElems())
	if be == 0 || n < 0 || n%be != 0 {
		return -1
	}
	return n / be * int64(d.BlockBytes())
}

// Shape lists the extent of each axis, outermost first; the last axis is
// contiguous. A rank-0 shape (nil or empty) is a scalar. Shapes are values:
// nothing in poot modifies a Shape it was given.
type Shape []int

// Rank is the number of axes.
func (s Shape) Rank() int { return len(s) }

// Size is the number of elements, or -1 when an extent is negative or the
// product overflows int64.
func (s Shape) Size() int64 {
	n := int64(1)
	for _, d := range s {
		if d < 0 {
			return -1
		}
		if d != 0 && n > (1<<62)/int64(d) {
			return -1
		}
		n *= int64(d)
	}
	return n
}

// Equal reports whether two shapes have the same rank and extents.
func (s Shape) Equal(t Shape) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy that shares no memory with s.
func (s Shape) Clone() Shape {
	if s == nil {
		return nil
	}
	return append(Shape{}, s...)
}

// String formats the shape as "[2,3,4]".
func (s Shape) String() string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(d))
	}
	sb.WriteByte(']')
	return sb.String()
}

// TensorType is a value's abstract type: its shape and element type. The
// builder computes it for every value at record time, before any data exists.
type TensorType struct {
	Shape Shape
	DType DType
}

// T is shorthand for TensorType{Shape: dims, DType: d}.
func T(d DType, dims ...int) TensorType { return TensorType{Shape: Shape(dims), DType: d} }

// String formats the type as "f32[2,3]".
func (t TensorType) String() string { return t.DType.String() + t.Shape.String() }

// Equal reports whether two types have the same dtype and shape.
func (t TensorType) Equal(u TensorType) bool { return t.DType == u.DType && t.Shape.Equal(u.Shape) }

// Bytes is the storage size of a tensor of this type, or -1 when the shape is
// invalid or its last axis is not a whole number of blocks.
func (t TensorType) Bytes() int64 {
	n := t.Shape.Size()
	if n < 0 || !t.DType.Valid() {
		return -1
	}
	if !t.DType.Packed() {
		return n * int64(t.DType.BlockBytes())
	}
	if len(t.Shape) == 0 {
		return -1
	}
	last := int64(t.Shape[len(t.Shape)-1])
	row := t.DType.RowBytes(last)
	if row < 0 {
		return -1
	}
	if last == 0 {
		return 0
	}
	return n / last * row
}
