package nb

import (
	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
)

// This file holds the less common composites: gated attention outputs,
// row scales, clamped SwiGLU, column splits and mixtures of experts.

// GeGLUErf returns GeLUErf(gate)·up.
func (g *Graph) GeGLUErf(gate, up Value) Value {
	return g.apply("geglu_erf", 0, func(b *builder, in []handle) handle { return ops.GeGLUErf(b, in[0], in[1]) }, gate, up)
}

// SwiGLUClamped returns gpt-oss's clamped SwiGLU, (up+1)·gate·sigmoid(alpha·gate)
// with the gate clamped to at most limit and up to [-limit, limit].
func (g *Graph) SwiGLUClamped(gate, up Value, limit, alpha float64) Value {
	return g.apply("swiglu_clamped", 0, func(b *builder, in []handle) handle {
		return ops.SwiGLUClamped(b, in[0], in[1], limit, alpha)
	}, gate, up)
}

// L2NormHeads applies L2Norm to each of the heads of x [..., heads·D].
func (g *Graph) L2NormHeads(x Value, heads int, eps float64) Value {
	return g.unary("l2_norm_heads", func(b *builder, x handle) handle { return ops.L2NormHeads(b, x, heads, eps) }, x)
}

// OutputGate returns ctx·sigmoid(gate), elementwise (gated attention).
func (g *Graph) OutputGate(ctx, gate Value) Value {
	return g.apply("output_gate", 0, func(b *builder, in []handle) handle { return ops.OutputGate(b, in[0], in[1]) }, ctx, gate)
}

// ScaleRows multiplies each row of x [T, C] by its own factor s [T].
func (g *Graph) ScaleRows(x, s Value) Value {
	return g.apply("scale_rows", 0, func(b *builder, in []handle) handle { return ops.ScaleRows(b, in[0], in[1]) }, x, s)
}

// AttnTemperature returns Llama 4's attention temperature for the i32
// positions pos [T]: log(floor((pos+1)/floorScale) + 1)·attnScale + 1.
func (g *Graph) AttnTemperature(pos Value, floorScale, attnScale float64) Value {
	return g.unary("attn_temperature", func(b *builder, p handle) handle {
		return ops.AttnTemperature(b, p, floorScale, attnScale)
	}, pos)
}

// Split cuts x [..., C] along its last axis into consecutive parts of the
// given widths, which add up to C (a fused QKV or gate-up projection). An
// invalid split records an error and returns one placeholder per width.
func (g *Graph) Split(x Value, widths ...int) []Value {
	out := make([]Value, len(widths))
	if g == nil || g.b == nil {
		return out
	}
	widths = append([]int(nil), widths...)
	g.Scope("split_columns", func() {
		total := 0
		for _, w := range widths {
			total += w
		}
		c := x.Shape()
		if g.Err() == nil && (len(c) == 0 || total != c[len(c)-1]) {
			g.apply("split_columns", 0, func(b *builder, in []handle) handle {
				b.Failf(poot.ErrType, "split_columns", "widths %v add up to %d, not the last extent of %v", widths, total, b.Shape(in[0]))
				return b.Scalar(0)
			}, x)
		}
		start := 0
		for i, w := range widths {
			out[i] = g.Slice(x, -1, start, start+w)
			start += w
		}
	})
	return out
}

// MoEConfig configures MoE (see ops.MoEConfig, whose fields these are,
// with the enumerations spelled as strings).
type MoEConfig struct {
	TopK int // experts per token
	// Gating is "softmax_topk" (or ""), "topk_softmax" or "sigmoid_topk".
	Gating string
	// Groups and TopGroups limit routing to the best groups of experts;
	// GroupScore is "top2_sum" (or "") or "max".
	Groups, TopGroups int
	GroupScore        string
	Renormalize       bool    // divide the chosen weights by their sum
	Scale             float64 // routed scaling factor; 0 means 1
	ScaleInputs       bool    // scale each expert's input, not its output
	// ClampedSwiGLU selects gpt-oss's expert activation with Alpha and
	// Limit; otherwise experts use SwiGLU.
	ClampedSwiGLU bool
	Alpha, Limit  float64
}

// MoEWeights are the tensors of a mixture of experts over width D with E
// experts of hidden width F: Router [E, D]; Gate, Up [E, F, D]; Down
// [E, D, F]. The others are optional (the zero Value): RouterBias and
// SelectionBias [E], GateBias and UpBias [E, F], DownBias [E, D], a
// shared SwiGLU expert SharedGate, SharedUp [S, D], SharedDown [D, S] and
// its gate SharedRouter [1, D].
type MoEWeights struct {
	Router, RouterBias, SelectionBias Value
	Gate, Up, Down                    Value
	GateBias, UpBias, DownBias        Value
	SharedGate, SharedUp, SharedDown  Value
	SharedRouter                      Value
}

var gatings = map[string]ops.Gating{"": ops.SoftmaxTopK, "softmax_topk": ops.SoftmaxTopK, "topk_softmax": ops.TopKSoftmax, "sigmoid_topk": ops.SigmoidTopK}

var groupScores = map[string]ops.GroupScore{"": ops.GroupTop2Sum, "top2_sum": ops.GroupTop2Sum, "max": ops.GroupMax}

// MoE returns the mixture of experts over x [T, D] in its sparse form
// (each token contracted with its chosen experts only); the result is
// [T, D].
func (g *Graph) MoE(x Value, w MoEWeights, cfg MoEConfig) Value {
	vs := []Value{x, w.Router, w.Gate, w.Up, w.Down,
		w.RouterBias, w.SelectionBias, w.GateBias, w.UpBias, w.DownBias,
		w.SharedGate, w.SharedUp, w.SharedDown, w.SharedRouter}
	// x, the router and the three expert stacks are required; the biases
	// and the shared expert may be absent.
	return g.apply("moe", mayOmit(5, 6, 7, 8, 9, 10, 11, 12, 13), func(b *builder, in []handle) handle {
		gating, ok1 := gatings[cfg.Gating]
		score, ok2 := groupScores[cfg.GroupScore]
		if !ok1 || !ok2 {
			b.Failf(poot.ErrType, "moe", "unknown gating %q or group score %q", cfg.Gating, cfg.GroupScore)
			return b.Scalar(0)
		}
		oc := ops.MoEConfig{TopK: cfg.TopK, Gating: gating, Groups: cfg.Groups, TopGroups: cfg.TopGroups, GroupScore: score,
			Renormalize: cfg.Renormalize, Scale: cfg.Scale, ScaleInputs: cfg.ScaleInputs, Alpha: cfg.Alpha, Limit: cfg.Limit}
		if cfg.ClampedSwiGLU {
			oc.Activation = ops.ExpertClampedSwiGLU
		}
		ow := ops.MoEWeights[brand]{Router: in[1], Gate: in[2], Up: in[3], Down: in[4],
			RouterBias: in[5], SelectionBias: in[6], GateBias: in[7], UpBias: in[8], DownBias: in[9],
			SharedGate: in[10], SharedUp: in[11], SharedDown: in[12], SharedRouter: in[13]}
		return ops.MoESparse(b, in[0], ow, oc)
	}, vs...)
}
