package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/tensor"
)

// TestFusedLaunches checks the launches that run several plan kernels:
// every reference model's decode step fuses its Q, K and V products and
// its gate and up products, and within any fused launch of a decode or
// prefill step no kernel writes bytes (by the plan's storage of its
// outputs) that another of the launch reads or writes, so that their
// blocks may run in any order.
func TestFusedLaunches(t *testing.T) {
	for _, name := range refModels {
		r := openRef(t, name)
		c, m := r.ckpt, r.model
		for _, n := range []int{1, 20} {
			g, _ := refStep(t, c, m, n, 64)
			plan := mustPlan(t, g)
			mod, err := Generate(plan)
			if err != nil {
				t.Fatal(err)
			}
			products := 0
			for _, l := range mod.Launches {
				steps := append([]int{l.Step}, l.Fused...)
				if len(steps) > 1 && strings.HasPrefix(l.Kernel, "gemv_") {
					products++
				}
				touched := func(s int) []poot.ValueID {
					k := plan.Kernels[s]
					return append(append([]poot.ValueID{}, k.Inputs...), k.Outputs...)
				}
				for _, a := range steps {
					for _, b := range steps {
						if a == b {
							continue
						}
						for _, o := range plan.Kernels[a].Outputs {
							for _, v := range touched(b) {
								if shareBytes(plan, o, v) {
									t.Errorf("%s T=%d: launch %s runs kernel %d, which writes value %d, beside kernel %d, which uses value %d in the same bytes", name, n, l.Kernel, a, o, b, v)
								}
							}
						}
					}
				}
			}
			if n == 1 && products < 2*m.Schema().Layers {
				t.Errorf("%s: decode has %d fused product launches, want two a layer (%d)", name, products, m.Schema().Layers)
			}
		}
	}
}

// shareBytes reports whether values a and b of plan can be stored in
// overlapping bytes.
func shareBytes(plan *lower.Plan, a, b poot.ValueID) bool {
	la, lb := plan.Locs[a], plan.Locs[b]
	switch {
	case la.Space == lower.None || lb.Space == lower.None:
		return false
	case la.Space != lb.Space:
		return false
	case la.Space == lower.Arena:
		return max(la.Offset, lb.Offset) < min(la.Offset+la.Bytes, lb.Offset+lb.Bytes)
	}
	return la.Root == lb.Root
}

// TestHostFusedFault runs two independent gathers, which fuse into one
// launch, with an index out of range in the second: the error names the
// second gather's equation, as it would unfused.
func TestHostFusedFault(t *testing.T) {
	in := host(t)
	b := poot.NewBuilder[struct{}](poot.Limits{})
	y1 := b.Gather(b.Constant("t1", poot.T(poot.F32, 4, 8)), b.SlotNamed("i1", poot.T(poot.I32, 2)))
	y2 := b.Gather(b.Constant("t2", poot.T(poot.F32, 4, 8)), b.SlotNamed("i2", poot.T(poot.I32, 2)))
	g, err := b.Finish(poot.Out(y1, y2))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := Generate(mustPlan(t, g))
	if err != nil {
		t.Fatal(err)
	}
	if len(mod.Launches) != 1 || len(mod.Launches[0].Fused) != 1 {
		t.Fatalf("the two gathers are not one launch: %+v", mod.Launches)
	}
	consts := interp.ConstMap{}
	for _, name := range []string{"t1", "t2"} {
		consts[name], _ = tensor.FromF32(poot.Shape{4, 8}, make([]float32, 32))
	}
	i1, _ := tensor.FromI32(poot.Shape{2}, []int32{0, 3})
	i2, _ := tensor.FromI32(poot.Shape{2}, []int32{1, 9})
	x, err := in.Compile(g, consts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = x.Run(interp.Slots{"i1": i1, "i2": i2}, nil)
	var ie *interp.Error
	if !errors.As(err, &ie) || !errors.Is(err, interp.ErrIndexRange) {
		t.Fatalf("Run gave %v, want an index error", err)
	}
	if out := g.Eqn(ie.Eqn).Out; out != y2.ID() {
		t.Errorf("the error names equation %d (value %d), want the second gather's (value %d): %v", ie.Eqn, out, y2.ID(), err)
	}
}
