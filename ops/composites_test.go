package ops_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
)

type recBrand struct{}

// TestCompositeRecords: the named operations record themselves with the
// names and attributes package ops documents, nested where one calls
// another.
func TestCompositeRecords(t *testing.T) {
	b := poot.NewBuilder[recBrand](poot.Limits{})
	var none poot.Traced[recBrand]
	x := b.Constant("x", poot.T(poot.F32, 2, 8))
	w := b.Constant("w", poot.T(poot.F16, 8))
	pos := b.Slot(poot.SlotPos, poot.Shape{2}, 0, 3)
	y := ops.RMSNorm(b, x, w, 1e-5)
	y = ops.RMSNormHeads(b, y, b.Constant("wh", poot.T(poot.F32, 4)), 2, 1e-6, ops.OnePlusWeight())
	rot := ops.RopeTables(b, pos, ops.RopeInvFreq(b, ops.RopeConfig{Dims: 4, Theta: 1e4}), 1, ops.RopeNeoX)
	q := ops.RoPE(b, y, 2, rot)
	mask := ops.CausalMask(b, pos, 4, 2, 0)
	kc := b.Constant("k", poot.T(poot.F32, 4, 4))
	o := ops.Attention(b, q, kc, kc, mask, ops.AttentionConfig[recBrand]{Heads: 2, KVHeads: 1, HeadDim: 4, SoftCap: 50})
	o = ops.GatedFFN(b, o, b.Constant("g", poot.T(poot.F32, 16, 8)), b.Constant("u", poot.T(poot.F32, 16, 8)),
		b.Constant("d", poot.T(poot.F32, 8, 16)), ops.SwiGLU[recBrand])
	o = ops.Linear(b, o, b.Constant("o", poot.T(poot.F32, 8, 8)), none)
	g, err := b.Finish(poot.Out(ops.Softmax(b, o, -1)))
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		Name, Parent, Attrs string
		Operands            int
	}
	var got []rec
	for _, c := range g.Composites() {
		got = append(got, rec{c.Name, g.Composite(c.Parent).Name, c.Attrs.String(), len(c.Operands)})
	}
	want := []rec{
		{"rmsnorm", "", "epsilon=1e-05 one_plus=false", 2},
		{"rmsnorm", "", "epsilon=1e-06 one_plus=true heads=2", 2},
		{"rope", "", `heads=2 layout="neox" dims=4`, 3},
		{"causal_mask", "", "keys=4 window=2 chunk=0", 1},
		{"attention", "", "heads=2 kv_heads=1 head_dim=4 value_dim=4 rows=1 scale=0.5 soft_cap=50 sinks=false", 5},
		{"linear", "", "", 3},
		{"linear", "", "", 3},
		{"swiglu", "", "", 2},
		{"linear", "", "", 3},
		{"linear", "", "", 3},
		{"softmax", "", "axis=-1", 1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("composites (-want +got):\n%s", d)
	}
}
