package kernels_test

import (
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// TestQ8_0IntegerSums checks every level's Q8_0 product bit for bit against
// exact integer dot products: weight scales are 1 and every activation block
// reaches ±127, so its quantization scale is 1 and its quants are x itself;
// then each output is an integer below 2^24, which float32 holds exactly, and
// any level whose integer block sums differ from the Go code's (a wrong
// offset, sign or lane) gives a different number. Weights include -128.
func TestQ8_0IntegerSums(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		for _, T := range []int{1, 4, 5, 8, 11} {
			for _, nb := range []int{1, 2, 3, 8, 31, 32} {
				checkQ8_0Sums(t, r, T, 3+r.IntN(5), 32*nb)
			}
		}
	})
}

func checkQ8_0Sums(t *testing.T, r *rand.Rand, T, N, K int) {
	t.Helper()
	nb := K / 32
	w := make([]byte, N*nb*34)
	wq := make([]int8, N*K)
	for b := range N * nb {
		w[b*34], w[b*34+1] = 0x00, 0x3c // f16 1.0
		for i := range 32 {
			v := int8(r.IntN(256) - 128)
			if r.IntN(8) == 0 {
				v = []int8{-128, 127, -127}[r.IntN(3)]
			}
			w[b*34+2+i] = byte(v)
			wq[b*32+i] = v
		}
	}
	x := make([]float32, T*K)
	for i := range x {
		x[i] = float32(r.IntN(255) - 127)
	}
	for b := range T * nb {
		x[b*32+r.IntN(32)] = float32(127 * (1 - 2*r.IntN(2)))
	}
	var a kernels.Acts
	if err := a.Prepare(poot.Q8_0, x, T, K); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, T*N)
	if err := kernels.MatMulRows(poot.Q8_0, y, N, w, &a, 0, N); err != nil {
		t.Fatal(err)
	}
	for tt := range T {
		for n := range N {
			var s int64
			for k := range K {
				s += int64(x[tt*K+k]) * int64(wq[n*K+k])
			}
			if got := y[tt*N+n]; got != float32(s) {
				t.Fatalf("T=%d N=%d K=%d: y[%d,%d] = %v, want exactly %d", T, N, K, tt, n, got, s)
			}
		}
	}
}

// BenchmarkQ8_0Levels measures the prompt-processing Q8_0 product (64
// activation rows by 2048x2048 weights, one thread) at every level this
// machine supports, to compare the avx512 kernel with the avx2 one.
func BenchmarkQ8_0Levels(b *testing.B) {
	const T, N, K = 64, 2048, 2048
	x := randActs(rand.New(rand.NewPCG(3, 4)), T*K)
	y := make([]float32, T*N)
	w := benchWeights(poot.Q8_0, N, K)
	var a kernels.Acts
	if err := a.Prepare(poot.Q8_0, x, T, K); err != nil {
		b.Fatal(err)
	}
	for _, l := range kernels.Levels() {
		b.Run(l.String(), func(b *testing.B) {
			atLevel(b, l)
			for b.Loop() {
				if err := kernels.MatMul(nil, poot.Q8_0, y, w, &a, N); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*T*N*K*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
