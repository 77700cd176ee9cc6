package ops_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
)

func coreGeLU(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func coreGeLUErf(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

func coreSiLU(x float64) float64 { return x / (1 + math.Exp(-x)) }

func coreZip(a, b []float64, f func(x, y float64) float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = f(a[i], b[i])
	}
	return out
}

func TestActivationsAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const rows, n = 4, 9
	gv, uv := coreRand(r, rows*n, 10), coreRand(r, rows*n, 10)
	unary := []struct {
		name string
		rec  func(b *poot.Builder[coreBrand], x coreT) coreT
		ref  func(float64) float64
	}{
		{"GeLU", ops.GeLU[coreBrand], coreGeLU},
		{"GeLUErf", ops.GeLUErf[coreBrand], coreGeLUErf},
		{"SoftCap(30)", func(b *poot.Builder[coreBrand], x coreT) coreT { return ops.SoftCap(b, x, 30) }, func(x float64) float64 { return 30 * math.Tanh(x/30) }},
		{"SoftCap(3)", func(b *poot.Builder[coreBrand], x coreT) coreT { return ops.SoftCap(b, x, 3) }, func(x float64) float64 { return 3 * math.Tanh(x/3) }},
	}
	for _, c := range unary {
		g := newCore()
		out := g.run(t, c.name, c.rec(g.b, g.constant(t, "x", gv, rows, n)))
		coreCheck(t, c.name, out[0], coreMap(gv, c.ref))
	}
	clamped := func(g, u float64) float64 {
		const limit, alpha = 7, 1.702
		g = math.Min(g, limit)
		u = math.Max(math.Min(u, limit), -limit)
		return (u + 1) * g * coreSigmoid(alpha*g)
	}
	binary := []struct {
		name string
		rec  ops.GLU[coreBrand]
		ref  func(g, u float64) float64
	}{
		{"SwiGLU", ops.SwiGLU[coreBrand], func(g, u float64) float64 { return coreSiLU(g) * u }},
		{"GeGLU", ops.GeGLU[coreBrand], func(g, u float64) float64 { return coreGeLU(g) * u }},
		{"GeGLUErf", ops.GeGLUErf[coreBrand], func(g, u float64) float64 { return coreGeLUErf(g) * u }},
		{"SwiGLUClamped", func(b *poot.Builder[coreBrand], g, u coreT) coreT { return ops.SwiGLUClamped(b, g, u, 7, 1.702) }, clamped},
	}
	for _, c := range binary {
		g := newCore()
		out := g.run(t, c.name, c.rec(g.b, g.constant(t, "g", gv, rows, n), g.constant(t, "u", uv, rows, n)))
		coreCheck(t, c.name, out[0], coreZip(gv, uv, c.ref))
	}
}

func TestFeedForwardAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	const rows, c, f = 3, 32, 20
	xv := coreRand(r, rows*c, 1)
	gw, uw, dw := coreRand(r, f*c, 0.3), coreRand(r, f*c, 0.3), coreRand(r, c*f, 0.3)
	ub, db := coreRand(r, f, 0.1), coreRand(r, c, 0.1)

	g := newCore()
	x := g.constant(t, "x", xv, rows, c)
	wg, wgv := g.stored(t, "gate", poot.F16, gw, f, c)
	y := ops.GatedFFN(g.b, x, wg, g.constant(t, "up", uw, f, c), g.constant(t, "down", dw, c, f), ops.SwiGLU[coreBrand])
	out := g.run(t, "GatedFFN(SwiGLU)", y)
	h := coreZip(coreLinear(xv, wgv, nil, c, f), coreLinear(xv, uw, nil, c, f), func(a, b float64) float64 { return coreSiLU(a) * b })
	coreCheck(t, "GatedFFN(SwiGLU)", out[0], coreLinear(h, dw, nil, f, c))

	g = newCore()
	y = ops.FFN(g.b, g.constant(t, "x", xv, rows, c), g.constant(t, "up", uw, f, c), g.constant(t, "up.bias", ub, f),
		g.constant(t, "down", dw, c, f), g.constant(t, "down.bias", db, c), ops.GeLUErf[coreBrand])
	out = g.run(t, "FFN(GeLUErf, biases)", y)
	h = coreMap(coreLinear(xv, uw, ub, c, f), coreGeLUErf)
	coreCheck(t, "FFN(GeLUErf, biases)", out[0], coreLinear(h, dw, db, f, c))
}
