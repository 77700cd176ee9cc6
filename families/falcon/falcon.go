// Package falcon is TII's Falcon family (FalconForCausalLM, GGUF
// architecture falcon: Falcon-7B, Falcon-RW, Falcon3's predecessors): one
// LayerNorm with bias feeding attention and an ungated GELU feed-forward
// side by side, x + attn(norm(x)) + ffn(norm(x)), full NeoX rotary
// embedding, one fused QKV projection, no other biases, multi-query or
// grouped key/value heads.
//
// Hugging Face stores query_key_value by key/value group: each group's
// query heads, then its key head, then its value head; GGUF (llama.cpp's
// converter) stores all queries, then all keys, then all values. The
// weight map reorders the rows at load. Falcon-40B's second norm
// (new_decoder_architecture, GGUF attn_norm_2), ALiBi and sequential
// layers (parallel_attn false) are refused.
package falcon

import (
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{Family: "falcon", GGUFArchitectures: []string{"falcon"},
	HFArchitectures: []string{"FalconForCausalLM"}, HFModelTypes: []string{"falcon"}, FromGGUF: FromGGUF, FromHF: FromHF}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	d, r := families.GGUFDecoder(f, "falcon", ops.RopeNeoX)
	d.Eps = r.Float("attention.layer_norm_epsilon")
	if _, ok := f.Tensor("blk.0.attn_norm_2.weight"); ok {
		r.Fail("blk.0.attn_norm_2.weight", families.ErrUnsupported, "Falcon-40B's second norm")
	}
	return falcon(d, r, families.GGUF)
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "falcon", true)
	d.Eps, d.FFN = r.FloatOr("layer_norm_epsilon", 1e-5), r.IntOr("ffn_hidden_size", 4*d.Dim)
	d.KVHeads = r.IntOr("num_kv_heads", d.Heads)
	if r.BoolOr("multi_query", true) && !r.Has("num_kv_heads") {
		d.KVHeads = 1
	}
	for _, k := range []string{"new_decoder_architecture", "alibi", "bias"} {
		if r.BoolOr(k, false) {
			r.Fail(k, families.ErrUnsupported, "Falcon with %s", k)
		}
	}
	if !r.BoolOr("parallel_attn", true) {
		r.Fail("parallel_attn", families.ErrUnsupported, "Falcon with sequential layers")
	}
	return falcon(d, r, families.Safetensors)
}

func falcon(d *families.Decoder, r *families.Reader, c families.Container) (families.Model, error) {
	d.Norm, d.NormBias, d.FusedQKV, d.Parallel, d.SharedNorm = families.LayerNormKind, true, true, true, true
	d.Ungated, d.Act = true, families.GELUTanh
	var perm []int // canonical row (part, head, j) is stored row (group, slot, j)
	if d.KVHeads > 0 && d.Heads%d.KVHeads == 0 {
		per, hd := d.Heads/d.KVHeads, d.HeadDim
		for h := range d.Heads {
			for j := range hd {
				perm = append(perm, ((h/per)*(per+2)+h%per)*hd+j)
			}
		}
		for slot := range 2 {
			for g := range d.KVHeads {
				for j := range hd {
					perm = append(perm, (g*(per+2)+per+slot)*hd+j)
				}
			}
		}
	}
	d.Weight = families.WeightMap{Container: c, LayerPrefix: "transformer.h.",
		Global: map[string]string{"token_embd.weight": "transformer.word_embeddings.weight", "output.weight": "lm_head.weight",
			"output_norm.weight": "transformer.ln_f.weight", "output_norm.bias": "transformer.ln_f.bias"},
		Layer: map[string]string{"attn_norm.weight": "input_layernorm.weight", "attn_norm.bias": "input_layernorm.bias",
			"attn_output.weight": "self_attention.dense.weight",
			"ffn_up.weight":      "mlp.dense_h_to_4h.weight", "ffn_down.weight": "mlp.dense_4h_to_h.weight"},
		Views: map[string]load.Source{"attn_qkv.weight": {Tensor: "self_attention.query_key_value.weight", RowOrder: perm}}}
	d.HF = families.HFStyle{Architecture: "FalconForCausalLM", ModelType: "falcon", Keys: func(d *families.Decoder, cfg map[string]any) {
		cfg["num_kv_heads"], cfg["layer_norm_epsilon"], cfg["parallel_attn"], cfg["multi_query"] = d.KVHeads, d.Eps, true, d.KVHeads == 1
		cfg["ffn_hidden_size"] = d.FFN
		cfg["new_decoder_architecture"], cfg["bias"], cfg["alibi"] = false, false, false
	}}
	d.GGUF = families.GGUFStyle{Architecture: "falcon"}
	return families.Finish(d, r)
}
