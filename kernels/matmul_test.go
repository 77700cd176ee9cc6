package kernels_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
	"pgregory.net/rapid"
)

var matDTypes = []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.MXFP4}

// modes runs f once for every dispatch level this machine supports, as
// subtests named by level ("go", "avx2", ...).
func modes(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, l := range kernels.Levels() {
		t.Run(l.String(), func(t *testing.T) {
			atLevel(t, l)
			f(t)
		})
	}
}

// atLevel switches the kernels to l for the rest of the test.
func atLevel(t testing.TB, l kernels.Level) {
	t.Helper()
	restore, err := kernels.SetLevel(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore)
}

func checkProduct(t *testing.T, dt poot.DType, T, N, K int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	w := randWeights(r, dt, N, K)
	x := randActs(r, T*K)
	var a kernels.Acts
	if err := a.Prepare(dt, x, T, K); err != nil {
		t.Fatal(err)
	}
	// A finite sentinel in every output: a NaN would be recomputed by the
	// non-finite fallback (exactNonFinite) and hide an output the kernels
	// never wrote, or one they added to instead of storing.
	y := make([]float32, T*N)
	for i := range y {
		y[i] = 3e37
	}
	// Two row ranges, to exercise n0 > 0.
	mid := N / 3
	if err := kernels.MatMulRows(dt, y, N, w, &a, 0, mid); err != nil {
		t.Fatal(err)
	}
	if err := kernels.MatMulRows(dt, y, N, w, &a, mid, N); err != nil {
		t.Fatal(err)
	}
	want, bound := refProduct(dt, w, x, T, N, K)
	for i := range y {
		if d := math.Abs(float64(y[i]) - want[i]); !(d <= bound[i]) {
			t.Fatalf("%v T=%d N=%d K=%d: y[%d,%d] = %g, want %g ± %g (off by %g)", dt, T, N, K, i/N, i%N, y[i], want[i], bound[i], d)
		}
	}
}

func TestMatMul(t *testing.T) {
	modes(t, func(t *testing.T) {
		for _, dt := range matDTypes {
			be := dt.BlockElems()
			ks := []int{256, 512, 768}
			if be == 1 {
				ks = []int{1, 3, 7, 8, 15, 16, 17, 31, 32, 33, 64, 100, 257, 1000}
			} else if be == 32 {
				ks = []int{32, 64, 96, 160, 256, 1024}
			}
			for _, K := range ks {
				for _, T := range []int{1, 2, 3, 4, 5, 8, 9} {
					for _, N := range []int{1, 2, 3, 4, 5, 7, 12, 13} {
						checkProduct(t, dt, T, N, K, uint64(K*1000+T*100+N))
					}
				}
			}
		}
	})
}

// TestMatMulProperty checks random shapes and row splits.
func TestMatMulProperty(t *testing.T) {
	modes(t, func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			dt := rapid.SampledFrom(matDTypes).Draw(rt, "dtype")
			be := dt.BlockElems()
			// Up to 40 blocks of 32 and 5 of 256: past the quantized
			// tiles' packed panels of K (32 and 4 blocks).
			K := be * rapid.IntRange(1, max(1, 600/be)).Draw(rt, "blocks")
			if be == 32 {
				K = 32 * rapid.IntRange(1, 40).Draw(rt, "blocks32")
			}
			if be == 256 {
				K = 256 * rapid.IntRange(1, 5).Draw(rt, "blocks256")
			}
			if be == 1 && rapid.Bool().Draw(rt, "K16") {
				K = 16 * rapid.IntRange(1, 37).Draw(rt, "blocks16") // the avx512 F16/BF16 tiles' K
			}
			// Few rows (the one-row kernels and the smallest tiles) or a
			// prompt's (every tile, the avx512 F16/BF16 transposed panels
			// of 48 and 64 rows and the rows past them).
			T := rapid.OneOf(rapid.IntRange(1, 11), rapid.IntRange(44, 140)).Draw(rt, "T")
			N := rapid.IntRange(1, 19).Draw(rt, "N")
			seed := rapid.Uint64().Draw(rt, "seed")
			r := rand.New(rand.NewPCG(seed, 1))
			w := randWeights(r, dt, N, K)
			x := randActs(r, T*K)
			var a kernels.Acts
			if err := a.Prepare(dt, x, T, K); err != nil {
				rt.Fatal(err)
			}
			y := make([]float32, T*N)
			n0 := 0
			for n0 < N {
				n1 := n0 + rapid.IntRange(1, N-n0).Draw(rt, "step")
				if err := kernels.MatMulRows(dt, y, N, w, &a, n0, n1); err != nil {
					rt.Fatal(err)
				}
				n0 = n1
			}
			want, bound := refProduct(dt, w, x, T, N, K)
			for i := range y {
				if d := math.Abs(float64(y[i]) - want[i]); !(d <= bound[i]) {
					rt.Fatalf("%v T=%d N=%d K=%d: y[%d] = %g, want %g ± %g", dt, T, N, K, i, y[i], want[i], bound[i])
				}
			}
		})
	})
}

// TestAsmMatchesGo compares each assembly level with the Go code directly:
// they compute the same integer block sums, so they differ only by float
// rounding.
func TestAsmMatchesGo(t *testing.T) {
	for _, l := range kernels.Levels()[1:] {
		t.Run(l.String(), func(t *testing.T) { asmMatchesGo(t, l) })
	}
}

func asmMatchesGo(t *testing.T, l kernels.Level) {
	atLevel(t, l)
	r := rand.New(rand.NewPCG(3, 4))
	for _, dt := range matDTypes {
		for range 20 {
			be := dt.BlockElems()
			K := be * (1 + r.IntN(max(1, 700/be)))
			if be == 256 {
				K = 256 * (1 + r.IntN(4))
			}
			T, N := 1+r.IntN(10), 1+r.IntN(20)
			w := randWeights(r, dt, N, K)
			x := randActs(r, T*K)
			var a kernels.Acts
			if err := a.Prepare(dt, x, T, K); err != nil {
				t.Fatal(err)
			}
			ya, yg := make([]float32, T*N), make([]float32, T*N)
			if err := kernels.MatMulRows(dt, ya, N, w, &a, 0, N); err != nil {
				t.Fatal(err)
			}
			restore, _ := kernels.SetLevel(kernels.LevelGo)
			err := kernels.MatMulRows(dt, yg, N, w, &a, 0, N)
			restore()
			if err != nil {
				t.Fatal(err)
			}
			_, _, bound := refProductBounds(dt, w, x, T, N, K)
			for i := range ya {
				// Both sides err by at most the float part of the bound
				// relative to the same quantized inputs; bound covers it.
				if d := math.Abs(float64(ya[i] - yg[i])); d > bound[i] {
					t.Fatalf("%v T=%d N=%d K=%d: %v %g, go %g", dt, T, N, K, l, ya[i], yg[i])
				}
			}
		}
	}
}

// TestMatMulPool: at every level, a product on a pool of three gives the
// serial product's bits and allocates nothing, nor does its preparation.
func TestMatMulPool(t *testing.T) {
	modes(t, testMatMulPool)
}

func testMatMulPool(t *testing.T) {
	p := kernels.NewPool(3)
	defer p.Close()
	// Three activation rows split the rows evenly (decode); 37 split them
	// at multiples of the tiles' or panels' rows (prompt), a 203-row
	// product ending in partial ones (F32's, BF16's and, from 256 rows,
	// F16's over transposed rows at the avx2 level).
	for _, c := range []struct {
		dt poot.DType
		T  int
	}{{poot.F32, 3}, {poot.Q4_0, 3}, {poot.Q6_K, 3}, {poot.F32, 37}, {poot.F16, 37}, {poot.BF16, 37}, {poot.F16, 261}, {poot.Q8_0, 37}, {poot.Q4_0, 37}, {poot.Q4_K, 37}, {poot.Q5_K, 37}} {
		dt, T := c.dt, c.T
		r := rand.New(rand.NewPCG(5, 6))
		N, K := 203, 512
		w := randWeights(r, dt, N, K)
		x := randActs(r, T*K)
		var a kernels.Acts
		if err := a.Prepare(dt, x, T, K); err != nil {
			t.Fatal(err)
		}
		y1, y2 := make([]float32, T*N), make([]float32, T*N)
		if err := kernels.MatMul(p, dt, y1, w, &a, N); err != nil {
			t.Fatal(err)
		}
		if err := kernels.MatMul(nil, dt, y2, w, &a, N); err != nil {
			t.Fatal(err)
		}
		for i := range y1 {
			if y1[i] != y2[i] {
				t.Fatalf("%v: pooled y[%d] = %g, serial %g", dt, i, y1[i], y2[i])
			}
		}
		// A copy of a used Acts must compute with its own arguments.
		b := a
		clear(y2)
		if err := kernels.MatMul(p, dt, y2, w, &b, N); err != nil {
			t.Fatal(err)
		}
		for i := range y1 {
			if y1[i] != y2[i] {
				t.Fatalf("%v: copied Acts gave y[%d] = %g, want %g", dt, i, y2[i], y1[i])
			}
		}
		allocs := testing.AllocsPerRun(20, func() { _ = kernels.MatMul(p, dt, y1, w, &a, N) })
		if allocs != 0 {
			t.Errorf("%v: MatMul allocates %v times a call", dt, allocs)
		}
		allocs = testing.AllocsPerRun(20, func() { _ = a.Prepare(dt, x, T, K) })
		if allocs != 0 {
			t.Errorf("%v: Prepare allocates %v times a call", dt, allocs)
		}
	}
}

// TestDecodeSplit checks that a decode product split between workers (the
// pool's guided chunks, on three workers) computes the serial bits.
func TestDecodeSplit(t *testing.T) {
	p := kernels.NewPool(3)
	defer p.Close()
	r := rand.New(rand.NewPCG(7, 8))
	const N, K = 1031, 1024
	w := randWeights(r, poot.F32, N, K)
	var a kernels.Acts
	if err := a.Prepare(poot.F32, randActs(r, K), 1, K); err != nil {
		t.Fatal(err)
	}
	y1, y2 := make([]float32, N), make([]float32, N)
	if err := kernels.MatMul(p, poot.F32, y1, w, &a, N); err != nil {
		t.Fatal(err)
	}
	if err := kernels.MatMul(nil, poot.F32, y2, w, &a, N); err != nil {
		t.Fatal(err)
	}
	for i := range y1 {
		if y1[i] != y2[i] {
			t.Fatalf("y[%d] = %g split, %g serial", i, y1[i], y2[i])
		}
	}
}

// TestQuadsPreparation: Q4_0 and MXFP4 products take activations prepared
// for either of them only (their avx512 one-row kernels read a copy that
// Prepare keeps for them, Acts.qx), and refuse, with ErrSize, ones
// prepared for the other 32-element dtypes; a product of either with the
// other's preparation gives the bits of its own.
func TestQuadsPreparation(t *testing.T) {
	for _, other := range []poot.DType{poot.Q8_0, poot.Q4_1, poot.Q5_0, poot.Q5_1} {
		if kernels.SamePreparation(other, poot.MXFP4) || kernels.SamePreparation(poot.Q4_0, other) {
			t.Fatalf("%v shares its preparation with Q4_0 or MXFP4", other)
		}
	}
	if !kernels.SamePreparation(poot.MXFP4, poot.Q4_0) {
		t.Fatal("Q4_0 and MXFP4 do not share their preparation")
	}
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		const N, K = 5, 160
		for _, dt := range []poot.DType{poot.Q4_0, poot.MXFP4} {
			w := randWeights(r, dt, N, K)
			x := randActs(r, 5*K)
			var q8, own, twin kernels.Acts
			if err := q8.Prepare(poot.Q8_0, x, 5, K); err != nil {
				t.Fatal(err)
			}
			if err := kernels.MatMulRows(dt, make([]float32, 5*N), N, w, &q8, 0, N); !errors.Is(err, kernels.ErrSize) {
				t.Fatalf("%v product of activations prepared for Q8_0: %v, want ErrSize", dt, err)
			}
			sibling := poot.MXFP4
			if dt == poot.MXFP4 {
				sibling = poot.Q4_0
			}
			if err := own.Prepare(dt, x, 5, K); err != nil {
				t.Fatal(err)
			}
			if err := twin.Prepare(sibling, x, 5, K); err != nil {
				t.Fatal(err)
			}
			y1, y2 := make([]float32, 5*N), make([]float32, 5*N)
			if err := kernels.MatMulRows(dt, y1, N, w, &own, 0, N); err != nil {
				t.Fatal(err)
			}
			if err := kernels.MatMulRows(dt, y2, N, w, &twin, 0, N); err != nil {
				t.Fatal(err)
			}
			for i := range y1 {
				if y1[i] != y2[i] {
					t.Fatalf("%v: y[%d] = %g prepared for it, %g for %v", dt, i, y1[i], y2[i], sibling)
				}
			}
		}
	})
}

// TestQ8_0Preparation: a preparation for Q8_0 serves Q4_1, Q5_0 and Q5_1
// products with the bits of their own, and one for those a Q8_0 product
// (where SamePreparation says they share one; where it does not, the
// product is refused with ErrSize, never read past its end).
func TestQ8_0Preparation(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		const T, N, K = 5, 6, 96
		x := randActs(r, T*K)
		product := func(dt, prep poot.DType) ([]float32, error) {
			var a kernels.Acts
			if err := a.Prepare(prep, x, T, K); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, T*N)
			return y, kernels.MatMul(nil, dt, y, randWeights(rand.New(rand.NewPCG(uint64(dt), 1)), dt, N, K), &a, N)
		}
		for _, other := range []poot.DType{poot.Q4_1, poot.Q5_0, poot.Q5_1} {
			for _, c := range [][2]poot.DType{{other, poot.Q8_0}, {poot.Q8_0, other}} {
				dt, prep := c[0], c[1]
				own, err := product(dt, dt)
				if err != nil {
					t.Fatal(err)
				}
				got, err := product(dt, prep)
				if !kernels.SamePreparation(prep, dt) {
					if !errors.Is(err, kernels.ErrSize) {
						t.Fatalf("%v product of activations prepared for %v: %v, want ErrSize", dt, prep, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%v product of activations prepared for %v: %v", dt, prep, err)
				}
				for i := range own {
					if got[i] != own[i] {
						t.Fatalf("%v: y[%d] = %g prepared for %v, %g for itself", dt, i, got[i], prep, own[i])
					}
				}
			}
		}
	})
	if !kernels.SamePreparation(poot.Q8_0, poot.Q5_1) || !kernels.SamePreparation(poot.Q5_1, poot.Q8_0) {
		t.Error("Q8_0 and Q5_1 do not share their preparation")
	}
}

func TestMatMulErrors(t *testing.T) {
	var a kernels.Acts
	x := make([]float32, 64)
	y := make([]float32, 8)
	w := make([]byte, 4*34*2)
	cases := []struct {
		name string
		err  error
	}{
		{"unprepared", kernels.MatMulRows(poot.Q8_0, y, 4, w, &a, 0, 4)},
		{"bad dtype", a.Prepare(poot.I32, x, 1, 64)},
		{"K not blocks", a.Prepare(poot.Q8_0, x, 1, 48)},
		{"short x", a.Prepare(poot.Q8_0, x, 2, 64)},
		{"empty", a.Prepare(poot.Q8_0, x, 0, 64)},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if err := a.Prepare(poot.Q8_0, x, 1, 64); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		dt     poot.DType
		y      []float32
		w      []byte
		N      int
		n0, n1 int
	}{
		{"wrong family", poot.Q4_K, y, w, 4, 0, 4},
		{"short w", poot.Q8_0, y, w[:100], 4, 0, 4},
		{"short y", poot.Q8_0, y[:3], w, 4, 0, 4},
		{"range", poot.Q8_0, y, w, 4, 3, 2},
		{"range end", poot.Q8_0, y, w, 4, 0, 5},
		{"negative", poot.Q8_0, y, w, 4, -1, 2},
	} {
		if err := kernels.MatMulRows(c.dt, c.y, c.N, c.w, &a, c.n0, c.n1); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if err := kernels.MatVecRows(poot.Q8_0, y, w, &a, 0, 4); err != nil {
		t.Errorf("MatVecRows: %v", err)
	}
}

func ExampleMatMul() {
	// y = W·x for a 2x4 F32 weight matrix and one activation row.
	w := make([]byte, 0, 32)
	for _, v := range []float32{1, 2, 3, 4, 0, 1, 0, -1} {
		w = append(w, byte(math.Float32bits(v)), byte(math.Float32bits(v)>>8), byte(math.Float32bits(v)>>16), byte(math.Float32bits(v)>>24))
	}
	var a kernels.Acts
	if err := a.Prepare(poot.F32, []float32{1, 1, 1, 2}, 1, 4); err != nil {
		panic(err)
	}
	y := make([]float32, 2)
	if err := kernels.MatMul(nil, poot.F32, y, w, &a, 2); err != nil {
		panic(err)
	}
	fmt.Println(y)
	// Output: [14 -1]
}

// TestMatMulExact uses activations that quantize without error (integers in
// [-127,127] with 127 in every block of 32, so every block scale is 1): then
// only float rounding separates a kernel from the exact product, and the
// tolerance is tight enough to catch a wrong scale or offset anywhere.
func TestMatMulExact(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		for _, dt := range matDTypes {
			for range 10 {
				be := max(dt.BlockElems(), 32)
				K := be * (1 + r.IntN(max(1, 1024/be)))
				T, N := 1+r.IntN(9), 1+r.IntN(9)
				w := randWeights(r, dt, N, K)
				x := make([]float32, T*K)
				for i := range x {
					x[i] = float32(r.IntN(255) - 127)
					if i%32 == 0 {
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
				want, _, fbound := refProductBounds(dt, w, x, T, N, K)
				for i := range y {
					if d := math.Abs(float64(y[i]) - want[i]); !(d <= fbound[i]) {
						t.Fatalf("%v T=%d N=%d K=%d: y[%d] = %g, want %g ± %g", dt, T, N, K, i, y[i], want[i], fbound[i])
					}
				}
			}
		}
	})
}

// TestMatMulSideBySide writes two products into one buffer with a shared
// output stride, as a fused Q/K projection would, and checks that neither
// writes outside its columns.
func TestMatMulSideBySide(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 22))
		const T, K, N1, N2 = 5, 256, 7, 6
		const ldy = N1 + N2 + 3
		for _, dt := range matDTypes {
			w1, w2 := randWeights(r, dt, N1, K), randWeights(r, dt, N2, K)
			x := randActs(r, T*K)
			var a kernels.Acts
			if err := a.Prepare(dt, x, T, K); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, T*ldy)
			for i := range y {
				y[i] = -7
			}
			if err := kernels.MatMulRows(dt, y, ldy, w1, &a, 0, N1); err != nil {
				t.Fatal(err)
			}
			if err := kernels.MatMulRows(dt, y[N1:], ldy, w2, &a, 0, N2); err != nil {
				t.Fatal(err)
			}
			want1, b1 := refProduct(dt, w1, x, T, N1, K)
			want2, b2 := refProduct(dt, w2, x, T, N2, K)
			for tt := range T {
				for c := range ldy {
					got := float64(y[tt*ldy+c])
					switch {
					case c < N1:
						if math.Abs(got-want1[tt*N1+c]) > b1[tt*N1+c] {
							t.Fatalf("%v: first product [%d,%d] = %g, want %g", dt, tt, c, got, want1[tt*N1+c])
						}
					case c < N1+N2:
						i := tt*N2 + c - N1
						if math.Abs(got-want2[i]) > b2[i] {
							t.Fatalf("%v: second product [%d,%d] = %g, want %g", dt, tt, c-N1, got, want2[i])
						}
					default:
						if got != -7 {
							t.Fatalf("%v: padding [%d,%d] overwritten", dt, tt, c)
						}
					}
				}
			}
		}
	})
}

func TestErrorKinds(t *testing.T) {
	var a kernels.Acts
	err := a.Prepare(poot.I32, make([]float32, 4), 1, 4)
	if !errors.Is(err, kernels.ErrUnsupported) {
		t.Errorf("Prepare(I32) = %v, want ErrUnsupported", err)
	}
	err = a.Prepare(poot.Q8_0, make([]float32, 4), 1, 4)
	var ke *kernels.Error
	if !errors.Is(err, kernels.ErrSize) || !errors.As(err, &ke) || ke.Op != "Prepare" {
		t.Errorf("Prepare(Q8_0, K=4) = %v, want a Prepare ErrSize", err)
	}
	if err := kernels.Add(make([]float32, 2), nil, nil); !errors.Is(err, kernels.ErrSize) {
		t.Errorf("Add = %v, want ErrSize", err)
	}
}

// TestMXFP4Codes puts every FP4 code at every position of a block, alone,
// against a one-hot activation of 127 (quantized exactly: scale 1), so the
// product is the code's doubled value times the block scale times 127,
// exact in float32. It checks the assembly's copy of the value table and
// its nibble order, and the Go decoder's, against the reference decoder.
func TestMXFP4Codes(t *testing.T) {
	modes(t, func(t *testing.T) {
		const K = 64
		x := make([]float32, 32*K) // 32 activation rows: row j is one-hot at j (and at 32+j)
		for j := range 32 {
			x[j*K+j], x[j*K+32+j] = 127, 127
		}
		var a kernels.Acts
		if err := a.Prepare(poot.MXFP4, x, 32, K); err != nil {
			t.Fatal(err)
		}
		for _, e := range []byte{2, 100, 127, 128, 200, 240} {
			// Weight row c holds code c at every position of block 0 and
			// code 15-c in block 1, with scales e and e+1.
			w := make([]byte, 16*34)
			for c := range 16 {
				row := w[34*c:]
				row[0], row[17] = e, e+1
				for i := range 16 {
					row[1+i] = byte(c) | byte(c)<<4
					row[18+i] = byte(15-c) | byte(15-c)<<4
				}
			}
			y := make([]float32, 32*16)
			if err := kernels.MatMulRows(poot.MXFP4, y, 16, w, &a, 0, 16); err != nil {
				t.Fatal(err)
			}
			// The same rows one at a time, as decode takes them.
			var one kernels.Acts
			y1 := make([]float32, 16)
			for j := range 32 {
				if err := one.Prepare(poot.MXFP4, x[j*K:(j+1)*K], 1, K); err != nil {
					t.Fatal(err)
				}
				if err := kernels.MatMulRows(poot.MXFP4, y1, 16, w, &one, 0, 16); err != nil {
					t.Fatal(err)
				}
				for c, v := range y1 {
					if v != y[j*16+c] {
						t.Fatalf("e=%d code %d at %d: %g one row at a time, %g in 32", e, c, j, v, y[j*16+c])
					}
				}
			}
			for c := range 16 {
				ref := refDequant(poot.MXFP4, w[34*c:34*c+34], K)
				for j := range 32 {
					want := (ref[j] + ref[32+j]) * 127
					if got := y[j*16+c]; float64(got) != want {
						t.Fatalf("e=%d code %d at %d: %g, want %g", e, c, j, got, want)
					}
				}
			}
		}
	})
}
