package poot_test

import (
	"fmt"
	"math"

	"github.com/pootlabs/poot"
)

type decoderBrand struct{}

// traceDecoder records a decoder-shaped decode step with primitives only:
// embedding gather, per layer RMSNorm, Q/K/V projections, rotary embedding,
// cache append, causal attention with GQA, output projection, SwiGLU FFN,
// and the head.
func traceDecoder(layers, dim, heads, kvHeads, ffn, vocab, capacity int) (*poot.Graph, error) {
	b := poot.NewBuilder[decoderBrand](poot.Limits{})
	hd := dim / heads
	rep := heads / kvHeads
	tok := b.Slot(poot.SlotToken, poot.Shape{1}, 0, int64(vocab-1))
	pos := b.Slot(poot.SlotPos, poot.Shape{1}, 0, int64(capacity-1))
	emb := b.Constant("token_embd.weight", poot.T(poot.F32, vocab, dim))
	x := b.Gather(emb, tok) // [1, dim]
	rms := func(x poot.Traced[decoderBrand], w poot.Traced[decoderBrand]) poot.Traced[decoderBrand] {
		n := b.Dim(x, -1)
		ms := b.Div(b.ReduceSum(b.Mul(x, x), -1), b.Full(poot.T(poot.F32, 1, 1), float64(n)))
		r := b.Rsqrt(b.Add(ms, b.Full(poot.T(poot.F32, 1, 1), 1e-5)))
		y := b.Mul(x, b.Broadcast(r, 1, n))
		return b.Mul(y, b.Reshape(w, 1, n))
	}
	posF := b.Cast(pos, poot.F32)
	freq := b.Constant("rope.freqs", poot.T(poot.F32, 1, hd/2))
	ang := b.Mul(b.Broadcast(b.Reshape(posF, 1, 1), 1, hd/2), freq)
	cos, sin := b.Cos(ang), b.Sin(ang)
	rope := func(x poot.Traced[decoderBrand], n int) poot.Traced[decoderBrand] {
		x = b.Reshape(x, n, hd)
		lo := b.SliceAxis(x, 1, 0, hd/2)
		hi := b.SliceAxis(x, 1, hd/2, hd)
		c, s := b.Broadcast(cos, n, hd/2), b.Broadcast(sin, n, hd/2)
		return b.Concat(1, b.Sub(b.Mul(lo, c), b.Mul(hi, s)), b.Add(b.Mul(hi, c), b.Mul(lo, s)))
	}
	var carries []poot.Carry[decoderBrand]
	kpos := b.Iota(poot.T(poot.I32, 1, capacity), 1)
	mask := b.Le(kpos, b.Broadcast(b.Reshape(pos, 1, 1), 1, capacity))
	for l := range layers {
		b.Scope(fmt.Sprintf("layer.%d", l), func() {
			w := func(name string, dims ...int) poot.Traced[decoderBrand] {
				return b.Constant(fmt.Sprintf("blk.%d.%s", l, name), poot.T(poot.F32, dims...))
			}
			kc := b.StateInput(fmt.Sprintf("cache.k.%d", l), poot.T(poot.F32, capacity, kvHeads*hd))
			vc := b.StateInput(fmt.Sprintf("cache.v.%d", l), poot.T(poot.F32, capacity, kvHeads*hd))
			var attn poot.Traced[decoderBrand]
			b.Scope("attn", func() {
				h := rms(x, w("attn_norm.weight", dim))
				q := rope(b.MatMul(h, w("attn_q.weight", dim, dim)), heads)
				k := rope(b.MatMul(h, w("attn_k.weight", kvHeads*hd, dim)), kvHeads)
				v := b.MatMul(h, w("attn_v.weight", kvHeads*hd, dim))
				kc2 := b.WriteRows(kc, pos, b.Reshape(k, 1, kvHeads*hd))
				vc2 := b.WriteRows(vc, pos, v)
				carries = append(carries, poot.Carry[decoderBrand]{In: kc, Out: kc2}, poot.Carry[decoderBrand]{In: vc, Out: vc2})
				kh := b.Transpose(b.Reshape(kc2, capacity, kvHeads, 1, hd), 1, 2, 0, 3)
				kh = b.Reshape(b.Broadcast(kh, kvHeads, rep, capacity, hd), heads, capacity, hd)
				vh := b.Transpose(b.Reshape(vc2, capacity, kvHeads, 1, hd), 1, 2, 3, 0)
				vh = b.Reshape(b.Broadcast(vh, kvHeads, rep, hd, capacity), heads, hd, capacity)
				qh := b.Reshape(q, heads, 1, hd)
				s := b.Mul(b.MatMul(qh, kh), b.Full(poot.T(poot.F32, heads, 1, capacity), 1/math.Sqrt(float64(hd))))
				s = b.Select(b.Broadcast(b.Reshape(mask, 1, 1, capacity), heads, 1, capacity), s, b.Full(poot.T(poot.F32, heads, 1, capacity), math.Inf(-1)))
				m := b.ReduceMax(s, -1)
				e := b.Exp(b.Sub(s, b.Broadcast(m, heads, 1, capacity)))
				p := b.Div(e, b.Broadcast(b.ReduceSum(e, -1), heads, 1, capacity))
				ctx := b.Reshape(b.MatMul(p, vh), 1, dim)
				attn = b.MatMul(ctx, w("attn_output.weight", dim, dim))
			})
			x = b.Add(x, attn)
			b.Scope("ffn", func() {
				h := rms(x, w("ffn_norm.weight", dim))
				g := b.MatMul(h, w("ffn_gate.weight", ffn, dim))
				u := b.MatMul(h, w("ffn_up.weight", ffn, dim))
				one := b.FullLike(g, 1)
				act := b.Div(g, b.Add(one, b.Exp(b.Neg(g))))
				x = b.Add(x, b.MatMul(b.Mul(act, u), w("ffn_down.weight", dim, ffn)))
			})
		})
	}
	var logits poot.Traced[decoderBrand]
	b.Scope("head", func() {
		h := rms(x, b.Constant("output_norm.weight", poot.T(poot.F32, dim)))
		logits = b.MatMul(h, b.Constant("output.weight", poot.T(poot.F32, vocab, dim)))
	})
	out := poot.Out(logits)
	for _, c := range carries {
		out = out.WithState(c.In, c.Out)
	}
	return b.Finish(out)
}
