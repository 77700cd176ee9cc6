// Package qwen3moe is the Qwen3-MoE family: Qwen3's decoder (per-head QK
// norms, NeoX rope) with a routed feed-forward in every layer (softmax over
// all experts, top-k, weights renormalised). It is a standard decoder.
package qwen3moe

import (
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{
	Family:            "qwen3moe",
	GGUFArchitectures: []string{"qwen3moe"},
	HFArchitectures:   []string{"Qwen3MoeForCausalLM"},
	HFModelTypes:      []string{"qwen3_moe"},
	FromGGUF:          FromGGUF,
	FromHF:            FromHF,
}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	d, r := families.GGUFDecoder(f, "qwen3moe", ops.RopeNeoX)
	if d.MoE == nil {
		r.Fail("expert_count", families.ErrMissing, "a qwen3moe file needs experts")
	}
	return finish(d, r, families.GGUF)
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "qwen3moe", false)
	d.MoE = &families.MoE{
		Experts:     r.PositiveAtMost("num_experts", families.MaxExperts),
		Used:        r.Positive("num_experts_per_tok"),
		FFN:         r.Positive("moe_intermediate_size"),
		Renormalize: r.BoolOr("norm_topk_prob", true),
	}
	if s := r.IntOr("decoder_sparse_step", 1); s != 1 {
		r.Fail("decoder_sparse_step", families.ErrUnsupported, "dense layers between sparse ones (step %d)", s)
	}
	if l := r.Ints("mlp_only_layers"); len(l) > 0 {
		r.Fail("mlp_only_layers", families.ErrUnsupported, "dense layers %v", l)
	}
	return finish(d, r, families.Safetensors)
}

func finish(d *families.Decoder, r *families.Reader, c families.Container) (families.Model, error) {
	d.Name = "qwen3moe"
	d.QKNorm = true
	if d.MoE != nil {
		d.MoE.Gating = ops.SoftmaxTopK
		if c == families.GGUF {
			d.MoE.Renormalize = true // llama.cpp normalises Qwen3-MoE's weights
		}
	}
	d.Weight = families.HFNames().With(map[string]string{
		"ffn_gate_inp.weight":  "mlp.gate.weight",
		"ffn_gate_exps.weight": "mlp.experts.{e}.gate_proj.weight",
		"ffn_up_exps.weight":   "mlp.experts.{e}.up_proj.weight",
		"ffn_down_exps.weight": "mlp.experts.{e}.down_proj.weight",
	}).In(c)
	if d.MoE != nil {
		d.Weight.Experts = d.MoE.Experts
	}
	d.GGUF.Architecture = "qwen3moe"
	d.HF = families.HFStyle{Architecture: "Qwen3MoeForCausalLM", ModelType: "qwen3_moe", Keys: func(d *families.Decoder, cfg map[string]any) {
		cfg["num_experts"], cfg["num_experts_per_tok"] = d.MoE.Experts, d.MoE.Used
		cfg["moe_intermediate_size"], cfg["norm_topk_prob"] = d.MoE.FFN, d.MoE.Renormalize
	}}
	return families.Finish(d, r)
}
