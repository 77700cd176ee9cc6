package cpu

import (
	"fmt"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/tensor"
)

// BenchmarkLayerOps times the kernels a Llama-3.2-1B layer runs besides
// its products, at a decode step's one row and a prefill's 64: the query
// rotation, the residual add with the next RMSNorm, and SwiGLU's gate.
// Only the steps' kernels are timed (the slots are bound once); decode
// pays for these between weight streams, with cold caches, so a model's
// step profile shows them two to three times slower than here.
func BenchmarkLayerOps(b *testing.B) {
	layers := []struct {
		name  string
		trace func(bl *poot.Builder[struct{}], t int) poot.Traced[struct{}]
	}{
		{"rope", func(bl *poot.Builder[struct{}], t int) poot.Traced[struct{}] {
			x := bl.SlotNamed("x", poot.T(poot.F32, t, 2048))
			r := ops.Rotary[struct{}]{Cos: bl.SlotNamed("cos", poot.T(poot.F32, t, 32)), Sin: bl.SlotNamed("sin", poot.T(poot.F32, t, 32)), Layout: ops.RopeInterleaved}
			return ops.RoPE(bl, x, 32, r)
		}},
		{"residual_rmsnorm", func(bl *poot.Builder[struct{}], t int) poot.Traced[struct{}] {
			h := bl.Add(bl.SlotNamed("x", poot.T(poot.F32, t, 2048)), bl.SlotNamed("y", poot.T(poot.F32, t, 2048)))
			return bl.Add(h, ops.RMSNorm(bl, h, bl.SlotNamed("w", poot.T(poot.F32, 2048)), 1e-5))
		}},
		{"swiglu", func(bl *poot.Builder[struct{}], t int) poot.Traced[struct{}] {
			return ops.SwiGLU(bl, bl.SlotNamed("x", poot.T(poot.F32, t, 8192)), bl.SlotNamed("y", poot.T(poot.F32, t, 8192)))
		}},
	}
	for _, l := range layers {
		for _, t := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/T%d", l.name, t), func(b *testing.B) {
				bl := poot.NewBuilder[struct{}](poot.Limits{})
				g, err := bl.Finish(poot.Out(l.trace(bl, t)))
				if err != nil {
					b.Fatal(err)
				}
				benchSteps(b, g, 0)
			})
		}
	}
}

// BenchmarkDecodeAttention times only the steps of one layer's decode
// attention (a Llama-3.2-1B layer's 32 query heads and 8 kv heads of 64,
// the causal mask over a 4096-row cache) at a few depths.
func BenchmarkDecodeAttention(b *testing.B) {
	const h, hkv, d, capacity = 32, 8, 64, 4096
	bl := poot.NewBuilder[struct{}](poot.Limits{})
	q := bl.SlotNamed("q", poot.T(poot.F32, 1, h*d))
	k := bl.SlotNamed("k", poot.T(poot.F32, capacity, hkv*d))
	v := bl.SlotNamed("v", poot.T(poot.F32, capacity, hkv*d))
	pos := bl.Slot(poot.SlotPos, poot.Shape{1}, 0, capacity-1)
	var out poot.Traced[struct{}]
	bl.Scope("layer", func() {
		mask := ops.CausalMask(bl, pos, capacity, 0, 0)
		out = ops.Attention(bl, q, k, v, mask, ops.AttentionConfig[struct{}]{Heads: h, KVHeads: hkv, HeadDim: d})
	})
	g, err := bl.Finish(poot.Out(out))
	if err != nil {
		b.Fatal(err)
	}
	for _, depth := range []int{64, 1024, 4095} {
		b.Run(fmt.Sprintf("depth%d", depth), func(b *testing.B) { benchSteps(b, g, depth) })
	}
}

// benchSteps binds g's slots once (F32 ones to a pattern, I32 ones to pos)
// and times its steps alone.
func benchSteps(b *testing.B, g *poot.Graph, pos int) {
	slots := interp.Slots{}
	for _, id := range g.Inputs(poot.Slot) {
		v := g.Value(id)
		x, _ := tensor.New(v.Type)
		if v.Type.DType == poot.I32 {
			x.I32()[0] = int32(pos)
		} else {
			for i, f := 0, x.F32(); i < len(f); i++ {
				f[i] = float32(i%13)/8 - 0.75
			}
		}
		slots[v.Name] = x
	}
	ex, err := Interpreter{Threads: 2}.CompileExec(g, interp.ConstMap{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ex.Run(slots, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		for _, s := range ex.steps {
			if err := s.run(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
