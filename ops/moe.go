package ops

import (
	"fmt"
	"math"

	"github.com/pootlabs/poot"
)

// This file holds the mixtures of experts: a router that scores the experts
// of every token and chooses some of them, and three ways of running the
// chosen experts that compute the same function:
//
//   - MoEDense runs every expert on every token and weights the results
//     with the router's weights (zero for the experts not chosen). It costs
//     E expert evaluations a token and is the reference form.
//   - MoESparse flattens (token, choice) pairs into rows and contracts each
//     row with its own expert by IndexedMatMul: k expert evaluations a token.
//   - MoEGrouped does the same after sorting the rows by expert, so that the
//     rows of one expert are contiguous (what a grouped GEMM wants), and
//     scatters the results back to their tokens.
//
// Expert weights are stacks [E, N, K] in the MatMul convention (each
// expert's matrix is [out_features, in_features]): gate and up [E, F, D],
// down [E, D, F]. Router weights are read at the chosen experts by a Gather
// on the flattened [T*E, 1] table at index t*E+expert, and the dense form's
// [T, E] weights are made by scattering them back with WriteRows, so no
// one-hot tensor appears anywhere.

// Gating says how a router turns its logits into a choice of experts and
// their weights.
type Gating uint8

const (
	// SoftmaxTopK takes the softmax over all experts and keeps the k most
	// probable, weighted by their probabilities (Qwen2-MoE, Qwen3-MoE,
	// DeepSeek-V2, OLMoE). With Renormalize the kept probabilities are
	// divided by their sum.
	SoftmaxTopK Gating = iota
	// TopKSoftmax keeps the k largest logits and takes the softmax over
	// them alone (Mixtral, gpt-oss). The weights already sum to one, so
	// Renormalize changes nothing.
	TopKSoftmax
	// SigmoidTopK scores each expert independently by the sigmoid of its
	// logit (DeepSeek-V3, GLM-4.5, Llama 4). A selection bias, when given,
	// is added to the scores for choosing only; the weights are the
	// unbiased scores.
	SigmoidTopK
)

// GroupScore says how a group of experts is scored when routing is limited
// to the best groups.
type GroupScore uint8

const (
	// GroupTop2Sum scores a group by the sum of its two largest expert
	// scores (DeepSeek-V3's "noaux_tc").
	GroupTop2Sum GroupScore = iota
	// GroupMax scores a group by its largest expert score (DeepSeek-V2's
	// "group_limited_greedy").
	GroupMax
)

// ExpertActivation says how an expert combines its gate and up projections.
type ExpertActivation uint8

const (
	// ExpertSwiGLU is silu(gate) * up.
	ExpertSwiGLU ExpertActivation = iota
	// ExpertClampedSwiGLU is gpt-oss's variant: the gate is clamped from
	// above at Limit, the up projection to [-Limit, Limit], and the result
	// is (up + 1) * gate * sigmoid(Alpha * gate).
	ExpertClampedSwiGLU
)

// MoEConfig documents every option of a mixture of experts. The zero value
// (apart from TopK) is a softmax-then-top-k router without renormalisation,
// group limit or scaling, over SwiGLU experts.
type MoEConfig struct {
	// TopK is the number of experts each token is sent to, in [1, E].
	TopK int
	// Gating says how logits become choices and weights.
	Gating Gating
	// Groups, when above 1, splits the E experts into that many equal
	// groups of consecutive experts; only the TopGroups best groups (scored
	// by GroupScore over the selection scores) are eligible. TopGroups
	// groups must hold at least TopK experts.
	Groups, TopGroups int
	// GroupScore scores a group for group-limited routing.
	GroupScore GroupScore
	// Renormalize divides the chosen experts' weights by their sum
	// (norm_topk_prob).
	Renormalize bool
	// Scale multiplies the routed experts' weights (routed_scaling_factor);
	// 0 means 1.
	Scale float64
	// ScaleInputs multiplies each expert's input, rather than its output,
	// by the routing weight (Llama 4).
	ScaleInputs bool
	// Activation is the experts' gated activation.
	Activation ExpertActivation
	// Alpha and Limit parameterise ExpertClampedSwiGLU (gpt-oss uses 1.702
	// and 7).
	Alpha, Limit float64
}

// MoEWeights are the tensors of a mixture of experts layer with model width
// D, E experts of hidden width F and a shared expert of hidden width S.
// Optional tensors are left as the zero handle.
type MoEWeights[B any] struct {
	// Router is [E, D].
	Router poot.Traced[B]
	// RouterBias is an optional [E] added to the logits (gpt-oss).
	RouterBias poot.Traced[B]
	// SelectionBias is an optional [E] added to the scores for choosing
	// experts only (DeepSeek-V3's e_score_correction_bias).
	SelectionBias poot.Traced[B]
	// Gate and Up are [E, F, D]; Down is [E, D, F]. Any float dtype, packed
	// included.
	Gate, Up, Down poot.Traced[B]
	// GateBias and UpBias are optional [E, F]; DownBias is an optional
	// [E, D] (gpt-oss).
	GateBias, UpBias, DownBias poot.Traced[B]
	// SharedGate and SharedUp are optional [S, D] and SharedDown [D, S]: a
	// SwiGLU expert every token goes through, added to the routed experts.
	SharedGate, SharedUp, SharedDown poot.Traced[B]
	// SharedRouter is an optional [1, D]: when given, the shared expert's
	// output is multiplied by sigmoid(x · SharedRouter) (Qwen2-MoE).
	SharedRouter poot.Traced[B]
}

// Routing is a router's decision for T tokens: the chosen experts of each
// token, in descending order of selection score, and their weights.
type Routing[B any] struct {
	// Experts is i32 [T, k].
	Experts poot.Traced[B]
	// Weights is f32 [T, k]: the routed scaling factor is included.
	Weights poot.Traced[B]
}

// Route scores the experts of every row of x [T, D] with w.Router and
// chooses cfg.TopK of them as cfg says. It checks the expert stacks'
// shapes against the router too, since a chosen expert the stacks do not
// hold would be a runtime fault.
func Route[B any](b *poot.Builder[B], x poot.Traced[B], w MoEWeights[B], cfg MoEConfig) Routing[B] {
	var r Routing[B]
	b.Scope("router", func() { r = route(b, x, w, cfg) })
	return r
}

func route[B any](b *poot.Builder[B], x poot.Traced[B], w MoEWeights[B], cfg MoEConfig) Routing[B] {
	t, k := b.Dim(x, 0), cfg.TopK
	if !checkMoE(b, x, w, cfg) {
		poisoned := b.Scalar(0) // the builder has failed: a poisoned handle
		return Routing[B]{Experts: poisoned, Weights: poisoned}
	}
	logits := b.MatMul(x, w.Router)
	if present(w.RouterBias) {
		logits = b.Add(logits, broadcastRow(b, AsF32(b, w.RouterBias), t))
	}
	var scores, choice poot.Traced[B]
	switch cfg.Gating {
	case SoftmaxTopK:
		scores = softmax(b, logits, -1)
		choice = scores
	case TopKSoftmax:
		scores, choice = logits, logits
	default:
		scores = sigmoid(b, logits)
		choice = scores
		if present(w.SelectionBias) {
			choice = b.Add(scores, broadcastRow(b, AsF32(b, w.SelectionBias), t))
		}
	}
	if cfg.Groups > 1 {
		choice = limitGroups(b, choice, cfg)
	}
	idx := b.ArgTopK(choice, k)
	weights := gatherAt(b, scores, idx)
	switch {
	case cfg.Gating == TopKSoftmax:
		weights = softmax(b, weights, -1)
	case cfg.Renormalize:
		weights = b.Div(weights, b.Broadcast(b.ReduceSum(weights, 1), t, k))
	}
	if cfg.Scale != 0 && cfg.Scale != 1 {
		weights = b.Mul(weights, b.Full(poot.T(poot.F32, t, k), cfg.Scale))
	}
	return Routing[B]{Experts: idx, Weights: weights}
}

// checkMoE records an error for weights or a configuration the mixture
// cannot honour. Expert indices are runtime values, so a stack with fewer
// experts than the router would be a runtime fault; it is caught here.
func checkMoE[B any](b *poot.Builder[B], x poot.Traced[B], w MoEWeights[B], cfg MoEConfig) bool {
	fail := func(format string, args ...any) bool {
		b.Fail(&poot.Error{Kind: poot.ErrType, Op: "moe", Scope: b.CurrentScope(), Detail: fmt.Sprintf(format, args...)})
		return false
	}
	experts, d, f := b.Dim(w.Router, 0), b.Dim(x, -1), b.Dim(w.Gate, 1)
	shaped := func(h poot.Traced[B], dims ...int) bool {
		return b.Shape(h).Equal(poot.Shape(dims))
	}
	switch {
	case b.Err() != nil:
		return false
	case b.Rank(x) != 2 || b.DType(x) != poot.F32:
		return fail("rows %v, want f32 [T, D]", b.Aval(x))
	case !shaped(w.Router, experts, d) || !shaped(w.Gate, experts, f, d) || !shaped(w.Up, experts, f, d) || !shaped(w.Down, experts, d, f):
		return fail("router %v, gate %v, up %v, down %v for width %d: want [E,D], [E,F,D], [E,F,D], [E,D,F]",
			b.Shape(w.Router), b.Shape(w.Gate), b.Shape(w.Up), b.Shape(w.Down), d)
	case present(w.RouterBias) && !shaped(w.RouterBias, experts), present(w.SelectionBias) && !shaped(w.SelectionBias, experts),
		present(w.GateBias) && !shaped(w.GateBias, experts, f), present(w.UpBias) && !shaped(w.UpBias, experts, f),
		present(w.DownBias) && !shaped(w.DownBias, experts, d):
		return fail("biases %v %v %v %v %v for %d experts of width %d and hidden %d", b.Shape(w.RouterBias), b.Shape(w.SelectionBias),
			b.Shape(w.GateBias), b.Shape(w.UpBias), b.Shape(w.DownBias), experts, d, f)
	case cfg.TopK < 1 || cfg.TopK > experts:
		return fail("top-k %d outside [1, %d experts]", cfg.TopK, experts)
	case cfg.Gating > SigmoidTopK:
		return fail("unknown gating %d", cfg.Gating)
	case cfg.Activation > ExpertClampedSwiGLU:
		return fail("unknown expert activation %d", cfg.Activation)
	case cfg.Groups > 1 && experts%cfg.Groups != 0:
		return fail("%d experts do not split into %d groups", experts, cfg.Groups)
	case cfg.Groups > 1 && (cfg.TopGroups < 1 || cfg.TopGroups > cfg.Groups):
		return fail("top groups %d outside [1, %d]", cfg.TopGroups, cfg.Groups)
	case cfg.Groups > 1 && cfg.TopGroups*(experts/cfg.Groups) < cfg.TopK:
		return fail("%d of %d groups hold fewer than top-k %d experts", cfg.TopGroups, cfg.Groups, cfg.TopK)
	case cfg.Groups > 1 && cfg.GroupScore > GroupMax:
		return fail("unknown group score %d", cfg.GroupScore)
	}
	return true
}

// limitGroups sets the selection scores of the experts outside each token's
// best groups to -Inf.
func limitGroups[B any](b *poot.Builder[B], choice poot.Traced[B], cfg MoEConfig) poot.Traced[B] {
	t, e := b.Dim(choice, 0), b.Dim(choice, 1)
	g := cfg.Groups
	n := e / g
	grouped := b.Reshape(choice, t*g, n)
	var score poot.Traced[B]
	if cfg.GroupScore == GroupMax || n < 2 {
		score = b.ReduceMax(grouped, 1)
	} else {
		score = b.ReduceSum(gatherAt(b, grouped, b.ArgTopK(grouped, 2)), 1)
	}
	best := b.ArgTopK(b.Reshape(score, t, g), cfg.TopGroups)
	keep := b.Gt(scatterAt(b, best, b.Full(poot.T(poot.F32, t, cfg.TopGroups), 1), g), b.Full(poot.T(poot.F32, t, g), 0.5))
	keep = b.Reshape(b.Broadcast(b.Reshape(keep, t, g, 1), t, g, n), t, e)
	return b.Select(keep, choice, b.Full(poot.T(poot.F32, t, e), math.Inf(-1)))
}

// MoESparse is the mixture of experts over x [T, D] in its sparse form:
// each (token, choice) pair is a row contracted with its own expert by
// IndexedMatMul. The result is [T, D].
func MoESparse[B any](b *poot.Builder[B], x poot.Traced[B], w MoEWeights[B], cfg MoEConfig) poot.Traced[B] {
	return moe(b, "sparse", x, w, cfg, false)
}

// MoEGrouped is MoESparse with the rows sorted by expert before the expert
// contractions (so each expert's rows are contiguous, the layout of a
// grouped GEMM) and put back in token order after them. The result is
// [T, D], equal to MoESparse's.
func MoEGrouped[B any](b *poot.Builder[B], x poot.Traced[B], w MoEWeights[B], cfg MoEConfig) poot.Traced[B] {
	return moe(b, "grouped", x, w, cfg, true)
}

// moeAttrs are the attributes of a "moe" composite of the given form
// ("sparse", "grouped" or "dense").
func moeAttrs(cfg MoEConfig, form string) poot.Attrs {
	return poot.Attrs{attr("form", form), attr("top_k", cfg.TopK), attr("gating", int(cfg.Gating)),
		attr("groups", cfg.Groups), attr("top_groups", cfg.TopGroups), attr("group_score", int(cfg.GroupScore)),
		attr("renormalize", cfg.Renormalize), attr("scale", cfg.Scale), attr("scale_inputs", cfg.ScaleInputs),
		attr("activation", int(cfg.Activation)), attr("alpha", cfg.Alpha), attr("limit", cfg.Limit)}
}

// moeOperands lists a "moe" composite's operands: x, then every weight of
// w in its field order (absent ones as the zero handle).
func moeOperands[B any](x poot.Traced[B], w MoEWeights[B]) []poot.Traced[B] {
	return in(x, w.Router, w.RouterBias, w.SelectionBias, w.Gate, w.Up, w.Down, w.GateBias, w.UpBias, w.DownBias,
		w.SharedGate, w.SharedUp, w.SharedDown, w.SharedRouter)
}

func moe[B any](b *poot.Builder[B], name string, x poot.Traced[B], w MoEWeights[B], cfg MoEConfig, grouped bool) poot.Traced[B] {
	var out poot.Traced[B]
	record(b, "moe", moeAttrs(cfg, name), moeOperands(x, w), func() {
		r := Route(b, x, w, cfg)
		t, d, k := b.Dim(x, 0), b.Dim(x, 1), b.Dim(r.Experts, 1)
		rows := t * k
		b.Scope("experts", func() {
			xr := b.Reshape(b.Broadcast(b.Reshape(x, t, 1, d), t, k, d), rows, d)
			idx := b.Reshape(r.Experts, rows)
			weight := b.Reshape(r.Weights, rows, 1)
			if cfg.ScaleInputs {
				xr = b.Mul(xr, b.Broadcast(weight, rows, d))
			}
			var perm poot.Traced[B]
			if grouped {
				if int64(b.Dim(w.Gate, 0))*int64(rows) > math.MaxInt32 {
					b.Fail(&poot.Error{Kind: poot.ErrLimit, Op: name, Scope: b.CurrentScope(), Detail: fmt.Sprintf("%d rows of %d experts overflow the i32 sort key", rows, b.Dim(w.Gate, 0))})
				}
				// Sort by expert, then by row: the key expert*rows+row is
				// unique, and ArgTopK of its negation is the ascending order.
				key := b.Add(b.Mul(idx, b.Full(poot.T(poot.I32, rows), float64(rows))), b.Iota(poot.T(poot.I32, rows), 0))
				perm = b.Reshape(b.ArgTopK(b.Reshape(b.Neg(key), 1, rows), rows), rows)
				xr, idx = b.Gather(xr, perm), b.Gather(idx, perm)
			}
			y := expertRows(b, xr, idx, w, cfg)
			if grouped {
				y = b.WriteRows(b.Full(poot.T(poot.F32, rows, d), 0), perm, y)
			}
			if !cfg.ScaleInputs {
				y = b.Mul(y, b.Broadcast(weight, rows, d))
			}
			out = b.Reshape(b.ReduceSum(b.Reshape(y, t, k, d), 1), t, d)
		})
		out = addShared(b, x, out, w)
	}, &out)
	return out
}

// expertRows runs each row of x [R, D] through the expert idx[r].
func expertRows[B any](b *poot.Builder[B], x, idx poot.Traced[B], w MoEWeights[B], cfg MoEConfig) poot.Traced[B] {
	proj := func(m, bias poot.Traced[B], in poot.Traced[B]) poot.Traced[B] {
		y := b.IndexedMatMul(in, m, idx)
		if present(bias) {
			y = b.Add(y, AsF32(b, b.Gather(bias, idx)))
		}
		return y
	}
	h := expertActivation(b, proj(w.Gate, w.GateBias, x), proj(w.Up, w.UpBias, x), cfg)
	return proj(w.Down, w.DownBias, h)
}

func expertActivation[B any](b *poot.Builder[B], gate, up poot.Traced[B], cfg MoEConfig) poot.Traced[B] {
	if cfg.Activation != ExpertClampedSwiGLU {
		return b.Mul(silu(b, gate), up)
	}
	limit := b.FullLike(gate, cfg.Limit)
	gate = b.Min(gate, limit)
	up = b.Max(b.Min(up, limit), b.Neg(limit))
	glu := b.Mul(gate, sigmoid(b, b.Mul(gate, b.FullLike(gate, cfg.Alpha))))
	return b.Mul(b.Add(up, b.FullLike(up, 1)), glu)
}

// MoEDense is the mixture of experts over x [T, D] in its dense form: every
// expert runs on every token, and the outputs are summed with the router's
// weights, zero for the experts a token did not choose. The result is
// [T, D], equal to MoESparse's; it costs E expert evaluations a token.
func MoEDense[B any](b *poot.Builder[B], x poot.Traced[B], w MoEWeights[B], cfg MoEConfig) poot.Traced[B] {
	var out poot.Traced[B]
	record(b, "moe", moeAttrs(cfg, "dense"), moeOperands(x, w), func() {
		r := Route(b, x, w, cfg)
		t, d, e := b.Dim(x, 0), b.Dim(x, 1), b.Dim(w.Gate, 0)
		b.Scope("experts", func() {
			weights := b.Transpose(scatterAt(b, r.Experts, r.Weights, e), 1, 0) // [E, T]
			weights = b.Broadcast(b.Reshape(weights, e, t, 1), e, t, d)
			xe := b.Broadcast(b.Reshape(x, 1, t, d), e, t, d)
			if cfg.ScaleInputs {
				xe = b.Mul(xe, weights)
			}
			proj := func(m, bias, in poot.Traced[B]) poot.Traced[B] {
				y := b.MatMul(in, m) // [E, T, N]
				if present(bias) {
					n := b.Dim(bias, 1)
					y = b.Add(y, b.Broadcast(b.Reshape(AsF32(b, bias), e, 1, n), e, t, n))
				}
				return y
			}
			h := expertActivation(b, proj(w.Gate, w.GateBias, xe), proj(w.Up, w.UpBias, xe), cfg)
			y := proj(w.Down, w.DownBias, h)
			if cfg.ScaleInputs {
				// The weights scaled the inputs; the experts not chosen must
				// still contribute nothing.
				ones := b.Full(poot.T(poot.F32, t, b.Dim(r.Experts, 1)), 1)
				chosen := b.Transpose(scatterAt(b, r.Experts, ones, e), 1, 0)
				y = b.Mul(y, b.Broadcast(b.Reshape(chosen, e, t, 1), e, t, d))
			} else {
				y = b.Mul(y, weights)
			}
			out = b.Reshape(b.ReduceSum(y, 0), t, d)
		})
		out = addShared(b, x, out, w)
	}, &out)
	return out
}

// addShared adds the shared expert's output, when the weights have one.
func addShared[B any](b *poot.Builder[B], x, routed poot.Traced[B], w MoEWeights[B]) poot.Traced[B] {
	if !present(w.SharedGate) {
		return routed
	}
	out := routed
	b.Scope("shared", func() {
		h := b.Mul(silu(b, b.MatMul(x, w.SharedGate)), b.MatMul(x, w.SharedUp))
		y := b.MatMul(h, w.SharedDown)
		if present(w.SharedRouter) {
			y = b.Mul(y, b.Broadcast(sigmoid(b, b.MatMul(x, w.SharedRouter)), b.Dim(x, 0), b.Dim(y, 1)))
		}
		out = b.Add(routed, y)
	})
	return out
}

// --- small helpers shared by this package's part-2 files ---

// gatherAt reads table [T, N] at idx i32 [T, k] row by row:
// out[t, j] = table[t, idx[t, j]], as a Gather on the flattened [T*N, 1]
// table at t*N+idx[t, j].
func gatherAt[B any](b *poot.Builder[B], table, idx poot.Traced[B]) poot.Traced[B] {
	t, n, k := b.Dim(table, 0), b.Dim(table, 1), b.Dim(idx, 1)
	flat := b.Reshape(table, t*n, 1)
	return b.Reshape(b.Gather(flat, rowOffsets(b, idx, n)), t, k)
}

// scatterAt is the inverse of gatherAt: a [T, N] tensor of zeros with
// out[t, idx[t, j]] = vals[t, j] (indices within a row are distinct).
func scatterAt[B any](b *poot.Builder[B], idx, vals poot.Traced[B], n int) poot.Traced[B] {
	t, k := b.Dim(idx, 0), b.Dim(idx, 1)
	flat := b.WriteRows(b.Full(poot.T(poot.F32, t*n, 1), 0), b.Reshape(rowOffsets(b, idx, n), t*k), b.Reshape(vals, t*k, 1))
	return b.Reshape(flat, t, n)
}

// rowOffsets is idx [T, k] + t*n: indices into a flattened [T*n] table.
func rowOffsets[B any](b *poot.Builder[B], idx poot.Traced[B], n int) poot.Traced[B] {
	t, k := b.Dim(idx, 0), b.Dim(idx, 1)
	base := b.Mul(b.Iota(poot.T(poot.I32, t, k), 0), b.Full(poot.T(poot.I32, t, k), float64(n)))
	return b.Add(base, idx)
}

// broadcastRow repeats v (any shape of n elements) to [rows, n].
func broadcastRow[B any](b *poot.Builder[B], v poot.Traced[B], rows int) poot.Traced[B] {
	n := b.Dim(v, -1)
	return b.Broadcast(b.Reshape(v, 1, n), rows, n)
}

// broadcastLast broadcasts x, whose last axis has extent 1, along that axis
// to extent n.
func broadcastLast[B any](b *poot.Builder[B], x poot.Traced[B], n int) poot.Traced[B] {
	d := dims(b, x)
	if len(d) == 0 {
		return x
	}
	d[len(d)-1] = n
	return b.Broadcast(x, d...)
}
