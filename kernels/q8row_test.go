//go:build linux

package kernels_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// TestQ8_0RowToF32 decodes random blocks (every scale bit pattern class
// included: subnormal, infinite, NaN) at every level, exactly as the
// format defines, reading nothing past the last block and writing
// nothing past the last decoded value.
func TestQ8_0RowToF32(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, blocks := range []int{1, 2, 3, 7, 16} {
			src := guarded(t, 34*blocks)
			copy(src, randWeights(r, poot.Q8_0, 1, 32*blocks))
			scales := []uint16{0x0001, 0x7C00, 0x7E00, 0x8000, 0x3C00}
			for b := range min(blocks, len(scales)) {
				binary.LittleEndian.PutUint16(src[34*b:], scales[b])
			}
			db := guarded(t, 4*32*blocks)
			dst := unsafe.Slice((*float32)(unsafe.Pointer(&db[0])), 32*blocks)
			kernels.Q8_0RowToF32(dst, src)
			want := refDequant(poot.Q8_0, src, 32*blocks)
			for i, v := range dst {
				w := float32(want[i])
				if v != w && !(v != v && w != w) {
					t.Fatalf("%d blocks: value %d = %g, want %g", blocks, i, v, w)
				}
			}
		}
		// A destination shorter than the blocks decodes only whole blocks.
		src := randWeights(r, poot.Q8_0, 1, 64)
		dst := make([]float32, 40)
		for i := range dst {
			dst[i] = -1
		}
		kernels.Q8_0RowToF32(dst, src)
		if dst[31] == -1 || dst[32] != -1 || math.IsNaN(float64(dst[0])) {
			t.Fatalf("a 40-value destination: %v", dst)
		}
	})
}
