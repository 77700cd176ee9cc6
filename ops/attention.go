package ops

import (
	"math"

	"github.com/pootlabs/poot"
)

// Attention layouts.
//
// Queries are q [R·T, H·D]: the T new tokens of each of R sequences, one row
// per token, heads packed on the last axis. Keys and values are read from
// caches [R·S, Hkv·D] and [R·S, Hkv·Dv]: S = the cache capacity, the row of
// position j of sequence r being r·S + j. A single sequence is R = 1, and
// its cache is simply [S, Hkv·D] with row j holding position j. Masks are
// Bool [R·T, S]: row i says which cache positions of its own sequence query
// row i may see. Positions are I32 [R·T], absolute.
//
// The attention core is recorded as the composite "attention" (attributes
// heads, kv_heads, head_dim, value_dim, rows, scale, soft_cap and sinks;
// operands q, k, v, mask and the F32 sinks or none), so that a backend can
// run a fused kernel in its place. Its body is this sequence (bracketed
// steps appear only when configured):
//
//	q:    Reshape [R,T,H,D], Transpose(0,2,1,3)             -> [R,H,T,D]
//	k:    Reshape [R,S,Hkv,D], Transpose(0,2,1,3)           -> [R,Hkv,S,D]
//	      [RepeatKV: scope "repeat_kv": Reshape, Broadcast, Reshape -> [R,H,S,D]]
//	u  = Cast(ReduceMax(Cast(Reshape(mask, [R,T,S]), I32), 1), Bool)    [R,1,S]
//	v  = Select(Reshape(Broadcast(Reshape(u, [R,S,1]), [R,S,Hkv·Dv]), [R·S,Hkv·Dv]),
//	            v, Literal(0))                               hidden from every query
//	v:    Reshape [R,S,Hkv,Dv], Transpose(0,2,3,1)          -> [R,Hkv,Dv,S]
//	      [RepeatKV                                          -> [R,H,Dv,S]]
//	s  = MatMul(q, k)                                        [R,H,T,S]
//	s  = Mul(s, Literal(scale))
//	[s = Mul(Tanh(Mul(s, Literal(1/cap))), Literal(cap))]    soft cap
//	m  = Broadcast(Reshape(mask, [R,1,T,S]), [R,H,T,S])
//	s  = Select(m, s, Literal(-Inf))
//	[s = Concat(3, s, Broadcast(Reshape(sinks [H], [1,H,1,1]), [R,H,T,1]))]
//	p  = softmax over axis 3: ReduceMax, Broadcast, Sub, Exp, ReduceSum, Broadcast, Div
//	[p = Slice(p, axis 3, 0, S)]                             drop the sink column
//	o  = MatMul(p, v)                                        [R,H,T,Dv]
//	out = Reshape(Transpose(o, 0,2,1,3), [R·T, H·Dv])
//
// The soft cap comes before the mask: capping a masked -Inf logit would turn
// it into -cap and let masked keys through.
//
// What a masked position contributes is defined exactly, NaN and infinity
// included, so that every interpreter agrees on a cache whose unused rows
// hold anything at all. A masked key's score is replaced, never added to,
// so its K row never matters. A V row matters only if some query of its
// sequence sees it: a position hidden from every query row of sequence r
// is replaced by zeros before the product, and a position seen by some of
// them enters every one of their sums at weight exactly 0 where hidden (so
// a NaN or infinity in it reaches all of them, as 0·NaN is NaN). In a
// decode step (T = 1) this is simply "masked rows are never read", which is
// what fused kernels do; in a prefill chunk the extra rows are the at most
// T-1 positions seen by one query of the chunk but not another.

// AttentionConfig describes one attention layer.
type AttentionConfig[B any] struct {
	Heads    int // query heads H
	KVHeads  int // key and value heads Hkv, which divides H (GQA; 1 is MQA); 0 means H
	HeadDim  int // D, the width of a query and key head
	ValueDim int // Dv, the width of a value head; 0 means HeadDim
	Rows     int // R, the sequences of a batch; 0 means 1

	Scale   float64 // multiplies q·k; 0 means 1/sqrt(HeadDim)
	SoftCap float64 // attention logit soft cap, cap·tanh(s/cap); 0 means none
	// Sinks are learned per-head logits [H] (any float dtype) that take part
	// in each softmax's denominator but attend to nothing (gpt-oss); the
	// zero handle means none.
	Sinks poot.Traced[B]
}

func (c AttentionConfig[B]) normalised() AttentionConfig[B] {
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.ValueDim == 0 {
		c.ValueDim = c.HeadDim
	}
	if c.Rows == 0 {
		c.Rows = 1
	}
	if c.Scale == 0 && c.HeadDim > 0 {
		c.Scale = 1 / math.Sqrt(float64(c.HeadDim))
	}
	return c
}

// RepeatKV repeats each key/value head n times: x [..., Hkv, S, D] becomes
// [..., Hkv·n, S, D] with head h reading head h/n of x, by Reshape,
// Broadcast, Reshape. It records nothing when n is 1.
func RepeatKV[B any](b *poot.Builder[B], x poot.Traced[B], n int) poot.Traced[B] {
	if n == 1 {
		return x
	}
	return scoped(b, "repeat_kv", func() poot.Traced[B] {
		d := dims(b, x)
		if len(d) < 3 || n < 1 {
			return fail(b, "repeat_kv", "x %v repeated %d times: want rank ≥ 3 and n ≥ 1", poot.Shape(d), n)
		}
		a := len(d) - 3
		split := append(append(append([]int{}, d[:a+1]...), 1), d[a+1:]...)
		wide := append([]int{}, split...)
		wide[a+1] = n
		out := append([]int{}, d...)
		out[a] *= n
		return b.Reshape(b.Broadcast(b.Reshape(x, split...), wide...), out...)
	})
}

// CausalMask records which keys each query may see, Bool [N, S], from the
// queries' absolute positions pos (I32 [N]) and the key positions 0..S-1 of
// a cache of capacity S: key j is visible to a query at position p iff
// j <= p, and, when window > 0, p - j < window (a sliding window that
// includes the query itself), and, when chunk > 0, floor(p/chunk) ==
// floor(j/chunk) (Llama 4's chunked attention). Build it once per step and
// layer kind; attention layers share it.
func CausalMask[B any](b *poot.Builder[B], pos poot.Traced[B], keys, window, chunk int) poot.Traced[B] {
	if window < 0 || chunk < 0 {
		return fail(b, "causal_mask", "window %d and chunk %d must not be negative", window, chunk)
	}
	return composite(b, "causal_mask", poot.Attrs{attr("keys", keys), attr("window", window), attr("chunk", chunk)}, in(pos), func() poot.Traced[B] {
		n := b.Dim(pos, 0)
		if b.Rank(pos) != 1 {
			return fail(b, "causal_mask", "positions %v must be a vector", b.Shape(pos))
		}
		j := b.Iota(poot.T(poot.I32, n, keys), 1)
		p := b.Broadcast(b.Reshape(pos, n, 1), n, keys)
		m := b.Le(j, p)
		if window > 0 {
			m = b.And(m, b.Lt(b.Sub(p, j), b.FullLike(p, float64(window))))
		}
		if chunk > 0 {
			c := b.FullLike(p, float64(chunk))
			m = b.And(m, b.Eq(b.Div(p, c), b.Div(j, c)))
		}
		return m
	})
}

// Attention computes softmax(scale·q·kᵀ, masked) · v for every query head,
// in the layouts above: q [R·T, H·D], k [R·S, Hkv·D], v [R·S, Hkv·Dv],
// mask Bool [R·T, S]; the result is [R·T, H·Dv]. The recorded sequence is
// documented at the top of this file.
func Attention[B any](b *poot.Builder[B], q, k, v, mask poot.Traced[B], cfg AttentionConfig[B]) poot.Traced[B] {
	c := cfg.normalised()
	var sinks poot.Traced[B]
	if present(c.Sinks) {
		sinks = AsF32(b, c.Sinks)
	}
	attrs := poot.Attrs{attr("heads", c.Heads), attr("kv_heads", c.KVHeads), attr("head_dim", c.HeadDim),
		attr("value_dim", c.ValueDim), attr("rows", c.Rows), attr("scale", c.Scale), attr("soft_cap", c.SoftCap),
		attr("sinks", present(sinks))}
	return composite(b, "attention", attrs, in(q, k, v, mask, sinks), func() poot.Traced[B] {
		h, hkv, d, dv, r := c.Heads, c.KVHeads, c.HeadDim, c.ValueDim, c.Rows
		nq, nk := b.Dim(q, 0), b.Dim(k, 0)
		if h < 1 || hkv < 1 || h%hkv != 0 || d < 1 || dv < 1 || r < 1 || nq%r != 0 || nk%r != 0 {
			return fail(b, "attention", "heads %d, kv heads %d, head dims %d/%d, rows %d over %d queries and %d keys",
				h, hkv, d, dv, r, nq, nk)
		}
		t, s := nq/r, nk/r
		if b.Rank(mask) != 2 || b.Dim(mask, 0) != nq || b.Dim(mask, 1) != s || b.DType(mask) != poot.Bool {
			return fail(b, "attention", "mask %v, want bool[%d,%d]", b.Aval(mask), nq, s)
		}
		rep := h / hkv
		seen := b.Cast(b.ReduceMax(b.Cast(b.Reshape(mask, r, t, s), poot.I32), 1), poot.Bool)
		seen = b.Reshape(b.Broadcast(b.Reshape(seen, r, s, 1), r, s, hkv*dv), r*s, hkv*dv)
		v = b.Select(seen, v, b.FullLike(v, 0))
		qh := b.Transpose(b.Reshape(q, r, t, h, d), 0, 2, 1, 3)
		kh := RepeatKV(b, b.Transpose(b.Reshape(k, r, s, hkv, d), 0, 2, 1, 3), rep)
		vh := RepeatKV(b, b.Transpose(b.Reshape(v, r, s, hkv, dv), 0, 2, 3, 1), rep)
		sc := b.MatMul(qh, kh)
		sc = b.Mul(sc, b.FullLike(sc, c.Scale))
		if c.SoftCap != 0 {
			sc = b.Mul(b.Tanh(b.Mul(sc, b.FullLike(sc, 1/c.SoftCap))), b.FullLike(sc, c.SoftCap))
		}
		m := b.Broadcast(b.Reshape(mask, r, 1, t, s), r, h, t, s)
		sc = b.Select(m, sc, b.FullLike(sc, negInf))
		if present(sinks) {
			sink := b.Broadcast(b.Reshape(sinks, 1, h, 1, 1), r, h, t, 1)
			sc = b.Concat(3, sc, sink)
		}
		p := softmax(b, sc, 3)
		if present(sinks) {
			p = b.SliceAxis(p, 3, 0, s)
		}
		o := b.MatMul(p, vh)
		return b.Reshape(b.Transpose(o, 0, 2, 1, 3), r*t, h*dv)
	})
}

// CacheIndex records the cache rows that the new tokens of a batch are
// written to: for positions pos I32 [R·T] (T per sequence, row-major by
// sequence), row r·capacity + pos. For one sequence (rows = 1) it is pos
// itself and records nothing.
func CacheIndex[B any](b *poot.Builder[B], pos poot.Traced[B], rows, capacity int) poot.Traced[B] {
	if rows == 1 {
		return pos
	}
	return scoped(b, "cache_index", func() poot.Traced[B] {
		n := b.Dim(pos, 0)
		if b.Rank(pos) != 1 || rows < 1 || n%rows != 0 {
			return fail(b, "cache_index", "%v positions for %d rows", b.Shape(pos), rows)
		}
		base := MulScalar(b, b.Iota(poot.T(poot.I32, rows, n/rows), 0), float64(capacity))
		return b.Add(b.Reshape(base, n), pos)
	})
}

// CachedAttention appends this step's keys k [R·T, Hkv·D] and values
// v [R·T, Hkv·Dv] to the caches kCache [R·S, Hkv·D] and vCache
// [R·S, Hkv·Dv] at the rows CacheIndex gives for pos (WriteRows), then
// attends q over the updated caches with mask (see Attention). It returns
// the attention output and the updated caches, which the caller carries
// as the state outputs of kCache and vCache.
func CachedAttention[B any](b *poot.Builder[B], q, k, v, kCache, vCache, pos, mask poot.Traced[B], cfg AttentionConfig[B]) (out, kNext, vNext poot.Traced[B]) {
	c := cfg.normalised()
	b.Scope("cached_attention", func() {
		rows := b.Dim(kCache, 0)
		if c.Rows < 1 || rows%c.Rows != 0 {
			out = fail(b, "cached_attention", "cache of %d rows for %d sequences", rows, c.Rows)
			kNext, vNext = out, out
			return
		}
		idx := CacheIndex(b, pos, c.Rows, rows/c.Rows)
		kNext = b.WriteRows(kCache, idx, k)
		vNext = b.WriteRows(vCache, idx, v)
		out = Attention(b, q, kNext, vNext, mask, c)
	})
	return out, kNext, vNext
}

// OutputGate returns ctx · sigmoid(gate), elementwise, for gated attention
// (Qwen3-Next): gate has ctx's shape.
func OutputGate[B any](b *poot.Builder[B], ctx, gate poot.Traced[B]) poot.Traced[B] {
	return scoped(b, "output_gate", func() poot.Traced[B] { return b.Mul(ctx, Sigmoid(b, gate)) })
}
