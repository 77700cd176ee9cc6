package deepseek2

import (
	"cmp"
	"fmt"
	"math"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// need says when a reader requires a key.
type need uint8

const (
	optional need = iota // 0 when absent
	always
	routed // when some layer routes to experts
)

// intKey is an integer hyperparameter under its GGUF key (after
// "deepseek2.") and its config.json key ("" where a container stores it
// otherwise). One table reads and writes both, so they cannot drift.
type intKey struct {
	gguf, hf string
	need     need
	p        *int
}

func (m *Model) ints() []intKey {
	c, rc := &m.MLA, &m.Routing
	return []intKey{
		{"embedding_length", "hidden_size", always, &m.Dim},
		{"context_length", "max_position_embeddings", optional, &m.MaxContext},
		{"attention.head_count", "num_attention_heads", always, &c.Heads},
		{"", "qk_nope_head_dim", always, &c.NopeDim},
		{"", "v_head_dim", always, &c.ValueDim},
		{"rope.dimension_count", "qk_rope_head_dim", always, &c.RopeDim},
		{"attention.kv_lora_rank", "kv_lora_rank", always, &c.KVLoraRank},
		{"attention.q_lora_rank", "q_lora_rank", optional, &m.QLoraRank},
		{"leading_dense_block_count", "first_k_dense_replace", optional, &m.DenseLayers},
		{"feed_forward_length", "intermediate_size", optional, &m.FFN},
		{"expert_count", "n_routed_experts", routed, &m.Experts},
		{"expert_used_count", "num_experts_per_tok", routed, &rc.TopK},
		{"expert_feed_forward_length", "moe_intermediate_size", routed, &m.ExpertFFN},
		{"expert_shared_count", "n_shared_experts", routed, &m.Shared},
		{"expert_group_count", "n_group", optional, &rc.Groups},
		{"expert_group_used_count", "topk_group", optional, &rc.TopGroups},
	}
}

// readInts reads the table from r, after m.Layers.
func (m *Model) readInts(r *families.Reader) {
	for _, k := range m.ints() {
		key := k.hf
		if r.GGUF() {
			key = k.gguf
		}
		switch {
		case key == "":
		case k.need == always || (k.need == routed && m.DenseLayers < m.Layers):
			*k.p = r.Int(key)
		default:
			*k.p = r.IntOr(key, 0)
		}
	}
	if m.Experts > families.MaxExperts {
		r.Fail(map[bool]string{true: "expert_count", false: "n_routed_experts"}[r.GGUF()], families.ErrWrongType, "%d experts", m.Experts)
	}
}

// FromGGUF configures a model from a GGUF file's metadata and tensor
// table, reading each key as llama.cpp does.
func FromGGUF(f *gguf.File) (families.Model, error) {
	r := families.GGUFReader(f, family)
	m := &Model{Layers: r.PositiveAtMost("block_count", families.MaxLayers)}
	if n := r.IntOr("nextn_predict_layers", 0); n > 0 && n < m.Layers {
		m.Layers -= n // multi-token prediction layers follow the trunk; a step does not run them
	}
	if m.Layers > 0 && !families.CheckLayerTensors(f, r, family, "block_count", m.Layers) {
		m.Layers = 0
	}
	m.readInts(r)
	c := &m.MLA
	// The converter writes the latent as one key/value head of
	// kv_lora_rank + rope dims and the heads' widths under *_mla; older
	// files store kv_b whole and the heads' widths plainly.
	qk, kvHeads, h := 0, 1, max(c.Heads, 1)
	if r.Has("attention.key_length_mla") {
		qk, c.ValueDim = r.Int("attention.key_length_mla"), r.Int("attention.value_length_mla")
	} else {
		m.Fused, kvHeads = true, c.Heads
		qk, c.ValueDim = r.IntOr("attention.key_length", m.Dim/h), r.IntOr("attention.value_length", m.Dim/h)
	}
	if n := r.IntOr("attention.head_count_kv", c.Heads); n != kvHeads {
		r.Fail("attention.head_count_kv", families.ErrInconsistent, "%d key/value heads, want %d for this layout of kv_b", n, kvHeads)
	}
	if c.NopeDim = qk - c.RopeDim; c.NopeDim < 1 {
		r.Fail("attention.key_length_mla", families.ErrInconsistent, "key length %d leaves no channels beside %d rotary ones", qk, c.RopeDim)
	}
	m.Eps = r.Float("attention.layer_norm_rms_epsilon")
	m.Rope = ops.RopeConfig{Dims: c.RopeDim, Theta: r.FloatOr("rope.freq_base", 10000)}
	factor := cmp.Or(r.FloatOr("rope.scaling.factor", 0), 1) // llama.cpp reads 0 as none
	switch kind := r.StringOr("rope.scaling.type", "linear"); {
	case kind == "yarn" && factor >= 1:
		// llama.cpp reads no ramp ends for this architecture.
		m.Rope.Scaling, m.Rope.Factor, m.Rope.BetaFast, m.Rope.BetaSlow = ops.ScaleYaRN, factor, 32, 1
		if m.Rope.OrigContext = r.IntOr("rope.scaling.original_context_length", m.MaxContext); m.Rope.OrigContext < 1 {
			r.Fail("rope.scaling.original_context_length", families.ErrMissing, "YaRN needs the original context length")
		}
		// The converter writes 0.1·mscale_all_dim, and llama.cpp takes
		// mscale = mscale_all_dim; without the key it scales cos and sin by
		// mscale(factor, 1) and the scores by its square, which is
		// mscale_all_dim 1 and mscale 2 + 0.1·ln(factor).
		if l := float32(r.FloatOr("rope.scaling.yarn_log_multiplier", 0)) / 0.1; l != 0 {
			m.Rope.MScale, m.Rope.MScaleAllDim = float64(l), float64(l)
		} else {
			m.Rope.MScale, m.Rope.MScaleAllDim = 2+0.1*math.Log(factor), 1
		}
	case kind == "none", kind == "linear" && factor == 1:
	default:
		r.Fail("rope.scaling.type", families.ErrUnsupported, "rope scaling %q with factor %v", kind, factor)
	}
	if a := r.FloatOr("rope.scaling.attn_factor", 1); a != 1 {
		r.Fail("rope.scaling.attn_factor", families.ErrUnsupported, "attention factor %v", a)
	}
	if r.FloatOr("attention.temperature_scale", 0) != 0 {
		r.Fail("attention.temperature_scale", families.ErrUnsupported, "attention temperature tuning")
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 {
		return nil, &families.TensorError{Model: family, Tensor: "token_embd.weight", Err: families.ErrMissing, Detail: "the file has no token embedding"}
	}
	_, hasOut := f.Tensor("output.weight")
	m.Vocab, m.Tied = int(emb.Dims[1]), !hasOut
	rc := &m.Routing
	rc.Renormalize, rc.Scale = r.BoolOr("expert_weights_norm", false), r.FloatOr("expert_weights_scale", 1)
	switch g := r.IntOr("expert_gating_func", 0); {
	case g == 2, g == 0 && (m.Layers == 47 || m.Layers == 48) && m.Vocab == 154880: // absent: softmax, but for GLM-4.7 Lite
		rc.Gating = ops.SigmoidTopK
	case g > 1:
		r.Fail("expert_gating_func", families.ErrUnsupported, "gating function %d (1 softmax and 2 sigmoid are)", g)
	}
	// llama.cpp scores a group by its two best experts (GroupTop2Sum).
	_, m.SelectionBias = f.Tensor(fmt.Sprintf("blk.%d.exp_probs_b.bias", m.DenseLayers))
	return m.finish(r, families.GGUF)
}

// FromHF configures a model from a DeepSeek-V2 or V3 config.json, with the
// semantics of DeepSeek's modeling code.
func FromHF(cfg map[string]any) (families.Model, error) {
	r := families.HFReader(cfg)
	m := &Model{Vocab: r.Positive("vocab_size"), Layers: r.PositiveAtMost("num_hidden_layers", families.MaxLayers),
		Eps: r.FloatOr("rms_norm_eps", 1e-6), Tied: r.BoolOr("tie_word_embeddings", false), Fused: true}
	m.readInts(r)
	m.Rope = families.HFRopeScaling(r, "rope_scaling", ops.RopeConfig{Dims: m.MLA.RopeDim, Theta: r.FloatOr("rope_theta", 10000)})
	switch y := &m.Rope; {
	case y.Scaling == ops.ScaleYaRN && y.AttnFactor == 0:
		y.MScale, y.MScaleAllDim = r.FloatOr("rope_scaling.mscale", 1), r.FloatOr("rope_scaling.mscale_all_dim", 0)
	case y.Scaling != ops.ScaleNone:
		r.Fail("rope_scaling", families.ErrUnsupported, "DeepSeek's code scales rope by YaRN with mscale alone")
	}
	if r.BoolOr("attention_bias", false) {
		r.Fail("attention_bias", families.ErrUnsupported, "attention biases")
	}
	if n := r.IntOr("moe_layer_freq", 1); n != 1 {
		r.Fail("moe_layer_freq", families.ErrUnsupported, "dense layers between routed ones (every %d)", n)
	}
	rc := &m.Routing
	// DeepSeek's gates normalise only more than one weight.
	rc.Renormalize, rc.Scale = r.BoolOr("norm_topk_prob", false) && rc.TopK > 1, r.FloatOr("routed_scaling_factor", 1)
	if rc.Renormalize && r.StringOr("model_type", "") == "deepseek_v2" {
		rc.Scale = 1 // V2's gate scales only the weights it does not normalise
	}
	s := r.StringOr("scoring_func", "softmax")
	if g, ok := map[string]ops.Gating{"softmax": ops.SoftmaxTopK, "sigmoid": ops.SigmoidTopK}[s]; ok {
		rc.Gating = g
	} else {
		r.Fail("scoring_func", families.ErrUnsupported, "scoring function %q", s)
	}
	switch t := r.StringOr("topk_method", "greedy"); t {
	case "greedy":
		rc.Groups, rc.TopGroups = 0, 0
	case "group_limited_greedy": // a group scored by its best expert
		rc.GroupScore = ops.GroupMax
	case "noaux_tc": // by its two best, chosen with a selection bias
		m.SelectionBias = true
	default:
		r.Fail("topk_method", families.ErrUnsupported, "expert choice %q", t)
	}
	return m.finish(r, families.Safetensors)
}

func (m *Model) finish(r *families.Reader, c families.Container) (families.Model, error) {
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	m.weights = families.HFNames().With(map[string]string{
		"attn_q_a.weight": "self_attn.q_a_proj.weight", "attn_q_a_norm.weight": "self_attn.q_a_layernorm.weight",
		"attn_q_b.weight": "self_attn.q_b_proj.weight", "attn_kv_a_mqa.weight": "self_attn.kv_a_proj_with_mqa.weight",
		"attn_kv_a_norm.weight": "self_attn.kv_a_layernorm.weight", "attn_kv_b.weight": "self_attn.kv_b_proj.weight",
		"ffn_gate_inp.weight": "mlp.gate.weight", "exp_probs_b.bias": "mlp.gate.e_score_correction_bias",
		"ffn_gate_exps.weight": "mlp.experts.{e}.gate_proj.weight", "ffn_up_exps.weight": "mlp.experts.{e}.up_proj.weight",
		"ffn_down_exps.weight": "mlp.experts.{e}.down_proj.weight", "ffn_gate_shexp.weight": "mlp.shared_experts.gate_proj.weight",
		"ffn_up_shexp.weight": "mlp.shared_experts.up_proj.weight", "ffn_down_shexp.weight": "mlp.shared_experts.down_proj.weight",
	}).In(c)
	m.weights.Experts = m.Experts
	return m, nil
}

func unsupported(key, format string, args ...any) error {
	return &families.ConfigError{Source: family, Key: key, Err: families.ErrUnsupported, Detail: fmt.Sprintf(format, args...)}
}
