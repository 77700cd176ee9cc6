package cpu_test

import (
	"testing"

	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/pootest"
	"pgregory.net/rapid"
)

// TestFlashAttention holds the fused attention kernel to the oracle on
// random shapes (GQA, several sequences and new tokens, soft cap, sinks),
// and checks that the rewrite fired.
func TestFlashAttention(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		gen, _ := pootest.GenComposite("attention")
		c := gen.Draw(rt, "case")
		g, consts, slots, state := c.Graph, c.Consts, c.Slots, c.State
		in := cpu.Interpreter{Threads: 2}
		x, err := in.CompileExec(g, consts)
		if err != nil {
			rt.Fatal(err)
		}
		defer x.Close()
		fused := 0
		for _, k := range x.Plan().Kernels {
			if k.Kind == lower.FlashAttention {
				fused++
			}
		}
		if fused != 1 {
			rt.Fatalf("%d fused attention kernels, want 1:\n%v\n%v", fused, g, x.Plan())
		}
		pootest.Agree(rt, interp.Oracle{}, in, g, consts, slots, state, pootest.Default)
	})
}
