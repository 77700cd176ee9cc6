package pootest_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/pootest"
	"github.com/pootlabs/poot/tensor"
	"pgregory.net/rapid"
)

func TestDiff(t *testing.T) {
	f := func(v ...float32) tensor.Tensor {
		x, _ := tensor.FromF32(poot.Shape{len(v)}, v)
		return x
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cases := []struct {
		a, b  tensor.Tensor
		tol   pootest.Tolerance
		index int // -1: agree
	}{
		{f(1, nan, inf), f(1, nan, inf), pootest.Exact, -1},
		{f(1, 2), f(1, 2.0001), pootest.Exact, 1},
		{f(1, 2), f(1, 2.0001), pootest.Default, -1},
		{f(1, inf), f(1, float32(math.MaxFloat32)), pootest.Default, 1},
		{f(nan), f(0), pootest.Default, 0},
		{f(inf), f(-inf), pootest.Default, 0},
	}
	for i, c := range cases {
		m, err := pootest.Diff(c.a, c.b, c.tol)
		if err != nil {
			t.Fatal(err)
		}
		if (m == nil) != (c.index < 0) || (m != nil && m.Index != c.index) {
			t.Errorf("case %d: mismatch %+v, want index %d", i, m, c.index)
		}
	}
	x, _ := tensor.FromI32(poot.Shape{2}, []int32{1, 2})
	y, _ := tensor.FromI32(poot.Shape{2}, []int32{1, 3})
	if m, _ := pootest.Diff(x, y, pootest.Default); m == nil || m.Index != 1 {
		t.Errorf("I32 values must match exactly: %+v", m)
	}
	if _, err := pootest.Diff(x, f(1, 2), pootest.Default); err == nil {
		t.Error("types differ but Diff did not say so")
	}
}

// TestWitnessAllPreservesMeaning runs random graphs and their
// witness-everything copies: outputs are equal and every equation has its
// witness.
func TestWitnessAllPreservesMeaning(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := pootest.GenGraph().Draw(t, "case")
		wg, err := pootest.WitnessAll(c.Graph)
		if err != nil {
			t.Fatal(err)
		}
		if wg.NumEqns() != c.Graph.NumEqns() || len(wg.Witnesses()) != c.Graph.NumEqns()+len(c.Graph.Witnesses()) {
			t.Fatalf("%d equations and %d witnesses for %d equations", wg.NumEqns(), len(wg.Witnesses()), c.Graph.NumEqns())
		}
		for i := range wg.NumEqns() {
			if c.Graph.Scope(c.Graph.Eqn(i).Scope) != wg.Scope(wg.Eqn(i).Scope) {
				t.Fatalf("equation %d moved scope", i)
			}
		}
		pootest.Agree(t, interp.Oracle{}, wrapped{interp.Oracle{}, wg}, c.Graph, c.Consts, c.Slots, c.State, pootest.Exact)
	})
}

// wrapped runs a different graph than it is asked to: the graph it was
// made with.
type wrapped struct {
	in interp.Interpreter
	g  *poot.Graph
}

func (w wrapped) Name() string { return "witness-all" }
func (w wrapped) Compile(_ *poot.Graph, c interp.Consts) (interp.Executable, error) {
	return w.in.Compile(w.g, c)
}

// broken is the oracle with Exp replaced by a wrong rule, to check that
// Compare finds and names the first wrong equation.
type broken struct{ naive }

func (broken) Name() string { return "broken" }
func (broken) Compile(g *poot.Graph, c interp.Consts) (interp.Executable, error) {
	h, err := g.Replace(1, 2, func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
		return []poot.Traced[poot.Rewrite]{b.Add(b.Exp(in[0]), b.FullLike(in[0], 1e-3))}
	})
	if err != nil {
		return nil, err
	}
	return naive{}.Compile(h, c)
}

func TestCompareLocatesFirstDifference(t *testing.T) {
	b := poot.NewBuilder[struct{}](poot.Limits{})
	x := b.Constant("x", poot.T(poot.F32, 2))
	var y poot.Traced[struct{}]
	b.Scope("layer.0", func() {
		y = b.Neg(x)
		b.Scope("mlp", func() { y = b.Exp(y) })
		y = b.Mul(y, y)
	})
	g, err := b.Finish(poot.Out(y))
	if err != nil {
		t.Fatal(err)
	}
	xv, _ := tensor.FromF32(poot.Shape{2}, []float32{1, 2})
	consts := interp.ConstMap{"x": xv}
	if err := pootest.Compare(interp.Oracle{}, naive{}, g, consts, nil, nil, pootest.Exact); err != nil {
		t.Fatal(err)
	}
	err = pootest.Compare(interp.Oracle{}, broken{}, g, consts, nil, nil, pootest.Exact)
	if err == nil || !strings.Contains(err.Error(), `equation 1`) || !strings.Contains(err.Error(), `"layer.0/mlp"`) {
		t.Fatalf("Compare should name equation 1 in layer.0/mlp: %v", err)
	}
}

// TestCompareErrorKinds: a step that faults under both interpreters agrees
// when the kinds match.
func TestCompareErrorKinds(t *testing.T) {
	b := poot.NewBuilder[struct{}](poot.Limits{})
	table := b.Constant("t", poot.T(poot.F32, 2, 1))
	idx := b.SlotNamed("i", poot.T(poot.I32, 1))
	g, err := b.Finish(poot.Out(b.Gather(table, idx)))
	if err != nil {
		t.Fatal(err)
	}
	tv, _ := tensor.FromF32(poot.Shape{2, 1}, []float32{1, 2})
	iv, _ := tensor.FromI32(poot.Shape{1}, []int32{5})
	consts, slots := interp.ConstMap{"t": tv}, interp.Slots{"i": iv}
	if err := pootest.Compare(interp.Oracle{}, naive{}, g, consts, slots, nil, pootest.Exact); err != nil {
		t.Fatal(err)
	}
	_, err = interp.Eval(g, consts, slots, nil)
	if !errors.Is(err, interp.ErrIndexRange) {
		t.Fatalf("oracle: %v", err)
	}
}
