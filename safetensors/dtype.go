package safetensors

import "github.com/pootlabs/poot"

// DType is a tensor element type as spelled in a safetensors header ("F32",
// "BF16", "I64", …).
type DType string

// The element types the format defines with whole-byte elements.
const (
	BOOL    DType = "BOOL"
	U8      DType = "U8"
	I8      DType = "I8"
	F8_E5M2 DType = "F8_E5M2"
	F8_E4M3 DType = "F8_E4M3"
	F8_E8M0 DType = "F8_E8M0"
	I16     DType = "I16"
	U16     DType = "U16"
	F16     DType = "F16"
	BF16    DType = "BF16"
	I32     DType = "I32"
	U32     DType = "U32"
	F32     DType = "F32"
	F64     DType = "F64"
	I64     DType = "I64"
	U64     DType = "U64"
	C64     DType = "C64"
)

var dtypeSizes = map[DType]int{
	BOOL: 1, U8: 1, I8: 1, F8_E5M2: 1, F8_E4M3: 1, F8_E8M0: 1,
	I16: 2, U16: 2, F16: 2, BF16: 2,
	I32: 4, U32: 4, F32: 4,
	F64: 8, I64: 8, U64: 8, C64: 8,
}

var pootDTypes = map[DType]poot.DType{F32: poot.F32, F16: poot.F16, BF16: poot.BF16, I32: poot.I32, BOOL: poot.Bool}

// Size is the number of bytes of one element, or 0 for a dtype this package
// does not know (sub-byte formats, future additions).
func (d DType) Size() int { return dtypeSizes[d] }

// Poot returns the poot element type for d, and false when poot has none.
func (d DType) Poot() (poot.DType, bool) {
	p, ok := pootDTypes[d]
	return p, ok
}

// DTypeOf returns the safetensors dtype that stores poot elements of type d,
// and false for poot's packed (GGUF-only) types.
func DTypeOf(d poot.DType) (DType, bool) {
	for s, p := range pootDTypes {
		if p == d {
			return s, true
		}
	}
	return "", false
}
