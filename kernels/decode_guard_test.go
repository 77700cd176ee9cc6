//go:build linux

package kernels_test

import (
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"

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

// TestMatVecReadsNoFurther runs the one-row products with the weights and
// the activations each ending at an inaccessible page: no kernel may read
// past the last row or the last element (the masked tails included).
func TestMatVecReadsNoFurther(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, dt := range decodeDTypes {
			for _, K := range decodeKs(dt) {
				const N = 5
				src := randWeights(r, dt, N, K)
				w := guarded(t, len(src))
				copy(w, src)
				xb := guarded(t, 4*K)
				x := unsafe.Slice((*float32)(unsafe.Pointer(&xb[0])), K)
				copy(x, randActs(r, K))
				var a kernels.Acts
				if err := a.Prepare(dt, x, 1, K); err != nil {
					t.Fatal(err)
				}
				y := make([]float32, N)
				if err := kernels.MatMul(nil, dt, y, w, &a, N); err != nil {
					t.Fatal(err)
				}
				want, bound := refProduct(dt, w, x, 1, N, K)
				for i, v := range y {
					if d := math.Abs(float64(v) - want[i]); !(d <= bound[i]) {
						t.Fatalf("%v K=%d: y[%d] = %g, want %g ± %g", dt, K, i, v, want[i], bound[i])
					}
				}
			}
		}
	})
}
