package kernels_test

import (
	"math"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
	"github.com/pootlabs/poot/quant"
)

// TestMXFP4HugeScales: a block scaled by 2^126 whose codes are ±6 decodes
// to ±infinity in float32, as the oracle decodes it, so the product is
// NaN (+Inf plus -Inf), or +Inf with one sign only, at every level and for
// one activation row and several, though the int8 sums the kernels add
// stay finite until scaled.
func TestMXFP4HugeScales(t *testing.T) {
	modes(t, func(t *testing.T) {
		const K = 64
		for _, mixed := range []bool{true, false} {
			w := make([]byte, 2*17)
			w[0], w[17] = 254, 127 // 2^126, then 2^-1
			for j := 1; j < 17; j++ {
				w[j] = 0x77 // +6, +6
				if mixed && j == 1 {
					w[j] = 0xF7 // +6, then -6 in the second half
				}
				w[17+j] = 0x21
			}
			dec := make([]float32, K)
			if err := quant.DequantizeRow(poot.MXFP4, dec, w); err != nil {
				t.Fatal(err)
			}
			for _, T := range []int{1, 5} {
				x := make([]float32, T*K)
				for i := range x {
					x[i] = 1e-30 // small, so that the int8 path's sums stay finite
				}
				var a kernels.Acts
				if err := a.Prepare(poot.MXFP4, x, T, K); err != nil {
					t.Fatal(err)
				}
				y := make([]float32, T)
				if err := kernels.MatMul(nil, poot.MXFP4, y, w, &a, 1); err != nil {
					t.Fatal(err)
				}
				var want float64
				for _, v := range dec {
					want += float64(v) * 1e-30
				}
				for i, v := range y {
					if !(float64(v) == want || math.IsNaN(want) && v != v) {
						t.Errorf("mixed %v, T=%d: y[%d] = %g, want %g", mixed, T, i, v, want)
					}
				}
			}
		}
	})
}
