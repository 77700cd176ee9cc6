//go:build linux

package kernels_test

import (
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// guarded returns n bytes that end where an inaccessible page begins, so
// that a kernel reading one byte past them faults.
func guarded(t *testing.T, n int) []byte {
	t.Helper()
	page := syscall.Getpagesize()
	size := (n + page - 1) / page * page
	m, err := syscall.Mmap(-1, 0, size+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(m) })
	if err := syscall.Mprotect(m[size:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	return m[size-n : size]
}

// TestMatVecReadsNoFurther runs the products with the weights and the
// activations each ending at an inaccessible page: no kernel may read past
// the last row or the last element (the masked tails included). One
// activation row takes the decode kernels; seven, thirteen and twenty take the prompt tiles for
// the first rows and the decode kernels for the rest; 64 and 112 take the
// avx512 level's transposed panels for F16 and BF16 weights (K a multiple
// of 16), whose last tile of six weight rows holds one. 37 weight rows end
// in a short panel, which the quantized tiles copy before packing; 32 end
// in a whole one, packed from the weights themselves (Q4_1, Q5_0 and Q5_1
// too, which have no decode kernels of their own but packed tiles).
func TestMatVecReadsNoFurther(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, dt := range append(decodeDTypes, poot.Q4_1, poot.Q5_0, poot.Q5_1) {
			for _, K := range decodeKs(dt) {
				for _, M := range []int{1, 7, 13, 20, 64, 112} {
					if M > 20 && (dt.BlockElems() > 1 || K%16 != 0) {
						continue
					}
					for _, N := range []int{37, 32} {
						src := randWeights(r, dt, N, K)
						w := guarded(t, len(src))
						copy(w, src)
						xb := guarded(t, 4*M*K)
						x := unsafe.Slice((*float32)(unsafe.Pointer(&xb[0])), M*K)
						copy(x, randActs(r, M*K))
						var a kernels.Acts
						if err := a.Prepare(dt, x, M, K); err != nil {
							t.Fatal(err)
						}
						y := make([]float32, M*N)
						if err := kernels.MatMul(nil, dt, y, w, &a, N); err != nil {
							t.Fatal(err)
						}
						want, bound := refProduct(dt, w, x, M, N, K)
						for i, v := range y {
							if d := math.Abs(float64(v) - want[i]); !(d <= bound[i]) {
								t.Fatalf("%v M=%d N=%d K=%d: y[%d] = %g, want %g ± %g", dt, M, N, K, i, v, want[i], bound[i])
							}
						}
					}
				}
			}
		}
	})
}
