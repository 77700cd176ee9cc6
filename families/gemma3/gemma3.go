// Package gemma3 is the Gemma 3 family (and Gemma 2, which differs only in
// its settings): (1+w) RMSNorms, post-norms on both branches, embeddings
// scaled by sqrt(dim), GeGLU, interleaved sliding-window and global layers
// with two rope bases, per-head QK norms (Gemma 3) or attention and final
// logit soft caps (Gemma 2). It is a standard decoder.
//
// GGUF conversions fold Gemma's "1 + w" into the stored norm weights; the
// Hugging Face weights keep w, so a model read from config.json scales its
// norms by (1 + w).
package gemma3

import (
	"math"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{
	Family:            "gemma3",
	GGUFArchitectures: []string{"gemma3", "gemma2"},
	HFArchitectures:   []string{"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "Gemma2ForCausalLM"},
	HFModelTypes:      []string{"gemma3", "gemma3_text", "gemma2"},
	FromGGUF:          FromGGUF,
	FromHF:            FromHF,
}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	arch, err := f.Architecture()
	if err != nil {
		return nil, err
	}
	d, r := families.GGUFDecoder(f, arch, ops.RopeNeoX)
	gemma2 := arch == "gemma2"
	// llama.cpp's pattern: Gemma 3 has five local layers in six, Gemma 2
	// alternates starting with a local one.
	pattern := 2
	if !gemma2 {
		pattern = r.IntOr("attention.sliding_window_pattern", 6)
	}
	base := r.FloatOr("rope.freq_base_swa", 10000)
	// llama.cpp scales queries by 1/sqrt(dim/heads) for the 27B models
	// (which declare no query_pre_attn_scalar in GGUF), else 1/sqrt(head_dim).
	if d.Heads > 0 && ((gemma2 && d.Layers == 46) || (!gemma2 && d.Layers == 62)) {
		d.AttnScale = 1 / math.Sqrt(float64(d.Dim/d.Heads))
	}
	setup(d, r, r.Int("attention.sliding_window"), pattern, base,
		r.FloatOr("attn_logit_softcapping", 0), r.FloatOr("final_logit_softcapping", 0))
	d.Weight = names().In(families.GGUF)
	d.HF, d.GGUF = hfStyle(gemma2), ggufStyle(gemma2)
	return families.Finish(d, r)
}

// FromHF configures a model from a config.json (Gemma3ForCausalLM, the
// text_config of Gemma3ForConditionalGeneration, or Gemma2ForCausalLM).
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "gemma3", true)
	gemma2 := r.StringOr("model_type", "") == "gemma2"
	pattern := r.IntOr("sliding_window_pattern", 6)
	if gemma2 {
		pattern = 2
	}
	d.AttnScale = 1 / math.Sqrt(r.FloatOr("query_pre_attn_scalar", float64(d.HeadDim)))
	d.NormPlusOne = true
	setup(d, r, r.Int("sliding_window"), pattern, r.FloatOr("rope_local_base_freq", 10000),
		r.FloatOr("attn_logit_softcapping", 0), r.FloatOr("final_logit_softcapping", 0))
	if types := r.Strings("layer_types"); types != nil {
		if len(types) != d.Layers {
			r.Fail("layer_types", families.ErrInconsistent, "%d entries for %d layers", len(types), d.Layers)
		}
		// layer_types, when given, decides every layer (the pattern is
		// the older way to say it).
		window := r.IntOr("sliding_window", 0)
		for l := range min(len(types), d.Layers) {
			switch types[l] {
			case "full_attention":
				d.Windows[l] = 0
			case "sliding_attention":
				d.Windows[l] = window
			default:
				r.Fail("layer_types", families.ErrUnsupported, "layer %d is %q", l, types[l])
			}
		}
	}
	d.QKNorm = !gemma2
	d.Weight = names().In(families.Safetensors)
	d.HF, d.GGUF = hfStyle(gemma2), ggufStyle(gemma2)
	return families.Finish(d, r)
}

// setup applies what both containers share: window pattern, local rope,
// embedding scale, GeGLU, post-norms and soft caps.
func setup(d *families.Decoder, r *families.Reader, window, pattern int, localBase, attnCap, finalCap float64) {
	d.Name = "gemma3"
	if pattern < 1 {
		r.Fail("sliding_window_pattern", families.ErrWrongType, "pattern %d", pattern)
		pattern = 1
	}
	d.Windows = make([]int, d.Layers)
	for l := range d.Windows {
		if (l+1)%pattern != 0 {
			d.Windows[l] = window
		}
	}
	local := d.Rope
	local.RopeConfig = ops.RopeConfig{Dims: d.Rope.Dims, Theta: localBase}
	d.LocalRope = &local
	d.EmbedScale = math.Sqrt(float64(d.Dim))
	d.Act = families.GELUTanh
	d.PostNorms = true
	d.AttnSoftCap, d.FinalSoftCap = attnCap, finalCap
}

func names() families.WeightMap {
	return families.HFNames().With(map[string]string{
		"post_attention_norm.weight": "post_attention_layernorm.weight",
		"ffn_norm.weight":            "pre_feedforward_layernorm.weight",
		"post_ffw_norm.weight":       "post_feedforward_layernorm.weight",
	})
}
