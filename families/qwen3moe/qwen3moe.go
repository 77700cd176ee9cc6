// Package qwen3moe is the Qwen3-MoE family: Qwen3's decoder (per-head QK
// norms, NeoX rope) with a routed feed-forward in every layer (softmax over
// all experts, top-k, weights renormalised). It is a standard decoder.
package qwen3moe

import (
	"fmt"
	"slices"

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
	// Dense layers among the routed ones are told by the tensor table: a
	// layer without a router has a plain gated FFN.
	routed := make([]bool, d.Layers)
	dense := false
	for l := range routed {
		_, routed[l] = f.Tensor(fmt.Sprintf("blk.%d.ffn_gate_inp.weight", l))
		dense = dense || !routed[l]
	}
	if dense {
		d.MoELayers = routed
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
	// Hugging Face's rule: layer l is routed unless it is listed in
	// mlp_only_layers, and only every decoder_sparse_step-th layer is.
	step := r.IntOr("decoder_sparse_step", 1)
	if step < 1 {
		r.Fail("decoder_sparse_step", families.ErrInconsistent, "step %d must be positive", step)
		step = 1
	}
	only := r.Ints("mlp_only_layers")
	if step != 1 || len(only) > 0 {
		d.MoELayers = make([]bool, d.Layers)
		for l := range d.MoELayers {
			d.MoELayers[l] = !slices.Contains(only, l) && (l+1)%step == 0
		}
		for _, l := range only {
			if l < 0 || l >= d.Layers {
				r.Fail("mlp_only_layers", families.ErrInconsistent, "layer %d of %d", l, d.Layers)
			}
		}
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
	d.HF = hfStyle()
	return families.Finish(d, r)
}
