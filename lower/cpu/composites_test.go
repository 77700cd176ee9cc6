package cpu_test

import (
	"testing"

	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/pootest"
	"pgregory.net/rapid"
)

// TestFusedCompositesAgreeWithBodies holds every composite the cpu target
// fuses to its body under the oracle, on random attributes and inputs from
// the agreement kit, and checks that each composite of the case did run as
// one fused kernel.
func TestFusedCompositesAgreeWithBodies(t *testing.T) {
	names := cpu.Target(false).Composites
	if len(names) == 0 {
		t.Fatal("the cpu target fuses no composite")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			gen, ok := pootest.GenComposite(name)
			if !ok {
				t.Fatalf("the cpu target fuses %q, which the agreement kit cannot generate", name)
			}
			in := cpu.Interpreter{Threads: 2}
			rapid.Check(t, func(rt *rapid.T) {
				c := gen.Draw(rt, "case")
				x, err := in.CompileExec(c.Graph, c.Consts)
				if err != nil {
					rt.Fatal(err)
				}
				defer x.Close()
				kernelOf := map[int]int{}
				for ki, k := range x.Plan().Kernels {
					for _, e := range k.Eqns {
						kernelOf[e] = ki
					}
				}
				for _, comp := range c.Graph.Composites() {
					if comp.Name != name {
						continue
					}
					ki, ok := kernelOf[comp.Lo]
					for e := comp.Lo; e < comp.Hi && ok; e++ {
						if k2, in := kernelOf[e]; in && k2 != ki {
							ok = false
						}
					}
					if !ok || len(x.Plan().Kernels[ki].Eqns) != comp.Hi-comp.Lo {
						rt.Fatalf("composite %s [%d, %d) is not one fused kernel:\n%v", name, comp.Lo, comp.Hi, x.Plan())
					}
				}
				pootest.Agree(rt, interp.Oracle{}, in, c.Graph, c.Consts, c.Slots, c.State, pootest.Default)
			})
		})
	}
}
