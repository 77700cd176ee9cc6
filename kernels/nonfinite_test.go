package kernels_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// TestMatMulNonFinite: activations holding NaN or infinities give, for
// every weight dtype, what the float64 product gives (NaN against a zero
// weight, an infinity of the right sign otherwise), where int8
// activation blocks once turned them into finite numbers. Rows without
// them are untouched.
func TestMatMulNonFinite(t *testing.T) { modes(t, testMatMulNonFinite) }

func testMatMulNonFinite(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, dt := range []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.MXFP4} {
		// Three rows take the one-row kernels, 64 the prompt tiles (for
		// F16 and BF16 at avx512 the transposed panels).
		for _, T := range []int{3, 64} {
			testNonFiniteProduct(t, dt, T, inf)
		}
	}
}

// testNonFiniteProduct checks a product of T rows of which the first two
// hold a NaN and infinities of both signs.
func testNonFiniteProduct(t *testing.T, dt poot.DType, T int, inf float32) {
	const N, K = 9, 256
	r := rand.New(rand.NewPCG(1, uint64(dt)))
	w := randWeights(r, dt, N, K)
	x := randActs(r, T*K)
	x[5] = nan32()    // row 0: NaN everywhere
	x[K+7] = inf      // row 1: ±Inf (or NaN at a zero weight)
	x[K+9] = -inf / 2 // … both signs: NaN wherever both weights are nonzero
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
		wv := want[i]
		switch {
		case math.IsNaN(wv) || v != v:
			if !math.IsNaN(wv) || v == v {
				t.Fatalf("%v T=%d: y[%d,%d] = %g, want %g", dt, T, i/N, i%N, v, wv)
			}
		case math.IsInf(wv, 0) || math.IsInf(float64(v), 0):
			if float64(v) != wv {
				t.Fatalf("%v T=%d: y[%d,%d] = %g, want %g", dt, T, i/N, i%N, v, wv)
			}
		}
		if i >= 2*N && v-v != 0 {
			t.Fatalf("%v T=%d: finite row %d gave %g", dt, T, i/N, v)
		}
	}
}

// TestAttendNonFinite: NaN and infinities in the scores and the visible
// values propagate as the definition says (and the oracle computes);
// masked positions are not read.
// With short segments the 70 positions are two segments on the avx512
// path, [0,64) and [64,70), folded together.
func TestAttendNonFinite(t *testing.T) {
	modes(t, testAttendNonFinite)
	defer kernels.SetAttnSegMin(16)()
	modes(t, testAttendNonFinite)
}

func testAttendNonFinite(t *testing.T) {
	const S, H, KVH, D = 70, 8, 2, 16 // four query heads share a cache head
	inf := float32(math.Inf(1))
	base := func() kernels.Attention {
		r := rand.New(rand.NewPCG(3, 3))
		at := kernels.Attention{Q: randActs(r, H*D), K: randActs(r, S*KVH*D), V: randActs(r, S*KVH*D),
			Out: make([]float32, H*D), Mask: make([]float32, S), S: S, Heads: H, KVHeads: KVH, HeadDim: D,
			KVStride: KVH * D, Scale: 0.25}
		at.Mask[S-1] = float32(math.Inf(-1)) // the last position is masked
		return at
	}
	nanHeads := func(at *kernels.Attention) (heads []bool) {
		for h := range H {
			n := 0
			for _, v := range at.Out[h*D : (h+1)*D] {
				if v != v {
					n++
				}
			}
			heads = append(heads, n == D)
			if n != 0 && n != D {
				t.Fatalf("head %d: %d of %d outputs NaN", h, n, D)
			}
		}
		return heads
	}
	pool := kernels.NewPool(2)
	defer pool.Close()
	for _, c := range []struct {
		name string
		poke func(at *kernels.Attention)
		nan  []int // heads that must be NaN; the others finite
	}{
		{"clean", func(*kernels.Attention) {}, nil},
		{"NaN query", func(at *kernels.Attention) { at.Q[1*D+3] = nan32() }, []int{1}},
		{"+Inf score", func(at *kernels.Attention) {
			at.K[10*KVH*D+1*D] = inf
			for h := 4; h < 8; h++ {
				at.Q[h*D] = 1 // +Inf for heads 4-7 (a negative weight would give -Inf: weight 0)
			}
		}, []int{4, 5, 6, 7}},
		{"NaN key", func(at *kernels.Attention) { at.K[3*KVH*D+2] = nan32() }, []int{0, 1, 2, 3}},
		{"NaN key in the second segment", func(at *kernels.Attention) { at.K[66*KVH*D+D+2] = nan32() }, []int{4, 5, 6, 7}},
		{"masked NaN key and value", func(at *kernels.Attention) {
			at.K[(S-1)*KVH*D] = nan32()
			at.V[(S-1)*KVH*D] = nan32()
		}, nil},
		{"all masked", func(at *kernels.Attention) {
			for s := range S {
				at.Mask[s] = float32(math.Inf(-1))
			}
		}, []int{0, 1, 2, 3, 4, 5, 6, 7}},
	} {
		at := base()
		c.poke(&at)
		if err := kernels.Attend(pool, &at); err != nil {
			t.Fatal(err)
		}
		pooled := nanHeads(&at)
		if err := kernels.AttendHeads(&at, 0, H); err != nil {
			t.Fatal(err)
		}
		got := nanHeads(&at)
		if !slices.Equal(pooled, got) {
			t.Errorf("%s: NaN heads %v on a pool of two, %v on one goroutine", c.name, pooled, got)
		}
		for h := range H {
			want := false
			for _, n := range c.nan {
				want = want || n == h
			}
			if got[h] != want {
				t.Errorf("%s: head %d NaN = %v, want %v", c.name, h, got[h], want)
			}
			for _, v := range at.Out[h*D : (h+1)*D] {
				if !want && math.IsInf(float64(v), 0) {
					t.Errorf("%s: head %d is infinite", c.name, h)
				}
			}
		}
	}
	// A NaN value at a visible position whose weight underflows to 0 still
	// reaches the output: 0·NaN is NaN. Also in the second segment, and
	// where a later segment's much larger scores scale the first's
	// outputs by 0.
	for _, c := range []struct {
		name     string
		nanAt    int
		lowFirst bool
	}{{"first", 7, false}, {"second", 66, false}, {"first, a larger second", 7, true}} {
		at := base()
		at.Mask[c.nanAt] = -200
		at.V[c.nanAt*KVH*D+3] = nan32()
		if c.lowFirst {
			for s := range 64 {
				if s != c.nanAt {
					at.Mask[s] = -150
				}
			}
		}
		if err := kernels.AttendHeads(&at, 0, H); err != nil {
			t.Fatal(err)
		}
		for h := range H {
			v := at.Out[h*D+3]
			if isNaN := v != v; isNaN != (h < 4) {
				t.Errorf("value NaN at weight 0 (%s): head %d element 3 = %g", c.name, h, v)
			}
		}
	}
}

// TestNonFiniteScan: the scan that picks the outputs to recompute exactly
// finds one infinity or NaN at any position of a row of any length, and
// nothing in rows of finite values as large as float32 holds.
func TestNonFiniteScan(t *testing.T) { modes(t, testNonFiniteScan) }

func testNonFiniteScan(t *testing.T) {
	odd := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), nan32(), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00000)}
	for n := range 100 {
		x := make([]float32, n)
		for i := range x {
			x[i] = math.MaxFloat32
			if i%2 == 1 {
				x[i] = -math.SmallestNonzeroFloat32
			}
		}
		if kernels.HasNonFinite(x) {
			t.Fatalf("n=%d: finite row reported", n)
		}
		for i := range n {
			for _, v := range odd {
				old := x[i]
				x[i] = v
				if !kernels.HasNonFinite(x) {
					t.Fatalf("n=%d: %v at %d missed", n, v, i)
				}
				x[i] = old
			}
		}
	}
}

// TestActsReuse prepares one Acts for quantized weights, with a NaN in a
// row, and then for F32 weights with more rows, one of whose outputs is
// an infinity: the second product must not read the first preparation's
// marks of non-finite rows (it indexed past them, or would recompute rows
// that are finite now).
func TestActsReuse(t *testing.T) { modes(t, testActsReuse) }

func testActsReuse(t *testing.T) {
	const K, N = 64, 5
	r := rand.New(rand.NewPCG(3, 3))
	var a kernels.Acts
	x := randActs(r, 3*K)
	x[1] = nan32()
	if err := a.Prepare(poot.Q8_0, x, 3, K); err != nil {
		t.Fatal(err)
	}
	if err := kernels.MatMul(nil, poot.Q8_0, make([]float32, 3*N), randWeights(r, poot.Q8_0, N, K), &a, N); err != nil {
		t.Fatal(err)
	}
	const T = 8
	x = randActs(r, T*K)
	w := randWeights(r, poot.F32, N, K)
	copy(w[4*(2*K+7):], []byte{0, 0, 0x80, 0x7f}) // weight row 2's element 7: +Inf
	if err := a.Prepare(poot.F32, x, T, K); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, T*N)
	if err := kernels.MatMul(nil, poot.F32, y, w, &a, N); err != nil {
		t.Fatal(err)
	}
	want, bound := refProduct(poot.F32, w, x, T, N, K)
	for i, v := range y {
		if math.IsInf(want[i], 0) || math.IsNaN(want[i]) {
			if float64(v) != want[i] && !(math.IsNaN(want[i]) && v != v) {
				t.Fatalf("y[%d,%d] = %g, want %g", i/N, i%N, v, want[i])
			}
			continue
		}
		if d := math.Abs(float64(v) - want[i]); !(d <= bound[i]) {
			t.Fatalf("y[%d,%d] = %g, want %g ± %g", i/N, i%N, v, want[i], bound[i])
		}
	}
}
