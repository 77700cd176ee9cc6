package cpu

import (
	"math"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/pootest"
	"github.com/pootlabs/poot/tensor"
	"pgregory.net/rapid"
)

type tileBrand struct{}

// TestTiledAttention holds the tiled prefill attention to the oracle:
// random head counts and sizes, prompts of
// 32 to 80 rows after up to 20 earlier positions, causal masks with sliding
// windows and chunks (rows that see little, positions no row sees), and
// NaN or infinities in Q, K or V, visible or not.
func TestTiledAttention(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		hkv := rapid.SampledFrom([]int{1, 2, 3}).Draw(rt, "hkv")
		h := hkv * rapid.IntRange(1, 4).Draw(rt, "rep")
		d := rapid.SampledFrom([]int{8, 16, 24}).Draw(rt, "d")
		n := rapid.IntRange(tileMinT, 80).Draw(rt, "rows")
		p0 := rapid.IntRange(0, 20).Draw(rt, "depth")
		window := rapid.SampledFrom([]int{0, 0, 5, 40}).Draw(rt, "window")
		chunk := rapid.SampledFrom([]int{0, 0, 16}).Draw(rt, "chunk")
		S := p0 + n
		bl := poot.NewBuilder[tileBrand](poot.Limits{})
		q := bl.SlotNamed("q", poot.T(poot.F32, n, h*d))
		k := bl.SlotNamed("k", poot.T(poot.F32, S, hkv*d))
		v := bl.SlotNamed("v", poot.T(poot.F32, S, hkv*d))
		pos := bl.Slot(poot.SlotPos, poot.Shape{n}, 0, int64(S-1))
		var out poot.Traced[tileBrand]
		bl.Scope("layer", func() {
			mask := ops.CausalMask(bl, pos, S, window, chunk)
			out = ops.Attention(bl, q, k, v, mask, ops.AttentionConfig[tileBrand]{Heads: h, KVHeads: hkv, HeadDim: d})
		})
		g, err := bl.Finish(poot.Out(out))
		if err != nil {
			rt.Fatal(err)
		}
		odd := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
		rnd := func(name string, rows, cols int) tensor.Tensor {
			x := make([]float32, rows*cols)
			for i := range x {
				x[i] = float32(rapid.Float64Range(-3, 3).Draw(rt, "x"))
			}
			for range rapid.IntRange(0, 2).Draw(rt, name+" odd") {
				x[rapid.IntRange(0, len(x)-1).Draw(rt, "at")] = rapid.SampledFrom(odd).Draw(rt, "odd")
			}
			tt, _ := tensor.FromF32(poot.Shape{rows, cols}, x)
			return tt
		}
		ps := make([]int32, n)
		for i := range ps {
			ps[i] = int32(p0 + i)
		}
		pt, _ := tensor.FromI32(poot.Shape{n}, ps)
		slots := interp.Slots{"q": rnd("q", n, h*d), "k": rnd("k", S, hkv*d), "v": rnd("v", S, hkv*d), "pos": pt}
		tol := pootest.Tolerance{F32: pootest.Bound{Abs: 1e-5, Rel: 1e-4}}
		in := Interpreter{Threads: 2}
		pootest.Agree(rt, interp.Oracle{}, in, g, nil, slots, nil, tol)
	})
}
