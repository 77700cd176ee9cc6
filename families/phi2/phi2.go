// Package phi2 is Microsoft's Phi-2 (PhiForCausalLM, GGUF architecture
// phi2): one LayerNorm with bias per layer feeding attention and an
// ungated GELU feed-forward side by side, x + attn(norm(x)) + ffn(norm(x)),
// partial NeoX rotary embedding, biases on every projection and on the
// head. GGUF files store Q, K and V fused (attn_qkv) or apart; the
// standard decoder reads either.
package phi2

import (
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{Family: "phi2", GGUFArchitectures: []string{"phi2"},
	HFArchitectures: []string{"PhiForCausalLM"}, HFModelTypes: []string{"phi"}, FromGGUF: FromGGUF, FromHF: FromHF}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	d, r := families.GGUFDecoder(f, "phi2", ops.RopeNeoX)
	d.Eps = r.Float("attention.layer_norm_epsilon")
	return phi(d, r, families.GGUF)
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "phi2", false)
	if !r.Has("partial_rotary_factor") {
		d.Rope.Dims = d.HeadDim / 2 // Hugging Face's default for Phi
	}
	if r.BoolOr("qk_layernorm", false) {
		r.Fail("qk_layernorm", families.ErrUnsupported, "LayerNorms on queries and keys")
	}
	d.Eps = r.FloatOr("layer_norm_eps", 1e-5)
	d.QKVBias, d.OutBias, d.FFNBias, d.NormBias, d.HeadBias = true, true, true, true, true
	return phi(d, r, families.Safetensors)
}

func phi(d *families.Decoder, r *families.Reader, c families.Container) (families.Model, error) {
	d.Weight = families.HFNames().With(map[string]string{
		"attn_output.weight": "self_attn.dense.weight", "attn_output.bias": "self_attn.dense.bias",
		"ffn_up.weight": "mlp.fc1.weight", "ffn_up.bias": "mlp.fc1.bias",
		"ffn_down.weight": "mlp.fc2.weight", "ffn_down.bias": "mlp.fc2.bias"}).In(c)
	d.Weight.Global["output_norm.weight"], d.Weight.Global["output_norm.bias"] = "model.final_layernorm.weight", "model.final_layernorm.bias"
	d.Norm, d.Parallel, d.SharedNorm, d.Ungated, d.Act = families.LayerNormKind, true, true, true, families.GELUTanh
	d.HF = families.HFStyle{Architecture: "PhiForCausalLM", ModelType: "phi", Keys: families.PartialRotary}
	d.GGUF = families.GGUFStyle{Architecture: "phi2"}
	return families.Finish(d, r)
}
