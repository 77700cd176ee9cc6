// Package gptoss is OpenAI's gpt-oss family (llama.cpp's "gpt-oss"
// architecture, Hugging Face's GptOssForCausalLM): a decoder whose
// attention has Q/K/V/O biases and learned per-head sinks in the softmax
// denominator, alternating sliding-window and full-attention layers, NeoX
// rope with YaRN scaling, and a routed feed-forward in every layer (a
// router with a bias, top-k then softmax over the chosen experts, experts
// with biases and gpt-oss's clamped SwiGLU). The feed-forward's pre-norm is
// stored as post_attention_norm.
//
// The model embeds a families.Decoder for its hyperparameters, weight map
// and writers; its layers are traced here. Experts stored as MXFP4, the
// form of the published checkpoints, are read from GGUF files (as
// llama.cpp's converter writes them); a config.json of the published
// safetensors form (quantization_config mxfp4: separate blocks and scales
// tensors) is refused with an ErrUnsupported error. The published layout
// in BF16 or F32 (experts stacked [E, in, out], gate and up fused with
// interleaved columns, their biases likewise) is read and written.
package gptoss

import (
	"cmp"
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/ops"
)

// Family is the registry name and the GGUF architecture. Alpha and Limit
// are the clamped SwiGLU's constants: llama.cpp fixes both, Hugging Face
// reads the limit as swiglu_limit.
const (
	Family = "gpt-oss"
	Alpha  = 1.702
	Limit  = 7.0
)

// Row is the family's registry row.
var Row = families.Row{
	Family:            Family,
	GGUFArchitectures: []string{Family},
	HFArchitectures:   []string{"GptOssForCausalLM"},
	HFModelTypes:      []string{"gpt_oss"},
	FromGGUF:          FromGGUF,
	FromHF:            FromHF,
}

// Model is one configured gpt-oss model.
type Model struct {
	*families.Decoder
	Limit float64 // the experts' SwiGLU clamp
}

// FromGGUF configures a model from a GGUF file. Layer l has a sliding
// window unless l%p == p-1 for the pattern p (default 2: even layers are
// windowed), as llama.cpp reads it; p = 0 windows every layer.
func FromGGUF(f *gguf.File) (families.Model, error) {
	for _, t := range f.Tensors() {
		if _, err := t.DType(); err != nil {
			return nil, &families.TensorError{Model: Family, Tensor: t.Name, Err: fmt.Errorf("%w: %w", families.ErrUnsupported, err),
				Detail: "poot does not decode this stored type"}
		}
	}
	d, r := families.GGUFDecoder(f, Family, ops.RopeNeoX)
	period := r.IntOr("attention.sliding_window_pattern", 2)
	slide(d, r, "attention.sliding_window", func(l int) bool { return period == 0 || l%period < period-1 })
	if base := r.FloatOr("rope.freq_base_swa", d.Rope.Theta); base != d.Rope.Theta {
		r.Fail("rope.freq_base_swa", families.ErrUnsupported, "windowed layers with their own rope base %v", base)
	}
	// llama.cpp reads no YaRN ramp ends for gpt-oss: the defaults apply.
	d.Rope.BetaFast, d.Rope.BetaSlow = 0, 0
	if d.MoE == nil {
		r.Fail("expert_count", families.ErrMissing, "gpt-oss routes every layer")
	}
	return finish(d, r, families.GGUF, Limit)
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, Family, false)
	d.MoE = &families.MoE{Experts: r.PositiveAtMost("num_local_experts", families.MaxExperts), Used: r.Positive("num_experts_per_tok"), FFN: r.Positive("intermediate_size")}
	types := r.Strings("layer_types")
	if types != nil && len(types) != d.Layers {
		r.Fail("layer_types", families.ErrInconsistent, "%d entries for %d layers", len(types), d.Layers)
	}
	slide(d, r, "sliding_window", func(l int) bool {
		switch {
		case l >= len(types):
			return types == nil && l%2 == 0 // transformers' default: even layers slide
		case types[l] != "sliding_attention" && types[l] != "full_attention":
			r.Fail("layer_types", families.ErrUnsupported, "layer %d is %q", l, types[l])
		}
		return types[l] == "sliding_attention"
	})
	if q := r.StringOr("quantization_config.quant_method", ""); q != "" {
		r.Fail("quantization_config", families.ErrUnsupported, "%s weights: poot reads quantized gpt-oss experts from GGUF files (llama.cpp's converter writes them as MXFP4), not from safetensors", q)
	}
	if !r.BoolOr("attention_bias", true) {
		r.Fail("attention_bias", families.ErrUnsupported, "attention without biases")
	}
	if d.Tied {
		r.Fail("tie_word_embeddings", families.ErrUnsupported, "gpt-oss has its own output matrix")
	}
	return finish(d, r, families.Safetensors, r.FloatOr("swiglu_limit", Limit))
}

// slide sets d.Windows: the window read from key on the layers windowed
// names, 0 (full attention) on the others.
func slide(d *families.Decoder, r *families.Reader, key string, windowed func(l int) bool) {
	window := r.Int(key)
	d.Windows = make([]int, d.Layers)
	for l := range d.Windows {
		if windowed(l) {
			d.Windows[l] = window
			if window < 1 {
				r.Fail(key, families.ErrWrongType, "layer %d slides a window of %d", l, window)
			}
		}
	}
}

func finish(d *families.Decoder, r *families.Reader, c families.Container, limit float64) (families.Model, error) {
	d.Name, d.QKVBias, d.OutBias = Family, true, true
	d.Rope.BetaFast, d.Rope.BetaSlow = cmp.Or(d.Rope.BetaFast, 32), cmp.Or(d.Rope.BetaSlow, 1)
	if d.MoE != nil {
		d.FFN, d.MoE.Gating = d.MoE.FFN, ops.TopKSoftmax
	}
	if d.Rope.Dims != d.HeadDim {
		r.Fail("rope.dimension_count", families.ErrUnsupported, "%d rotary dims for head dim %d", d.Rope.Dims, d.HeadDim)
	}
	if !(limit > 0) {
		r.Fail("swiglu_limit", families.ErrWrongType, "limit %v must be positive", limit)
	}
	d.Weight = families.HFNames().With(map[string]string{
		"post_attention_norm.weight": "post_attention_layernorm.weight",
		"attn_sinks.weight":          "self_attn.sinks",
		"ffn_gate_inp.weight":        "mlp.router.weight",
		"ffn_gate_inp.bias":          "mlp.router.bias",
		"ffn_down_exps.bias":         "mlp.experts.down_proj_bias",
	}).In(c)
	// The published layout: each layer's experts as stacks of [in, out]
	// matrices, gate and up fused with interleaved columns, their biases
	// likewise.
	if m := d.MoE; m != nil {
		f := m.FFN
		gu, gub := "mlp.experts.gate_up_proj", "mlp.experts.gate_up_proj_bias"
		d.Weight.Views = map[string]load.Source{
			"ffn_gate_exps.weight": {Tensor: gu, Transposed: true, RowStart: 0, RowEnd: 2 * f, RowStep: 2},
			"ffn_up_exps.weight":   {Tensor: gu, Transposed: true, RowStart: 1, RowEnd: 2 * f, RowStep: 2},
			"ffn_gate_exps.bias":   {Tensor: gub, Columns: true, RowStart: 0, RowEnd: 2 * f, RowStep: 2},
			"ffn_up_exps.bias":     {Tensor: gub, Columns: true, RowStart: 1, RowEnd: 2 * f, RowStep: 2},
			"ffn_down_exps.weight": {Tensor: "mlp.experts.down_proj", Transposed: true},
		}
	}
	d.GGUF, d.HF = ggufStyle(), hfStyle(limit)
	if err := r.Err(); err != nil {
		return nil, err
	}
	m := &Model{Decoder: d, Limit: limit}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// pattern returns the window of the windowed layers and llama.cpp's
// pattern p that windows the same layers (p = layers+1 windows all, as 0
// does), reporting false when none does or when the windows differ.
func pattern(d *families.Decoder) (window, period int, ok bool) {
	for l := range d.Layers {
		window = max(window, d.Window(l))
	}
	for p := 1; p <= d.Layers+1; p++ {
		ok = true
		for l := range d.Layers {
			want := 0
			if l%p < p-1 {
				want = window
			}
			ok = ok && d.Window(l) == want
		}
		if ok {
			return window, p, true
		}
	}
	return window, 0, false
}

type brand struct{}

// Validate checks the hyperparameters (the decoder's checks, then
// gpt-oss's own).
func (m *Model) Validate() error {
	if err := m.Decoder.Validate(); err != nil {
		return err
	}
	if m.MoE == nil || m.Rope.Dims != m.HeadDim || !(m.Limit > 0) {
		return &families.ConfigError{Source: Family, Key: "MoE", Err: families.ErrInconsistent, Detail: "gpt-oss needs experts, full-width rope and a positive clamp"}
	}
	return nil
}

// Trace checks spec against the schema and records the step.
func (m *Model) Trace(spec families.StepSpec, limits poot.Limits) (*poot.Graph, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if err := m.Schema().Check(Family, spec.Shape); err != nil {
		return nil, err
	}
	b := poot.NewBuilder[brand](limits)
	step := families.NewStep(b, spec.Shape, m.Vocab)
	w := func(name string, dims ...int) poot.Traced[brand] { return b.Constant(name, poot.T(poot.F32, dims...)) }
	rot := step.Rotary(m.Rope, poot.Traced[brand]{})
	dim, q, e, f := m.Dim, m.Heads*m.HeadDim, m.MoE.Experts, m.MoE.FFN
	moe := ops.MoEConfig{TopK: m.MoE.Used, Gating: ops.TopKSoftmax, Activation: ops.ExpertClampedSwiGLU, Alpha: Alpha, Limit: m.Limit}
	layer := func(l int, x poot.Traced[brand]) poot.Traced[brand] {
		p := func(name string, dims ...int) poot.Traced[brand] {
			return w(fmt.Sprintf("blk.%d.%s", l, name), dims...)
		}
		proj := func(name string, out, in int) func(h poot.Traced[brand]) poot.Traced[brand] {
			weight, bias := p(name+".weight", out, in), p(name+".bias", out)
			return func(h poot.Traced[brand]) poot.Traced[brand] { return ops.Linear(b, h, weight, bias) }
		}
		heads := m.LayerKV(l)
		wq, wk, wv, wo := proj("attn_q", q, dim), proj("attn_k", heads*m.HeadDim, dim), proj("attn_v", heads*m.HeadDim, dim), proj("attn_output", dim, q)
		sinks := p("attn_sinks.weight", m.Heads)
		attention := func(h poot.Traced[brand]) poot.Traced[brand] {
			queries := ops.RoPE(b, wq(h), m.Heads, rot)
			keys := step.Cache(families.CacheName("k", l), ops.RoPE(b, wk(h), heads, rot))
			values := step.Cache(families.CacheName("v", l), wv(h))
			return wo(ops.Attention(b, queries, keys, values, step.Mask(m.Window(l)), ops.AttentionConfig[brand]{
				Heads: m.Heads, KVHeads: heads, HeadDim: m.HeadDim, Rows: spec.Shape.Rows, Sinks: sinks}))
		}
		experts := ops.MoEWeights[brand]{
			Router: p("ffn_gate_inp.weight", e, dim), RouterBias: p("ffn_gate_inp.bias", e),
			Gate: p("ffn_gate_exps.weight", e, f, dim), GateBias: p("ffn_gate_exps.bias", e, f),
			Up: p("ffn_up_exps.weight", e, f, dim), UpBias: p("ffn_up_exps.bias", e, f),
			Down: p("ffn_down_exps.weight", e, dim, f), DownBias: p("ffn_down_exps.bias", e, dim),
		}
		norms := families.LayerNorms[brand]{Mixer: p("attn_norm.weight", dim), FFN: p("post_attention_norm.weight", dim), Eps: m.Eps}
		return families.Layer(b, x, norms, attention, func(h poot.Traced[brand]) poot.Traced[brand] { return families.RoutedFFN(b, h, experts, moe) })
	}
	head := families.StackWeights[brand]{Embed: w("token_embd.weight", m.Vocab, dim), Norm: w("output_norm.weight", dim), Output: w("output.weight", m.Vocab, dim)}
	logits, hidden := families.Stack(step, head, families.StackConfig{Layers: m.Layers, Eps: m.Eps}, layer)
	outs := []poot.Traced[brand]{logits}
	if spec.Shape.Hidden {
		outs = append(outs, hidden)
	}
	g, err := step.Finish(outs...)
	if err == nil {
		err = families.CheckCarries(Family, spec.Carries, g)
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}
