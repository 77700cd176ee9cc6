package ops_test

import (
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
)

func coreLinear(x, w, bias []float64, k, n int) []float64 {
	m := len(x) / k
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			for c := range k {
				s += x[i*k+c] * w[j*k+c]
			}
			if bias != nil {
				s += bias[j]
			}
			out[i*n+j] = s
		}
	}
	return out
}

func TestLinearAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const k, n = 64, 10
	var none coreT
	for _, c := range []struct {
		name  string
		shape []int
		dtype poot.DType
		bias  bool
	}{
		{"Linear(rank 1)", []int{k}, poot.F32, false},
		{"Linear(rank 2, bias)", []int{3, k}, poot.F32, true},
		{"Linear(rank 3, bias)", []int{2, 3, k}, poot.F32, true},
		{"Linear(f16 weight)", []int{3, k}, poot.F16, true},
		{"Linear(q8_0 weight)", []int{3, k}, poot.Q8_0, false},
	} {
		size := 1
		for _, d := range c.shape {
			size *= d
		}
		xv := coreRand(r, size, 1)
		wv := coreRand(r, n*k, 1)
		bv := coreRand(r, n, 1)
		g := newCore()
		x := g.constant(t, "x", xv, c.shape...)
		w, wDec := g.stored(t, "w", c.dtype, wv, n, k)
		bias, bref := none, []float64(nil)
		if c.bias {
			bias, bref = g.constant(t, "b", bv, n), bv
		}
		y := ops.Linear(g.b, x, w, bias)
		want := append(append([]int{}, c.shape[:len(c.shape)-1]...), n)
		if got := g.b.Shape(y); !got.Equal(poot.Shape(want)) {
			t.Errorf("%s: shape %v, want %v", c.name, got, want)
		}
		out := g.run(t, c.name, y)
		coreCheck(t, c.name, out[0], coreLinear(xv, wDec, bref, k, n))
	}
}

func TestSplitQKV(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const rows, h, hkv, d = 2, 4, 2, 3
	c := (h + 2*hkv) * d
	xv := coreRand(r, rows*c, 1)
	g := newCore()
	q, k, v := ops.SplitQKV(g.b, g.constant(t, "qkv", xv, rows, c), h, hkv, d)
	out := g.run(t, "SplitQKV", q, k, v)
	widths := []int{h * d, hkv * d, hkv * d}
	start := 0
	for i, w := range widths {
		var want []float64
		for row := range rows {
			want = append(want, xv[row*c+start:row*c+start+w]...)
		}
		coreCheck(t, "SplitQKV part", out[i], want)
		start += w
	}
	// Widths that do not add up are an error, not a panic.
	b := poot.NewBuilder[coreBrand](poot.Limits{})
	parts := ops.SplitColumns(b, b.Full(poot.T(poot.F32, 2, 5), 1), 2, 2)
	if b.Err() == nil || len(parts) != 2 {
		t.Errorf("SplitColumns accepted widths that do not cover the columns")
	}
}
