package cpu_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/tensor"

	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/pootest"
	"pgregory.net/rapid"
)

// TestFusedCompositesAgreeWithBodies holds every composite the cpu target
// fuses to its body under the oracle, on random attributes and inputs from
// the agreement kit, and checks that each composite of the case did run as
// one fused kernel (which may take equations before the body with it).
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
					// Every equation of the body in one kernel, which may
					// also do equations before it (a norm's residual add).
					ki, ok := kernelOf[comp.Lo]
					for e := comp.Lo; e < comp.Hi && ok; e++ {
						if k2, in := kernelOf[e]; in && k2 != ki {
							ok = false
						}
					}
					inBody := 0
					for _, e := range x.Plan().Kernels[ki].Eqns {
						if e >= comp.Lo && e < comp.Hi {
							inBody++
						}
					}
					if !ok || inBody != comp.Hi-comp.Lo {
						rt.Fatalf("composite %s [%d, %d) is not one fused kernel:\n%v", name, comp.Lo, comp.Hi, x.Plan())
					}
				}
				pootest.Agree(rt, interp.Oracle{}, in, c.Graph, c.Consts, c.Slots, c.State, pootest.Default)
			})
		})
	}
}

// TestSwiGLUMatchesProgram: the fused SwiGLU gives the bits the body's
// program gives, exact or not, single-threaded and split across the pool,
// over chunks whose gates are all in range and chunks with one outside
// (e^-gate overflowing, underflowing, infinite or NaN).
func TestSwiGLUMatchesProgram(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{1, 255, 257, 8192, 3*8192 + 5} {
		type brand struct{}
		b := poot.NewBuilder[brand](poot.Limits{})
		gate, up := b.SlotNamed("gate", poot.T(poot.F32, n)), b.SlotNamed("up", poot.T(poot.F32, n))
		g, err := b.Finish(poot.Out(ops.SwiGLU(b, gate, up)))
		if err != nil {
			t.Fatal(err)
		}
		gv, uv := make([]float32, n), make([]float32, n)
		for i := range n {
			gv[i], uv[i] = float32(r.NormFloat64()*8), float32(r.NormFloat64())
		}
		odd := []float32{-90, 87.5, -87.5, float32(math.Inf(-1)), float32(math.Inf(1)), float32(math.NaN())}
		for i := 3; i < n; i += 700 {
			gv[i] = odd[(i/700)%len(odd)]
		}
		gt, _ := tensor.FromF32(poot.Shape{n}, gv)
		ut, _ := tensor.FromF32(poot.Shape{n}, uv)
		slots := interp.Slots{"gate": gt, "up": ut}
		for _, exact := range []bool{false, true} {
			var outs [2][]byte
			for j, off := range [][]string{nil, {"swiglu"}} {
				x, err := cpu.Interpreter{Exact: exact, Threads: 2, Options: lower.Options{Disabled: off}}.CompileExec(g, nil)
				if err != nil {
					t.Fatal(err)
				}
				if fused := x.Plan().Kernels[0].Kind == lower.SwiGLU; fused != (off == nil) {
					t.Fatalf("n=%d: fused %v with %v off", n, fused, off)
				}
				res, err := x.Run(slots, nil)
				if err != nil {
					t.Fatal(err)
				}
				outs[j] = res[0].Data
			}
			if !bytes.Equal(outs[0], outs[1]) {
				t.Fatalf("n=%d exact=%v: the fused kernel and the program differ", n, exact)
			}
		}
	}
}
