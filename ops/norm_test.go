package ops_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
)

func coreRMSNorm(x, w []float64, n int, eps float64, onePlus bool) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/n; r++ {
		row := x[r*n : (r+1)*n]
		ss := 0.0
		for _, v := range row {
			ss += v * v
		}
		inv := 1 / math.Sqrt(ss/float64(n)+eps)
		for i, v := range row {
			s := 1.0
			if w != nil {
				s = w[i]
				if onePlus {
					s += 1
				}
			}
			out[r*n+i] = v * inv * s
		}
	}
	return out
}

func coreLayerNorm(x, w, bias []float64, n int, eps float64) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/n; r++ {
		row := x[r*n : (r+1)*n]
		mean := 0.0
		for _, v := range row {
			mean += v
		}
		mean /= float64(n)
		vr := 0.0
		for _, v := range row {
			vr += (v - mean) * (v - mean)
		}
		vr /= float64(n)
		for i, v := range row {
			y := (v - mean) / math.Sqrt(vr+eps)
			if w != nil {
				y *= w[i]
			}
			if bias != nil {
				y += bias[i]
			}
			out[r*n+i] = y
		}
	}
	return out
}

func coreL2Norm(x []float64, n int, eps float64) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/n; r++ {
		ss := 0.0
		for _, v := range x[r*n : (r+1)*n] {
			ss += v * v
		}
		for i, v := range x[r*n : (r+1)*n] {
			out[r*n+i] = v / math.Sqrt(ss+eps)
		}
	}
	return out
}

func TestNormsAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const rows, n, eps = 5, 12, 1e-5
	xv := coreRand(r, rows*n, 3)
	wv := coreRand(r, n, 2)
	bv := coreRand(r, n, 1)
	var none coreT

	cases := []struct {
		name string
		rec  func(g *coreGraph, x, w, bias coreT) coreT
		want []float64
	}{
		{"RMSNorm", func(g *coreGraph, x, w, _ coreT) coreT { return ops.RMSNorm(g.b, x, w, eps) }, coreRMSNorm(xv, wv, n, eps, false)},
		{"RMSNorm(1+w)", func(g *coreGraph, x, w, _ coreT) coreT { return ops.RMSNorm(g.b, x, w, eps, ops.OnePlusWeight()) }, coreRMSNorm(xv, wv, n, eps, true)},
		{"RMSNorm(no weight)", func(g *coreGraph, x, _, _ coreT) coreT { return ops.RMSNorm(g.b, x, none, eps) }, coreRMSNorm(xv, nil, n, eps, false)},
		{"LayerNorm", func(g *coreGraph, x, w, bias coreT) coreT { return ops.LayerNorm(g.b, x, w, bias, eps) }, coreLayerNorm(xv, wv, bv, n, eps)},
		{"LayerNorm(no bias)", func(g *coreGraph, x, w, _ coreT) coreT { return ops.LayerNorm(g.b, x, w, none, eps) }, coreLayerNorm(xv, wv, nil, n, eps)},
		{"L2Norm", func(g *coreGraph, x, _, _ coreT) coreT { return ops.L2Norm(g.b, x, 1e-6) }, coreL2Norm(xv, n, 1e-6)},
	}
	for _, c := range cases {
		g := newCore()
		x := g.constant(t, "x", xv, rows, n)
		w := g.constant(t, "w", wv, n)
		bias := g.constant(t, "bias", bv, n)
		// Declared but unread constants are fine; the oracle binds them all.
		out := g.run(t, c.name, c.rec(g, x, w, bias))
		coreCheck(t, c.name, out[0], c.want)
	}

	// A rank-3 input normalises over its last axis too.
	g := newCore()
	x := g.constant(t, "x", xv, 1, rows, n)
	out := g.run(t, "RMSNorm(rank 3)", ops.RMSNorm(g.b, x, g.constant(t, "w", wv, n), eps))
	coreCheck(t, "RMSNorm(rank 3)", out[0], coreRMSNorm(xv, wv, n, eps, false))

	// A half-precision weight is read through a cast.
	g = newCore()
	x = g.constant(t, "x", xv, rows, n)
	wh, whv := g.stored(t, "w", poot.BF16, wv, n)
	out = g.run(t, "RMSNorm(bf16 weight)", ops.RMSNorm(g.b, x, wh, eps))
	coreCheck(t, "RMSNorm(bf16 weight)", out[0], coreRMSNorm(xv, whv, n, eps, false))
}

func TestNormsPerHead(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, heads, d, eps = 3, 4, 8, 1e-6
	xv := coreRand(r, rows*heads*d, 3)
	wv := coreRand(r, d, 2)
	var none coreT

	g := newCore()
	out := g.run(t, "RMSNormHeads", ops.RMSNormHeads(g.b, g.constant(t, "x", xv, rows, heads*d), g.constant(t, "w", wv, d), heads, eps))
	coreCheck(t, "RMSNormHeads", out[0], coreRMSNorm(xv, wv, d, eps, false))

	g = newCore()
	out = g.run(t, "RMSNormHeads(unit, Llama 4)", ops.RMSNormHeads(g.b, g.constant(t, "x", xv, rows, heads*d), none, heads, eps))
	coreCheck(t, "RMSNormHeads(unit)", out[0], coreRMSNorm(xv, nil, d, eps, false))

	g = newCore()
	out = g.run(t, "L2NormHeads", ops.L2NormHeads(g.b, g.constant(t, "x", xv, rows, heads*d), heads, eps))
	coreCheck(t, "L2NormHeads", out[0], coreL2Norm(xv, d, eps))
}
