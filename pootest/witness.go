package pootest

import (
	"fmt"
	"strings"

	"github.com/pootlabs/poot"
)

type witnessBrand struct{}

// EqnWitness is the name WitnessAll gives the value of equation i.
func EqnWitness(i int) string { return fmt.Sprintf("pootest.eqn.%d", i) }

// WitnessAll returns a copy of g, equation for equation and scope for
// scope, in which the value of every equation i is also a witness named
// EqnWitness(i). Inputs keep their names, types, kinds and slot ranges, so
// the same bindings run it.
func WitnessAll(g *poot.Graph) (*poot.Graph, error) {
	b := poot.NewBuilder[witnessBrand](poot.Limits{})
	h := make([]poot.Traced[witnessBrand], g.NumValues())
	for id := range g.NumValues() {
		v := g.Value(poot.ValueID(id))
		switch v.Kind {
		case poot.Const:
			h[id] = b.Constant(v.Name, v.Type)
		case poot.State:
			h[id] = b.StateInput(v.Name, v.Type)
		case poot.Slot:
			if v.Slot == poot.SlotNamed {
				h[id] = b.SlotNamed(v.Name, v.Type)
			} else {
				h[id] = b.Slot(v.Slot, v.Type.Shape, v.Min, v.Max)
			}
		}
	}
	var stack []string
	out := poot.Outputs[witnessBrand]{}
	for i, e := range g.Eqns() {
		want := splitScope(g.Scope(e.Scope))
		common := 0
		for common < len(stack) && common < len(want) && stack[common] == want[common] {
			common++
		}
		for len(stack) > common {
			b.Pop()
			stack = stack[:len(stack)-1]
		}
		for _, s := range want[common:] {
			b.Push(s)
			stack = append(stack, s)
		}
		in := make([]poot.Traced[witnessBrand], len(e.Inputs))
		for j, id := range e.Inputs {
			in[j] = h[id]
		}
		h[e.Out] = b.Apply(e.Op, e.Params, in...)
		out = out.WithWitness(EqnWitness(i), h[e.Out])
	}
	for range stack {
		b.Pop()
	}
	for _, id := range g.Outputs() {
		out.Values = append(out.Values, h[id])
	}
	for _, s := range g.States() {
		out = out.WithState(h[s.In], h[s.Out])
	}
	for _, w := range g.Witnesses() {
		out = out.WithWitness(w.Name, h[w.Value])
	}
	return b.Finish(out)
}

func splitScope(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "/")
}
