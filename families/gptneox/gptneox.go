// Package gptneox is EleutherAI's GPT-NeoX family (GPTNeoXForCausalLM,
// GGUF architecture gptneox: Pythia, GPT-NeoX-20B, RedPajama-INCITE):
// LayerNorms with biases, one fused QKV projection with bias, partial NeoX
// rotary embedding (rotary_pct), an ungated GELU feed-forward with biases,
// and parallel residuals from two norms, x + attn(norm1(x)) +
// ffn(norm2(x)), unless use_parallel_residual is false.
//
// Hugging Face stores query_key_value head by head, [heads, 3, head dim]
// rows; GGUF (llama.cpp's converter) stores all queries, then all keys,
// then all values. The weight map reorders the rows at load.
package gptneox

import (
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{Family: "gptneox", GGUFArchitectures: []string{"gptneox"},
	HFArchitectures: []string{"GPTNeoXForCausalLM"}, HFModelTypes: []string{"gpt_neox"}, FromGGUF: FromGGUF, FromHF: FromHF}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	d, r := families.GGUFDecoder(f, "gptneox", ops.RopeNeoX)
	d.Eps, d.Parallel = r.Float("attention.layer_norm_epsilon"), r.BoolOr("use_parallel_residual", true)
	if !r.Has("use_parallel_residual") {
		r.Fail("use_parallel_residual", families.ErrMissing, "llama.cpp requires it")
	}
	return neox(d, r, families.GGUF)
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "gptneox", false)
	d.Eps, d.Parallel = r.FloatOr("layer_norm_eps", 1e-5), r.BoolOr("use_parallel_residual", true)
	d.Rope.Theta = r.FloatOr("rotary_emb_base", d.Rope.Theta)
	d.Rope.Dims = int(float64(d.HeadDim) * r.FloatOr("rotary_pct", r.FloatOr("partial_rotary_factor", 1)))
	d.FusedQKV, d.QKVBias, d.OutBias, d.FFNBias, d.NormBias = true, true, true, true, true
	if d.KVHeads != d.Heads {
		r.Fail("num_key_value_heads", families.ErrUnsupported, "GPT-NeoX with grouped key/value heads")
	}
	return neox(d, r, families.Safetensors)
}

func neox(d *families.Decoder, r *families.Reader, c families.Container) (families.Model, error) {
	d.Norm, d.Ungated, d.Act = families.LayerNormKind, true, families.GELUTanh
	perm := make([]int, 3*d.Heads*d.HeadDim) // canonical row (part, head, j) is stored row (head, part, j)
	for i := range perm {
		part, h, j := i/(d.Heads*d.HeadDim), i/d.HeadDim%d.Heads, i%d.HeadDim
		perm[i] = (h*3+part)*d.HeadDim + j
	}
	d.Weight = families.WeightMap{Container: c, LayerPrefix: "gpt_neox.layers.",
		Global: map[string]string{"token_embd.weight": "gpt_neox.embed_in.weight", "output.weight": "embed_out.weight",
			"output_norm.weight": "gpt_neox.final_layer_norm.weight", "output_norm.bias": "gpt_neox.final_layer_norm.bias"},
		Layer: map[string]string{"attn_norm.weight": "input_layernorm.weight", "attn_norm.bias": "input_layernorm.bias",
			"ffn_norm.weight": "post_attention_layernorm.weight", "ffn_norm.bias": "post_attention_layernorm.bias",
			"attn_output.weight": "attention.dense.weight", "attn_output.bias": "attention.dense.bias",
			"ffn_up.weight": "mlp.dense_h_to_4h.weight", "ffn_up.bias": "mlp.dense_h_to_4h.bias",
			"ffn_down.weight": "mlp.dense_4h_to_h.weight", "ffn_down.bias": "mlp.dense_4h_to_h.bias"},
		Views: map[string]load.Source{"attn_qkv.weight": {Tensor: "attention.query_key_value.weight", RowOrder: perm},
			"attn_qkv.bias": {Tensor: "attention.query_key_value.bias", RowOrder: perm}}}
	d.HF = families.HFStyle{Architecture: "GPTNeoXForCausalLM", ModelType: "gpt_neox", Keys: func(d *families.Decoder, cfg map[string]any) {
		cfg["use_parallel_residual"], cfg["rotary_emb_base"] = d.Parallel, d.Rope.Theta
		cfg["rotary_pct"] = float64(d.Rope.Dims) / float64(d.HeadDim)
	}}
	d.GGUF = families.GGUFStyle{Architecture: "gptneox", Keys: func(d *families.Decoder, put func(string, gguf.Value)) {
		put("use_parallel_residual", gguf.ValueOf(d.Parallel))
	}}
	return families.Finish(d, r)
}
