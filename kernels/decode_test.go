package kernels_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// The one-activation-row paths (decode, and the rows of a prompt past its
// last group of four) have their own kernels at the avx512 level. These
// tests give them the shapes they treat specially: one block, the
// super-blocks left over after groups of four, a K that is no multiple of
// 16, any number of rows, and every way of splitting the rows.

// decodeDTypes are the dtypes with avx512 one-row kernels.
var decodeDTypes = []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.MXFP4, poot.Q4_K, poot.Q5_K, poot.Q6_K}

// decodeKs returns the row lengths to try for dt: one block, two, the
// blocks a kernel step takes plus one, and a few more.
func decodeKs(dt poot.DType) []int {
	switch dt.BlockElems() {
	case 1:
		return []int{1, 5, 15, 16, 17, 63, 64, 65, 130}
	case 32:
		return []int{32, 64, 96, 128, 160, 224, 288}
	}
	return []int{256, 512, 768, 1024, 1280}
}

// unitWeights returns N rows of dt whose elements are small integers, with
// every block scale 1 and sub-block scales limited so that the exact sums
// stay below 2^24 for the decodeKs lengths.
func unitWeights(r *rand.Rand, dt poot.DType, N, K int) []byte {
	w := randWeights(r, dt, N, K)
	const one = 0x3c00 // f16 1.0
	put := func(off int, h uint16) { binary.LittleEndian.PutUint16(w[off:], h) }
	bb := dt.BlockBytes()
	for off := 0; off < len(w); off += bb {
		v := float32(r.IntN(9) - 4)
		switch dt {
		case poot.F32:
			binary.LittleEndian.PutUint32(w[off:], math.Float32bits(v))
		case poot.F16:
			put(off, f2h(v))
		case poot.BF16:
			put(off, uint16(math.Float32bits(v)>>16))
		case poot.Q8_0, poot.Q4_0:
			put(off, one)
		case poot.MXFP4:
			w[off] = 128 // 2^(128-128): the doubled E2M1 values as they are
		case poot.Q4_K, poot.Q5_K:
			put(off, one)
			put(off+2, one)
		case poot.Q6_K:
			put(off+208, one)
		}
	}
	return w
}

// unitActs returns T rows of K small integers with ±127 in every
// activation block, so that they quantize exactly (scale 1).
func unitActs(r *rand.Rand, dt poot.DType, T, K int) []float32 {
	x := make([]float32, T*K)
	for i := range x {
		x[i] = float32(r.IntN(5) - 2)
	}
	ab := max(32, dt.BlockElems())
	for b := 0; b < len(x); b += ab {
		x[b+r.IntN(min(ab, len(x)-b))] = float32(127 * (1 - 2*r.IntN(2)))
	}
	return x
}

// TestMatVecIntegerSums checks the products bit for bit where every block
// scale is 1 and the activations quantize exactly: each output is then an
// integer below 2^24, which float32 holds exactly, so a wrong scale,
// offset, nibble, high bit, lane or tail anywhere changes it.
func TestMatVecIntegerSums(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(31, 32))
		for _, dt := range decodeDTypes {
			for _, K := range decodeKs(dt) {
				for _, T := range []int{1, 2, 3, 5} {
					N := 1 + r.IntN(11)
					w := unitWeights(r, dt, N, K)
					x := unitActs(r, dt, T, K)
					var a kernels.Acts
					if err := a.Prepare(dt, x, T, K); err != nil {
						t.Fatal(err)
					}
					y := make([]float32, T*N)
					if err := kernels.MatMulRows(dt, y, N, w, &a, 0, N); err != nil {
						t.Fatal(err)
					}
					want, _ := refProduct(dt, w, x, T, N, K)
					for i, v := range y {
						if float64(v) != want[i] {
							t.Fatalf("%v T=%d N=%d K=%d: y[%d,%d] = %v, want exactly %v", dt, T, N, K, i/N, i%N, v, want[i])
						}
					}
				}
			}
		}
	})
}

// TestMatVecShapes checks one to three activation rows (and the three
// rows after a group of four) against the reference for odd row counts
// and short rows, and that for them every split of the weight rows between
// calls gives the same bits as one call.
func TestMatVecShapes(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(41, 42))
		for _, dt := range decodeDTypes {
			for _, K := range decodeKs(dt) {
				for _, T := range []int{1, 2, 3, 7} {
					for _, N := range []int{1, 3, 5, 7, 9, 33} {
						w := randWeights(r, dt, N, K)
						x := randActs(r, T*K)
						var a kernels.Acts
						if err := a.Prepare(dt, x, T, K); err != nil {
							t.Fatal(err)
						}
						whole := make([]float32, T*N)
						if err := kernels.MatMulRows(dt, whole, N, w, &a, 0, N); err != nil {
							t.Fatal(err)
						}
						want, bound := refProduct(dt, w, x, T, N, K)
						for i, v := range whole {
							if d := math.Abs(float64(v) - want[i]); !(d <= bound[i]) {
								t.Fatalf("%v T=%d N=%d K=%d: y[%d,%d] = %g, want %g ± %g", dt, T, N, K, i/N, i%N, v, want[i], bound[i])
							}
						}
						split := make([]float32, T*N)
						for n0 := 0; n0 < N; {
							n1 := n0 + 1 + r.IntN(N-n0)
							if err := kernels.MatMulRows(dt, split, N, w, &a, n0, n1); err != nil {
								t.Fatal(err)
							}
							n0 = n1
						}
						// Only the rows past the last group of four: the
						// prompt kernels tile rows in threes.
						for i := T &^ 3 * N; i < len(split); i++ {
							if split[i] != whole[i] {
								t.Fatalf("%v T=%d N=%d K=%d: y[%d,%d] = %g computed in pieces, %g whole", dt, T, N, K, i/N, i%N, split[i], whole[i])
							}
						}
					}
				}
			}
		}
	})
}

// TestMatVecNonFiniteWeights: a weight row with an infinite or NaN block
// scale (or element) gives, at every level, what the float64 product
// gives, and the rows around it stay finite.
func TestMatVecNonFiniteWeights(t *testing.T) {
	modes(t, func(t *testing.T) {
		for _, dt := range decodeDTypes {
			if dt == poot.MXFP4 {
				continue // no block scale is infinite or NaN: TestMXFP4HugeScales takes the largest
			}
			const N = 7
			K := decodeKs(dt)[2]
			r := rand.New(rand.NewPCG(5, uint64(dt)))
			w := randWeights(r, dt, N, K)
			rb := int(dt.RowBytes(int64(K)))
			bb := dt.BlockBytes()
			scale := 0 // offset of the f16 scale (or element) in a block
			if dt == poot.Q6_K {
				scale = 208
			}
			poke := func(n, b int, h uint16) {
				off := n*rb + b*bb + scale
				switch dt {
				case poot.F32:
					binary.LittleEndian.PutUint32(w[off:], math.Float32bits(halfToFloat(h)))
				case poot.BF16:
					binary.LittleEndian.PutUint16(w[off:], uint16(math.Float32bits(halfToFloat(h))>>16))
				default:
					binary.LittleEndian.PutUint16(w[off:], h)
				}
			}
			nb := rb / bb
			poke(1, nb-1, 0x7c00) // +Inf in the last block of row 1
			poke(4, 0, 0xfc00)    // -Inf in the first block of row 4
			poke(5, nb/2, 0x7e00) // NaN in row 5
			x := randActs(r, K)
			var a kernels.Acts
			if err := a.Prepare(dt, x, 1, K); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, N)
			if err := kernels.MatMul(nil, dt, y, w, &a, N); err != nil {
				t.Fatal(err)
			}
			want, _ := refProduct(dt, w, x, 1, N, K)
			for n, v := range y {
				wv := want[n]
				switch {
				case math.IsNaN(wv):
					if v == v {
						t.Errorf("%v: y[%d] = %g, want NaN", dt, n, v)
					}
				case math.IsInf(wv, 0):
					if float64(v) != wv {
						t.Errorf("%v: y[%d] = %g, want %g", dt, n, v, wv)
					}
				case v-v != 0:
					t.Errorf("%v: y[%d] = %g, want %g", dt, n, v, wv)
				}
			}
			for _, n := range []int{0, 2, 3, 6} {
				if math.IsNaN(want[n]) || math.IsInf(want[n], 0) {
					t.Fatalf("%v: reference row %d is not finite", dt, n)
				}
			}
		}
	})
}

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
