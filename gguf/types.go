package gguf

import (
	"strconv"

	"github.com/pootlabs/poot"
)

// GGMLType is a tensor element type id as stored in a GGUF file (ggml's
// enum ggml_type).
type GGMLType uint32

// The ggml type ids. Ids 4, 5 and 31–33, 36–38 were used by formats ggml has
// since removed.
const (
	GGMLTypeF32     GGMLType = 0
	GGMLTypeF16     GGMLType = 1
	GGMLTypeQ4_0    GGMLType = 2
	GGMLTypeQ4_1    GGMLType = 3
	GGMLTypeQ5_0    GGMLType = 6
	GGMLTypeQ5_1    GGMLType = 7
	GGMLTypeQ8_0    GGMLType = 8
	GGMLTypeQ8_1    GGMLType = 9
	GGMLTypeQ2_K    GGMLType = 10
	GGMLTypeQ3_K    GGMLType = 11
	GGMLTypeQ4_K    GGMLType = 12
	GGMLTypeQ5_K    GGMLType = 13
	GGMLTypeQ6_K    GGMLType = 14
	GGMLTypeQ8_K    GGMLType = 15
	GGMLTypeIQ2_XXS GGMLType = 16
	GGMLTypeIQ2_XS  GGMLType = 17
	GGMLTypeIQ3_XXS GGMLType = 18
	GGMLTypeIQ1_S   GGMLType = 19
	GGMLTypeIQ4_NL  GGMLType = 20
	GGMLTypeIQ3_S   GGMLType = 21
	GGMLTypeIQ2_S   GGMLType = 22
	GGMLTypeIQ4_XS  GGMLType = 23
	GGMLTypeI8      GGMLType = 24
	GGMLTypeI16     GGMLType = 25
	GGMLTypeI32     GGMLType = 26
	GGMLTypeI64     GGMLType = 27
	GGMLTypeF64     GGMLType = 28
	GGMLTypeIQ1_M   GGMLType = 29
	GGMLTypeBF16    GGMLType = 30
	GGMLTypeTQ1_0   GGMLType = 34
	GGMLTypeTQ2_0   GGMLType = 35
	GGMLTypeMXFP4   GGMLType = 39
)

type ggmlInfo struct {
	name       string
	blockElems uint64 // 0 marks an id with no known layout
	blockBytes uint64
	dtype      poot.DType // poot.Invalid when poot cannot compute with it
}

// ggmlInfos gives the storage geometry of every ggml type whose layout is
// known, so that sizes and ranges can be validated even for tensors poot does
// not support.
var ggmlInfos = map[GGMLType]ggmlInfo{
	GGMLTypeF32:     {"f32", 1, 4, poot.F32},
	GGMLTypeF16:     {"f16", 1, 2, poot.F16},
	GGMLTypeQ4_0:    {"q4_0", 32, 18, poot.Q4_0},
	GGMLTypeQ4_1:    {"q4_1", 32, 20, poot.Q4_1},
	GGMLTypeQ5_0:    {"q5_0", 32, 22, poot.Q5_0},
	GGMLTypeQ5_1:    {"q5_1", 32, 24, poot.Q5_1},
	GGMLTypeQ8_0:    {"q8_0", 32, 34, poot.Q8_0},
	GGMLTypeQ8_1:    {"q8_1", 32, 36, poot.Invalid},
	GGMLTypeQ2_K:    {"q2_K", 256, 84, poot.Invalid},
	GGMLTypeQ3_K:    {"q3_K", 256, 110, poot.Invalid},
	GGMLTypeQ4_K:    {"q4_K", 256, 144, poot.Q4_K},
	GGMLTypeQ5_K:    {"q5_K", 256, 176, poot.Q5_K},
	GGMLTypeQ6_K:    {"q6_K", 256, 210, poot.Q6_K},
	GGMLTypeQ8_K:    {"q8_K", 256, 292, poot.Q8_K},
	GGMLTypeIQ2_XXS: {"iq2_xxs", 256, 66, poot.Invalid},
	GGMLTypeIQ2_XS:  {"iq2_xs", 256, 74, poot.Invalid},
	GGMLTypeIQ3_XXS: {"iq3_xxs", 256, 98, poot.Invalid},
	GGMLTypeIQ1_S:   {"iq1_s", 256, 50, poot.Invalid},
	GGMLTypeIQ4_NL:  {"iq4_nl", 32, 18, poot.Invalid},
	GGMLTypeIQ3_S:   {"iq3_s", 256, 110, poot.Invalid},
	GGMLTypeIQ2_S:   {"iq2_s", 256, 82, poot.Invalid},
	GGMLTypeIQ4_XS:  {"iq4_xs", 256, 136, poot.Invalid},
	GGMLTypeI8:      {"i8", 1, 1, poot.Invalid},
	GGMLTypeI16:     {"i16", 1, 2, poot.Invalid},
	GGMLTypeI32:     {"i32", 1, 4, poot.I32},
	GGMLTypeI64:     {"i64", 1, 8, poot.Invalid},
	GGMLTypeF64:     {"f64", 1, 8, poot.Invalid},
	GGMLTypeIQ1_M:   {"iq1_m", 256, 56, poot.Invalid},
	GGMLTypeBF16:    {"bf16", 1, 2, poot.BF16},
	GGMLTypeTQ1_0:   {"tq1_0", 256, 54, poot.Invalid},
	GGMLTypeTQ2_0:   {"tq2_0", 256, 66, poot.Invalid},
	GGMLTypeMXFP4:   {"mxfp4", 32, 17, poot.MXFP4},
}

// String returns ggml's name for the type ("q4_K"), or "ggml_type(N)" for an
// unknown id.
func (t GGMLType) String() string {
	if info, ok := ggmlInfos[t]; ok {
		return info.name
	}
	return "ggml_type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Known reports whether the storage layout of t is known, so that the size
// of a tensor of this type can be computed.
func (t GGMLType) Known() bool { _, ok := ggmlInfos[t]; return ok }

// BlockElems is the number of elements in one storage block of t, or 0 when
// t is unknown.
func (t GGMLType) BlockElems() int { return int(ggmlInfos[t].blockElems) }

// BlockBytes is the number of bytes in one storage block of t, or 0 when t is
// unknown.
func (t GGMLType) BlockBytes() int { return int(ggmlInfos[t].blockBytes) }

// DType returns the poot element type stored as t, and false when poot has no
// such type.
func (t GGMLType) DType() (poot.DType, bool) {
	d := ggmlInfos[t].dtype
	return d, d.Valid()
}

// GGMLTypeOf returns the ggml type id that stores poot elements of type d,
// and false for types GGUF cannot hold (Bool).
func GGMLTypeOf(d poot.DType) (GGMLType, bool) {
	if !d.Valid() {
		return 0, false
	}
	for t, info := range ggmlInfos {
		if info.dtype == d {
			return t, true
		}
	}
	return 0, false
}
