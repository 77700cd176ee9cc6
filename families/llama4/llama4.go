// Package llama4 is the text part of Llama 4: a Llama decoder whose layers
// come in groups of four, three with chunked local attention and rotary
// embeddings (queries and keys RMS-normalised per head without weights
// after the rotation) and one global layer without rotary embeddings whose
// queries are scaled by a temperature that grows with the position; and
// whose feed-forward is, every interleave_moe_layer_step-th layer, a routed
// mixture of experts (top-k by the router logit, the chosen experts'
// inputs weighted by the sigmoid of it) beside a shared expert.
//
// The layer pattern and the temperature constants follow llama.cpp's
// reading of GGUF files: chunks of 8192 positions, every fourth layer global
// and without rope, temperature log(floor((p+1)/8192)+1)·0.1+1, QK norms
// unless the model has 128 experts (Maverick); a file whose
// attention.sliding_window is 0 has no chunked layers and only its last
// layer is without rope.
package llama4

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{
	Family:            "llama4",
	GGUFArchitectures: []string{"llama4"},
	HFArchitectures:   []string{"Llama4ForCausalLM", "Llama4ForConditionalGeneration"},
	HFModelTypes:      []string{"llama4_text", "llama4"},
	FromGGUF:          FromGGUF,
	FromHF:            FromHF,
}

// llama.cpp's constants for Llama 4 GGUF files.
const (
	ggufChunk      = 8192
	ggufPeriod     = 4 // three chunked layers, then a global one
	tempFloorScale = 8192
	tempScale      = 0.1
)

// Model is one configured Llama 4 text model.
type Model struct {
	Vocab, Dim, Layers, Heads, KVHeads, HeadDim int
	FFN                                         int // dense layers' hidden width
	Experts, Used, ExpertFFN                    int // routed layers; the shared expert has ExpertFFN too
	MoEStep                                     int // every MoEStep-th layer is routed
	Eps                                         float64
	MaxContext                                  int
	Rope                                        families.Rope
	// Chunked says which layers attend within chunks of Chunk positions;
	// NoRope which layers have no rotary embedding (and, with
	// TempFloorScale > 0, a query temperature).
	Chunk           int
	Chunked, NoRope []bool
	QKNorm          bool
	TempFloorScale  float64
	TempScale       float64
	AttnScale       float64 // 0 means 1/sqrt(HeadDim)
	Tied            bool

	weights families.WeightMap
}

type brand struct{}

// Family returns "llama4".
func (m *Model) Family() string { return "llama4" }

// Schema returns the model's vocabulary, width, depth and context.
func (m *Model) Schema() families.Schema {
	return families.Schema{Vocab: m.Vocab, Dim: m.Dim, Layers: m.Layers, MaxContext: m.MaxContext}
}

// Weights returns the weight map of the container the model came from.
func (m *Model) Weights() families.WeightMap { return m.weights }

// routed reports whether layer l has the mixture of experts.
func (m *Model) routed(l int) bool { return m.MoEStep > 0 && (l+1)%m.MoEStep == 0 }

// LayerKinds names each layer's attention and feed-forward.
func (m *Model) LayerKinds() []string {
	out := make([]string, m.Layers)
	for l := range out {
		mixer := "attention"
		switch {
		case m.Chunked[l]:
			mixer = fmt.Sprintf("attention(chunk %d)", m.Chunk)
		case m.NoRope[l]:
			mixer = "attention(global, no rope)"
		}
		ffn := "dense"
		if m.routed(l) {
			ffn = "moe(shared)"
		}
		out[l] = mixer + "+" + ffn
	}
	return out
}

// validate checks the hyperparameters against each other.
func (m *Model) validate() error {
	bad := func(key, format string, args ...any) error {
		return &families.ConfigError{Source: "llama4", Key: key, Err: families.ErrInconsistent, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case m.Vocab < 1 || m.Dim < 1 || m.Layers < 1 || m.Heads < 1 || m.KVHeads < 1 || m.HeadDim < 1:
		return bad("shape", "vocab %d, dim %d, layers %d, heads %d/%d, head dim %d must all be positive", m.Vocab, m.Dim, m.Layers, m.Heads, m.KVHeads, m.HeadDim)
	case m.Heads%m.KVHeads != 0:
		return bad("heads", "%d query heads are not a multiple of %d key/value heads", m.Heads, m.KVHeads)
	case m.Experts < 1 || m.Used < 1 || m.Used > m.Experts || m.ExpertFFN < 1:
		return bad("experts", "%d experts, %d used, width %d", m.Experts, m.Used, m.ExpertFFN)
	case m.MoEStep < 0 || (m.MoEStep != 1 && m.FFN < 1):
		return bad("feed_forward", "dense width %d with a routed layer every %d", m.FFN, m.MoEStep)
	case len(m.Chunked) != m.Layers || len(m.NoRope) != m.Layers:
		return bad("layers", "layer pattern of %d/%d entries for %d layers", len(m.Chunked), len(m.NoRope), m.Layers)
	case !(m.Eps > 0) || m.Rope.Dims != m.HeadDim || !(m.Rope.Theta > 1):
		return bad("rope", "epsilon %v, rotary dims %d for head dim %d, base %v", m.Eps, m.Rope.Dims, m.HeadDim, m.Rope.Theta)
	}
	return nil
}

// Trace records one step.
func (m *Model) Trace(spec families.StepSpec, limits poot.Limits) (*poot.Graph, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	if err := m.Schema().Check("llama4", spec.Shape); err != nil {
		return nil, err
	}
	b := poot.NewBuilder[brand](limits)
	step := families.NewStep(b, spec.Shape, m.Vocab)
	w := func(name string, dims ...int) poot.Traced[brand] { return b.Constant(name, poot.T(poot.F32, dims...)) }
	none := poot.Traced[brand]{}
	var freq poot.Traced[brand]
	if m.Rope.FreqFactors {
		freq = w("rope_freqs.weight", m.Rope.Dims/2)
	}
	rot := step.Rotary(m.Rope, freq)
	var chunkMask, temp poot.Traced[brand]
	q, kv := m.Heads*m.HeadDim, m.KVHeads*m.HeadDim

	attention := func(l int, h poot.Traced[brand], p string) poot.Traced[brand] {
		qs := ops.Linear(b, h, w(p+"attn_q.weight", q, m.Dim), none)
		ks := ops.Linear(b, h, w(p+"attn_k.weight", kv, m.Dim), none)
		vs := ops.Linear(b, h, w(p+"attn_v.weight", kv, m.Dim), none)
		switch {
		case !m.NoRope[l]:
			qs, ks = ops.RoPE(b, qs, m.Heads, rot), ops.RoPE(b, ks, m.KVHeads, rot)
			if m.QKNorm {
				qs = ops.RMSNormHeads(b, qs, none, m.Heads, m.Eps)
				ks = ops.RMSNormHeads(b, ks, none, m.KVHeads, m.Eps)
			}
		case m.TempFloorScale > 0:
			if temp == none {
				temp = ops.AttnTemperature(b, step.Pos, m.TempFloorScale, m.TempScale)
			}
			qs = ops.ScaleRows(b, qs, temp)
		}
		kAll := step.Cache(families.CacheName("k", l), ks)
		vAll := step.Cache(families.CacheName("v", l), vs)
		mask := step.Mask(0)
		if m.Chunked[l] {
			if chunkMask == none {
				chunkMask = ops.CausalMask(b, step.Pos, spec.Shape.Capacity, 0, m.Chunk)
			}
			mask = chunkMask
		}
		out := ops.Attention(b, qs, kAll, vAll, mask, ops.AttentionConfig[brand]{
			Heads: m.Heads, KVHeads: m.KVHeads, HeadDim: m.HeadDim, Rows: spec.Shape.Rows, Scale: m.AttnScale})
		return ops.Linear(b, out, w(p+"attn_output.weight", m.Dim, q), none)
	}
	ffn := func(l int, h poot.Traced[brand], p string) poot.Traced[brand] {
		if !m.routed(l) {
			return families.FeedForward(b, h, families.FFNWeights[brand]{Gate: w(p+"ffn_gate.weight", m.FFN, m.Dim),
				Up: w(p+"ffn_up.weight", m.FFN, m.Dim), Down: w(p+"ffn_down.weight", m.Dim, m.FFN)}, families.SiLU)
		}
		e, f := m.Experts, m.ExpertFFN
		return families.RoutedFFN(b, h, ops.MoEWeights[brand]{
			Router: w(p+"ffn_gate_inp.weight", e, m.Dim),
			Gate:   w(p+"ffn_gate_exps.weight", e, f, m.Dim), Up: w(p+"ffn_up_exps.weight", e, f, m.Dim),
			Down:       w(p+"ffn_down_exps.weight", e, m.Dim, f),
			SharedGate: w(p+"ffn_gate_shexp.weight", f, m.Dim), SharedUp: w(p+"ffn_up_shexp.weight", f, m.Dim),
			SharedDown: w(p+"ffn_down_shexp.weight", m.Dim, f),
		}, ops.MoEConfig{TopK: m.Used, Gating: ops.SigmoidTopK, ScaleInputs: true})
	}
	layer := func(l int, x poot.Traced[brand]) poot.Traced[brand] {
		p := fmt.Sprintf("blk.%d.", l)
		return families.Layer(b, x, families.LayerNorms[brand]{
			Mixer: w(p+"attn_norm.weight", m.Dim), FFN: w(p+"ffn_norm.weight", m.Dim), Eps: m.Eps},
			func(h poot.Traced[brand]) poot.Traced[brand] { return attention(l, h, p) },
			func(h poot.Traced[brand]) poot.Traced[brand] { return ffn(l, h, p) })
	}
	sw := families.StackWeights[brand]{Embed: w("token_embd.weight", m.Vocab, m.Dim), Norm: w("output_norm.weight", m.Dim)}
	if !m.Tied {
		sw.Output = w("output.weight", m.Vocab, m.Dim)
	}
	logits, hidden := families.Stack(step, sw, families.StackConfig{Layers: m.Layers, Eps: m.Eps}, layer)
	outs := []poot.Traced[brand]{logits}
	if spec.Shape.Hidden {
		outs = append(outs, hidden)
	}
	g, err := step.Finish(outs...)
	if err != nil {
		return nil, err
	}
	return g, families.CheckCarries("llama4", spec.Carries, g)
}

// pattern fills the layer pattern the way llama.cpp reads a GGUF file:
// with chunking, layer l is chunked when l%period < period-1 and has no
// rope when (l+1)%4 == 0; without, only the last layer has no rope.
func (m *Model) pattern(chunked bool, period int) {
	m.Chunked, m.NoRope = make([]bool, m.Layers), make([]bool, m.Layers)
	step := ggufPeriod
	if !chunked {
		step = m.Layers
	}
	for l := range m.Layers {
		m.Chunked[l] = chunked && l%period < period-1
		m.NoRope[l] = (l+1)%step == 0
	}
}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	d, r := families.GGUFDecoder(f, "llama4", ops.RopeInterleaved)
	m := &Model{Vocab: d.Vocab, Dim: d.Dim, Layers: d.Layers, Heads: d.Heads, KVHeads: d.KVHeads, HeadDim: d.HeadDim,
		FFN: d.FFN, Eps: d.Eps, MaxContext: d.MaxContext, Rope: d.Rope, Tied: d.Tied, weights: families.WeightMap{Container: families.GGUF}}
	if d.MoE == nil {
		r.Fail("expert_count", families.ErrMissing, "a llama4 file needs experts")
	} else {
		m.Experts, m.Used, m.ExpertFFN = d.MoE.Experts, d.MoE.Used, r.Positive("expert_feed_forward_length")
	}
	m.MoEStep = r.Positive("interleave_moe_layer_step")
	chunked := r.IntOr("attention.sliding_window", ggufChunk) != 0
	period := r.IntOr("attention.sliding_window_pattern", ggufPeriod)
	if period < 1 {
		r.Fail("attention.sliding_window_pattern", families.ErrInconsistent, "pattern %d", period)
		period = ggufPeriod
	}
	if chunked {
		m.Chunk, m.TempFloorScale, m.TempScale = ggufChunk, tempFloorScale, tempScale
	}
	m.pattern(chunked, period)
	m.QKNorm = m.Experts != 128
	m.AttnScale = r.FloatOr("attention.scale", 0)
	if err := r.Err(); err != nil {
		return nil, err
	}
	return m, m.validate()
}

// FromHF configures a model from a config.json: Llama4ForCausalLM, or the
// text_config of Llama4ForConditionalGeneration (whose language weights
// are stored under "language_model.").
func FromHF(cfg map[string]any) (families.Model, error) {
	prefix := ""
	if tc, ok := cfg["text_config"].(map[string]any); ok {
		cfg, prefix = tc, "language_model."
	}
	d, r := families.HFDecoder(cfg, "llama4", false)
	m := &Model{Vocab: d.Vocab, Dim: d.Dim, Layers: d.Layers, Heads: d.Heads, KVHeads: d.KVHeads, HeadDim: d.HeadDim,
		FFN: r.IntOr("intermediate_size_mlp", 0), Eps: d.Eps, MaxContext: d.MaxContext, Rope: d.Rope, Tied: d.Tied,
		Experts: r.PositiveAtMost("num_local_experts", families.MaxExperts), Used: r.IntOr("num_experts_per_tok", 1),
		ExpertFFN: r.Positive("intermediate_size"), MoEStep: r.IntOr("interleave_moe_layer_step", 1)}
	m.Rope.Layout = ops.RopeInterleaved // Llama 4 rotates adjacent pairs in both containers
	m.Chunk = r.IntOr("attention_chunk_size", 0)
	m.Chunked, m.NoRope = make([]bool, m.Layers), make([]bool, m.Layers)
	rope := r.Ints("no_rope_layers") // 1: the layer uses rope
	if rope != nil && len(rope) != m.Layers {
		r.Fail("no_rope_layers", families.ErrInconsistent, "%d entries for %d layers", len(rope), m.Layers)
		rope = nil
	}
	for l := range m.Layers {
		useRope := (l+1)%r.IntOr("no_rope_layer_interval", ggufPeriod) != 0
		if rope != nil {
			useRope = rope[l] != 0
		}
		m.NoRope[l] = !useRope
		m.Chunked[l] = m.Chunk > 0 && useRope
	}
	m.QKNorm = r.BoolOr("use_qk_norm", true)
	if r.BoolOr("attn_temperature_tuning", true) {
		m.TempFloorScale, m.TempScale = r.FloatOr("floor_scale", tempFloorScale), r.FloatOr("attn_scale", tempScale)
	}
	m.weights = hfNames(prefix, m.ExpertFFN)
	if err := r.Err(); err != nil {
		return nil, err
	}
	return m, m.validate()
}

// hfNames is the Hugging Face naming: Llama's, with the feed-forward under
// feed_forward and the experts stored as two stacks of [in, out] matrices,
// gate and up fused in one.
func hfNames(prefix string, f int) families.WeightMap {
	w := families.HFNames().With(map[string]string{
		"ffn_norm.weight":       "post_attention_layernorm.weight",
		"ffn_gate.weight":       "feed_forward.gate_proj.weight",
		"ffn_up.weight":         "feed_forward.up_proj.weight",
		"ffn_down.weight":       "feed_forward.down_proj.weight",
		"ffn_gate_inp.weight":   "feed_forward.router.weight",
		"ffn_gate_shexp.weight": "feed_forward.shared_expert.gate_proj.weight",
		"ffn_up_shexp.weight":   "feed_forward.shared_expert.up_proj.weight",
		"ffn_down_shexp.weight": "feed_forward.shared_expert.down_proj.weight",
	})
	w.Views = map[string]load.Source{
		"ffn_gate_exps.weight": {Tensor: "feed_forward.experts.gate_up_proj", Transposed: true, RowStart: 0, RowEnd: f},
		"ffn_up_exps.weight":   {Tensor: "feed_forward.experts.gate_up_proj", Transposed: true, RowStart: f, RowEnd: 2 * f},
		"ffn_down_exps.weight": {Tensor: "feed_forward.experts.down_proj", Transposed: true},
	}
	if prefix != "" {
		for k, v := range w.Global {
			w.Global[k] = prefix + v
		}
		w.LayerPrefix = prefix + w.LayerPrefix
	}
	w.Container = families.Safetensors
	return w
}
