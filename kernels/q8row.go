package kernels

import (
	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/quant"
)

// Q8_0RowToF32 decodes the Q8_0 blocks of src (34 bytes each: a binary16
// scale d, then 32 int8 quants q, each value d·q) into dst, as many whole
// blocks as both hold: min(len(dst)/32, len(src)/34). The quantized KV
// caches are read through it.
func Q8_0RowToF32(dst []float32, src []byte) {
	n := min(len(dst)/32, len(src)/34)
	if n == 0 {
		return
	}
	if q8RowVec(dst[:32*n], src[:34*n]) {
		return
	}
	// The lengths are whole blocks, which is all DequantizeRow checks.
	_ = quant.DequantizeRow(poot.Q8_0, dst[:32*n], src[:34*n])
}
