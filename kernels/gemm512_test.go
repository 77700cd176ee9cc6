package kernels_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// The avx512 level's prompt-processing tiles take 48 (float) or 16
// (quantized) weight rows a panel, 128 elements (float) or 1024 (quantized)
// of K a packed panel, and four (float, Q4_K) or six (Q8_0) activation rows
// a tile. These tests run at every level, with shapes that fill whole
// panels and leave partial ones, cross K-block edges and leave tiles with
// fewer rows than the tile has.

// tileKs returns values of K for dt that give one block, a partial packed
// panel, whole ones and a partial last one.
func tileKs(dt poot.DType) []int {
	switch dt.BlockElems() {
	case 1:
		return []int{1, 7, 8, 100, 128, 129, 136, 300}
	case 32:
		return []int{32, 96, 1024, 1056, 2080}
	}
	return []int{256, 1024, 1280, 2304}
}

func TestMatMulTiles(t *testing.T) {
	modes(t, func(t *testing.T) {
		for _, dt := range matDTypes {
			for _, K := range tileKs(dt) {
				for _, T := range []int{4, 5, 6, 7, 8, 9, 12, 13, 16, 21} {
					for _, N := range []int{16, 17, 31, 48, 50, 97} {
						if K >= 1024 && (N > 50 || T%3 == 1) {
							continue // keep the reference's cost down
						}
						if raceEnabled && (T+N)%4 != 0 {
							// Under the race detector (which looks at the
							// pool, not the tiles' arithmetic) a quarter
							// of the shapes: all of them took 150 s.
							continue
						}
						checkProduct(t, dt, T, N, K, uint64(K*1000+T*100+N))
					}
				}
			}
			if dt.BlockElems() == 1 {
				// 68 rows: at avx512 F32 through a packed panel and a
				// partial one, F16 and BF16 (K not a multiple of 16)
				// too.
				checkProduct(t, dt, 68, 50, 1100, 7)
				// 64 rows and K a multiple of 16 take the unpacked
				// tiles, in blocks of 2048: a whole one and a short one.
				checkProduct(t, dt, 64, 13, 2064, 8)
				// 128 rows or more take the avx512 level's packed
				// panels for every float dtype: 133 rows end in a tile
				// of five; K = 2100 is a whole block of K and a short
				// one ending four elements past the transposes'
				// eights; 41 weight rows are part of a panel.
				checkProduct(t, dt, 133, 41, 2100, 9)
				checkProduct(t, dt, 128, 16, 4096, 10)
			}
		}
	})
}

// TestTileIntegerSums is TestQ8_0IntegerSums and TestQ4_KIntegerSums with
// whole 16-row panels, several packed panels along K and tiles of every
// row count: each output must be the exact integer.
func TestTileIntegerSums(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(31, 32))
		for _, T := range []int{4, 6, 7, 11, 12, 13} {
			for _, N := range []int{16, 21, 40} {
				for _, nb := range []int{1, 33, 40} {
					checkQ8_0Sums(t, r, T, N, 32*nb)
				}
				for _, nb := range []int{1, 4, 5, 9} {
					for _, mode := range []int{0, 1, 2, 3} {
						checkQ4_KSums(t, r, T, N, 256*nb, mode)
					}
				}
			}
		}
	})
}

// TestTileNonFinite is TestMatMulNonFinite at tile shapes: NaN and
// infinities in some activation rows give the float64 product's results
// there and leave the other rows finite.
func TestTileNonFinite(t *testing.T) {
	modes(t, func(t *testing.T) {
		inf := float32(math.Inf(1))
		for _, dt := range matDTypes {
			const T, N = 9, 33
			K := 1280
			if dt.BlockElems() == 1 {
				K = 300
			}
			r := rand.New(rand.NewPCG(2, uint64(dt)))
			w := randWeights(r, dt, N, K)
			x := randActs(r, T*K)
			x[5] = nan32()      // row 0: NaN everywhere
			x[4*K+K-1] = inf    // row 4: ±Inf in the last block
			x[7*K+K*7/8] = -inf // row 7: -Inf in a later packed panel of K
			var a kernels.Acts
			if err := a.Prepare(dt, x, T, K); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, T*N)
			if err := kernels.MatMul(nil, dt, y, w, &a, N); err != nil {
				t.Fatal(err)
			}
			want, _ := refProduct(dt, w, x, T, N, K)
			for i, v := range y {
				wv, row := want[i], i/N
				switch {
				case math.IsNaN(wv) || v != v:
					if !math.IsNaN(wv) || v == v {
						t.Fatalf("%v: y[%d,%d] = %g, want %g", dt, row, i%N, v, wv)
					}
				case math.IsInf(wv, 0) || math.IsInf(float64(v), 0):
					if float64(v) != wv {
						t.Fatalf("%v: y[%d,%d] = %g, want %g", dt, row, i%N, v, wv)
					}
				}
				if row != 0 && row != 4 && row != 7 && v-v != 0 {
					t.Fatalf("%v: finite row %d gave %g", dt, row, v)
				}
			}
		}
	})
}

// TestTileLevelsAgree compares the avx512 tiles with the Go code on a
// product large enough to use several panels along both N and K and a
// pool of workers splitting N: they compute the same integer block sums,
// so they differ only by float rounding.
func TestTileLevelsAgree(t *testing.T) {
	if kernels.Levels()[len(kernels.Levels())-1] < kernels.LevelAVX512 {
		t.Skip("no avx512 level on this machine")
	}
	p := kernels.NewPool(2)
	defer p.Close()
	r := rand.New(rand.NewPCG(41, 42))
	for _, dt := range []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.MXFP4, poot.Q4_K, poot.Q5_K, poot.Q6_K} {
		const T, N = 37, 200
		K := 2304
		if dt.BlockElems() == 1 {
			K = 520
		}
		w := randWeights(r, dt, N, K)
		x := randActs(r, T*K)
		var a kernels.Acts
		if err := a.Prepare(dt, x, T, K); err != nil {
			t.Fatal(err)
		}
		yz, yg := make([]float32, T*N), make([]float32, T*N)
		atLevel(t, kernels.LevelAVX512)
		if err := kernels.MatMul(p, dt, yz, w, &a, N); err != nil {
			t.Fatal(err)
		}
		restore, _ := kernels.SetLevel(kernels.LevelGo)
		err := kernels.MatMul(p, dt, yg, w, &a, N)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		_, _, fbound := refProductBounds(dt, w, x, T, N, K)
		for i := range yz {
			if d := math.Abs(float64(yz[i] - yg[i])); d > fbound[i] {
				t.Fatalf("%v: y[%d,%d] avx512 %g, go %g (bound %g)", dt, i/N, i%N, yz[i], yg[i], fbound[i])
			}
		}
	}
}

// TestRepackedIntegerSums is TestTileIntegerSums for the dtypes whose
// blocks the avx512 level repacks as another's (Q4_0, Q5_0 and MXFP4 as
// Q8_0's, Q4_1 and Q5_1 as Q8_0's with mins, Q5_K as Q4_K's) or for a
// tile of its own (Q6_K): every block scale is 1 (MXFP4's exponent 127:
// its doubled values then count half; Q4_1's and Q5_1's mins and Q5_K's
// dmin 0 or 1), the codes and
// sub-block scales random, and each output must be the exact integer (or
// half-integer) product, whatever the code, its nibble or its high bits.
// The K-quants' activations stay within ±4 (and one ±127 a block, which
// fixes their scale at 1) to keep the sums below 2^24.
func TestRepackedIntegerSums(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(51, 52))
		for _, dt := range []poot.DType{poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.MXFP4, poot.Q5_K, poot.Q6_K} {
			nbs := []int{1, 32, 33}
			if dt.BlockElems() == 256 {
				nbs = []int{1, 4, 5}
			}
			for _, T := range []int{4, 6, 7, 13} {
				for _, N := range []int{16, 21, 33} {
					for _, nb := range nbs {
						checkCodeSums(t, r, dt, T, N, dt.BlockElems()*nb, false)
					}
				}
			}
			if dt.BlockElems() == 32 {
				checkCodeSums(t, r, dt, 8, 16, 1056, true)
			}
		}
	})
}

// checkCodeSums checks a product of random codes as TestRepackedIntegerSums
// describes; with extreme set, every code of the 32-element dtypes is its
// largest (the nibble 15 and every high bit; MXFP4's 6.0) and every
// activation 127, so that sums the tiles keep in int16 (the avx2 level's)
// reach their largest.
func checkCodeSums(t *testing.T, r *rand.Rand, dt poot.DType, T, N, K int, extreme bool) {
	t.Helper()
	rb, bb, be := int(dt.RowBytes(int64(K))), dt.BlockBytes(), dt.BlockElems()
	w := make([]byte, N*rb)
	for i := range w {
		w[i] = byte(r.Uint32())
		if extreme {
			w[i] = 0xff
			if dt == poot.MXFP4 {
				w[i] = 0x77
			}
		}
	}
	for b := 0; b < len(w); b += bb {
		switch {
		case dt == poot.MXFP4:
			w[b] = 127
		case dt == poot.Q6_K:
			w[b+208], w[b+209] = 0x00, 0x3c // d 1.0
		case dt == poot.Q4_1 || dt == poot.Q5_1:
			w[b], w[b+1] = 0x00, 0x3c                   // d 1.0
			w[b+2], w[b+3] = 0x00, byte(0x3c*r.IntN(2)) // m 0 or 1.0
		case be == 256:
			w[b], w[b+1] = 0x00, 0x3c                   // d 1.0
			w[b+2], w[b+3] = 0x00, byte(0x3c*r.IntN(2)) // dmin 0 or 1.0
		default:
			w[b], w[b+1] = 0x00, 0x3c // f16 1.0
		}
	}
	x := make([]float32, T*K)
	for i := range x {
		if be == 256 {
			x[i] = float32(r.IntN(9) - 4)
		} else {
			x[i] = float32(r.IntN(255) - 127)
		}
	}
	for b := range T * K / be {
		x[b*be+r.IntN(be)] = float32(127 * (1 - 2*r.IntN(2)))
	}
	if extreme {
		for i := range x {
			x[i] = 127
		}
	}
	var a kernels.Acts
	if err := a.Prepare(dt, x, T, K); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, T*N)
	if err := kernels.MatMulRows(dt, y, N, w, &a, 0, N); err != nil {
		t.Fatal(err)
	}
	for n := range N {
		wv := refDequant(dt, w[n*rb:(n+1)*rb], K)
		for tt := range T {
			var s float64
			for k := range K {
				s += float64(x[tt*K+k]) * wv[k]
			}
			if got := y[tt*N+n]; float64(got) != s {
				t.Fatalf("%v T=%d N=%d K=%d: y[%d,%d] = %v, want exactly %v", dt, T, N, K, tt, n, got, s)
			}
		}
	}
}
