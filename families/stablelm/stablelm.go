// Package stablelm is Stability AI's StableLM family (StableLmForCausalLM,
// GGUF architecture stablelm: StableLM-3B-4E1T, StableLM 2 1.6B and
// Zephyr): Llama's layers with LayerNorms that carry biases, partial NeoX
// rotary embedding and optional Q/K/V biases (use_qkv_bias). A model
// without ffn_norm (use_parallel_residual) runs attention and the
// feed-forward side by side from one norm. StableLM 2 12B's per-head
// LayerNorms on queries and keys (qk_layernorm) are refused.
package stablelm

import (
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{Family: "stablelm", GGUFArchitectures: []string{"stablelm"},
	HFArchitectures: []string{"StableLmForCausalLM"}, HFModelTypes: []string{"stablelm"}, FromGGUF: FromGGUF, FromHF: FromHF}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	d, r := families.GGUFDecoder(f, "stablelm", ops.RopeNeoX)
	d.Eps = r.Float("attention.layer_norm_epsilon")
	_, ffnNorm := f.Tensor("blk.0.ffn_norm.weight")
	d.Parallel = !ffnNorm
	if d.QKNorm {
		r.Fail("blk.0.attn_q_norm.weight", families.ErrUnsupported, "per-head LayerNorms on queries and keys (qk_layernorm)")
	}
	return stable(d, r, families.GGUF)
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "stablelm", false)
	if !r.Has("partial_rotary_factor") {
		d.Rope.Dims = d.HeadDim / 4 // Hugging Face's default for StableLM
	}
	d.Eps = r.FloatOr("layer_norm_eps", 1e-5)
	d.QKVBias, d.Parallel, d.NormBias = r.BoolOr("use_qkv_bias", false), r.BoolOr("use_parallel_residual", false), true
	if r.BoolOr("qk_layernorm", false) {
		r.Fail("qk_layernorm", families.ErrUnsupported, "per-head LayerNorms on queries and keys")
	}
	return stable(d, r, families.Safetensors)
}

func stable(d *families.Decoder, r *families.Reader, c families.Container) (families.Model, error) {
	d.Weight = families.HFNames().In(c)
	d.Norm, d.SharedNorm = families.LayerNormKind, d.Parallel
	d.HF = families.HFStyle{Architecture: "StableLmForCausalLM", ModelType: "stablelm", Keys: func(d *families.Decoder, cfg map[string]any) {
		cfg["use_qkv_bias"], cfg["use_parallel_residual"] = d.QKVBias, d.Parallel
		families.PartialRotary(d, cfg)
	}}
	d.GGUF = families.GGUFStyle{Architecture: "stablelm"}
	return families.Finish(d, r)
}
