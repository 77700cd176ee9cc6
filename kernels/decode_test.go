package kernels_test

import (
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot/kernels"
)

// BenchmarkMatVecL2 measures one matrix-vector product whose weights (about
// half a megabyte) stay in L2, on one thread at every level: the kernels'
// own speed, in GB/s of weight bytes, apart from the memory's.
func BenchmarkMatVecL2(b *testing.B) {
	const K = 4096
	x := randActs(rand.New(rand.NewPCG(3, 4)), K)
	for _, dt := range benchDTypes {
		N := int(512<<10/dt.RowBytes(K)) &^ 3
		w := benchWeights(dt, N, K)
		y := make([]float32, N)
		var a kernels.Acts
		if err := a.Prepare(dt, x, 1, K); err != nil {
			b.Fatal(err)
		}
		for _, l := range kernels.Levels()[1:] {
			b.Run(dt.String()+"/"+l.String(), func(b *testing.B) {
				atLevel(b, l)
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					if err := kernels.MatMul(nil, dt, y, w, &a, N); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
