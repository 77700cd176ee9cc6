package nb_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/nb"
)

// methodName is the Graph method of a primitive: "reduce_sum" is ReduceSum.
func methodName(op poot.Op) string {
	var sb strings.Builder
	for _, w := range strings.Split(op.String(), "_") {
		sb.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return sb.String()
}

// TestEveryElementwisePrimitiveHasAMethod holds nb to the primitive
// records: each elementwise primitive has a method of its name that
// records exactly that primitive over operands of a dtype it accepts.
func TestEveryElementwisePrimitiveHasAMethod(t *testing.T) {
	for _, op := range poot.Ops() {
		if !op.Elementwise() {
			continue
		}
		t.Run(op.String(), func(t *testing.T) {
			gr := nb.New()
			m := reflect.ValueOf(gr).MethodByName(methodName(op))
			if !m.IsValid() {
				t.Fatalf("nb.Graph has no method %s", methodName(op))
			}
			g := m.Interface()
			var out nb.Value
			build := func(n int, boolean bool) []nb.Value {
				var vs []nb.Value
				for i := range n {
					v := gr.Input(string(rune('a'+i)), 2, 3)
					if boolean {
						v = gr.Gt(v, gr.Scalar(0))
					}
					vs = append(vs, v)
				}
				return vs
			}
			s, _ := op.Scalar()
			boolean := !slices.Contains(s.DTypes(), poot.F32)
			switch f := g.(type) {
			case func(nb.Value) nb.Value:
				v := build(1, boolean)
				out = f(v[0])
			case func(nb.Value, nb.Value) nb.Value:
				v := build(2, boolean)
				out = f(v[0], v[1])
			case func(nb.Value, nb.Value, nb.Value) nb.Value:
				v := build(3, false)
				out = f(gr.Gt(v[0], gr.Scalar(0)), v[1], v[2])
			default:
				t.Fatalf("method %s has type %T", methodName(op), g)
			}
			fin, err := gr.Finish(out)
			if err != nil {
				t.Fatal(err)
			}
			eqns := fin.Eqns()
			if last := eqns[len(eqns)-1]; last.Op != op {
				t.Errorf("%s recorded %v last, want %v", methodName(op), last.Op, op)
			}
		})
	}
}
