package families

import (
	"math"
	"strings"

	"github.com/pootlabs/poot/ops"
)

// HFWriter is implemented by models that can describe themselves as a
// Hugging Face checkpoint: the config.json they would be read back from
// and the stored form of each tensor. It exists for round trips (a GGUF
// model written as a safetensors directory must give the same logits) and
// for tools that convert or synthesise checkpoints.
type HFWriter interface {
	// HFConfig returns the config.json object.
	HFConfig() (map[string]any, error)
	// HFTensor converts a canonical tensor's F32 values to what the
	// Hugging Face checkpoint stores under WeightMap.Stored (in place when
	// possible).
	HFTensor(name string, v []float32) []float32
}

// HFStyle says how a model is written as a Hugging Face checkpoint: the
// architecture and model type, and a hook for the family's own keys.
type HFStyle struct {
	Architecture string
	ModelType    string
	// NormOffset says the checkpoint stores norm weights as offsets from
	// one (Gemma), so writing subtracts the one a GGUF folded in.
	NormOffset bool
	// Keys adds the family's own keys to a config.json under construction.
	Keys func(d *Decoder, cfg map[string]any)
}

// HFConfig writes the standard decoder's config.json.
func (d *Decoder) HFConfig() (map[string]any, error) {
	if d.HF.ModelType == "" {
		return nil, &ConfigError{Source: d.Name, Key: "model_type", Err: ErrUnsupported, Detail: "the family writes no Hugging Face config"}
	}
	cfg := map[string]any{
		"architectures":           []any{d.HF.Architecture},
		"model_type":              d.HF.ModelType,
		"vocab_size":              d.Vocab,
		"hidden_size":             d.Dim,
		"intermediate_size":       d.FFN,
		"num_hidden_layers":       d.Layers,
		"num_attention_heads":     d.Heads,
		"num_key_value_heads":     d.KVHeads,
		"head_dim":                d.HeadDim,
		"rms_norm_eps":            d.Eps,
		"rope_theta":              d.Rope.Theta,
		"tie_word_embeddings":     d.Tied,
		"torch_dtype":             "float32",
		"max_position_embeddings": d.MaxContext,
	}
	if d.Norm == LayerNormKind {
		delete(cfg, "rms_norm_eps")
		cfg["layer_norm_eps"] = d.Eps
	}
	if d.Rope.Dims != d.HeadDim {
		cfg["partial_rotary_factor"] = float64(d.Rope.Dims) / float64(d.HeadDim)
	}
	if d.Rope.FreqFactors {
		return nil, &ConfigError{Source: d.Name, Key: "rope_freqs.weight", Err: ErrUnsupported, Detail: "GGUF frequency factors have no config.json form"}
	}
	if d.LayerKVHeads != nil {
		return nil, &ConfigError{Source: d.Name, Key: "attention.head_count_kv", Err: ErrUnsupported, Detail: "per-layer key/value head counts have no config.json form"}
	}
	if d.OutBias {
		if !d.QKVBias {
			return nil, &ConfigError{Source: d.Name, Key: "attention_bias", Err: ErrUnsupported, Detail: "an output bias without q/k/v biases has no config.json form"}
		}
		cfg["attention_bias"] = true
	}
	switch c := d.Rope.RopeConfig; c.Scaling {
	case ops.ScaleLinear:
		cfg["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": c.Factor}
	case ops.ScaleLlama3:
		cfg["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": c.Factor, "low_freq_factor": c.LowFreqFactor,
			"high_freq_factor": c.HighFreqFactor, "original_max_position_embeddings": c.OrigContext}
	case ops.ScaleYaRN:
		cfg["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": c.Factor, "original_max_position_embeddings": c.OrigContext,
			"beta_fast": c.BetaFast, "beta_slow": c.BetaSlow}
	}
	if d.HF.Keys != nil {
		d.HF.Keys(d, cfg)
	}
	return cfg, nil
}

// HFTensor converts a canonical tensor to its Hugging Face form: Q and K
// rows of a model with interleaved rope go back to "rotate half" order (the
// inverse of llama.cpp's permutation), and norm weights of a model whose
// Hugging Face form scales by (1 + w) lose the folded one.
func (d *Decoder) HFTensor(name string, v []float32) []float32 {
	l, role, ok := splitLayer(name)
	if !ok {
		role = name
	}
	if d.Rope.Layout == ops.RopeInterleaved && (role == "attn_q.weight" || role == "attn_k.weight" || role == "attn_q.bias" || role == "attn_k.bias") {
		return unpermuteRows(v, d.HeadDim, d.Rope.Dims, len(v)/rowsOf(d, l, role))
	}
	if d.HF.NormOffset && strings.HasSuffix(role, "norm.weight") {
		for i := range v {
			v[i]--
		}
	}
	return v
}

func rowsOf(d *Decoder, layer int, role string) int {
	if strings.HasPrefix(role, "attn_q") {
		return d.Heads * d.HeadDim
	}
	return d.LayerKV(layer) * d.HeadDim
}

// unpermuteRows reorders the rows of each head from adjacent rotary pairs
// (2i, 2i+1) to halves (i, i+n/2): HF row h·hd + j·n/2 + i holds GGUF row
// h·hd + 2i + j, for the n rotated rows of each head.
func unpermuteRows(v []float32, hd, n, width int) []float32 {
	out := make([]float32, len(v))
	copy(out, v)
	heads := len(v) / (hd * width)
	for h := range heads {
		for i := range n / 2 {
			for j := range 2 {
				dst := (h*hd + j*n/2 + i) * width
				src := (h*hd + 2*i + j) * width
				copy(out[dst:dst+width], v[src:src+width])
			}
		}
	}
	return out
}

// PreAttnScalar is Gemma's query_pre_attn_scalar for d: the s with
// attention scale 1/sqrt(s).
func PreAttnScalar(d *Decoder) float64 {
	if d.AttnScale == 0 {
		return float64(d.HeadDim)
	}
	return math.Round(1/(d.AttnScale*d.AttnScale)*1e6) / 1e6
}
