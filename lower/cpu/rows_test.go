package cpu_test

import (
	"fmt"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/pootest"
	"github.com/pootlabs/poot/tensor"
)

// TestRowFusionSeesViews pins a row-fusion bug: a per-head RMSNorm with
// (1 + w) weights over rows·heads = head width puts the [D] program that
// adds the one into the fused row kernel (it has as many elements as there
// are rows, so it runs an element a row), and the kernel's last part read
// its reshaped view, broadcast along every row, at the first row, before
// the other elements were made. Row fusion now sees a reshape as the value
// it views. Qwen3-Next's QK norms (2 kv heads of 16 over 8 prefill tokens)
// met it; the shapes below all have rows·heads equal to the head width.
func TestRowFusionSeesViews(t *testing.T) {
	for _, c := range [][3]int{{8, 2, 16}, {4, 4, 16}, {16, 1, 16}, {2, 4, 8}, {8, 2, 32}, {8, 3, 16}} {
		rows, heads, d := c[0], c[1], c[2]
		t.Run(fmt.Sprintf("rows%d_heads%d_d%d", rows, heads, d), func(t *testing.T) {
			b := poot.NewBuilder[struct{}](poot.Limits{})
			w := b.Constant("w", poot.T(poot.F32, d))
			x := b.SlotNamed("x", poot.T(poot.F32, rows, heads*d))
			y := ops.RMSNormHeads(b, x, w, heads, 1e-6, ops.OnePlusWeight())
			g, err := b.Finish(poot.Out(b.Add(y, y)))
			if err != nil {
				t.Fatal(err)
			}
			wv := make([]float32, d)
			for i := range wv {
				wv[i] = float32(i)/10 - 0.3
			}
			xv := make([]float32, rows*heads*d)
			for i := range xv {
				xv[i] = float32(i%7) - 3
			}
			wt, _ := tensor.FromF32(poot.Shape{d}, wv)
			xt, _ := tensor.FromF32(poot.Shape{rows, heads * d}, xv)
			for _, threads := range []int{1, 2} {
				pootest.Agree(t, interp.Oracle{}, cpu.Interpreter{Threads: threads}, g, interp.ConstMap{"w": wt}, interp.Slots{"x": xt}, nil, pootest.Default)
			}
		})
	}
}
