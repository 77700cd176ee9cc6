// Package mixtral is the Mixtral family: Mistral's decoder with a routed
// feed-forward (top-k of the router logits, softmax over the chosen
// experts). llama.cpp converts Mixtral to GGUF architecture "llama" with
// stacked expert tensors, so GGUF files are read by package llama (whose
// reader turns on the experts); this package reads config.json.
package mixtral

import (
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/llama"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row. It claims no GGUF architecture: see
// the package documentation.
var Row = families.Row{
	Family:          "mixtral",
	HFArchitectures: []string{"MixtralForCausalLM"},
	HFModelTypes:    []string{"mixtral"},
	FromGGUF:        FromGGUF,
	FromHF:          FromHF,
}

// FromGGUF reads a Mixtral GGUF (architecture "llama" with experts).
func FromGGUF(f *gguf.File) (families.Model, error) { return llama.FromGGUF(f) }

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "mixtral", false)
	d.MoE = &families.MoE{
		Experts: r.PositiveAtMost("num_local_experts", families.MaxExperts),
		Used:    r.Positive("num_experts_per_tok"),
		FFN:     r.Positive("intermediate_size"),
		Gating:  ops.TopKSoftmax,
	}
	if w := r.IntOr("sliding_window", 0); w > 0 && w < d.MaxContext {
		d.Windows = make([]int, d.Layers)
		for l := range d.Windows {
			d.Windows[l] = w
		}
	}
	d.Weight = families.HFNames().With(map[string]string{
		"ffn_gate_inp.weight":  "block_sparse_moe.gate.weight",
		"ffn_gate_exps.weight": "block_sparse_moe.experts.{e}.w1.weight",
		"ffn_up_exps.weight":   "block_sparse_moe.experts.{e}.w3.weight",
		"ffn_down_exps.weight": "block_sparse_moe.experts.{e}.w2.weight",
	}).In(families.Safetensors)
	d.Weight.Experts = d.MoE.Experts
	d.GGUF.Architecture = "llama"
	d.HF = hfStyle()
	return families.Finish(d, r)
}
