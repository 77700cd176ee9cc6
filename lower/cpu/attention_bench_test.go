package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/tensor"
)

type benchBrand struct{}

// BenchmarkFlashDecode times one decode step of fused attention (32 query
// heads, 8 kv heads, head dim 64, 1024 cached positions of which 512 are
// visible) through package kernels and through the portable kernel.
func BenchmarkFlashDecode(b *testing.B) {
	const h, hkv, d, capacity = 32, 8, 64, 1024
	bl := poot.NewBuilder[benchBrand](poot.Limits{})
	q := bl.SlotNamed("q", poot.T(poot.F32, 1, h*d))
	k := bl.SlotNamed("k", poot.T(poot.F32, capacity, hkv*d))
	v := bl.SlotNamed("v", poot.T(poot.F32, capacity, hkv*d))
	pos := bl.Slot(poot.SlotPos, poot.Shape{1}, 0, capacity-1)
	var out poot.Traced[benchBrand]
	bl.Scope("layer", func() {
		mask := ops.CausalMask(bl, pos, capacity, 0, 0)
		out = ops.Attention(bl, q, k, v, mask, ops.AttentionConfig[benchBrand]{Heads: h, KVHeads: hkv, HeadDim: d})
	})
	g, err := bl.Finish(poot.Out(out))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	rnd := func(n, m int) tensor.Tensor { return randTensor(rng, n, m) }
	p, _ := tensor.FromI32(poot.Shape{1}, []int32{511})
	slots := interp.Slots{"q": rnd(1, h*d), "k": rnd(capacity, hkv*d), "v": rnd(capacity, hkv*d), "pos": p}
	for _, fast := range []bool{true, false} {
		name := map[bool]string{true: "kernels", false: "portable"}[fast]
		b.Run(name, func(b *testing.B) {
			kernelsAttention = fast
			defer func() { kernelsAttention = true }()
			x, err := Interpreter{}.CompileExec(g, nil)
			if err != nil {
				b.Fatal(err)
			}
			outs, err := x.Run(slots, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := x.RunInto(slots, nil, outs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFlashPrefill times the fused attention of one layer of a
// prefill from an empty cache (a Llama-3.2-1B layer's 32 query heads, 8
// kv heads of 64, causal over the chunk's own positions), at 64 and 512
// tokens.
func BenchmarkFlashPrefill(b *testing.B) {
	const h, hkv, d = 32, 8, 64
	for _, n := range []int{64, 512} {
		bl := poot.NewBuilder[benchBrand](poot.Limits{})
		q := bl.SlotNamed("q", poot.T(poot.F32, n, h*d))
		k := bl.SlotNamed("k", poot.T(poot.F32, n, hkv*d))
		v := bl.SlotNamed("v", poot.T(poot.F32, n, hkv*d))
		pos := bl.Slot(poot.SlotPos, poot.Shape{n}, 0, int64(n-1))
		var out poot.Traced[benchBrand]
		bl.Scope("layer", func() {
			mask := ops.CausalMask(bl, pos, n, 0, 0)
			out = ops.Attention(bl, q, k, v, mask, ops.AttentionConfig[benchBrand]{Heads: h, KVHeads: hkv, HeadDim: d})
		})
		g, err := bl.Finish(poot.Out(out))
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		rnd := func(n, m int) tensor.Tensor { return randTensor(rng, n, m) }
		ps := make([]int32, n)
		for i := range ps {
			ps[i] = int32(i)
		}
		p, _ := tensor.FromI32(poot.Shape{n}, ps)
		slots := interp.Slots{"q": rnd(n, h*d), "k": rnd(n, hkv*d), "v": rnd(n, hkv*d), "pos": p}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			x, err := Interpreter{}.CompileExec(g, nil)
			if err != nil {
				b.Fatal(err)
			}
			outs, err := x.Run(slots, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := x.RunInto(slots, nil, outs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// randTensor is an f32 [n, m] tensor of normal values from rng.
func randTensor(rng *rand.Rand, n, m int) tensor.Tensor {
	x := make([]float32, n*m)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	t, _ := tensor.FromF32(poot.Shape{n, m}, x)
	return t
}
