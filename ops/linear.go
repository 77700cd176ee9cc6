package ops

import "github.com/pootlabs/poot"

// Linear returns x·wᵀ + bias. x is F32 [..., K] of any rank ≥ 1; w is
// [N, K], the layout of a weight [out_features, in_features], in any float
// dtype (F16, BF16 and packed weights are read as stored by the MatMul);
// bias is [N] of any float dtype, or the zero handle. The result is
// [..., N]. x is viewed as a matrix [M, K] for the contraction and the
// result viewed back, so the planner sees one plain matrix product.
func Linear[B any](b *poot.Builder[B], x, w, bias poot.Traced[B]) poot.Traced[B] {
	return composite(b, "linear", nil, in(x, w, bias), func() poot.Traced[B] {
		k := b.Dim(x, -1)
		n := b.Dim(w, 0)
		r := b.Rank(x)
		x2 := x
		if r != 2 {
			x2 = b.Reshape(x, leading(b, x), k)
		}
		y := b.MatMul(x2, w)
		if present(bias) {
			y = b.Add(y, Like(b, AsF32(b, bias), y))
		}
		if r != 2 {
			y = b.Reshape(y, withLast(b, x, n)...)
		}
		return y
	})
}

// SplitColumns cuts x [..., C] along its last axis into consecutive parts of
// the given widths, which must add up to C: how a fused QKV (or gate-up)
// projection's output is split. It records one Slice per part.
func SplitColumns[B any](b *poot.Builder[B], x poot.Traced[B], widths ...int) []poot.Traced[B] {
	out := make([]poot.Traced[B], len(widths))
	b.Scope("split_columns", func() {
		c, total := b.Dim(x, -1), 0
		for _, w := range widths {
			total += w
		}
		if total != c {
			p := fail(b, "split_columns", "widths %v add up to %d, not %d", widths, total, c)
			for i := range out {
				out[i] = p
			}
			return
		}
		start := 0
		for i, w := range widths {
			out[i] = b.SliceAxis(x, -1, start, start+w)
			start += w
		}
	})
	return out
}

// SplitQKV splits a fused projection [..., (Hq + 2·Hkv)·D] into queries
// [..., Hq·D], keys and values [..., Hkv·D], in that column order.
func SplitQKV[B any](b *poot.Builder[B], qkv poot.Traced[B], heads, kvHeads, headDim int) (q, k, v poot.Traced[B]) {
	p := SplitColumns(b, qkv, heads*headDim, kvHeads*headDim, kvHeads*headDim)
	return p[0], p[1], p[2]
}
