package ops

import (
	"math"

	"github.com/pootlabs/poot"
)

// This file holds multi-head latent attention (DeepSeek-V2, DeepSeek-V3,
// Kimi K2). Keys and values are not cached per head: each token's hidden
// state is compressed to a latent vector of KVLoraRank channels (normalised)
// plus one rotary key of RopeDim channels shared by every head, and the
// cache holds just those, one row of KVLoraRank + RopeDim per position. The
// per-head keys and values are linear maps of the latent (W_UK and W_UV,
// together the checkpoint's kv_b projection), which gives two equal ways to
// attend:
//
//   - naive: decompress every cached latent into per-head keys (nope part,
//     joined with the shared rotary key) and values, then attend as usual;
//   - absorbed: fold W_UK into the queries (q_nope·W_UK is a query in latent
//     space), attend over the cache rows themselves as one key/value head,
//     and apply W_UV to the attention-weighted latent. Nothing is
//     decompressed, which is what decode wants.
//
// A layer is three calls, so that the caller owns the cache as it owns an
// attention layer's keys and values: LatentQuery projects the queries,
// LatentKV the rows to cache; the caller writes those to its cache and reads
// every row's cache back (families.Step.Cache: contiguous or paged, one row
// or many); LatentAttention attends over it under a mask. Both forms end in
// the "attention" composite, so what a masked cache row contributes is
// defined as there (nothing, unless another query of its sequence sees it).

// MLAConfig describes a latent attention layer.
type MLAConfig struct {
	// Heads is the number of attention heads.
	Heads int
	// NopeDim and RopeDim are each head's query/key channels without and
	// with rotary embedding (qk_nope_head_dim, qk_rope_head_dim); ValueDim
	// is each head's value channels (v_head_dim).
	NopeDim, RopeDim, ValueDim int
	// KVLoraRank is the width of the compressed latent (kv_lora_rank).
	KVLoraRank int
	// Eps is the epsilon of the latent and low-rank query RMSNorms; 0 means
	// 1e-6.
	Eps float64
	// Rows is the number of sequences R of a batch; 0 means 1.
	Rows int
	// Scale is the softmax scale; 0 means 1/sqrt(NopeDim + RopeDim).
	Scale float64
	// MScale, when non-zero, multiplies the scale by MScale² (YaRN's
	// attention factor as DeepSeek applies it to the scores; see
	// YaRNMScale).
	MScale float64
	// Absorb selects the absorbed form (see the file comment); both forms
	// compute the same values up to rounding.
	Absorb bool
}

func (c MLAConfig) eps() float64 {
	if c.Eps == 0 {
		return 1e-6
	}
	return c.Eps
}

// scale is the resolved softmax scale.
func (c MLAConfig) scale() float64 {
	s := c.Scale
	if s == 0 {
		s = 1 / math.Sqrt(float64(c.NopeDim+c.RopeDim))
	}
	if c.MScale != 0 {
		s *= c.MScale * c.MScale
	}
	return s
}

// YaRNMScale is YaRN's attention factor for a context-extension factor and
// a coefficient m: 0.1·m·ln(factor) + 1, or 1 when factor ≤ 1. DeepSeek
// checkpoints set MLAConfig.MScale to YaRNMScale(factor, mscale_all_dim).
func YaRNMScale(factor, m float64) float64 { return yarnMScale(factor, m) }

// MLAWeights are the tensors of a latent attention layer of width D with
// H heads, in the Linear convention [out_features, in_features]. The
// output projection is an ordinary Linear after LatentAttention.
type MLAWeights[B any] struct {
	// Q is [H·(NopeDim+RopeDim), D], for queries that are not low-rank.
	Q poot.Traced[B]
	// QA [Rq, D], QANorm [Rq] and QB [H·(NopeDim+RopeDim), Rq] are the
	// low-rank queries (q_a_proj, q_a_layernorm, q_b_proj); when QA is
	// given, Q is not used.
	QA, QANorm, QB poot.Traced[B]
	// KVA is [KVLoraRank+RopeDim, D] (kv_a_proj_with_mqa): the latent
	// followed by the shared rotary key.
	KVA poot.Traced[B]
	// KVANorm is [KVLoraRank] (kv_a_layernorm).
	KVANorm poot.Traced[B]
	// KVB is kv_b_proj, [H·(NopeDim+ValueDim), KVLoraRank]: head h's
	// NopeDim key rows (W_UK) then its ValueDim value rows (W_UV); the
	// layout of Hugging Face checkpoints and of llama.cpp's older attn_kv_b.
	// When it is absent, KBT and VB hold the same matrices split.
	KVB poot.Traced[B]
	// KBT is W_UK transposed per head, [H, KVLoraRank, NopeDim] (llama.cpp's
	// attn_k_b), and VB is W_UV, [H, ValueDim, KVLoraRank] (attn_v_b).
	KBT, VB poot.Traced[B]
}

// LatentQuery projects x [N, D] to the queries [N, H·(NopeDim+RopeDim)] of
// LatentAttention, through the low-rank path when w.QA is given, and
// rotates the last RopeDim channels of each head by rot (the tables of the
// rows' positions).
func LatentQuery[B any](b *poot.Builder[B], x poot.Traced[B], rot Rotary[B], w MLAWeights[B], cfg MLAConfig) poot.Traced[B] {
	return scoped(b, "latent_query", func() poot.Traced[B] {
		h, nope, rope := cfg.Heads, cfg.NopeDim, cfg.RopeDim
		n, qk := b.Dim(x, 0), nope+rope
		if h < 1 || nope < 1 || rope < 2 {
			return fail(b, "latent_query", "%d heads of %d+%d dims", h, nope, rope)
		}
		none := poot.Traced[B]{}
		var q poot.Traced[B]
		if present(w.QA) {
			q = Linear(b, RMSNorm(b, Linear(b, x, w.QA, none), w.QANorm, cfg.eps()), w.QB, none)
		} else {
			q = Linear(b, x, w.Q, none)
		}
		q = b.Reshape(q, n, h, qk)
		qRope := RoPE(b, b.Reshape(b.SliceAxis(q, 2, nope, qk), n, h*rope), h, rot)
		return b.Reshape(b.Concat(2, b.SliceAxis(q, 2, 0, nope), b.Reshape(qRope, n, h, rope)), n, h*qk)
	})
}

// LatentKV compresses x [N, D] to the rows a latent cache holds,
// [N, KVLoraRank+RopeDim]: the normalised latent, then the shared rotary
// key rotated by rot.
func LatentKV[B any](b *poot.Builder[B], x poot.Traced[B], rot Rotary[B], w MLAWeights[B], cfg MLAConfig) poot.Traced[B] {
	attrs := poot.Attrs{attr("kv_lora_rank", cfg.KVLoraRank), attr("rope_dim", cfg.RopeDim), attr("epsilon", cfg.eps())}
	return composite(b, "latent_kv", attrs, in(x, w.KVA, w.KVANorm, rot.Cos, rot.Sin), func() poot.Traced[B] {
		lora, kw := cfg.KVLoraRank, cfg.KVLoraRank+cfg.RopeDim
		kv := Linear(b, x, w.KVA, poot.Traced[B]{})
		if lora < 1 || cfg.RopeDim < 2 || b.Rank(kv) != 2 || b.Dim(kv, 1) != kw {
			return fail(b, "latent_kv", "kv_a projection %v for a latent of %d and %d rotary dims", b.Shape(w.KVA), lora, cfg.RopeDim)
		}
		latent := RMSNorm(b, b.SliceAxis(kv, 1, 0, lora), w.KVANorm, cfg.eps())
		return b.Concat(1, latent, RoPE(b, b.SliceAxis(kv, 1, lora, kw), 1, rot))
	})
}

// LatentAttention attends the queries q [R·T, H·(NopeDim+RopeDim)] of
// LatentQuery over a latent cache [R·S, KVLoraRank+RopeDim] that already
// holds this step's rows (LatentKV, written by the caller; row r·S + j is
// position j of sequence r), under mask Bool [R·T, S] (as Attention's),
// and returns each head's values [R·T, H·ValueDim], before the output
// projection. The weights are w.KVB, or w.KBT and w.VB; each form reads
// them as stored when it can (naive: KVB; absorbed: KBT and VB), and slices
// or transposes them in the graph otherwise.
func LatentAttention[B any](b *poot.Builder[B], q, cache, mask poot.Traced[B], w MLAWeights[B], cfg MLAConfig) poot.Traced[B] {
	r := max(cfg.Rows, 1)
	attrs := poot.Attrs{attr("heads", cfg.Heads), attr("nope_dim", cfg.NopeDim), attr("rope_dim", cfg.RopeDim),
		attr("value_dim", cfg.ValueDim), attr("kv_lora_rank", cfg.KVLoraRank), attr("rows", r), attr("scale", cfg.scale()),
		attr("absorb", cfg.Absorb)}
	return composite(b, "latent_attention", attrs, in(q, cache, mask, w.KVB, w.KBT, w.VB), func() poot.Traced[B] {
		h, nope, rope, vd, lora := cfg.Heads, cfg.NopeDim, cfg.RopeDim, cfg.ValueDim, cfg.KVLoraRank
		qk, kw := nope+rope, lora+rope
		nq, nk := b.Dim(q, 0), b.Dim(cache, 0)
		fused := present(w.KVB)
		if h < 1 || nope < 1 || rope < 2 || vd < 1 || lora < 1 || b.Rank(q) != 2 || b.Dim(q, 1) != h*qk ||
			b.Rank(cache) != 2 || b.Dim(cache, 1) != kw || nq%r != 0 || nk%r != 0 || fused == (present(w.KBT) && present(w.VB)) {
			return fail(b, "latent_attention", "queries %v, cache %v for %d heads of %d+%d dims, latent %d, %d rows, kv_b given: %v, k_b and v_b: %v/%v",
				b.Shape(q), b.Shape(cache), h, nope, rope, lora, r, fused, present(w.KBT), present(w.VB))
		}
		kbt, vb := w.KBT, w.VB
		split := func() { // kv_b's key and value rows, [H, NopeDim, lora] and [H, ValueDim, lora]
			heads := b.Reshape(w.KVB, h, nope+vd, lora)
			kbt, vb = b.Transpose(b.SliceAxis(heads, 1, 0, nope), 0, 2, 1), b.SliceAxis(heads, 1, nope, nope+vd)
		}
		latent := b.SliceAxis(cache, 1, 0, lora) // [R·S, lora]
		if cfg.Absorb {
			if fused {
				split()
			}
			qh := b.Transpose(b.Reshape(q, nq, h, qk), 1, 0, 2)   // [H, R·T, qk]
			qLatent := b.MatMul(b.SliceAxis(qh, 2, 0, nope), kbt) // [H, R·T, lora]
			queries := b.Reshape(b.Transpose(b.Concat(2, qLatent, b.SliceAxis(qh, 2, nope, qk)), 1, 0, 2), nq, h*kw)
			// Every head meets the same cache rows: one key/value head whose
			// keys are the whole rows and whose values are their latents.
			ctx := Attention(b, queries, cache, latent, mask, AttentionConfig[B]{Heads: h, KVHeads: 1, HeadDim: kw, ValueDim: lora, Rows: r, Scale: cfg.scale()})
			weighted := b.Transpose(b.Reshape(ctx, nq, h, lora), 1, 0, 2) // [H, R·T, lora]
			return b.Reshape(b.Transpose(b.MatMul(weighted, vb), 1, 0, 2), nq, h*vd)
		}
		var kNope, values poot.Traced[B] // [R·S, H, NopeDim], [R·S, H, ValueDim]
		if fused {
			kv := b.Reshape(b.MatMul(latent, w.KVB), nk, h, nope+vd)
			kNope, values = b.SliceAxis(kv, 2, 0, nope), b.SliceAxis(kv, 2, nope, nope+vd)
		} else {
			perHead := b.Broadcast(b.Reshape(latent, 1, nk, lora), h, nk, lora)
			kNope = b.Transpose(b.MatMul(perHead, b.Transpose(kbt, 0, 2, 1)), 1, 0, 2)
			values = b.Transpose(b.MatMul(perHead, vb), 1, 0, 2)
		}
		shared := b.Broadcast(b.Reshape(b.SliceAxis(cache, 1, lora, kw), nk, 1, rope), nk, h, rope)
		keys := b.Reshape(b.Concat(2, kNope, shared), nk, h*qk)
		return Attention(b, q, keys, b.Reshape(values, nk, h*vd), mask, AttentionConfig[B]{Heads: h, HeadDim: qk, ValueDim: vd, Rows: r, Scale: cfg.scale()})
	})
}
