package ops

import (
	"math"

	"github.com/pootlabs/poot"
)

// This file holds multi-head latent attention (DeepSeek-V2, DeepSeek-V3,
// Kimi K2). Keys and values are not cached per head: each token's hidden
// state is compressed to a latent vector of KVLoraRank channels (normalised)
// plus one rotary key of RopeDim channels shared by every head, and the
// cache holds just those, [capacity, KVLoraRank + RopeDim]. The per-head
// keys and values are linear maps of the latent (W_UK and W_UV, together
// the checkpoint's kv_b projection), which gives two equal ways to attend:
//
//   - naive: decompress every cached latent into per-head keys (nope part,
//     joined with the shared rotary key) and values, then attend as usual;
//   - absorbed: fold W_UK into the queries (q_nope·W_UK is a query in latent
//     space), attend over the cache rows themselves, and apply W_UV to the
//     attention-weighted latent. Nothing is decompressed, which is what
//     decode wants.

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

// YaRNMScale is YaRN's attention factor for a context-extension factor and
// a coefficient m: 0.1·m·ln(factor) + 1, or 1 when factor ≤ 1. DeepSeek
// checkpoints set MLAConfig.MScale to YaRNMScale(factor, mscale_all_dim).
func YaRNMScale(factor, m float64) float64 { return yarnMScale(factor, m) }

// MLAWeights are the tensors of a latent attention layer of width D with
// H heads, in the Linear convention [out_features, in_features].
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
	// KB is W_UK, [H, NopeDim, KVLoraRank]: the key rows of kv_b_proj.
	KB poot.Traced[B]
	// KBT is W_UK transposed, [H, KVLoraRank, NopeDim], optional: the
	// absorbed form reads it when given (llama.cpp's attn_k_b) and
	// transposes KB in the graph otherwise.
	KBT poot.Traced[B]
	// VB is W_UV, [H, ValueDim, KVLoraRank]: the value rows of kv_b_proj.
	VB poot.Traced[B]
	// O is [D, H·ValueDim].
	O poot.Traced[B]
}

// LatentAttention is latent attention for T new tokens x [T, D] at absolute
// positions pos i32 [T] over the cache [capacity, KVLoraRank+RopeDim] (a
// State: row p holds the normalised latent and the rotated key of position
// p). The new tokens' rows are written at their positions, and each token
// attends to the cache rows at positions up to its own. rot holds the
// rotary tables of the new tokens' positions, of width RopeDim/2. It
// returns [T, D] and the new cache.
func LatentAttention[B any](b *poot.Builder[B], x, pos, cache poot.Traced[B], rot Rotary[B], w MLAWeights[B], cfg MLAConfig) (out, newCache poot.Traced[B]) {
	b.Scope("latent_attention", func() {
		h, nope, rope, vd, lora := cfg.Heads, cfg.NopeDim, cfg.RopeDim, cfg.ValueDim, cfg.KVLoraRank
		t, capacity := b.Dim(x, 0), b.Dim(cache, 0)
		if h < 1 || nope < 1 || rope < 2 || vd < 1 || lora < 1 || b.Rank(x) != 2 ||
			!b.Aval(cache).Equal(poot.T(poot.F32, capacity, lora+rope)) || !b.Aval(pos).Equal(poot.T(poot.I32, t)) ||
			rope%2 != 0 || 2*b.Dim(rot.Cos, -1) != rope {
			out = fail(b, "latent_attention", "x %v, positions %v, cache %v, rotary tables %v for %d heads of %d+%d dims, latent %d",
				b.Shape(x), b.Shape(pos), b.Shape(cache), b.Shape(rot.Cos), h, nope, rope, lora)
			newCache = out
			return
		}
		eps := cfg.Eps
		if eps == 0 {
			eps = 1e-6
		}
		scale := cfg.Scale
		if scale == 0 {
			scale = 1 / math.Sqrt(float64(nope+rope))
		}
		if cfg.MScale != 0 {
			scale *= cfg.MScale * cfg.MScale
		}
		var q poot.Traced[B]
		if present(w.QA) {
			q = Linear(b, RMSNorm(b, Linear(b, x, w.QA, poot.Traced[B]{}), w.QANorm, eps), w.QB, poot.Traced[B]{})
		} else {
			q = Linear(b, x, w.Q, poot.Traced[B]{})
		}
		q = b.Reshape(q, t, h, nope+rope)
		qNope := b.Transpose(b.SliceAxis(q, 2, 0, nope), 1, 0, 2) // [H, T, nope]
		qRope := RoPE(b, b.Reshape(b.SliceAxis(q, 2, nope, nope+rope), t, h*rope), h, rot)
		qRope = b.Transpose(b.Reshape(qRope, t, h, rope), 1, 0, 2) // [H, T, rope]

		kv := Linear(b, x, w.KVA, poot.Traced[B]{})
		latent := RMSNorm(b, b.SliceAxis(kv, 1, 0, lora), w.KVANorm, eps)
		kRope := RoPE(b, b.SliceAxis(kv, 1, lora, lora+rope), 1, rot)
		newCache = b.WriteRows(cache, pos, b.Concat(1, latent, kRope))

		cachedLatent := b.SliceAxis(newCache, 1, 0, lora) // [cap, lora]
		keyPos := b.Iota(poot.T(poot.I32, t, capacity), 1)
		visible := b.Le(keyPos, b.Broadcast(b.Reshape(pos, t, 1), t, capacity))
		attend := func(scores poot.Traced[B]) poot.Traced[B] {
			scores = MulScalar(b, scores, scale)
			m := b.Broadcast(b.Reshape(visible, 1, t, capacity), h, t, capacity)
			return softmax(b, b.Select(m, scores, b.FullLike(scores, math.Inf(-1))), -1)
		}
		var ctx poot.Traced[B] // [H, T, ValueDim]
		if cfg.Absorb {
			b.Scope("absorbed", func() {
				kbt := w.KBT
				if !present(kbt) {
					kbt = b.Transpose(w.KB, 0, 2, 1)
				}
				qLatent := b.MatMul(qNope, kbt) // [H, T, lora]
				p := attend(b.MatMul(b.Concat(2, qLatent, qRope), newCache))
				ctx = b.MatMul(b.MatMul(p, b.Transpose(cachedLatent, 1, 0)), w.VB)
			})
		} else {
			b.Scope("naive", func() {
				perHead := b.Broadcast(b.Reshape(cachedLatent, 1, capacity, lora), h, capacity, lora)
				kNope := b.MatMul(perHead, w.KB)  // [H, cap, nope]
				values := b.MatMul(perHead, w.VB) // [H, cap, v]
				kShared := b.SliceAxis(newCache, 1, lora, lora+rope)
				keys := b.Concat(2, kNope, b.Broadcast(b.Reshape(kShared, 1, capacity, rope), h, capacity, rope))
				p := attend(b.MatMul(b.Concat(2, qNope, qRope), keys))
				ctx = b.MatMul(p, b.Transpose(values, 0, 2, 1))
			})
		}
		out = Linear(b, b.Reshape(b.Transpose(ctx, 1, 0, 2), t, h*vd), w.O, poot.Traced[B]{})
	})
	return out, newCache
}
