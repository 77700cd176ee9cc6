package ops

import (
	"math"

	"github.com/pootlabs/poot"
)

// This file holds the recurrent mixers: a causal depthwise convolution over
// a carried window of rows, and the gated delta rule (Yang, Kautz and
// Hatamizadeh, "Gated Delta Networks", 2024; the linear-attention layers of
// Qwen3-Next). Both work on one sequence of T new tokens, rows [T, C], and
// carry their state from step to step as a State input paired with the
// state they return.

// CausalConv1D convolves each channel of the new rows x [T, C] with its own
// filter over the last taps rows, where the rows before x come from state
// [taps-1, C] (the previous step's last rows; zeros at the start of a
// sequence). weight is [taps, C] in any plain float dtype: row taps-1
// multiplies the current row, row taps-2 the one before, and so on. bias is
// an optional [C]. It returns the convolved rows [T, C] and the new state,
// the last taps-1 rows of state followed by x.
//
// For R sequences of T new tokens each, x is [R·T, C] (sequence-major) and
// state is [R, taps-1, C]: every sequence convolves over its own rows.
func CausalConv1D[B any](b *poot.Builder[B], x, state, weight, bias poot.Traced[B]) (y, newState poot.Traced[B]) {
	record(b, "causal_conv", nil, in(x, state, weight, bias), func() {
		r := sequences(b, state, 2)
		rows, c := b.Dim(x, 0), b.Dim(x, 1)
		taps := b.Dim(weight, 0)
		if b.Rank(x) != 2 || b.Rank(weight) != 2 || b.Dim(weight, 1) != c || taps < 2 || rows%r != 0 ||
			b.Dim(state, -2) != taps-1 || b.Dim(state, -1) != c {
			y = fail(b, "causal_conv1d", "rows %v, state %v and weight %v: want [R·T,C], [taps-1,C] or [R,taps-1,C], and [taps,C] with taps ≥ 2",
				b.Shape(x), b.Shape(state), b.Shape(weight))
			newState = y
			return
		}
		t := rows / r
		w := AsF32(b, weight)
		window := b.Concat(1, b.Reshape(state, r, taps-1, c), b.Reshape(x, r, t, c)) // [R, taps-1+T, C]
		var acc poot.Traced[B]
		for j := range taps {
			if b.Err() != nil {
				break // a limit or an error: taps read from a header may be huge
			}
			tap := b.Broadcast(b.Reshape(b.SliceAxis(w, 0, j, j+1), 1, 1, c), r, t, c)
			term := b.Mul(b.SliceAxis(window, 1, j, j+t), tap)
			if j == 0 {
				acc = term
			} else {
				acc = b.Add(acc, term)
			}
		}
		y = b.Reshape(acc, rows, c)
		if present(bias) {
			y = b.Add(y, broadcastRow(b, AsF32(b, bias), rows))
		}
		newState = b.Reshape(b.SliceAxis(window, 1, t, t+taps-1), dims(b, state)...)
	}, &y, &newState)
	return y, newState
}

// sequences is the number of sequences a recurrent state holds: its leading
// extent when it has one axis more than a single sequence's state, else 1.
func sequences[B any](b *poot.Builder[B], state poot.Traced[B], single int) int {
	if b.Rank(state) == single+1 {
		return max(b.Dim(state, 0), 1)
	}
	return 1
}

// headsFirst views the rows x [R·T, H·D] of R sequences as [R·H, T, D].
func headsFirst[B any](b *poot.Builder[B], x poot.Traced[B], r, h, d int) poot.Traced[B] {
	t := b.Dim(x, 0) / r
	return b.Reshape(b.Transpose(b.Reshape(x, r, t, h, d), 0, 2, 1, 3), r*h, t, d)
}

// scalarsFirst views per-head scalars x [R·T, H] as [R·H, T].
func scalarsFirst[B any](b *poot.Builder[B], x poot.Traced[B], r, h int) poot.Traced[B] {
	t := b.Dim(x, 0) / r
	return b.Reshape(b.Transpose(b.Reshape(x, r, t, h), 0, 2, 1), r*h, t)
}

// rowsFirst is the inverse of headsFirst: [R·H, T, D] to [R·T, H·D].
func rowsFirst[B any](b *poot.Builder[B], x poot.Traced[B], r, h int) poot.Traced[B] {
	t, d := b.Dim(x, 1), b.Dim(x, 2)
	return b.Reshape(b.Transpose(b.Reshape(x, r, h, t, d), 0, 2, 1, 3), r*t, h*d)
}

// GatedDeltaConfig describes a gated delta rule layer.
type GatedDeltaConfig struct {
	// KeyHeads and ValueHeads are the numbers of query/key heads and of
	// value heads; ValueHeads is a multiple of KeyHeads, and each query/key
	// head serves ValueHeads/KeyHeads value heads.
	KeyHeads, ValueHeads int
	// TiledHeads says value head h reads query/key head h mod KeyHeads
	// (llama.cpp's repeat) rather than h / (ValueHeads/KeyHeads) (Hugging
	// Face's repeat_interleave). Which one a checkpoint needs depends on how
	// its value heads are ordered.
	TiledHeads bool
	// Scale multiplies the queries after their L2 norm; 0 means
	// 1/sqrt(key head dim).
	Scale float64
	// L2Eps is the epsilon of the query and key L2 norms; 0 means 1e-6.
	L2Eps float64
	// NormEps is the epsilon of the gated RMSNorm on the output; 0 means
	// 1e-6.
	NormEps float64
	// ChunkSize selects the form. 0 runs the recurrence token by token
	// (unrolled in the graph). A positive size runs the exact chunked
	// parallel form: within a chunk the delta rule's triangular system is
	// solved in the graph, so a chunk costs a few batched matrix products
	// instead of one recurrence step a token. Both forms compute the same
	// values up to rounding.
	ChunkSize int
}

func (c GatedDeltaConfig) or(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// GatedDelta is the gated delta rule over T tokens with its output
// normalised and gated: out = RMSNorm(o) · normWeight · silu(z) per value
// head, where o is GatedDeltaRule's read-out. q and k are [T, Hk·Dk], v and
// z [T, Hv·Dv], g and beta [T, Hv], state [Hv, Dv, Dk] (or [R, Hv, Dv, Dk]
// for R sequences, as GatedDeltaRule describes) and normWeight [Dv] (or the
// zero handle). It returns [T, Hv·Dv] and the new state.
func GatedDelta[B any](b *poot.Builder[B], q, k, v, g, beta, z, normWeight, state poot.Traced[B], cfg GatedDeltaConfig) (out, newState poot.Traced[B]) {
	attrs := poot.Attrs{attr("key_heads", cfg.KeyHeads), attr("value_heads", cfg.ValueHeads), attr("tiled_heads", cfg.TiledHeads),
		attr("scale", cfg.Scale), attr("l2_eps", cfg.L2Eps), attr("norm_eps", cfg.or(cfg.NormEps, 1e-6)), attr("chunk", cfg.ChunkSize)}
	record(b, "gated_delta", attrs, in(q, k, v, g, beta, z, normWeight, state), func() {
		o, s := GatedDeltaRule(b, q, k, v, g, beta, state, cfg)
		out, newState = GatedRMSNorm(b, o, z, normWeight, cfg.ValueHeads, cfg.or(cfg.NormEps, 1e-6)), s
	}, &out, &newState)
	return out, newState
}

// GatedRMSNorm normalises each head of x [T, H·D] by its root mean square,
// scales it by w [D] (shared by the heads; the zero handle for none) and
// gates it by silu(z), z like x.
func GatedRMSNorm[B any](b *poot.Builder[B], x, z, w poot.Traced[B], heads int, eps float64) poot.Traced[B] {
	return scoped(b, "gated_rms_norm", func() poot.Traced[B] {
		return b.Mul(RMSNormHeads(b, x, w, heads, eps), silu(b, z))
	})
}

// GatedDeltaDecay is the log decay of the gated delta rule (and of
// Mamba2): g = -exp(aLog) · softplus(a + dtBias), for a [T, H] and the
// per-head aLog and dtBias [H]. exp(g) lies in (0, 1].
//
// It is recorded as the composite gated_delta_decay over (a, dtBias,
// aLog) with log_rate true.
func GatedDeltaDecay[B any](b *poot.Builder[B], a, dtBias, aLog poot.Traced[B]) poot.Traced[B] {
	return composite(b, "gated_delta_decay", poot.Attrs{attr("log_rate", true)}, in(a, dtBias, aLog), func() poot.Traced[B] {
		return decayRate(b, a, dtBias, b.Neg(b.Exp(AsF32(b, aLog))))
	})
}

// GatedDeltaDecayRate is the same log decay from the rate itself:
// g = rate · softplus(a + dtBias), rate [H] the negative A = -exp(A_log)
// that llama.cpp's converter stores (ssm_a).
// It is recorded as the composite gated_delta_decay over (a, dtBias,
// rate) with log_rate false.
func GatedDeltaDecayRate[B any](b *poot.Builder[B], a, dtBias, rate poot.Traced[B]) poot.Traced[B] {
	return composite(b, "gated_delta_decay", poot.Attrs{attr("log_rate", false)}, in(a, dtBias, rate), func() poot.Traced[B] {
		return decayRate(b, a, dtBias, rate)
	})
}

// decayRate is rate · softplus(a + dtBias), the body of both decays.
func decayRate[B any](b *poot.Builder[B], a, dtBias, rate poot.Traced[B]) poot.Traced[B] {
	t := b.Dim(a, 0)
	sp := softplus(b, b.Add(a, broadcastRow(b, AsF32(b, dtBias), t)))
	return b.Mul(broadcastRow(b, AsF32(b, rate), t), sp)
}

// softplus is log(1+exp(x)), written max(x, 0) + log(1 + exp(-|x|)) so
// that large inputs do not overflow.
func softplus[B any](b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B] {
	pos := b.Max(x, b.FullLike(x, 0))
	return b.Add(pos, b.Log(b.Add(b.FullLike(x, 1), b.Exp(b.Neg(b.Abs(x))))))
}

// GatedDeltaRule runs the gated delta rule over T new tokens of a sequence.
// Per value head, with q and k L2-normalised and q scaled:
//
//	S ← S · exp(g_t)
//	S ← S + β_t · k_t ⊗ (v_t − Sᵀk_t)
//	o_t = Sᵀq_t
//
// where S is the head's [Dk, Dv] state. q and k are [T, Hk·Dk], v
// [T, Hv·Dv], g (the log decay, ≤ 0) and beta (in [0, 1]) [T, Hv]. The
// state is stored transposed, [Hv, Dv, Dk]: each value channel holds a key
// vector. It returns o [T, Hv·Dv] and the new state.
//
// For R sequences of T new tokens each, the rows are [R·T, ...]
// (sequence-major) and the state is [R, Hv, Dv, Dk].
func GatedDeltaRule[B any](b *poot.Builder[B], q, k, v, g, beta, state poot.Traced[B], cfg GatedDeltaConfig) (o, newState poot.Traced[B]) {
	attrs := poot.Attrs{attr("key_heads", cfg.KeyHeads), attr("value_heads", cfg.ValueHeads), attr("tiled_heads", cfg.TiledHeads),
		attr("scale", cfg.Scale), attr("l2_eps", cfg.L2Eps), attr("chunk", cfg.ChunkSize)}
	record(b, "gated_delta_rule", attrs, in(q, k, v, g, beta, state), func() {
		hk, hv := cfg.KeyHeads, cfg.ValueHeads
		r := sequences(b, state, 3)
		rows := b.Dim(q, 0)
		if hk < 1 || hv < 1 || hv%hk != 0 || b.Rank(q) != 2 || b.Rank(v) != 2 || b.Dim(q, 1)%hk != 0 || b.Dim(v, 1)%hv != 0 ||
			cfg.ChunkSize < 0 || rows%r != 0 {
			o = fail(b, "gated_delta_rule", "q %v, v %v, state %v with %d key and %d value heads, chunk %d",
				b.Shape(q), b.Shape(v), b.Shape(state), hk, hv, cfg.ChunkSize)
			newState = o
			return
		}
		dk, dv := b.Dim(q, 1)/hk, b.Dim(v, 1)/hv
		want := poot.T(poot.F32, hv, dv, dk)
		if b.Rank(state) == 4 {
			want = poot.T(poot.F32, r, hv, dv, dk)
		}
		if !b.Aval(state).Equal(want) || !b.Aval(g).Equal(poot.T(poot.F32, rows, hv)) || !b.Aval(beta).Equal(poot.T(poot.F32, rows, hv)) ||
			!b.Aval(k).Equal(b.Aval(q)) || b.Dim(v, 0) != rows {
			o = fail(b, "gated_delta_rule", "state %v (want %v), g %v, beta %v, k %v, v %v for q %v",
				b.Shape(state), want, b.Shape(g), b.Shape(beta), b.Shape(k), b.Shape(v), b.Shape(q))
			newState = o
			return
		}
		eps := cfg.or(cfg.L2Eps, 1e-6)
		scale := cfg.or(cfg.Scale, 1/math.Sqrt(float64(dk)))
		qn := MulScalar(b, L2NormHeads(b, q, hk, eps), scale)
		kn := L2NormHeads(b, k, hk, eps)
		// Heads first, [R·Hv, T, D] and [R·Hv, T]: each (sequence, head)
		// pair is one batch entry of the kernels.
		qh := headsFirst(b, repeatKeyHeads(b, qn, hk, hv, dk, cfg.TiledHeads), r, hv, dk)
		kh := headsFirst(b, repeatKeyHeads(b, kn, hk, hv, dk, cfg.TiledHeads), r, hv, dk)
		vh := headsFirst(b, v, r, hv, dv)
		gh, bh := scalarsFirst(b, g, r, hv), scalarsFirst(b, beta, r, hv)
		s := b.Reshape(state, r*hv, dv, dk)
		var oh poot.Traced[B]
		if cfg.ChunkSize == 0 {
			oh, s = deltaSteps(b, qh, kh, vh, gh, bh, s)
		} else {
			oh, s = deltaChunks(b, qh, kh, vh, gh, bh, s, cfg.ChunkSize)
		}
		o = rowsFirst(b, oh, r, hv)
		newState = b.Reshape(s, dims(b, state)...)
	}, &o, &newState)
	return o, newState
}

// repeatKeyHeads expands x [T, Hk·D] to [T, Hv·D], interleaved (head h
// reads h / (Hv/Hk)) or tiled (head h reads h mod Hk).
func repeatKeyHeads[B any](b *poot.Builder[B], x poot.Traced[B], hk, hv, d int, tiled bool) poot.Traced[B] {
	if hk == hv {
		return x
	}
	t, rep := b.Dim(x, 0), hv/hk
	if tiled {
		x = b.Broadcast(b.Reshape(x, t, 1, hk, d), t, rep, hk, d)
	} else {
		x = b.Broadcast(b.Reshape(x, t, hk, 1, d), t, hk, rep, d)
	}
	return b.Reshape(x, t, hv*d)
}

// deltaSteps is the recurrence one token at a time, over heads-first
// q, k [H, T, Dk], v [H, T, Dv], g, beta [H, T] and state [H, Dv, Dk].
// Without beta (the zero handle) the update is the plain decayed outer
// product S ← S·exp(g_t) + k_t ⊗ v_t of Mamba2's state-space model.
func deltaSteps[B any](b *poot.Builder[B], q, k, v, g, beta, s poot.Traced[B]) (o, state poot.Traced[B]) {
	h, t, dk, dv := b.Dim(q, 0), b.Dim(q, 1), b.Dim(q, 2), b.Dim(v, 2)
	outs := make([]poot.Traced[B], 0, t)
	for i := range t {
		at := func(x poot.Traced[B]) poot.Traced[B] {
			if t == 1 {
				return x
			}
			return b.SliceAxis(x, 1, i, i+1)
		}
		qt, kt, vt := at(q), at(k), at(v) // [H, 1, D]
		decay := b.Exp(b.Reshape(at(g), h, 1, 1))
		s = b.Mul(s, b.Broadcast(decay, h, dv, dk))
		write := vt
		if present(beta) {
			kv := b.MatMul(kt, s) // Sᵀk: [H, 1, Dv]
			write = b.Mul(b.Sub(vt, kv), b.Broadcast(b.Reshape(at(beta), h, 1, 1), h, 1, dv))
		}
		s = b.Add(s, b.MatMul(b.Reshape(write, h, dv, 1), b.Reshape(kt, h, dk, 1)))
		outs = append(outs, b.MatMul(qt, s))
	}
	if len(outs) == 1 {
		return outs[0], s
	}
	return b.Concat(1, outs...), s
}

// deltaChunks is the chunked parallel form. Within a chunk of c tokens
// starting from state S₀ (written [Dk, Dv] here), with G_i the cumulative
// log decay, the recurrence unrolls to
//
//	S_i = e^{G_i} S₀ + Σ_{j≤i} e^{G_i−G_j} k_j w_jᵀ
//
// where the new values w solve the unit lower-triangular system
//
//	w_i + β_i Σ_{j<i} e^{G_i−G_j} (k_i·k_j) w_j = β_i (v_i − e^{G_i} S₀ᵀk_i).
//
// With N the strictly lower matrix of the left-hand sums (negated),
// (I − N)⁻¹ = (I + N)(I + N²)(I + N⁴)… exactly, since N^c = 0; so the solve
// is ⌈log₂ c⌉ batched matrix products. Then
//
//	o_i = e^{G_i} S₀ᵀq_i + Σ_{j≤i} e^{G_i−G_j} (q_i·k_j) w_j.
//
// Without beta there is nothing to solve: w = v (Mamba2's SSD).
func deltaChunks[B any](b *poot.Builder[B], q, k, v, g, beta, s poot.Traced[B], size int) (o, state poot.Traced[B]) {
	h, t, dk, dv := b.Dim(q, 0), b.Dim(q, 1), b.Dim(q, 2), b.Dim(v, 2)
	var outs []poot.Traced[B]
	for start := 0; start < t; start += size {
		c := min(size, t-start)
		at := func(x poot.Traced[B]) poot.Traced[B] {
			if c == t {
				return x
			}
			return b.SliceAxis(x, 1, start, start+c)
		}
		qc, kc, vc, gc := at(q), at(k), at(v), at(g)
		if c == 1 {
			// A chunk of one token is one step, which is cheaper.
			bc := beta
			if present(beta) {
				bc = at(beta)
			}
			var oc poot.Traced[B]
			oc, s = deltaSteps(b, qc, kc, vc, gc, bc, s)
			outs = append(outs, oc)
			continue
		}
		row := b.Iota(poot.T(poot.I32, c, c), 0)
		col := b.Iota(poot.T(poot.I32, c, c), 1)
		lower := b.Ge(row, col) // j ≤ i
		cum := b.MatMul(gc, b.Cast(lower, poot.F32))
		// e^{G_i−G_j} where j ≤ i (strictly, for the solve), else 0; the
		// mask is applied before exp so that no Inf·0 appears.
		diff := b.Sub(b.Broadcast(b.Reshape(cum, h, c, 1), h, c, c), b.Broadcast(b.Reshape(cum, h, 1, c), h, c, c))
		ninf := b.Full(poot.T(poot.F32, h, c, c), math.Inf(-1))
		mask := func(m poot.Traced[B]) poot.Traced[B] {
			return b.Exp(b.Select(b.Broadcast(b.Reshape(m, 1, c, c), h, c, c), diff, ninf))
		}
		decay := mask(lower)
		eg := b.Reshape(b.Exp(cum), h, c, 1)
		// The unknowns are kept transposed, wᵀ [H, Dv, c], which is the
		// layout both products below want.
		var wt poot.Traced[B]
		if present(beta) {
			betaRows := b.Reshape(at(beta), h, c, 1)
			n := b.Neg(b.Mul(b.Mul(b.MatMul(kc, kc), mask(b.Gt(row, col))), b.Broadcast(betaRows, h, c, c)))
			rhs := b.Mul(b.Sub(vc, b.Mul(b.MatMul(kc, s), b.Broadcast(eg, h, c, dv))), b.Broadcast(betaRows, h, c, dv))
			// (x + Nᵖx)ᵀ = xᵀ + MatMul(xᵀ, Nᵖ).
			wt = b.Transpose(rhs, 0, 2, 1)
			for p, np := 1, n; p < c; p *= 2 {
				wt = b.Add(wt, b.MatMul(wt, np))
				if 2*p < c {
					np = b.MatMul(np, b.Transpose(np, 0, 2, 1))
				}
			}
		} else {
			wt = b.Transpose(vc, 0, 2, 1)
		}
		inter := b.MatMul(b.Mul(qc, b.Broadcast(eg, h, c, dk)), s)
		intra := b.MatMul(b.Mul(b.MatMul(qc, kc), decay), wt)
		outs = append(outs, b.Add(inter, intra))
		last := b.SliceAxis(cum, 1, c-1, c) // [H, 1]
		tail := b.Exp(b.Sub(b.Broadcast(last, h, c), cum))
		kd := b.Mul(kc, b.Broadcast(b.Reshape(tail, h, c, 1), h, c, dk))
		s = b.Add(b.Mul(s, b.Broadcast(b.Reshape(b.Exp(last), h, 1, 1), h, dv, dk)), b.MatMul(wt, b.Transpose(kd, 0, 2, 1)))
	}
	if len(outs) == 1 {
		return outs[0], s
	}
	return b.Concat(1, outs...), s
}

// Mamba2Config describes Mamba2's selective state-space model (Dao and Gu,
// "Transformers are SSMs", 2024).
type Mamba2Config struct {
	// Heads is the number of heads; Groups the number of B/C groups, a
	// divisor of Heads (head h reads group h / (Heads/Groups)).
	Heads, Groups int
	// ChunkSize selects the form as GatedDeltaConfig.ChunkSize does: 0
	// steps token by token, a positive size runs the chunked (SSD) form.
	ChunkSize int
}

// Mamba2SSM runs Mamba2's selective scan over T tokens of one sequence.
// Per head, with Δ_t = softplus(dt_t + dtBias) and A = −exp(aLog):
//
//	S ← S · exp(Δ_t A) + Δ_t x_t ⊗ B_t
//	y_t = S C_t + D x_t
//
// where S is the head's [P, N] state. x is [T, H·P], dt [T, H] (before the
// softplus), bm and cm (B and C) [T, G·N], dtBias, aLog and d [H], and
// state [H, P, N]. It returns y [T, H·P] and the new state. The gate and
// norm that follow in a Mamba2 block are Mamba2Gate. For R sequences of T
// new tokens each, the rows are [R·T, ...] and the state [R, H, P, N].
func Mamba2SSM[B any](b *poot.Builder[B], x, dt, bm, cm, dtBias, aLog, d, state poot.Traced[B], cfg Mamba2Config) (y, newState poot.Traced[B]) {
	attrs := poot.Attrs{attr("heads", cfg.Heads), attr("groups", cfg.Groups), attr("chunk", cfg.ChunkSize)}
	record(b, "mamba2_ssm", attrs, in(x, dt, bm, cm, dtBias, aLog, d, state), func() {
		h, g := cfg.Heads, cfg.Groups
		r := sequences(b, state, 3)
		rows := b.Dim(x, 0)
		if h < 1 || g < 1 || h%g != 0 || b.Rank(x) != 2 || b.Rank(bm) != 2 || b.Dim(x, 1)%h != 0 || b.Dim(bm, 1)%g != 0 ||
			cfg.ChunkSize < 0 || rows%r != 0 {
			y = fail(b, "mamba2_ssm", "x %v, B %v, state %v with %d heads in %d groups, chunk %d",
				b.Shape(x), b.Shape(bm), b.Shape(state), h, g, cfg.ChunkSize)
			newState = y
			return
		}
		p, n := b.Dim(x, 1)/h, b.Dim(bm, 1)/g
		want := poot.T(poot.F32, h, p, n)
		if b.Rank(state) == 4 {
			want = poot.T(poot.F32, r, h, p, n)
		}
		if !b.Aval(state).Equal(want) || !b.Aval(dt).Equal(poot.T(poot.F32, rows, h)) ||
			!b.Aval(cm).Equal(b.Aval(bm)) || b.Dim(bm, 0) != rows || !b.Shape(d).Equal(poot.Shape{h}) {
			y = fail(b, "mamba2_ssm", "state %v (want %v), dt %v, B %v, C %v, D %v for x %v",
				b.Shape(state), want, b.Shape(dt), b.Shape(bm), b.Shape(cm), b.Shape(d), b.Shape(x))
			newState = y
			return
		}
		step := softplus(b, b.Add(dt, broadcastRow(b, AsF32(b, dtBias), rows)))      // Δ [R·T, H]
		logDecay := b.Mul(b.Neg(b.Exp(broadcastRow(b, AsF32(b, aLog), rows))), step) // ΔA
		perHead := func(v poot.Traced[B]) poot.Traced[B] {                           // [R·T, H] -> [R·T, H·P]
			return b.Reshape(b.Broadcast(b.Reshape(v, rows, h, 1), rows, h, p), rows, h*p)
		}
		xs := headsFirst(b, b.Mul(x, perHead(step)), r, h, p)
		kh := headsFirst(b, repeatKeyHeads(b, bm, g, h, n, false), r, h, n)
		qh := headsFirst(b, repeatKeyHeads(b, cm, g, h, n, false), r, h, n)
		s := b.Reshape(state, r*h, p, n)
		var oh poot.Traced[B]
		if cfg.ChunkSize == 0 {
			oh, s = deltaSteps(b, qh, kh, xs, scalarsFirst(b, logDecay, r, h), poot.Traced[B]{}, s)
		} else {
			oh, s = deltaChunks(b, qh, kh, xs, scalarsFirst(b, logDecay, r, h), poot.Traced[B]{}, s, cfg.ChunkSize)
		}
		skip := b.Mul(x, perHead(broadcastRow(b, AsF32(b, d), rows)))
		y = b.Add(rowsFirst(b, oh, r, h), skip)
		newState = b.Reshape(s, dims(b, state)...)
	}, &y, &newState)
	return y, newState
}

// Mamba2Gate is the gated norm that ends a Mamba2 mixer: y·silu(z),
// normalised by its root mean square within each of the groups (of
// H·P/groups channels) and scaled by w [H·P] (the zero handle for none).
func Mamba2Gate[B any](b *poot.Builder[B], y, z, w poot.Traced[B], groups int, eps float64) poot.Traced[B] {
	return scoped(b, "mamba2_gate", func() poot.Traced[B] {
		out := RMSNormHeads(b, b.Mul(y, silu(b, z)), poot.Traced[B]{}, groups, eps)
		if present(w) {
			out = b.Mul(out, broadcastRow(b, AsF32(b, w), b.Dim(y, 0)))
		}
		return out
	})
}

// GatedDeltaNetWeights are the tensors of a gated delta rule mixer of width
// D (Qwen3-Next's linear attention), in the Linear convention
// [out_features, in_features], with Kd = KeyHeads·Dk and Vd = ValueHeads·Dv.
type GatedDeltaNetWeights[B any] struct {
	// Q and K are [Kd, D]; V and Z (the output gate) are [Vd, D]. A
	// checkpoint's fused in_proj_qkvz is split into them at load.
	Q, K, V, Z poot.Traced[B]
	// Conv is the depthwise filter [taps, 2·Kd + Vd] over the concatenated
	// q, k and v rows (see CausalConv1D).
	Conv poot.Traced[B]
	// Beta and Alpha are [ValueHeads, D]: the write strength before its
	// sigmoid, and the decay input (in_proj_ba split).
	Beta, Alpha poot.Traced[B]
	// DtBias and ALog are [ValueHeads] (see GatedDeltaDecay).
	DtBias, ALog poot.Traced[B]
	// Norm is the gated RMSNorm's weight [Dv].
	Norm poot.Traced[B]
	// Out is [D, Vd].
	Out poot.Traced[B]
}

// GatedDeltaNetState is the state a gated delta rule mixer carries between
// steps: the convolution's last rows [taps-1, 2·Kd + Vd] and the delta
// rule's state [ValueHeads, Dv, Dk] (for R sequences, [R, taps-1, 2·Kd +
// Vd] and [R, ValueHeads, Dv, Dk] over rows [R·T, D]).
type GatedDeltaNetState[B any] struct {
	Conv, Delta poot.Traced[B]
}

// GatedDeltaNet is Qwen3-Next's gated delta rule mixer over x [T, D]:
// project q, k, v and the gate z; convolve q, k and v causally and apply
// SiLU; take beta = sigmoid(x·Beta) and the decay from x·Alpha; run
// GatedDelta; project back with Out. It returns [T, D] and the new state.
func GatedDeltaNet[B any](b *poot.Builder[B], x poot.Traced[B], w GatedDeltaNetWeights[B], st GatedDeltaNetState[B], cfg GatedDeltaConfig) (out poot.Traced[B], next GatedDeltaNetState[B]) {
	b.Scope("gated_delta_net", func() {
		none := poot.Traced[B]{}
		q, k, v := Linear(b, x, w.Q, none), Linear(b, x, w.K, none), Linear(b, x, w.V, none)
		beta := sigmoid(b, Linear(b, x, w.Beta, none))
		g := GatedDeltaDecay(b, Linear(b, x, w.Alpha, none), w.DtBias, w.ALog)
		var o poot.Traced[B]
		o, next = GatedDeltaMix(b, b.Concat(1, q, k, v), Linear(b, x, w.Z, none), g, beta, w.Conv, w.Norm, st, cfg)
		out = Linear(b, o, w.Out, none)
	})
	return out, next
}

// GatedDeltaMix is a gated delta rule mixer between its input and output
// projections, for checkpoints that project differently (fused q, k and v
// rows, grouped beta and alpha): convolve the projected rows qkv
// [T, 2·Kd + Vd] (q, then k, then v) causally with conv [taps, 2·Kd + Vd],
// apply SiLU, split q, k and v, and run GatedDelta with the log decay g and
// write strength beta [T, ValueHeads] (after its sigmoid), the output gate
// z [T, Vd] and the gated norm's weight norm [Dv]. It returns [T, Vd] and
// the new state.
func GatedDeltaMix[B any](b *poot.Builder[B], qkv, z, g, beta, conv, norm poot.Traced[B], st GatedDeltaNetState[B], cfg GatedDeltaConfig) (o poot.Traced[B], next GatedDeltaNetState[B]) {
	b.Scope("gated_delta_mix", func() {
		vd := b.Dim(z, -1)
		kd := (b.Dim(qkv, -1) - vd) / 2
		var y poot.Traced[B]
		y, next.Conv = CausalConv1D(b, qkv, st.Conv, conv, poot.Traced[B]{})
		parts := SplitColumns(b, SiLU(b, y), kd, kd, vd)
		o, next.Delta = GatedDelta(b, parts[0], parts[1], parts[2], g, beta, z, norm, st.Delta, cfg)
	})
	return o, next
}
