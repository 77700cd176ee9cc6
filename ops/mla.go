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
//
// For R sequences of T new tokens each, x is [R·T, D] and pos [R·T]
// (sequence-major), and the cache is [R, capacity, KVLoraRank+RopeDim]:
// each sequence writes and attends to its own rows.
func LatentAttention[B any](b *poot.Builder[B], x, pos, cache poot.Traced[B], rot Rotary[B], w MLAWeights[B], cfg MLAConfig) (out, newCache poot.Traced[B]) {
	attrs := poot.Attrs{attr("heads", cfg.Heads), attr("nope_dim", cfg.NopeDim), attr("rope_dim", cfg.RopeDim),
		attr("value_dim", cfg.ValueDim), attr("kv_lora_rank", cfg.KVLoraRank), attr("epsilon", cfg.Eps), attr("scale", cfg.Scale),
		attr("mscale", cfg.MScale), attr("absorb", cfg.Absorb)}
	operands := in(x, pos, cache, rot.Cos, rot.Sin, w.Q, w.QA, w.QANorm, w.QB, w.KVA, w.KVANorm, w.KB, w.KBT, w.VB, w.O)
	record(b, "latent_attention", attrs, operands, func() {
		h, nope, rope, vd, lora := cfg.Heads, cfg.NopeDim, cfg.RopeDim, cfg.ValueDim, cfg.KVLoraRank
		qk, kw := nope+rope, lora+rope
		r := sequences(b, cache, 2)
		rows, capacity := b.Dim(x, 0), b.Dim(cache, -2)
		want := poot.T(poot.F32, capacity, kw)
		if b.Rank(cache) == 3 {
			want = poot.T(poot.F32, r, capacity, kw)
		}
		if h < 1 || nope < 1 || rope < 2 || vd < 1 || lora < 1 || b.Rank(x) != 2 || rows%r != 0 ||
			!b.Aval(cache).Equal(want) || !b.Aval(pos).Equal(poot.T(poot.I32, rows)) ||
			rope%2 != 0 || 2*b.Dim(rot.Cos, -1) != rope {
			out = fail(b, "latent_attention", "x %v, positions %v, cache %v, rotary tables %v for %d heads of %d+%d dims, latent %d",
				b.Shape(x), b.Shape(pos), b.Shape(cache), b.Shape(rot.Cos), h, nope, rope, lora)
			newCache = out
			return
		}
		t := rows / r
		eps := cfg.Eps
		if eps == 0 {
			eps = 1e-6
		}
		scale := cfg.Scale
		if scale == 0 {
			scale = 1 / math.Sqrt(float64(qk))
		}
		if cfg.MScale != 0 {
			scale *= cfg.MScale * cfg.MScale
		}
		none := poot.Traced[B]{}
		var q poot.Traced[B]
		if present(w.QA) {
			q = Linear(b, RMSNorm(b, Linear(b, x, w.QA, none), w.QANorm, eps), w.QB, none)
		} else {
			q = Linear(b, x, w.Q, none)
		}
		q = b.Reshape(q, rows, h, qk)
		qNope := b.Transpose(b.SliceAxis(q, 2, 0, nope), 1, 0, 2) // [H, R·T, nope]
		qRope := RoPE(b, b.Reshape(b.SliceAxis(q, 2, nope, qk), rows, h*rope), h, rot)
		qRope = b.Transpose(b.Reshape(qRope, rows, h, rope), 1, 0, 2) // [H, R·T, rope]

		// Compress the new tokens and write them at their positions, row
		// r·capacity + pos of the flattened caches.
		kv := Linear(b, x, w.KVA, none)
		latent := RMSNorm(b, b.SliceAxis(kv, 1, 0, lora), w.KVANorm, eps)
		kRope := RoPE(b, b.SliceAxis(kv, 1, lora, kw), 1, rot)
		at := pos
		if r > 1 {
			base := b.Mul(b.Iota(poot.T(poot.I32, r, t), 0), b.Full(poot.T(poot.I32, r, t), float64(capacity)))
			at = b.Add(pos, b.Reshape(base, rows))
		}
		flat := b.WriteRows(b.Reshape(cache, r*capacity, kw), at, b.Concat(1, latent, kRope))
		newCache = b.Reshape(flat, dims(b, cache)...)
		seqCache := b.Reshape(flat, r, capacity, kw)

		keyPos := b.Iota(poot.T(poot.I32, r, 1, t, capacity), 3)
		visible := b.Le(keyPos, b.Broadcast(b.Reshape(pos, r, 1, t, 1), r, 1, t, capacity))
		attend := func(scores poot.Traced[B]) poot.Traced[B] { // [R, H, T, capacity]
			scores = MulScalar(b, scores, scale)
			m := b.Broadcast(visible, r, h, t, capacity)
			return softmax(b, b.Select(m, scores, b.FullLike(scores, math.Inf(-1))), -1)
		}
		// bySequence views [H, R·T, n] as [R, H, T, n].
		bySequence := func(v poot.Traced[B]) poot.Traced[B] {
			return b.Transpose(b.Reshape(v, h, r, t, b.Dim(v, -1)), 1, 0, 2, 3)
		}
		var ctx poot.Traced[B] // [R·T, H·ValueDim]
		if cfg.Absorb {
			b.Scope("absorbed", func() {
				kbt := w.KBT
				if !present(kbt) {
					kbt = b.Transpose(w.KB, 0, 2, 1)
				}
				qLatent := b.MatMul(qNope, kbt) // [H, R·T, lora]
				// Every head's queries of a sequence meet the same cache
				// rows, so they are stacked into one product per sequence.
				queries := b.Reshape(bySequence(b.Concat(2, qLatent, qRope)), r, h*t, kw)
				p := attend(b.Reshape(b.MatMul(queries, seqCache), r, h, t, capacity))
				cachedLatent := b.Transpose(b.SliceAxis(seqCache, 2, 0, lora), 0, 2, 1) // [R, lora, capacity]
				weighted := b.MatMul(b.Reshape(p, r, h*t, capacity), cachedLatent)      // [R, H·T, lora]
				weighted = b.Reshape(b.Transpose(b.Reshape(weighted, r, h, t, lora), 1, 0, 2, 3), h, rows, lora)
				ctx = b.Reshape(b.Transpose(b.MatMul(weighted, w.VB), 1, 0, 2), rows, h*vd)
			})
		} else {
			b.Scope("naive", func() {
				flatLatent := b.SliceAxis(flat, 1, 0, lora) // [R·capacity, lora]
				perHead := b.Broadcast(b.Reshape(flatLatent, 1, r*capacity, lora), h, r*capacity, lora)
				kNope := b.MatMul(perHead, w.KB)  // [H, R·capacity, nope]
				values := b.MatMul(perHead, w.VB) // [H, R·capacity, v]
				kShared := b.Broadcast(b.Reshape(b.SliceAxis(flat, 1, lora, kw), 1, r*capacity, rope), h, r*capacity, rope)
				keys := b.Reshape(b.Concat(2, kNope, kShared), h, r, capacity, qk)
				keys = b.Transpose(keys, 1, 0, 2, 3) // [R, H, capacity, qk]
				p := attend(b.MatMul(bySequence(b.Concat(2, qNope, qRope)), keys))
				vt := b.Transpose(b.Reshape(values, h, r, capacity, vd), 1, 0, 3, 2) // [R, H, v, capacity]
				ctx = b.Reshape(b.Transpose(b.MatMul(p, vt), 0, 2, 1, 3), rows, h*vd)
			})
		}
		out = Linear(b, ctx, w.O, none)
	}, &out, &newCache)
	return out, newCache
}
