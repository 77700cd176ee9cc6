package lower_test

import (
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/pootest"
	"pgregory.net/rapid"
)

var testTarget = lower.Target{
	Name:          "test",
	MatMulWeights: []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_K, poot.Q6_K},
	Fallback:      []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.Q8_K, poot.MXFP4},
}

// TestNoLiveOverlap: two arena regions whose lifetimes meet never share
// bytes, whatever passes run.
func TestNoLiveOverlap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := pootest.GenGraph().Draw(rt, "case")
		var opts lower.Options
		if off := rapid.SampledFrom(append([]string{""}, lower.Passes()...)).Draw(rt, "off"); off != "" {
			opts.Disabled = []string{off}
		}
		p, err := lower.Build(c.Graph, testTarget, opts)
		if err != nil {
			rt.Fatal(err)
		}
		type region struct {
			id          poot.ValueID
			lo, hi      int64
			first, last int
		}
		var rs []region
		for id, live := range p.Live {
			l := p.Locs[id]
			if l.Space != lower.Arena || l.Root != id {
				rt.Fatalf("live root %d has location %+v", id, l)
			}
			if l.Offset%64 != 0 || l.Offset+l.Bytes > p.ArenaBytes {
				rt.Fatalf("region %d at %d+%d outside an arena of %d or misaligned", id, l.Offset, l.Bytes, p.ArenaBytes)
			}
			rs = append(rs, region{id, l.Offset, l.Offset + max(l.Bytes, 1), live[0], live[1]})
		}
		for i, a := range rs {
			for _, b := range rs[i+1:] {
				if a.first <= b.last && b.first <= a.last && a.lo < b.hi && b.lo < a.hi {
					rt.Fatalf("values %d [%d,%d) live %v and %d [%d,%d) live %v overlap\n%v", a.id, a.lo, a.hi, [2]int{a.first, a.last}, b.id, b.lo, b.hi, [2]int{b.first, b.last}, p)
				}
			}
		}
		// Every kernel's inputs and outputs have storage.
		for _, k := range p.Kernels {
			for _, id := range append(append([]poot.ValueID{}, k.Inputs...), k.Outputs...) {
				if p.Locs[id].Space == lower.None {
					rt.Fatalf("kernel %s reads or writes %%%d, which has no storage\n%v", k.Name(), id, p)
				}
			}
		}
	})
}

// TestPlanPrints: the printed plan names every kernel with its cost.
func TestPlanPrints(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := pootest.GenGraph().Draw(rt, "case")
		p, err := lower.Build(c.Graph, testTarget, lower.Options{})
		if err != nil {
			rt.Fatal(err)
		}
		s := p.String()
		if got := strings.Count(s, "\n"); got < len(p.Kernels)+1 {
			rt.Fatalf("%d lines for %d kernels:\n%s", got, len(p.Kernels), s)
		}
		for _, k := range p.Kernels {
			if !strings.Contains(s, k.Name()) {
				rt.Fatalf("kernel %s missing from\n%s", k.Name(), s)
			}
		}
	})
}

// TestLegalizeError: a contraction over a dtype the target cannot read is
// a typed error naming the equation.
func TestLegalizeError(t *testing.T) {
	type brand struct{}
	b := poot.NewBuilder[brand](poot.Limits{})
	x := b.SlotNamed("x", poot.T(poot.F32, 1, 256))
	w := b.Constant("w", poot.T(poot.Q5_K, 4, 256))
	g, err := b.Finish(poot.Out(b.MatMul(x, w)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = lower.Build(g, lower.Target{Name: "tiny", MatMulWeights: []poot.DType{poot.F32}}, lower.Options{})
	le, ok := err.(*lower.LegalizeError)
	if !ok || le.Eqn != 0 || le.Op != poot.MatMul || !strings.Contains(le.Error(), "q5_K") {
		t.Fatalf("got %v, want a LegalizeError for eqn 0 naming q5_K", err)
	}
}

// TestIndexedBytes: an indexed product's cost counts the matrices its rows
// can select (at most one a row), not every expert.
func TestIndexedBytes(t *testing.T) {
	for _, rows := range []int{1, 3, 8, 20} {
		b := poot.NewBuilder[struct{}](poot.Limits{})
		x := b.SlotNamed("x", poot.T(poot.F32, rows, 64))
		idx := b.SlotNamed("idx", poot.T(poot.I32, rows))
		w := b.Constant("w", poot.T(poot.Q8_0, 8, 32, 64))
		g, err := b.Finish(poot.Out(b.IndexedMatMul(x, w, idx)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := lower.Build(g, testTarget, lower.Options{})
		if err != nil {
			t.Fatal(err)
		}
		expert := poot.Q8_0.RowBytes(64) * 32
		want := int64(min(rows, 8))*expert + int64(rows*64*4+rows*4+rows*32*4)
		var got int64
		for _, k := range p.Kernels {
			if e := g.Eqn(k.Eqns[0]); e.Op == poot.IndexedMatMul {
				got += k.Bytes
			}
		}
		if got != want {
			t.Errorf("%d rows: the product moves %d bytes, want %d", rows, got, want)
		}
	}
}
