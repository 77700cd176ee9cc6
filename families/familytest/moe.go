package familytest

import (
	"fmt"
	"testing"

	"github.com/pootlabs/poot/families"
)

// CheckIdenticalExperts checks a mixture of experts whose experts are all
// copies of one dense feed-forward against the dense model: the routing
// weights of every token sum to one, so the logits must agree whatever the
// router chooses. moe and dense must share every other tensor.
func CheckIdenticalExperts(t *testing.T, moe, dense families.Model, experts int, toks []int32, capacity int) {
	t.Helper()
	dw := Synth(t, dense, 7)
	mw := Synth(t, moe, 11) // gives the router its random weights
	for name, v := range dw {
		if _, ok := mw[name]; ok {
			mw[name] = v
		}
	}
	for l := range moe.Schema().Layers {
		for _, role := range []string{"gate", "up", "down"} {
			src := dw[fmt.Sprintf("blk.%d.ffn_%s.weight", l, role)]
			stack := make([]float32, 0, experts*len(src))
			for range experts {
				stack = append(stack, src...)
			}
			mw[fmt.Sprintf("blk.%d.ffn_%s_exps.weight", l, role)] = stack
		}
	}
	n := len(toks)
	shape := families.StepShape{Rows: 1, New: n, Capacity: capacity, Logits: families.AllTokens}
	want, err := NewRunner(dense, MapBinder(dw)).Step(shape, toks, Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewRunner(moe, MapBinder(mw)).Step(shape, toks, Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := MaxDiff32(got, want); d > 1e-5 {
		t.Errorf("identical experts vs dense FFN: max |Δlogit| %.3g", d)
	}
}
