package kernels_test

import (
	"slices"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// TestFloatDotChunks runs the avx512 F16 and BF16 products with more
// activation rows than one chunk of the unpacked tiles holds (64 for K
// of 2048 or more), chunked and left to the packed panels, whichever of
// the two this CPU's vendor gets by default.
func TestFloatDotChunks(t *testing.T) {
	if !slices.Contains(kernels.Levels(), kernels.LevelAVX512) {
		t.Skip("no avx512 level on this CPU")
	}
	atLevel(t, kernels.LevelAVX512)
	for _, on := range []bool{true, false} {
		restore := kernels.SetFloatDotChunks(on)
		for _, dt := range []poot.DType{poot.F16, poot.BF16} {
			// 70 rows: a whole chunk and six rows; 133: two and five;
			// K = 2064: a whole block of K and a short one a chunk.
			checkProduct(t, dt, 70, 13, 2064, 11)
			checkProduct(t, dt, 133, 7, 2064, 12)
			checkProduct(t, dt, 67, 9, 4096, 13)
		}
		restore()
	}
}
