package families

import (
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// GGUFWriter is implemented by models that can describe themselves as a
// GGUF file: the metadata a family's GGUF reader reads back to the same
// model. With Tensors it is what a synthesiser needs to write a random
// checkpoint of any family.
type GGUFWriter interface {
	GGUFMetadata() ([]gguf.KV, error)
}

// GGUFStyle says how a model is written as GGUF: its architecture name and
// a hook for the family's own keys.
type GGUFStyle struct {
	Architecture string
	Keys         func(d *Decoder, put func(key string, v gguf.Value))
}

// GGUFMetadata writes the keys GGUFDecoder reads, under the model's GGUF
// architecture, followed by the family's own. It describes the model, not
// its tensors: converting real Hugging Face weights to GGUF also needs
// llama.cpp's Q/K row permutation for "llama" and Gemma's folded norms,
// which random weights (synthesis) do not care about. Llama 3 and NTK
// frequency scalings, which GGUF stores as a rope_freqs tensor, are an
// ErrUnsupported ConfigError.
func (d *Decoder) GGUFMetadata() ([]gguf.KV, error) {
	arch := d.GGUF.Architecture
	unsupported := func(key, detail string) ([]gguf.KV, error) {
		return nil, &ConfigError{Source: d.Name, Key: key, Err: ErrUnsupported, Detail: detail}
	}
	switch {
	case arch == "":
		return unsupported("general.architecture", "the family writes no GGUF metadata")
	case d.Rope.Scaling == ops.ScaleLlama3 || d.Rope.Scaling == ops.ScaleNTK:
		return unsupported("rope.scaling.type", "this scaling is stored as a rope_freqs tensor in GGUF")
	}
	kvs := []gguf.KV{{Key: gguf.KeyArchitecture, Value: gguf.ValueOf(arch)}}
	put := func(key string, v gguf.Value) { kvs = append(kvs, gguf.KV{Key: arch + "." + key, Value: v}) }
	u := func(n int) gguf.Value { return gguf.ValueOf(uint32(n)) }
	f := func(x float64) gguf.Value { return gguf.ValueOf(float32(x)) }
	if d.MaxContext > 0 {
		put("context_length", u(d.MaxContext))
	}
	put("embedding_length", u(d.Dim))
	put("block_count", u(d.Layers))
	if d.FFN > 0 {
		put("feed_forward_length", u(d.FFN))
	}
	put("attention.head_count", u(d.Heads))
	if d.LayerKVHeads != nil {
		kv := make([]uint32, len(d.LayerKVHeads))
		for l, n := range d.LayerKVHeads {
			kv[l] = uint32(n)
		}
		put("attention.head_count_kv", gguf.ArrayOf(kv))
	} else {
		put("attention.head_count_kv", u(d.KVHeads))
	}
	put("attention.key_length", u(d.HeadDim))
	put("attention.value_length", u(d.HeadDim))
	if d.Norm == LayerNormKind {
		put("attention.layer_norm_epsilon", f(d.Eps))
	} else {
		put("attention.layer_norm_rms_epsilon", f(d.Eps))
	}
	put("rope.freq_base", f(d.Rope.Theta))
	put("rope.dimension_count", u(d.Rope.Dims))
	put("vocab_size", u(d.Vocab))
	switch c := d.Rope.RopeConfig; c.Scaling {
	case ops.ScaleLinear:
		put("rope.scaling.type", gguf.ValueOf("linear"))
		put("rope.scaling.factor", f(c.Factor))
	case ops.ScaleYaRN:
		put("rope.scaling.type", gguf.ValueOf("yarn"))
		put("rope.scaling.factor", f(c.Factor))
		put("rope.scaling.original_context_length", u(c.OrigContext))
	}
	if m := d.MoE; m != nil {
		put("expert_count", u(m.Experts))
		put("expert_used_count", u(m.Used))
		put("expert_feed_forward_length", u(m.FFN))
	}
	if d.GGUF.Keys != nil {
		d.GGUF.Keys(d, put)
	}
	return kvs, nil
}
