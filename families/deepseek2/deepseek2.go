// Package deepseek2 is the DeepSeek-V2/V3 family, GGUF architecture
// "deepseek2" (DeepSeek-V2, V2-Lite, V2.5, V3, R1, Kimi K2): multi-head
// latent attention (queries low-rank or not; keys and values compressed to
// a normalised latent plus one shared rotary key, which is all the cache
// holds: kv_lora_rank + rope dims per position), a few leading dense layers
// then routed experts beside shared experts (softmax or sigmoid gating, a
// selection bias, group-limited routing, normalised and scaled weights),
// and YaRN with DeepSeek's correction of the attention scale.
//
// Keys and values come either as llama.cpp's converter writes them, W_UK
// and W_UV split (attn_k_b, attn_v_b), which the model reads in the
// absorbed form, or as one kv_b projection (Hugging Face's kv_b_proj,
// llama.cpp's older attn_kv_b files), which it decompresses in the naive
// form (the absorbed one when the weights are Hugging Face's, never
// packed). Rotary pairs are adjacent channels in both containers.
package deepseek2

import (
	"cmp"
	"fmt"
	"math"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

const family = "deepseek2"

// Row is the family's registry row.
var Row = families.Row{
	Family:            family,
	GGUFArchitectures: []string{family},
	HFArchitectures:   []string{"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"},
	HFModelTypes:      []string{"deepseek_v2", "deepseek_v3"},
	FromGGUF:          FromGGUF,
	FromHF:            FromHF,
}

// Model is one DeepSeek-V2/V3 configuration.
type Model struct {
	Vocab, Dim, Layers, MaxContext int
	Eps                            float64 // every RMSNorm's epsilon
	Tied                           bool    // no output.weight: the head reads token_embd.weight
	// MLA sizes the latent attention (Heads, NopeDim, RopeDim, ValueDim,
	// KVLoraRank); its rows, scale and form are set per step.
	MLA ops.MLAConfig
	// QLoraRank is the rank of the low-rank queries; 0 means one query
	// projection (V2-Lite).
	QLoraRank int
	// Fused says kv_b is one tensor (attn_kv_b) rather than attn_k_b and
	// attn_v_b.
	Fused bool
	// Rope is the rotary embedding (interleaved pairs); for YaRN, MScale and
	// MScaleAllDim are the Hugging Face config's mscale and mscale_all_dim.
	Rope ops.RopeConfig
	// DenseLayers leading layers have a SwiGLU feed-forward of width FFN;
	// the others route to Experts experts of width ExpertFFN, beside Shared
	// shared experts (one SwiGLU of width Shared·ExpertFFN).
	DenseLayers, FFN           int
	Experts, ExpertFFN, Shared int
	Routing                    ops.MoEConfig
	SelectionBias              bool // exp_probs_b: added to the scores for choosing only

	weights families.WeightMap
}

type brand struct{}

// Family returns "deepseek2".
func (m *Model) Family() string { return family }

// Weights returns the weight map of the container the model came from.
func (m *Model) Weights() families.WeightMap { return m.weights }

// Schema returns the driver's facts about the model.
func (m *Model) Schema() families.Schema {
	return families.Schema{Vocab: m.Vocab, Dim: m.Dim, Layers: m.Layers, MaxContext: m.MaxContext}
}

// LayerKinds names each layer's mixer and feed-forward.
func (m *Model) LayerKinds() []string {
	out := make([]string, m.Layers)
	for l := range out {
		switch {
		case l < m.DenseLayers:
			out[l] = "latent_attention+dense"
		case m.Shared > 0:
			out[l] = "latent_attention+moe(shared)"
		default:
			out[l] = "latent_attention+moe"
		}
	}
	return out
}

// factors are YaRN's multipliers of cos and sin and of the attention
// scores, as DeepSeek's code computes them from mscale and mscale_all_dim.
func (m *Model) factors() (rope, score float64) {
	if m.Rope.Scaling != ops.ScaleYaRN {
		return 1, 1
	}
	all := ops.YaRNMScale(m.Rope.Factor, m.Rope.MScaleAllDim)
	return ops.YaRNMScale(m.Rope.Factor, m.Rope.MScale) / all, all * all
}

func (m *Model) validate() error {
	c, rc := m.MLA, m.Routing
	bad := func(key, detail string, args ...any) error {
		return &families.ConfigError{Source: family, Key: key, Err: families.ErrInconsistent, Detail: fmt.Sprintf(detail, args...)}
	}
	switch {
	case m.Vocab < 1 || m.Dim < 1 || m.Layers < 1 || c.Heads < 1 || c.NopeDim < 1 || c.ValueDim < 1 || c.KVLoraRank < 1 || m.QLoraRank < 0:
		return bad("shape", "vocab %d, dim %d, layers %d, %d heads of %d+%d dims, values %d, latent %d, query rank %d must be positive",
			m.Vocab, m.Dim, m.Layers, c.Heads, c.NopeDim, c.RopeDim, c.ValueDim, c.KVLoraRank, m.QLoraRank)
	case c.RopeDim < 2 || c.RopeDim%2 != 0 || !(m.Rope.Theta > 1) || m.Rope.Dims != c.RopeDim:
		return bad("rope", "%d rotary dims (tables of %d), base %v", c.RopeDim, m.Rope.Dims, m.Rope.Theta)
	case !(m.Eps > 0):
		return bad("eps", "norm epsilon %v must be positive", m.Eps)
	case m.DenseLayers < 0 || m.DenseLayers > m.Layers || (m.DenseLayers > 0 && m.FFN < 1):
		return bad("dense", "%d dense layers of width %d in %d", m.DenseLayers, m.FFN, m.Layers)
	case m.DenseLayers < m.Layers && (m.Experts < 1 || m.ExpertFFN < 1 || m.Shared < 0 || rc.TopK < 1 || rc.TopK > m.Experts):
		return bad("experts", "%d of %d experts of width %d, %d shared", rc.TopK, m.Experts, m.ExpertFFN, m.Shared)
	case m.SelectionBias && rc.Gating != ops.SigmoidTopK:
		return &families.ConfigError{Source: family, Key: "exp_probs_b", Err: families.ErrUnsupported, Detail: "a selection bias with softmax gating"}
	}
	return nil
}

// Trace checks spec against the schema and records the step.
func (m *Model) Trace(spec families.StepSpec, limits poot.Limits) (*poot.Graph, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	if err := m.Schema().Check(family, spec.Shape); err != nil {
		return nil, err
	}
	b := poot.NewBuilder[brand](limits)
	step := families.NewStep(b, spec.Shape, m.Vocab)
	w := func(name string, dims ...int) poot.Traced[brand] { return b.Constant(name, poot.T(poot.F32, dims...)) }
	none := poot.Traced[brand]{}
	ropeFactor, scoreFactor := m.factors()
	rot := ops.RopeTables(b, step.Pos, ops.RopeInvFreq(b, m.Rope), ropeFactor, ops.RopeInterleaved)
	c := m.MLA
	c.Rows, c.Eps, c.MScale, c.Scale = spec.Shape.Rows, m.Eps, math.Sqrt(scoreFactor), 0
	// A packed kv_b can only be read whole: GGUF's fused files decompress.
	c.Absorb = !m.Fused || m.weights.Container == families.Safetensors
	h, qk, lora := c.Heads, c.NopeDim+c.RopeDim, c.KVLoraRank
	layer := func(l int, x poot.Traced[brand]) poot.Traced[brand] {
		p := fmt.Sprintf("blk.%d.", l)
		var a ops.MLAWeights[brand]
		if m.QLoraRank > 0 {
			a.QA, a.QANorm = w(p+"attn_q_a.weight", m.QLoraRank, m.Dim), w(p+"attn_q_a_norm.weight", m.QLoraRank)
			a.QB = w(p+"attn_q_b.weight", h*qk, m.QLoraRank)
		} else {
			a.Q = w(p+"attn_q.weight", h*qk, m.Dim)
		}
		a.KVA, a.KVANorm = w(p+"attn_kv_a_mqa.weight", lora+c.RopeDim, m.Dim), w(p+"attn_kv_a_norm.weight", lora)
		if m.Fused {
			a.KVB = w(p+"attn_kv_b.weight", h*(c.NopeDim+c.ValueDim), lora)
		} else {
			a.KBT, a.VB = w(p+"attn_k_b.weight", h, lora, c.NopeDim), w(p+"attn_v_b.weight", h, c.ValueDim, lora)
		}
		out := w(p+"attn_output.weight", m.Dim, h*c.ValueDim)
		mixer := func(x poot.Traced[brand]) poot.Traced[brand] {
			q := ops.LatentQuery(b, x, rot, a, c)
			cache := step.Cache(families.CacheName("latent", l), ops.LatentKV(b, x, rot, a, c))
			return ops.Linear(b, ops.LatentAttention(b, q, cache, step.Mask(0), a, c), out, none)
		}
		norms := families.LayerNorms[brand]{Mixer: w(p+"attn_norm.weight", m.Dim), FFN: w(p+"ffn_norm.weight", m.Dim), Eps: m.Eps}
		ffn := func(x poot.Traced[brand]) poot.Traced[brand] {
			return families.GatedFFN(b, x, families.FFNWeights[brand]{Gate: w(p+"ffn_gate.weight", m.FFN, m.Dim),
				Up: w(p+"ffn_up.weight", m.FFN, m.Dim), Down: w(p+"ffn_down.weight", m.Dim, m.FFN)}, families.SiLU)
		}
		if l >= m.DenseLayers {
			e, f, s := m.Experts, m.ExpertFFN, m.Shared*m.ExpertFFN
			mw := ops.MoEWeights[brand]{Router: w(p+"ffn_gate_inp.weight", e, m.Dim), Gate: w(p+"ffn_gate_exps.weight", e, f, m.Dim),
				Up: w(p+"ffn_up_exps.weight", e, f, m.Dim), Down: w(p+"ffn_down_exps.weight", e, m.Dim, f)}
			if m.SelectionBias {
				mw.SelectionBias = w(p+"exp_probs_b.bias", e)
			}
			if s > 0 {
				mw.SharedGate, mw.SharedUp = w(p+"ffn_gate_shexp.weight", s, m.Dim), w(p+"ffn_up_shexp.weight", s, m.Dim)
				mw.SharedDown = w(p+"ffn_down_shexp.weight", m.Dim, s)
			}
			ffn = func(x poot.Traced[brand]) poot.Traced[brand] { return families.RoutedFFN(b, x, mw, m.Routing) }
		}
		return families.Layer(b, x, norms, mixer, ffn)
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
	if err := families.CheckCarries(family, spec.Carries, g); err != nil {
		return nil, err
	}
	return g, nil
}

// FromGGUF configures a model from a GGUF file's metadata and tensor
// table, reading each key as llama.cpp does.
func FromGGUF(f *gguf.File) (families.Model, error) {
	r := families.GGUFReader(f, family)
	m := &Model{Dim: r.Positive("embedding_length"), Layers: r.PositiveAtMost("block_count", families.MaxLayers)}
	if n := r.IntOr("nextn_predict_layers", 0); n > 0 && n < m.Layers {
		m.Layers -= n // multi-token prediction layers follow the trunk; a step does not run them
	}
	if m.Layers > 0 && !families.CheckLayerTensors(f, r, family, "block_count", m.Layers) {
		m.Layers = 0
	}
	m.MaxContext, m.Eps = r.IntOr("context_length", 0), r.Float("attention.layer_norm_rms_epsilon")
	h := r.Positive("attention.head_count")
	c := ops.MLAConfig{Heads: h, KVLoraRank: r.Positive("attention.kv_lora_rank"), RopeDim: r.Positive("rope.dimension_count")}
	m.QLoraRank = r.IntOr("attention.q_lora_rank", 0)
	// The converter writes the latent as one key/value head of
	// kv_lora_rank + rope dims and the heads' own widths under *_mla; older
	// files store kv_b whole and the heads' widths plainly.
	qk, kvHeads := 0, 1
	if r.Has("attention.key_length_mla") {
		qk, c.ValueDim = r.Positive("attention.key_length_mla"), r.Positive("attention.value_length_mla")
	} else {
		m.Fused, kvHeads = true, h
		qk, c.ValueDim = r.IntOr("attention.key_length", m.Dim/max(h, 1)), r.IntOr("attention.value_length", m.Dim/max(h, 1))
	}
	if n := r.IntOr("attention.head_count_kv", h); n != kvHeads {
		r.Fail("attention.head_count_kv", families.ErrInconsistent, "%d key/value heads, want %d for this layout of kv_b", n, kvHeads)
	}
	if c.NopeDim = qk - c.RopeDim; c.NopeDim < 1 {
		r.Fail("attention.key_length_mla", families.ErrInconsistent, "key length %d leaves no channels beside %d rotary ones", qk, c.RopeDim)
	}
	m.MLA = c
	m.Rope = ops.RopeConfig{Dims: c.RopeDim, Theta: r.FloatOr("rope.freq_base", 10000)}
	factor := r.FloatOr("rope.scaling.factor", 0)
	if factor == 0 {
		factor = 1 // llama.cpp's "no factor"
	}
	switch kind := r.StringOr("rope.scaling.type", "linear"); {
	case kind == "yarn" && factor >= 1:
		m.Rope.Scaling, m.Rope.Factor, m.Rope.BetaFast, m.Rope.BetaSlow = ops.ScaleYaRN, factor, 32, 1 // llama.cpp reads no ramp ends here
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
	m.Vocab = int(emb.Dims[1])
	_, hasOut := f.Tensor("output.weight")
	m.Tied = !hasOut
	if m.DenseLayers = r.IntOr("leading_dense_block_count", 0); m.DenseLayers > 0 {
		m.FFN = r.Positive("feed_forward_length")
	}
	if m.DenseLayers < m.Layers {
		m.Experts = r.PositiveAtMost("expert_count", families.MaxExperts)
		m.ExpertFFN, m.Shared = r.Positive("expert_feed_forward_length"), r.Int("expert_shared_count")
		rc := ops.MoEConfig{TopK: r.Positive("expert_used_count"), Renormalize: r.BoolOr("expert_weights_norm", false),
			Scale: r.FloatOr("expert_weights_scale", 0)}
		switch g := r.IntOr("expert_gating_func", 0); {
		case g == 2, g == 0 && (m.Layers == 47 || m.Layers == 48) && m.Vocab == 154880: // absent: softmax, but for GLM-4.7 Lite
			rc.Gating = ops.SigmoidTopK
		case g > 1:
			r.Fail("expert_gating_func", families.ErrUnsupported, "gating function %d (1 softmax and 2 sigmoid are)", g)
		}
		if g := r.IntOr("expert_group_count", 0); g > 1 {
			// llama.cpp scores a group by its two best experts.
			rc.Groups, rc.TopGroups, rc.GroupScore = g, r.Positive("expert_group_used_count"), ops.GroupTop2Sum
		}
		m.Routing = rc
		_, m.SelectionBias = f.Tensor(fmt.Sprintf("blk.%d.exp_probs_b.bias", m.DenseLayers))
	}
	return m.finish(r, families.GGUF)
}

// FromHF configures a model from a DeepSeek-V2 or V3 config.json, with the
// semantics of DeepSeek's modeling code.
func FromHF(cfg map[string]any) (families.Model, error) {
	r := families.HFReader(cfg)
	m := &Model{Vocab: r.Positive("vocab_size"), Dim: r.Positive("hidden_size"), Layers: r.PositiveAtMost("num_hidden_layers", families.MaxLayers),
		MaxContext: r.IntOr("max_position_embeddings", 0), Eps: r.FloatOr("rms_norm_eps", 1e-6), Tied: r.BoolOr("tie_word_embeddings", false),
		QLoraRank: r.IntOr("q_lora_rank", 0), Fused: true, FFN: r.IntOr("intermediate_size", 0)}
	m.MLA = ops.MLAConfig{Heads: r.Positive("num_attention_heads"), NopeDim: r.Positive("qk_nope_head_dim"), RopeDim: r.Positive("qk_rope_head_dim"),
		ValueDim: r.Positive("v_head_dim"), KVLoraRank: r.Positive("kv_lora_rank")}
	m.Rope = families.HFRopeScaling(r, "rope_scaling", ops.RopeConfig{Dims: m.MLA.RopeDim, Theta: r.FloatOr("rope_theta", 10000)})
	switch {
	case m.Rope.Scaling == ops.ScaleYaRN && m.Rope.AttnFactor == 0:
		m.Rope.MScale, m.Rope.MScaleAllDim = r.FloatOr("rope_scaling.mscale", 1), r.FloatOr("rope_scaling.mscale_all_dim", 0)
	case m.Rope.Scaling != ops.ScaleNone:
		r.Fail("rope_scaling", families.ErrUnsupported, "DeepSeek's code scales rope by YaRN with mscale alone")
	}
	if r.BoolOr("attention_bias", false) {
		r.Fail("attention_bias", families.ErrUnsupported, "attention biases")
	}
	if m.DenseLayers = r.IntOr("first_k_dense_replace", 0); !r.Has("n_routed_experts") {
		m.DenseLayers = m.Layers
	}
	if m.DenseLayers < m.Layers {
		if n := r.IntOr("moe_layer_freq", 1); n != 1 {
			r.Fail("moe_layer_freq", families.ErrUnsupported, "dense layers between routed ones (every %d)", n)
		}
		m.Experts = r.PositiveAtMost("n_routed_experts", families.MaxExperts)
		m.ExpertFFN, m.Shared = r.Positive("moe_intermediate_size"), r.IntOr("n_shared_experts", 0)
		rc := ops.MoEConfig{TopK: r.Positive("num_experts_per_tok"), Renormalize: r.BoolOr("norm_topk_prob", false),
			Scale: r.FloatOr("routed_scaling_factor", 1)}
		if rc.Renormalize && r.StringOr("model_type", "") == "deepseek_v2" {
			rc.Scale = 1 // V2's gate scales only the weights it does not normalise
		}
		switch s := r.StringOr("scoring_func", "softmax"); s {
		case "softmax":
		case "sigmoid":
			rc.Gating = ops.SigmoidTopK
		default:
			r.Fail("scoring_func", families.ErrUnsupported, "scoring function %q", s)
		}
		switch t := r.StringOr("topk_method", "greedy"); t {
		case "greedy":
		case "group_limited_greedy", "noaux_tc": // a group scored by its best expert, or by its two best
			rc.Groups, rc.TopGroups = r.Positive("n_group"), r.Positive("topk_group")
			if m.SelectionBias = t == "noaux_tc"; !m.SelectionBias {
				rc.GroupScore = ops.GroupMax
			}
		default:
			r.Fail("topk_method", families.ErrUnsupported, "expert choice %q", t)
		}
		m.Routing = rc
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
		"attn_q_a.weight":       "self_attn.q_a_proj.weight",
		"attn_q_a_norm.weight":  "self_attn.q_a_layernorm.weight",
		"attn_q_b.weight":       "self_attn.q_b_proj.weight",
		"attn_kv_a_mqa.weight":  "self_attn.kv_a_proj_with_mqa.weight",
		"attn_kv_a_norm.weight": "self_attn.kv_a_layernorm.weight",
		"attn_kv_b.weight":      "self_attn.kv_b_proj.weight",
		"ffn_gate_inp.weight":   "mlp.gate.weight",
		"exp_probs_b.bias":      "mlp.gate.e_score_correction_bias",
		"ffn_gate_exps.weight":  "mlp.experts.{e}.gate_proj.weight",
		"ffn_up_exps.weight":    "mlp.experts.{e}.up_proj.weight",
		"ffn_down_exps.weight":  "mlp.experts.{e}.down_proj.weight",
		"ffn_gate_shexp.weight": "mlp.shared_experts.gate_proj.weight",
		"ffn_up_shexp.weight":   "mlp.shared_experts.up_proj.weight",
		"ffn_down_shexp.weight": "mlp.shared_experts.down_proj.weight",
	}).In(c)
	m.weights.Experts = m.Experts
	return m, nil
}

func unsupported(key, format string, args ...any) error {
	return &families.ConfigError{Source: family, Key: key, Err: families.ErrUnsupported, Detail: fmt.Sprintf(format, args...)}
}

// GGUFMetadata writes the keys llama.cpp reads: the converter's layout
// (one latent key/value head, the heads' widths under *_mla) for split
// k_b/v_b, the older plain layout for a fused kv_b. What llama.cpp's
// reading cannot express is an ErrUnsupported ConfigError: YaRN with
// mscale ≠ mscale_all_dim or other ramp ends, groups scored by their best
// expert.
func (m *Model) GGUFMetadata() ([]gguf.KV, error) {
	c, rc, y := m.MLA, m.Routing, m.Rope
	kvs := []gguf.KV{{Key: gguf.KeyArchitecture, Value: gguf.ValueOf(family)}}
	put := func(key string, v gguf.Value) { kvs = append(kvs, gguf.KV{Key: family + "." + key, Value: v}) }
	u := func(key string, n int) { put(key, gguf.ValueOf(uint32(n))) }
	fl := func(key string, x float64) { put(key, gguf.ValueOf(float32(x))) }
	if m.MaxContext > 0 {
		u("context_length", m.MaxContext)
	}
	u("embedding_length", m.Dim)
	u("block_count", m.Layers)
	u("vocab_size", m.Vocab)
	u("attention.head_count", c.Heads)
	fl("attention.layer_norm_rms_epsilon", m.Eps)
	if m.QLoraRank > 0 {
		u("attention.q_lora_rank", m.QLoraRank)
	}
	u("attention.kv_lora_rank", c.KVLoraRank)
	if m.Fused {
		u("attention.head_count_kv", c.Heads)
		u("attention.key_length", c.NopeDim+c.RopeDim)
		u("attention.value_length", c.ValueDim)
	} else {
		u("attention.head_count_kv", 1)
		u("attention.key_length", c.KVLoraRank+c.RopeDim)
		u("attention.value_length", c.KVLoraRank)
		u("attention.key_length_mla", c.NopeDim+c.RopeDim)
		u("attention.value_length_mla", c.ValueDim)
	}
	u("rope.dimension_count", c.RopeDim)
	fl("rope.freq_base", y.Theta)
	if y.Scaling == ops.ScaleYaRN {
		if (y.BetaFast != 0 && y.BetaFast != 32) || (y.BetaSlow != 0 && y.BetaSlow != 1) {
			return nil, unsupported("rope.scaling.yarn_beta_fast", "llama.cpp reads YaRN's ramp ends as 32 and 1 for this architecture, not %v and %v", y.BetaFast, y.BetaSlow)
		}
		put("rope.scaling.type", gguf.ValueOf("yarn"))
		fl("rope.scaling.factor", y.Factor)
		u("rope.scaling.original_context_length", y.OrigContext)
		switch {
		case y.MScale == y.MScaleAllDim && y.MScaleAllDim != 0:
			fl("rope.scaling.yarn_log_multiplier", 0.1*y.MScaleAllDim)
		case y.MScaleAllDim != 1 || y.MScale != 2+0.1*math.Log(y.Factor): // that one is llama.cpp's reading without the key
			return nil, unsupported("rope.scaling.yarn_log_multiplier", "llama.cpp takes mscale = mscale_all_dim, here %v and %v", y.MScale, y.MScaleAllDim)
		}
	}
	u("leading_dense_block_count", m.DenseLayers)
	if m.FFN > 0 {
		u("feed_forward_length", m.FFN)
	}
	if m.DenseLayers < m.Layers {
		u("expert_count", m.Experts)
		u("expert_used_count", rc.TopK)
		u("expert_feed_forward_length", m.ExpertFFN)
		u("expert_shared_count", m.Shared)
		put("expert_weights_norm", gguf.ValueOf(rc.Renormalize))
		if rc.Scale != 0 {
			fl("expert_weights_scale", rc.Scale)
		}
		u("expert_gating_func", map[ops.Gating]int{ops.SoftmaxTopK: 1, ops.SigmoidTopK: 2}[rc.Gating])
		if rc.Groups > 1 {
			if rc.GroupScore != ops.GroupTop2Sum {
				return nil, unsupported("expert_group_count", "llama.cpp scores a group by its two best experts")
			}
			u("expert_group_count", rc.Groups)
			u("expert_group_used_count", rc.TopGroups)
		}
	}
	return kvs, nil
}

// HFConfig writes the config.json of DeepSeek's modeling code: V3 for
// sigmoid gating or a selection bias, V2 otherwise. A model with split
// k_b/v_b has no Hugging Face form here (the checkpoint stores kv_b_proj
// whole, one tensor from two canonical ones), nor has routing that
// DeepSeek's gates do not implement.
func (m *Model) HFConfig() (map[string]any, error) {
	c, rc := m.MLA, m.Routing
	if !m.Fused {
		return nil, unsupported("attn_k_b.weight", "Hugging Face checkpoints store kv_b_proj whole")
	}
	arch, kind := "DeepseekV2ForCausalLM", "deepseek_v2"
	if rc.Gating == ops.SigmoidTopK || m.SelectionBias {
		arch, kind = "DeepseekV3ForCausalLM", "deepseek_v3"
	}
	cfg := map[string]any{
		"architectures": []any{arch}, "model_type": kind, "vocab_size": m.Vocab, "hidden_size": m.Dim,
		"num_hidden_layers": m.Layers, "num_attention_heads": c.Heads, "num_key_value_heads": c.Heads,
		"qk_nope_head_dim": c.NopeDim, "qk_rope_head_dim": c.RopeDim, "v_head_dim": c.ValueDim, "kv_lora_rank": c.KVLoraRank,
		"q_lora_rank": nil, "rms_norm_eps": m.Eps, "rope_theta": m.Rope.Theta, "max_position_embeddings": m.MaxContext,
		"tie_word_embeddings": m.Tied, "intermediate_size": m.FFN, "first_k_dense_replace": m.DenseLayers,
		"attention_bias": false, "torch_dtype": "float32",
	}
	if m.QLoraRank > 0 {
		cfg["q_lora_rank"] = m.QLoraRank
	}
	if y := m.Rope; y.Scaling == ops.ScaleYaRN {
		fast, slow := cmp.Or(y.BetaFast, 32), cmp.Or(y.BetaSlow, 1)
		cfg["rope_scaling"] = map[string]any{"type": "yarn", "factor": y.Factor, "original_max_position_embeddings": y.OrigContext,
			"beta_fast": fast, "beta_slow": slow, "mscale": y.MScale, "mscale_all_dim": y.MScaleAllDim}
	}
	if m.DenseLayers == m.Layers {
		return cfg, nil
	}
	method, scale := "greedy", rc.Scale
	switch {
	case m.SelectionBias:
		method = "noaux_tc"
	case rc.Groups > 1 && rc.GroupScore == ops.GroupMax && kind == "deepseek_v2":
		method = "group_limited_greedy"
	case rc.Groups > 1:
		return nil, unsupported("topk_method", "DeepSeek's code scores groups by their two best experts only with a selection bias")
	}
	if scale == 0 {
		scale = 1
	}
	if kind == "deepseek_v2" && rc.Renormalize && scale != 1 {
		return nil, unsupported("routed_scaling_factor", "DeepSeek-V2's gate does not scale normalised weights")
	}
	scoring := map[ops.Gating]string{ops.SoftmaxTopK: "softmax", ops.SigmoidTopK: "sigmoid"}[rc.Gating]
	for k, v := range map[string]any{"n_routed_experts": m.Experts, "num_experts_per_tok": rc.TopK, "moe_intermediate_size": m.ExpertFFN,
		"n_shared_experts": m.Shared, "norm_topk_prob": rc.Renormalize, "routed_scaling_factor": scale, "scoring_func": scoring,
		"topk_method": method, "n_group": max(rc.Groups, 1), "topk_group": max(rc.TopGroups, 1), "moe_layer_freq": 1} {
		cfg[k] = v
	}
	return cfg, nil
}

// HFTensor returns v: the canonical and the Hugging Face forms agree.
func (m *Model) HFTensor(name string, v []float32) []float32 { return v }
