package cpu_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/pootest"
	"github.com/pootlabs/poot/tensor"
	"pgregory.net/rapid"
)

type attnBrand struct{}

// attentionCase records ops.CachedAttention over random shapes and data.
func attentionCase(t *rapid.T) (*poot.Graph, interp.ConstMap, interp.Slots, *interp.State) {
	rows := rapid.IntRange(1, 2).Draw(t, "rows")
	newT := rapid.IntRange(1, 3).Draw(t, "new")
	capacity := rapid.IntRange(newT, 6).Draw(t, "capacity")
	kvHeads := rapid.IntRange(1, 2).Draw(t, "kv_heads")
	rep := rapid.IntRange(1, 3).Draw(t, "rep")
	d := rapid.IntRange(1, 5).Draw(t, "d")
	dv := rapid.IntRange(1, 5).Draw(t, "dv")
	softCap := rapid.SampledFrom([]float64{0, 0, 2.5}).Draw(t, "cap")
	sinks := rapid.Bool().Draw(t, "sinks")
	h := kvHeads * rep
	n := rows * newT
	b := poot.NewBuilder[attnBrand](poot.Limits{})
	rng := rand.New(rand.NewPCG(uint64(rapid.IntRange(0, 1<<30).Draw(t, "seed")), 1))
	consts := interp.ConstMap{}
	randT := func(dims ...int) tensor.Tensor {
		v := make([]float32, poot.Shape(dims).Size())
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		x, _ := tensor.FromF32(poot.Shape(dims), v)
		return x
	}
	q := b.SlotNamed("q", poot.T(poot.F32, n, h*d))
	k := b.SlotNamed("k", poot.T(poot.F32, n, kvHeads*d))
	v := b.SlotNamed("v", poot.T(poot.F32, n, kvHeads*dv))
	pos := b.Slot(poot.SlotPos, poot.Shape{n}, 0, int64(capacity-1))
	kc := b.StateInput("cache.k", poot.T(poot.F32, rows*capacity, kvHeads*d))
	vc := b.StateInput("cache.v", poot.T(poot.F32, rows*capacity, kvHeads*dv))
	cfg := ops.AttentionConfig[attnBrand]{Heads: h, KVHeads: kvHeads, HeadDim: d, ValueDim: dv, Rows: rows, SoftCap: softCap}
	if sinks {
		cfg.Sinks = b.Constant("sinks", poot.T(poot.F32, h))
		consts["sinks"] = randT(h)
	}
	var out, kn, vn poot.Traced[attnBrand]
	b.Scope("layer.0", func() {
		mask := ops.CausalMask(b, pos, capacity, 0, 0)
		out, kn, vn = ops.CachedAttention(b, q, k, v, kc, vc, pos, mask, cfg)
	})
	g, err := b.Finish(poot.Out(out).WithState(kc, kn).WithState(vc, vn))
	if err != nil {
		t.Fatal(err)
	}
	ps := make([]int32, n)
	for r := range rows {
		start := rapid.IntRange(0, capacity-newT).Draw(t, fmt.Sprintf("start%d", r))
		for i := range newT {
			ps[r*newT+i] = int32(start + i)
		}
	}
	pt, _ := tensor.FromI32(poot.Shape{n}, ps)
	slots := interp.Slots{"q": randT(n, h*d), "k": randT(n, kvHeads*d), "v": randT(n, kvHeads*dv), "pos": pt}
	state := &interp.State{Tensors: map[string]tensor.Tensor{"cache.k": randT(rows*capacity, kvHeads*d), "cache.v": randT(rows*capacity, kvHeads*dv)}}
	return g, consts, slots, state
}

// TestFlashAttention holds the fused attention kernel to the oracle on
// random shapes (GQA, several sequences and new tokens, soft cap, sinks),
// and checks that the rewrite fired.
func TestFlashAttention(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g, consts, slots, state := attentionCase(rt)
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
