// Package qwen3next is the Qwen3-Next family and its successors Qwen3.5 and
// Qwen3.6 (GGUF architectures qwen3next, qwen35 and qwen35moe): a hybrid
// decoder whose layers are gated delta nets (linear attention with a carried
// state) except every full_attention_interval-th, which is gated attention.
// Qwen3-Next and Qwen3.5-MoE have a routed mixture of experts and a
// sigmoid-gated shared expert in every layer, Qwen3.5 a dense SwiGLU.
//
// A gated delta net layer projects the normalised rows to q, k and v (one
// fused projection), the output gate z, and per value head the write
// strength β and the decay input α; convolves q, k and v causally over the
// last conv_kernel rows of the sequence and applies SiLU; runs the gated
// delta rule with L2-normalised q and k, q scaled by 1/sqrt(head dim),
// β = sigmoid(b) and the log decay A·softplus(α + dt_bias); normalises each
// value head's read-out and gates it with silu(z). Value head h reads key
// head h / (value heads / key heads). Its state is the convolution window
// and the delta rule's matrix, per sequence (families.Step.SequenceState).
//
// An attention layer's query projection carries a sigmoid output gate: per
// head, hd query rows then hd gate rows. Queries and keys get per-head
// RMSNorms, then NeoX rope on the first rope.dimension_count channels.
//
// GGUF files come in two layouts, both read: llama.cpp's current converter
// writes attn_qkv (q, k, v rows of every head in that order) and attn_gate
// (z); older ones write ssm_in, the fused Hugging Face in_proj_qkvz whose
// rows are grouped by key head (q, k, then the head's values and gates).
// Hugging Face checkpoints are read in the fused layout. llama.cpp's
// converter folds the (1 + w) of Qwen3-Next's RMSNorms into the weights
// (all but the gated norm's) and stores A = -exp(A_log); a model read from
// config.json scales its norms by (1 + w) and reads A_log.
//
// Qwen3.5 differs from Qwen3-Next in three ways. Its delta nets project β and
// α separately (ssm_beta, ssm_alpha; in_proj_b and in_proj_a) and q, k, v
// and z as attn_qkv and attn_gate (in_proj_qkv and in_proj_z). Its rope is
// sectioned (rope.dimension_sections, interleaved "imrope"), which for text
// is plain NeoX rope on rope.dimension_count channels except for pairs that
// llama.cpp gives the fourth section, which text sees at position 0 (see
// stillPairs). llama.cpp's converter reorders its value heads so that value
// head h reads key head h mod key heads ("tiled", ggml's broadcast), where
// Hugging Face's value head h reads h / (value heads / key heads); a model
// read from a GGUF file runs tiled, one from config.json grouped, and
// HFTensor regroups; converting real Hugging Face weights to GGUF also
// needs that reordering, which GGUFMetadata (metadata only) does not do.
//
// The multi-token-prediction blocks (nextn) that follow the trunk in a
// checkpoint of any of the three are not run: LayerKinds names them
// "mtp (ignored)".
//
// Hugging Face stores the convolution filters as [channels, 1, taps]
// (PyTorch's Conv1d); they are bound, and written, as that view of the
// [channels, taps] filters the model reads.
package qwen3next

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/ops"
)

// variant tells the architectures apart: the family and GGUF architecture
// name, the Hugging Face architecture and model type.
type variant struct {
	name, hfArch, modelType string
	qwen35, moe             bool
}

var variants = []variant{
	{"qwen3next", "Qwen3NextForCausalLM", "qwen3_next", false, true},
	{"qwen35", "Qwen3_5ForCausalLM", "qwen3_5_text", true, false},
	{"qwen35moe", "Qwen3_5MoeForCausalLM", "qwen3_5_moe_text", true, true},
}

// row is v's registry row. Qwen3.5's multimodal checkpoints
// (…ForConditionalGeneration) are read for their language model.
func (v variant) row() families.Row {
	archs, types := []string{v.hfArch}, []string{v.modelType}
	if v.qwen35 {
		archs = append(archs, strings.Replace(v.hfArch, "CausalLM", "ConditionalGeneration", 1))
		types = append(types, strings.TrimSuffix(v.modelType, "_text"))
	}
	return families.Row{Family: v.name, GGUFArchitectures: []string{v.name}, HFArchitectures: archs, HFModelTypes: types, FromGGUF: FromGGUF, FromHF: FromHF}
}

// The registry rows: Qwen3-Next, Qwen3.5 (dense) and Qwen3.5-MoE (also
// Qwen3.6).
var (
	Row          = variants[0].row()
	Qwen35Row    = variants[1].row()
	Qwen35MoERow = variants[2].row()
)

// variantOf finds the variant of the first of names that names one (a
// family, GGUF architecture, Hugging Face architecture or model type).
func variantOf(names ...string) (variant, bool) {
	for _, n := range names {
		for _, v := range variants {
			r := v.row()
			if n == v.name || slices.Contains(r.HFArchitectures, n) || slices.Contains(r.HFModelTypes, n) {
				return v, true
			}
		}
	}
	return variant{}, false
}

// variant is m's variant (the zero variant for an unknown Name).
func (m *Model) variant() variant { v, _ := variantOf(m.Name); return v }

// Model is a configured Qwen3-Next or Qwen3.5 model. The embedded decoder
// holds the attention layers' and the feed-forwards' hyperparameters (MoE is
// nil for Qwen3.5's dense SwiGLU) and writes the metadata every decoder
// shares; Name is the variant (qwen3next, qwen35, qwen35moe).
type Model struct {
	families.Decoder
	// Recurrent says, per layer, whether it is a gated delta net (else
	// gated attention).
	Recurrent []bool
	// KeyHeads and ValueHeads are the delta nets' query/key and value
	// heads, of StateSize channels each; ConvKernel is the convolution's
	// taps.
	KeyHeads, ValueHeads, StateSize, ConvKernel int
	// SharedFFN is the shared expert's hidden width.
	SharedFFN int
	// ExpertScale multiplies the routing weights (expert_weights_scale); 0
	// means 1.
	ExpertScale float64
	// Fused says q, k, v and z come from one ssm_in projection in Hugging
	// Face's order, rather than attn_qkv and attn_gate.
	Fused bool
	// LogDecay says ssm_a holds A_log (Hugging Face) rather than
	// A = -exp(A_log) (GGUF).
	LogDecay bool
	// SplitBA says β and α come from separate projections ssm_beta and
	// ssm_alpha (Qwen3.5) rather than ssm_ba, grouped by key head.
	SplitBA bool
	// TiledHeads says value head h reads key head h mod KeyHeads (Qwen3.5
	// in GGUF) rather than h / (ValueHeads/KeyHeads).
	TiledHeads bool
	// Sections are Qwen3.5's rope sections (rope.dimension_sections,
	// Hugging Face's mrope_section with a fourth 0), in rotary pairs.
	Sections [4]int
	// NextN is the multi-token-prediction blocks that follow the trunk in
	// the checkpoint; they are not run.
	NextN int
}

type brand struct{}

// FromGGUF configures a model from a GGUF file of any of the family's
// architectures.
func FromGGUF(f *gguf.File) (families.Model, error) {
	arch, _ := f.Architecture()
	v, ok := variantOf(arch)
	if !ok {
		return nil, &families.ConfigError{Source: "gguf", Key: gguf.KeyArchitecture, Err: families.ErrUnknownArchitecture, Detail: arch}
	}
	d, r := families.GGUFDecoder(f, v.name, ops.RopeNeoX)
	m := &Model{Decoder: *d, SplitBA: v.qwen35, TiledHeads: v.qwen35}
	m.NextN = r.IntOr("nextn_predict_layers", 0) // MTP blocks follow the trunk; they are not run
	m.Layers -= m.NextN
	if r.Err() == nil && m.Layers < 1 {
		r.Fail("nextn_predict_layers", families.ErrInconsistent, "no trunk layers left of %d blocks", d.Layers)
	}
	m.Recurrent = make([]bool, max(m.Layers, 0))
	if r.Has("attention.recurrent_layers") {
		for l, v := range r.IntOrPerLayer("attention.recurrent_layers", d.Layers, 0)[:len(m.Recurrent)] {
			m.Recurrent[l] = v != 0
		}
	} else {
		m.every(r, r.IntOr("full_attention_interval", 4))
	}
	if v.qwen35 {
		const key = "rope.dimension_sections"
		if !r.Has(key) {
			r.Fail(key, families.ErrMissing, "llama.cpp requires it")
		}
		copy(m.Sections[:], r.IntOrPerLayer(key, 4, 0))
		m.checkSections(r, key)
	}
	m.ConvKernel = r.Positive("ssm.conv_kernel")
	m.StateSize = r.Positive("ssm.state_size")
	m.KeyHeads = r.Positive("ssm.group_count")
	m.ValueHeads = r.Positive("ssm.time_step_rank")
	if in := r.Positive("ssm.inner_size"); r.Err() == nil && in != m.StateSize*m.ValueHeads {
		r.Fail("ssm.inner_size", families.ErrUnsupported, "inner size %d is not state size %d × %d value heads (value heads of another width)", in, m.StateSize, m.ValueHeads)
	}
	switch {
	case !v.moe && m.MoE == nil:
		m.FFN = r.Positive("feed_forward_length")
	case m.MoE == nil && v.moe:
		r.Fail("expert_count", families.ErrMissing, "a %s file needs experts", v.name)
	case m.MoE != nil && !v.moe:
		r.Fail("expert_count", families.ErrInconsistent, "a %s file has a dense feed-forward; %s is the architecture with experts", v.name, v.name+"moe")
	case v.moe:
		m.MoE.Gating, m.MoE.Renormalize = ops.SoftmaxTopK, true // as llama.cpp routes it
		if !r.Has("expert_feed_forward_length") && m.MoE.Used > 0 {
			m.MoE.FFN = m.FFN / m.MoE.Used // llama.cpp's default
		}
		if m.SharedFFN = r.IntOr("expert_shared_feed_forward_length", m.FFN); m.SharedFFN < 1 {
			r.Fail("expert_shared_feed_forward_length", families.ErrMissing, "no shared expert width and no feed_forward_length")
		}
	}
	m.ExpertScale = r.FloatOr("expert_weights_scale", 0)
	m.AttnScale = r.FloatOr("attention.scale", 0)
	for l, rec := range m.Recurrent {
		if rec {
			_, ssmIn := f.Tensor(fmt.Sprintf("blk.%d.ssm_in.weight", l))
			m.Fused = ssmIn && !v.qwen35 // llama.cpp reads only attn_qkv in Qwen3.5
			break
		}
	}
	if _, ok := f.Tensor("blk.0.ffn_gate_up_exps.weight"); ok && r.Err() == nil {
		return nil, &families.TensorError{Model: v.name, Tensor: "blk.0.ffn_gate_up_exps.weight", Err: families.ErrUnsupported,
			Detail: "experts' gate and up fused in one tensor (convert_hf_to_gguf.py --fuse-gate-up-exps); poot reads ffn_gate_exps and ffn_up_exps"}
	}
	return m.finish(r, families.GGUF, v, "")
}

// FromHF configures a model from a config.json: Qwen3NextForCausalLM,
// Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM, or the language model of
// Qwen3.5's …ForConditionalGeneration (settings in text_config, weights
// under model.language_model.).
func FromHF(cfg map[string]any) (families.Model, error) {
	var names []string
	archs, _ := cfg["architectures"].([]any)
	for _, a := range append(archs, cfg["model_type"]) {
		if s, ok := a.(string); ok {
			names = append(names, s)
		}
	}
	v, ok := variantOf(names...)
	if !ok {
		return nil, &families.ConfigError{Source: "config.json", Key: "architectures", Err: families.ErrUnknownArchitecture, Detail: fmt.Sprint(names)}
	}
	d, r := families.HFDecoder(cfg, v.name, false)
	m := &Model{Decoder: *d, Fused: !v.qwen35, LogDecay: true, SplitBA: v.qwen35}
	m.NormPlusOne = true
	if !r.Has("rope_theta") {
		m.Rope.Theta = r.FloatOr("rope_parameters.rope_theta", 10000)
	}
	pf := r.FloatOr("partial_rotary_factor", r.FloatOr("rope_parameters.partial_rotary_factor", 0.25))
	m.Rope.Dims = int(float64(m.HeadDim) * pf)
	if v.qwen35 {
		const key = "rope_parameters.mrope_section"
		s := r.Ints(key)
		if s == nil {
			s = []int{11, 11, 10} // Qwen3.5's default
		}
		if len(s) != 3 {
			r.Fail(key, families.ErrInconsistent, "%d sections, want 3", len(s))
		}
		copy(m.Sections[:3], s)
		if m.checkSections(r, key); r.Err() == nil && stillPairs(m.Sections, m.Rope.Dims/2) != nil {
			r.Fail(key, families.ErrUnsupported, "sections %v leave rotary pairs to llama.cpp's fourth section, which Hugging Face rotates", s)
		}
		m.NextN = r.IntOr("mtp_num_hidden_layers", 0)
	}
	m.Recurrent = make([]bool, m.Layers)
	if types := r.Strings("layer_types"); types != nil {
		if len(types) != m.Layers {
			r.Fail("layer_types", families.ErrInconsistent, "%d entries for %d layers", len(types), m.Layers)
		}
		for l := range min(len(types), m.Layers) {
			m.Recurrent[l] = types[l] == "linear_attention"
			if !m.Recurrent[l] && types[l] != "full_attention" {
				r.Fail("layer_types", families.ErrUnsupported, "layer %d is %q", l, types[l])
			}
		}
	} else {
		m.every(r, r.IntOr("full_attention_interval", 4))
	}
	m.ConvKernel = r.Positive("linear_conv_kernel_dim")
	m.StateSize = r.Positive("linear_key_head_dim")
	m.KeyHeads = r.Positive("linear_num_key_heads")
	m.ValueHeads = r.Positive("linear_num_value_heads")
	if v := r.IntOr("linear_value_head_dim", m.StateSize); v != m.StateSize {
		r.Fail("linear_value_head_dim", families.ErrUnsupported, "value heads of %d channels, key heads of %d", v, m.StateSize)
	}
	if v.moe {
		m.MoE = &families.MoE{
			Experts: r.PositiveAtMost("num_experts", families.MaxExperts), Used: r.Positive("num_experts_per_tok"),
			FFN: r.Positive("moe_intermediate_size"), Gating: ops.SoftmaxTopK, Renormalize: r.BoolOr("norm_topk_prob", true),
		}
		m.SharedFFN = r.Positive("shared_expert_intermediate_size")
	} else {
		m.FFN = r.Positive("intermediate_size")
	}
	if s := r.IntOr("decoder_sparse_step", 1); s != 1 {
		r.Fail("decoder_sparse_step", families.ErrUnsupported, "dense layers between sparse ones (step %d)", s)
	}
	if l := r.Ints("mlp_only_layers"); len(l) > 0 {
		r.Fail("mlp_only_layers", families.ErrUnsupported, "dense layers %v", l)
	}
	if r.BoolOr("attention_bias", false) {
		r.Fail("attention_bias", families.ErrUnsupported, "attention projections with biases")
	}
	prefix := ""
	if _, ok := cfg["text_config"].(map[string]any); ok && v.qwen35 {
		prefix = "model.language_model."
	}
	return m.finish(r, families.Safetensors, v, prefix)
}

// checkSections checks the rope sections as llama.cpp does: one of the
// first three is positive, and they fit in a head.
func (m *Model) checkSections(r *families.Reader, key string) {
	s := m.Sections
	if s[0]+s[1]+s[2] < 1 || s[0]+s[1]+s[2]+s[3] > m.HeadDim {
		r.Fail(key, families.ErrInconsistent, "sections %v for heads of %d channels", s, m.HeadDim)
	}
}

// stillPairs says which of the half rotary pairs llama.cpp's interleaved
// multi-section rope leaves unrotated for text. Pair i falls in sector
// i mod (the sections' sum); sectors go round t, h, w, t, h, w, … while each
// of the first three sections has pairs left, and to the fourth section
// after. A text token is at its position in the first three (so they are
// plain NeoX rope) and at 0 in the fourth. It returns nil when every pair
// rotates, as with Qwen3.5's [11, 11, 10, 0] over 32 pairs.
func stillPairs(s [4]int, half int) []bool {
	sum := s[0] + s[1] + s[2] + s[3]
	var still []bool
	for i := range half {
		if sector := i % max(sum, 1); sector >= 3*s[sector%3] {
			if still == nil {
				still = make([]bool, half)
			}
			still[i] = true
		}
	}
	return still
}

// every makes every interval-th layer attention, the others recurrent.
func (m *Model) every(r *families.Reader, interval int) {
	if interval < 1 {
		r.Fail("full_attention_interval", families.ErrWrongType, "interval %d", interval)
		return
	}
	for l := range m.Recurrent {
		m.Recurrent[l] = (l+1)%interval != 0
	}
}

func (m *Model) finish(r *families.Reader, c families.Container, v variant, prefix string) (families.Model, error) {
	m.Name = v.name
	m.QKNorm = true
	if m.MoE != nil {
		m.Weight = names(v.qwen35, m.MoE.FFN).In(c)
		m.Weight.Experts = m.MoE.Experts
	} else {
		m.Weight = names(v.qwen35, 0).In(c)
	}
	if prefix != "" {
		for k, s := range m.Weight.Global {
			m.Weight.Global[k] = strings.Replace(s, "model.", prefix, 1)
		}
		m.Weight.LayerPrefix = prefix + "layers."
	}
	m.GGUF = families.GGUFStyle{Architecture: v.name}
	m.HF = families.HFStyle{Architecture: v.hfArch, ModelType: v.modelType}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// names is the Hugging Face naming. Qwen3.5 projects q, k, v and z, and β
// and α, separately, and stores its experts as two stacks, gate and up
// fused: [E, 2·f, dim] and [E, dim, f].
func names(qwen35 bool, f int) families.WeightMap {
	w := families.HFNames().With(map[string]string{
		"post_attention_norm.weight": "post_attention_layernorm.weight",
		"ffn_norm.weight":            "",
		"ssm_in.weight":              "linear_attn.in_proj_qkvz.weight",
		"ssm_ba.weight":              "linear_attn.in_proj_ba.weight",
		"ssm_dt.bias":                "linear_attn.dt_bias",
		"ssm_a":                      "linear_attn.A_log",
		"ssm_norm.weight":            "linear_attn.norm.weight",
		"ssm_out.weight":             "linear_attn.out_proj.weight",
		"ffn_gate_inp.weight":        "mlp.gate.weight",
		"ffn_gate_exps.weight":       "mlp.experts.{e}.gate_proj.weight",
		"ffn_up_exps.weight":         "mlp.experts.{e}.up_proj.weight",
		"ffn_down_exps.weight":       "mlp.experts.{e}.down_proj.weight",
		"ffn_gate_inp_shexp.weight":  "mlp.shared_expert_gate.weight",
		"ffn_gate_shexp.weight":      "mlp.shared_expert.gate_proj.weight",
		"ffn_up_shexp.weight":        "mlp.shared_expert.up_proj.weight",
		"ffn_down_shexp.weight":      "mlp.shared_expert.down_proj.weight",
	})
	// Hugging Face stores the convolution filters as PyTorch's Conv1d
	// does, [channels, 1, taps]: the same elements as the [channels, taps]
	// the model reads.
	conv := load.Source{Tensor: "linear_attn.conv1d.weight", Squeeze: true}
	if !qwen35 {
		w.Views = map[string]load.Source{"ssm_conv1d.weight": conv}
		return w
	}
	w = w.With(map[string]string{
		"ssm_in.weight": "", "ssm_ba.weight": "", "ffn_gate_exps.weight": "", "ffn_up_exps.weight": "",
		"attn_qkv.weight":      "linear_attn.in_proj_qkv.weight",
		"attn_gate.weight":     "linear_attn.in_proj_z.weight",
		"ssm_beta.weight":      "linear_attn.in_proj_b.weight",
		"ssm_alpha.weight":     "linear_attn.in_proj_a.weight",
		"ffn_down_exps.weight": "mlp.experts.down_proj",
	})
	w.Views = map[string]load.Source{
		"ssm_conv1d.weight":    conv,
		"ffn_gate_exps.weight": {Tensor: "mlp.experts.gate_up_proj", RowStart: 0, RowEnd: f},
		"ffn_up_exps.weight":   {Tensor: "mlp.experts.gate_up_proj", RowStart: f, RowEnd: 2 * f},
	}
	return w
}

// Validate checks the hyperparameters against each other.
func (m *Model) Validate() error {
	if err := m.Decoder.Validate(); err != nil {
		return err
	}
	bad := func(field, format string, args ...any) error {
		return &families.ConfigError{Source: m.Name, Key: field, Err: families.ErrInconsistent, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(m.Recurrent) != m.Layers:
		return bad("Recurrent", "%d layer kinds for %d layers", len(m.Recurrent), m.Layers)
	case m.KeyHeads < 1 || m.ValueHeads < 1 || m.ValueHeads%m.KeyHeads != 0 || m.StateSize < 1:
		return bad("ValueHeads", "%d value heads for %d key heads of %d channels", m.ValueHeads, m.KeyHeads, m.StateSize)
	case m.ConvKernel < 2:
		return bad("ConvKernel", "a convolution of %d taps", m.ConvKernel)
	case (m.MoE != nil) != m.variant().moe || (m.MoE != nil && m.SharedFFN < 1):
		return bad("SharedFFN", "%s with experts %v and a shared expert of width %d", m.Name, m.MoE != nil, m.SharedFFN)
	case m.variant().qwen35 && m.Sections[0]+m.Sections[1]+m.Sections[2] < 1:
		return bad("Sections", "rope sections %v", m.Sections)
	}
	return nil
}

// LayerKinds names each layer's mixer and feed-forward, then the
// checkpoint's multi-token-prediction blocks, "mtp (ignored)".
func (m *Model) LayerKinds() []string {
	out := make([]string, m.Layers, m.Layers+m.NextN)
	ffn := "+dense"
	if m.MoE != nil {
		ffn = "+moe(shared)"
	}
	for l := range out {
		out[l] = "attention(gated)" + ffn
		if l < len(m.Recurrent) && m.Recurrent[l] {
			out[l] = "gated_delta" + ffn
		}
	}
	for range m.NextN {
		out = append(out, "mtp (ignored)")
	}
	return out
}

// Trace checks spec against the schema and records the step.
func (m *Model) Trace(spec families.StepSpec, limits poot.Limits) (*poot.Graph, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if err := m.Schema().Check(m.Name, spec.Shape); err != nil {
		return nil, err
	}
	step := families.NewStep(poot.NewBuilder[brand](limits), spec.Shape, m.Vocab)
	g, err := trace(step, m)
	if err != nil {
		return nil, err
	}
	if err := families.CheckCarries(m.Name, spec.Carries, g); err != nil {
		return nil, err
	}
	return g, nil
}

func trace[B any](step *families.Step[B], m *Model) (*poot.Graph, error) {
	b := step.B
	weight := func(name string, dims ...int) poot.Traced[B] { return b.Constant(name, poot.T(poot.F32, dims...)) }
	var norm []ops.NormOption
	if m.NormPlusOne {
		norm = append(norm, ops.OnePlusWeight())
	}
	rot := rotary(step, m)
	layer := func(l int, x poot.Traced[B]) poot.Traced[B] {
		p := fmt.Sprintf("blk.%d.", l)
		w := func(name string, dims ...int) poot.Traced[B] { return weight(p+name, dims...) }
		ln := families.LayerNorms[B]{Mixer: w("attn_norm.weight", m.Dim), FFN: w("post_attention_norm.weight", m.Dim), Eps: m.Eps, Options: norm}
		mixer := func(h poot.Traced[B]) poot.Traced[B] { return attention(step, m, l, h, w, rot, norm) }
		if m.Recurrent[l] {
			mixer = func(h poot.Traced[B]) poot.Traced[B] { return deltaNet(step, m, l, h, w) }
		}
		return families.Layer(b, x, ln, mixer, func(h poot.Traced[B]) poot.Traced[B] { return ffn(b, m, h, w) })
	}
	stack := families.StackWeights[B]{Embed: weight("token_embd.weight", m.Vocab, m.Dim), Norm: weight("output_norm.weight", m.Dim)}
	if !m.Tied {
		stack.Output = weight("output.weight", m.Vocab, m.Dim)
	}
	logits, hidden := families.Stack(step, stack, families.StackConfig{Layers: m.Layers, Eps: m.Eps, Norm: norm}, layer)
	if step.Shape.Hidden {
		return step.Finish(logits, hidden)
	}
	return step.Finish(logits)
}

// rotary is the step's rope tables: plain NeoX rope, but for Qwen3.5 pairs
// that llama.cpp's sections leave at position 0 (stillPairs) get no angle.
func rotary[B any](step *families.Step[B], m *Model) ops.Rotary[B] {
	still := stillPairs(m.Sections, m.Rope.Dims/2)
	if !m.variant().qwen35 || still == nil {
		return step.Rotary(m.Rope, poot.Traced[B]{})
	}
	b := step.B
	var rot ops.Rotary[B]
	b.Scope("rope", func() {
		keep := make([]poot.Traced[B], len(still))
		for i, s := range still {
			x := 1.0
			if s {
				x = 0
			}
			keep[i] = b.Full(poot.T(poot.F32, 1), x)
		}
		inv := b.Mul(ops.RopeInvFreq(b, m.Rope.RopeConfig), b.Concat(0, keep...))
		rot = ops.RopeTables(b, step.Pos, inv, m.Rope.AttentionFactor(), m.Rope.Layout)
	})
	return rot
}

// ffn is the feed-forward: routed experts with a gated shared expert, or
// Qwen3.5's dense SwiGLU.
func ffn[B any](b *poot.Builder[B], m *Model, h poot.Traced[B], w func(string, ...int) poot.Traced[B]) poot.Traced[B] {
	d := m.Dim
	if m.MoE == nil {
		return families.FeedForward(b, h, families.FFNWeights[B]{
			Gate: w("ffn_gate.weight", m.FFN, d), Up: w("ffn_up.weight", m.FFN, d), Down: w("ffn_down.weight", d, m.FFN)}, families.SiLU)
	}
	e, f, s := m.MoE.Experts, m.MoE.FFN, m.SharedFFN
	mw := ops.MoEWeights[B]{
		Router: w("ffn_gate_inp.weight", e, d),
		Gate:   w("ffn_gate_exps.weight", e, f, d), Up: w("ffn_up_exps.weight", e, f, d), Down: w("ffn_down_exps.weight", e, d, f),
		SharedRouter: w("ffn_gate_inp_shexp.weight", 1, d),
		SharedGate:   w("ffn_gate_shexp.weight", s, d), SharedUp: w("ffn_up_shexp.weight", s, d), SharedDown: w("ffn_down_shexp.weight", d, s),
	}
	mc := ops.MoEConfig{TopK: m.MoE.Used, Gating: m.MoE.Gating, Renormalize: m.MoE.Renormalize, Scale: m.ExpertScale}
	return families.RoutedFFN(b, h, mw, mc)
}

// attention is the gated attention mixer.
func attention[B any](step *families.Step[B], m *Model, l int, h poot.Traced[B], w func(string, ...int) poot.Traced[B], rot ops.Rotary[B], norm []ops.NormOption) poot.Traced[B] {
	b, none := step.B, poot.Traced[B]{}
	hd, n := m.HeadDim, b.Dim(h, 0)
	// Each head's rows are hd query rows, then hd gate rows.
	qg := b.Reshape(ops.Linear(b, h, w("attn_q.weight", 2*m.Heads*hd, m.Dim), none), n, m.Heads, 2, hd)
	half := func(i int) poot.Traced[B] { return b.Reshape(b.SliceAxis(qg, 2, i, i+1), n, m.Heads*hd) }
	q := ops.RMSNormHeads(b, half(0), w("attn_q_norm.weight", hd), m.Heads, m.Eps, norm...)
	k := ops.RMSNormHeads(b, ops.Linear(b, h, w("attn_k.weight", m.KVHeads*hd, m.Dim), none), w("attn_k_norm.weight", hd), m.KVHeads, m.Eps, norm...)
	v := ops.Linear(b, h, w("attn_v.weight", m.KVHeads*hd, m.Dim), none)
	q, k = ops.RoPE(b, q, m.Heads, rot), ops.RoPE(b, k, m.KVHeads, rot)
	out := ops.Attention(b, q, step.Cache(families.CacheName("k", l), k), step.Cache(families.CacheName("v", l), v), step.Mask(0),
		ops.AttentionConfig[B]{Heads: m.Heads, KVHeads: m.KVHeads, HeadDim: hd, Rows: step.Shape.Rows, Scale: m.AttnScale})
	return ops.Linear(b, ops.OutputGate(b, out, half(1)), w("attn_output.weight", m.Dim, m.Heads*hd), none)
}

// deltaNet is the gated delta net mixer.
func deltaNet[B any](step *families.Step[B], m *Model, l int, h poot.Traced[B], w func(string, ...int) poot.Traced[B]) poot.Traced[B] {
	b, none := step.B, poot.Traced[B]{}
	hk, hv, ds, n := m.KeyHeads, m.ValueHeads, m.StateSize, b.Dim(h, 0)
	kd, vd, per := hk*ds, hv*ds, hv/hk
	var qkv, z poot.Traced[B]
	if m.Fused {
		// Per key head: q, k, then its value heads' v and z.
		g := b.Reshape(ops.Linear(b, h, w("ssm_in.weight", 2*kd+2*vd, m.Dim), none), n, hk, 2*ds+2*per*ds)
		part := func(from, width int) poot.Traced[B] {
			return b.Reshape(b.SliceAxis(g, 2, from, from+width), n, hk*width)
		}
		qkv = b.Concat(1, part(0, ds), part(ds, ds), part(2*ds, per*ds))
		z = part(2*ds+per*ds, per*ds)
	} else {
		qkv = ops.Linear(b, h, w("attn_qkv.weight", 2*kd+vd, m.Dim), none)
		z = ops.Linear(b, h, w("attn_gate.weight", vd, m.Dim), none)
	}
	var beta, alpha poot.Traced[B]
	if m.SplitBA {
		beta, alpha = ops.Linear(b, h, w("ssm_beta.weight", hv, m.Dim), none), ops.Linear(b, h, w("ssm_alpha.weight", hv, m.Dim), none)
	} else {
		// Per key head: β of its value heads, then α.
		ba := b.Reshape(ops.Linear(b, h, w("ssm_ba.weight", 2*hv, m.Dim), none), n, hk, 2*per)
		beta, alpha = b.Reshape(b.SliceAxis(ba, 2, 0, per), n, hv), b.Reshape(b.SliceAxis(ba, 2, per, 2*per), n, hv)
	}
	beta = ops.Sigmoid(b, beta)
	decay := ops.GatedDeltaDecayRate[B]
	if m.LogDecay {
		decay = ops.GatedDeltaDecay[B]
	}
	g := decay(b, alpha, w("ssm_dt.bias", hv), w("ssm_a", hv))
	// The filter is stored one channel a row; the convolution reads one tap
	// a row.
	conv := b.Transpose(ops.AsF32(b, w("ssm_conv1d.weight", 2*kd+vd, m.ConvKernel)), 1, 0)
	var st ops.GatedDeltaNetState[B]
	var storeConv, storeDelta func(poot.Traced[B])
	st.Conv, storeConv = step.SequenceState(families.CacheName("conv", l), m.ConvKernel-1, 2*kd+vd)
	st.Delta, storeDelta = step.SequenceState(families.CacheName("delta", l), hv, ds, ds)
	chunk := 64
	if step.Shape.New == 1 {
		chunk = 0
	}
	o, next := ops.GatedDeltaMix(b, qkv, z, g, beta, conv, w("ssm_norm.weight", ds), st, ops.GatedDeltaConfig{
		KeyHeads: hk, ValueHeads: hv, TiledHeads: m.TiledHeads, L2Eps: m.Eps, NormEps: m.Eps, ChunkSize: chunk,
	})
	storeConv(next.Conv)
	storeDelta(next.Delta)
	return ops.Linear(b, o, w("ssm_out.weight", m.Dim, vd), none)
}

// interval returns the full_attention_interval that gives the model's
// layer kinds, if one does.
func (m *Model) interval() (int, bool) {
	for n := 1; n <= m.Layers+1; n++ {
		ok := true
		for l, rec := range m.Recurrent {
			ok = ok && rec == ((l+1)%n != 0)
		}
		if ok {
			return n, true
		}
	}
	return 0, false
}

// regroupHeads reorders value heads from llama.cpp's tiled order (head
// j·hk + g is value head j of key head g) to Hugging Face's grouped order
// (g·per + j): x viewed as [outer, per, hk, inner] becomes [outer, hk, per,
// inner].
func regroupHeads(x []float32, outer, per, hk int) []float32 {
	inner := len(x) / (outer * per * hk)
	out := make([]float32, len(x))
	for o := range outer {
		for j := range per {
			for g := range hk {
				src, dst := ((o*per+j)*hk+g)*inner, ((o*hk+g)*per+j)*inner
				copy(out[dst:dst+inner], x[src:src+inner])
			}
		}
	}
	return out
}
