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
		switch out[l] = "latent_attention+moe"; {
		case l < m.DenseLayers:
			out[l] = "latent_attention+dense"
		case m.Shared > 0:
			out[l] += "(shared)"
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
		return unsupported("exp_probs_b", "a selection bias with softmax gating")
	}
	return nil
}

// Trace checks spec against the schema and records the step.
func (m *Model) Trace(spec families.StepSpec, limits poot.Limits) (*poot.Graph, error) {
	if err := cmp.Or(m.validate(), m.Schema().Check(family, spec.Shape)); err != nil {
		return nil, err
	}
	b := poot.NewBuilder[brand](limits)
	step := families.NewStep(b, spec.Shape, m.Vocab)
	none := poot.Traced[brand]{}
	opt := func(on bool, name string, dims ...int) poot.Traced[brand] {
		if !on {
			return none
		}
		return b.Constant(name, poot.T(poot.F32, dims...))
	}
	w := func(name string, dims ...int) poot.Traced[brand] { return opt(true, name, dims...) }
	ropeFactor, scoreFactor := m.factors()
	rot := ops.RopeTables(b, step.Pos, ops.RopeInvFreq(b, m.Rope), ropeFactor, ops.RopeInterleaved)
	c := m.MLA
	c.Rows, c.Eps, c.MScale, c.Scale = spec.Shape.Rows, m.Eps, math.Sqrt(scoreFactor), 0
	// A packed kv_b can only be read whole: GGUF's fused files decompress.
	c.Absorb = !m.Fused || m.weights.Container == families.Safetensors
	h, qk, lora, lowRank := c.Heads, c.NopeDim+c.RopeDim, c.KVLoraRank, m.QLoraRank > 0
	layer := func(l int, x poot.Traced[brand]) poot.Traced[brand] {
		p := fmt.Sprintf("blk.%d.", l)
		a := ops.MLAWeights[brand]{Q: opt(!lowRank, p+"attn_q.weight", h*qk, m.Dim), QA: opt(lowRank, p+"attn_q_a.weight", m.QLoraRank, m.Dim),
			QANorm: opt(lowRank, p+"attn_q_a_norm.weight", m.QLoraRank), QB: opt(lowRank, p+"attn_q_b.weight", h*qk, m.QLoraRank),
			KVA: w(p+"attn_kv_a_mqa.weight", lora+c.RopeDim, m.Dim), KVANorm: w(p+"attn_kv_a_norm.weight", lora),
			KVB: opt(m.Fused, p+"attn_kv_b.weight", h*(c.NopeDim+c.ValueDim), lora),
			KBT: opt(!m.Fused, p+"attn_k_b.weight", h, lora, c.NopeDim), VB: opt(!m.Fused, p+"attn_v_b.weight", h, c.ValueDim, lora)}
		out := w(p+"attn_output.weight", m.Dim, h*c.ValueDim)
		mixer := func(x poot.Traced[brand]) poot.Traced[brand] {
			q := ops.LatentQuery(b, x, rot, a, c)
			cache := step.Cache(families.CacheName("latent", l), ops.LatentKV(b, x, rot, a, c))
			return ops.Linear(b, ops.LatentAttention(b, q, cache, step.Mask(0), a, c), out, none)
		}
		norms := families.LayerNorms[brand]{Mixer: w(p+"attn_norm.weight", m.Dim), FFN: w(p+"ffn_norm.weight", m.Dim), Eps: m.Eps}
		ffn := func(x poot.Traced[brand]) poot.Traced[brand] {
			return families.FeedForward(b, x, families.FFNWeights[brand]{Gate: w(p+"ffn_gate.weight", m.FFN, m.Dim),
				Up: w(p+"ffn_up.weight", m.FFN, m.Dim), Down: w(p+"ffn_down.weight", m.Dim, m.FFN)}, families.SiLU)
		}
		if e, f, s := m.Experts, m.ExpertFFN, m.Shared*m.ExpertFFN; l >= m.DenseLayers {
			mw := ops.MoEWeights[brand]{Router: w(p+"ffn_gate_inp.weight", e, m.Dim), SelectionBias: opt(m.SelectionBias, p+"exp_probs_b.bias", e),
				Gate: w(p+"ffn_gate_exps.weight", e, f, m.Dim), Up: w(p+"ffn_up_exps.weight", e, f, m.Dim), Down: w(p+"ffn_down_exps.weight", e, m.Dim, f),
				SharedGate: opt(s > 0, p+"ffn_gate_shexp.weight", s, m.Dim), SharedUp: opt(s > 0, p+"ffn_up_shexp.weight", s, m.Dim),
				SharedDown: opt(s > 0, p+"ffn_down_shexp.weight", m.Dim, s)}
			ffn = func(x poot.Traced[brand]) poot.Traced[brand] { return families.RoutedFFN(b, x, mw, m.Routing) }
		}
		return families.Layer(b, x, norms, mixer, ffn)
	}
	sw := families.StackWeights[brand]{Embed: w("token_embd.weight", m.Vocab, m.Dim), Norm: w("output_norm.weight", m.Dim),
		Output: opt(!m.Tied, "output.weight", m.Vocab, m.Dim)}
	logits, hidden := families.Stack(step, sw, families.StackConfig{Layers: m.Layers, Eps: m.Eps}, layer)
	outs := []poot.Traced[brand]{logits}
	if spec.Shape.Hidden {
		outs = append(outs, hidden)
	}
	g, err := step.Finish(outs...)
	if err == nil {
		err = families.CheckCarries(family, spec.Carries, g)
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}
