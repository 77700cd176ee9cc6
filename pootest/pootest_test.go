package pootest_test

import (
	"fmt"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/pootest"
	"pgregory.net/rapid"
)

// TestOracleAgreesWithNaive holds the oracle to the independent evaluator
// of naive_test.go on random graphs ending in each primitive.
func TestOracleAgreesWithNaive(t *testing.T) {
	for _, op := range poot.Ops() {
		t.Run(op.String(), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				c := pootest.GenOp(op).Draw(t, "case")
				pootest.Agree(t, interp.Oracle{}, naive{}, c.Graph, c.Consts, c.Slots, c.State, pootest.Exact)
			})
		})
	}
}

// TestOracleAgreesWithNaiveMixed does the same on graphs mixing every
// primitive.
func TestOracleAgreesWithNaiveMixed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := pootest.GenGraph().Draw(t, "case")
		pootest.Agree(t, interp.Oracle{}, naive{}, c.Graph, c.Consts, c.Slots, c.State, pootest.Exact)
	})
}

// TestOracleUnderEdits holds the oracle to itself across graph edits that
// must not change what a graph computes.
func TestOracleUnderEdits(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := pootest.GenGraph().Draw(t, "case")
		want, err := interp.Eval(c.Graph, c.Consts, c.Slots, c.State.Clone())
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		check := func(what string, g *poot.Graph, consts interp.ConstMap, state *interp.State) {
			got, err := interp.Eval(g, consts, c.Slots, state)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d outputs, want %d", what, len(got), len(want))
			}
			for i := range got {
				m, err := pootest.Diff(got[i], want[i], pootest.Exact)
				if err != nil || m != nil {
					t.Fatalf("%s: output %d differs: %v %+v", what, i, err, m)
				}
			}
		}

		dead, err := c.Graph.RemoveDead()
		if err != nil {
			t.Fatalf("RemoveDead: %v", err)
		}
		check("RemoveDead", dead, pootest.ConstsFor(dead, c.Consts), c.State.Clone())

		names := map[string]string{}
		renamed := interp.ConstMap{}
		for name, ten := range c.Consts {
			names[name] = "renamed." + name
			renamed["renamed."+name] = ten
		}
		rg, err := c.Graph.RenameConstants(names)
		if err != nil {
			t.Fatalf("RenameConstants: %v", err)
		}
		check("RenameConstants", rg, renamed, c.State.Clone())

		n := c.Graph.NumEqns()
		lo := rapid.IntRange(0, n-1).Draw(t, "lo")
		hi := rapid.IntRange(lo+1, n).Draw(t, "hi")
		wrap := rapid.Bool().Draw(t, "wrap")
		rep, err := c.Graph.Replace(lo, hi, rerecord(c.Graph, lo, hi, wrap))
		if err != nil {
			t.Fatalf("Replace [%d, %d): %v", lo, hi, err)
		}
		check(fmt.Sprintf("Replace [%d, %d)", lo, hi), rep, c.Consts, c.State.Clone())
	})
}

// rerecord returns a Replace callback that records equations [lo, hi) of g
// again, equivalently; with wrap, every F32 result goes through Neg twice,
// which is exact.
func rerecord(g *poot.Graph, lo, hi int, wrap bool) func(*poot.Builder[poot.Rewrite], []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
	return func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
		h := map[poot.ValueID]poot.Traced[poot.Rewrite]{}
		produced := map[poot.ValueID]bool{}
		eqns := g.Eqns()
		for _, e := range eqns[lo:hi] {
			produced[e.Out] = true
		}
		k := 0
		for _, e := range eqns[lo:hi] {
			for _, id := range e.Inputs {
				if _, ok := h[id]; !ok && !produced[id] {
					h[id] = in[k]
					k++
				}
			}
			ops := make([]poot.Traced[poot.Rewrite], len(e.Inputs))
			for j, id := range e.Inputs {
				ops[j] = h[id]
			}
			r := b.Apply(e.Op, e.Params, ops...)
			if wrap && g.Type(e.Out).DType == poot.F32 {
				r = b.Neg(b.Neg(r))
			}
			h[e.Out] = r
		}
		used := map[poot.ValueID]bool{}
		for _, e := range eqns[hi:] {
			for _, id := range e.Inputs {
				used[id] = true
			}
		}
		for _, id := range g.Outputs() {
			used[id] = true
		}
		for _, s := range g.States() {
			used[s.Out] = true
		}
		for _, w := range g.Witnesses() {
			used[w.Value] = true
		}
		var live []poot.Traced[poot.Rewrite]
		for _, e := range eqns[lo:hi] {
			if used[e.Out] {
				live = append(live, h[e.Out])
			}
		}
		return live
	}
}
