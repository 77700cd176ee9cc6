// Package llama is the Llama family and its close relatives: Llama 2, 3 and
// 3.1–3.3 (rope scaling), Mistral, Qwen2 (QKV biases) and Qwen3 (per-head
// QK norms), dense or, with experts in the file, Mixtral-style MoE. It is a
// standard decoder: a config reader and a weight map over
// families.Decoder.
//
// RoPE: GGUF "llama" files hold Q and K rows permuted to adjacent pairs
// (llama.cpp's converter does it) and run with the interleaved layout;
// qwen2 and qwen3 GGUFs, and every Hugging Face checkpoint, run with NeoX.
package llama

import (
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{
	Family:            "llama",
	GGUFArchitectures: []string{"llama", "mistral", "qwen2", "qwen3"},
	HFArchitectures:   []string{"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"},
	HFModelTypes:      []string{"llama", "mistral", "qwen2", "qwen3"},
	FromGGUF:          FromGGUF,
	FromHF:            FromHF,
}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	arch, err := f.Architecture()
	if err != nil {
		return nil, err
	}
	layout := ops.RopeNeoX
	if arch == "llama" || arch == "mistral" {
		layout = ops.RopeInterleaved
	}
	d, r := families.GGUFDecoder(f, arch, layout)
	d.Name = "llama"
	d.Weight = names(d).In(families.GGUF)
	if d.MoE != nil {
		d.Name = "mixtral"
		d.MoE.Gating = ops.TopKSoftmax // Mixtral's router
	}
	d.HF = hfStyle(arch, d)
	return families.Finish(d, r)
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "llama", false)
	switch mt := r.StringOr("model_type", "llama"); mt {
	case "qwen2":
		d.QKVBias = true
	case "qwen3":
		d.QKNorm = true
	case "mistral":
		if w := r.IntOr("sliding_window", 0); w > 0 && w < d.MaxContext {
			d.Windows = make([]int, d.Layers)
			for l := range d.Windows {
				d.Windows[l] = w
			}
		}
	}
	if r.BoolOr("attention_bias", false) {
		d.QKVBias, d.OutBias = true, true // q, k, v and o projections all have biases
	}
	d.Weight = names(d).In(families.Safetensors)
	mt := r.StringOr("model_type", "llama")
	d.HF = hfStyle(mt, d)
	d.GGUF.Architecture = map[string]string{"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3"}[mt]
	return families.Finish(d, r)
}

func names(d *families.Decoder) families.WeightMap {
	m := families.HFNames()
	if d.MoE != nil {
		m = m.With(map[string]string{
			"ffn_gate_inp.weight":  "block_sparse_moe.gate.weight",
			"ffn_gate_exps.weight": "block_sparse_moe.experts.{e}.w1.weight",
			"ffn_up_exps.weight":   "block_sparse_moe.experts.{e}.w3.weight",
			"ffn_down_exps.weight": "block_sparse_moe.experts.{e}.w2.weight",
		})
		m.Experts = d.MoE.Experts
	}
	return m
}
