package families

import (
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// GGUFDecoder reads the hyperparameters every Llama-like GGUF stores under
// its architecture prefix (context_length, embedding_length, block_count,
// feed_forward_length, attention.head_count[_kv], attention.key_length,
// attention.layer_norm_rms_epsilon, rope.freq_base, rope.dimension_count,
// rope.scaling.*, expert_*), and what the tensor table says: the vocabulary
// (token_embd rows), a tied head (no output.weight), Llama 3.1 frequency
// factors (rope_freqs.weight), optional biases (attention, norms,
// feed-forward, head), a fused attn_qkv and the norms of parallel layers.
// A file that stores attention.layer_norm_epsilon rather than the RMS key
// has LayerNorms, as llama.cpp reads it. The family says what the tensor
// table cannot (Parallel, Ungated, Act), adjusts the rest and calls
// Validate. Errors are *ConfigError values naming the key.
func GGUFDecoder(f *gguf.File, arch string, layout ops.RopeLayout) (*Decoder, *Reader) {
	r := GGUFReader(f, arch)
	d := &Decoder{Name: arch, Weight: WeightMap{Container: GGUF}, GGUF: GGUFStyle{Architecture: arch}}
	d.Dim = r.Positive("embedding_length")
	// The layer count is checked against the tensor table before anything
	// is sized by it.
	d.Layers = r.PositiveAtMost("block_count", MaxLayers)
	if d.Layers > 0 && !checkLayerTensors(f, r, arch, "block_count", d.Layers) {
		d.Layers = 0
	}
	d.Heads = r.Positive("attention.head_count")
	kv := r.IntOrPerLayer("attention.head_count_kv", max(d.Layers, 1), d.Heads)
	d.KVHeads = kv[0]
	for _, n := range kv {
		if n != d.KVHeads {
			d.LayerKVHeads = kv // per-layer counts; Validate checks each
			break
		}
	}
	if d.Heads > 0 {
		d.HeadDim = r.IntOr("attention.key_length", d.Dim/d.Heads)
	}
	if v := r.IntOr("attention.value_length", d.HeadDim); v != d.HeadDim {
		r.Fail("attention.value_length", ErrUnsupported, "value length %d differs from key length %d", v, d.HeadDim)
	}
	d.FFN = r.IntOr("feed_forward_length", 0)
	d.Eps = r.FloatOr("attention.layer_norm_rms_epsilon", 1e-5)
	if !r.Has("attention.layer_norm_rms_epsilon") && r.Has("attention.layer_norm_epsilon") {
		d.Norm, d.Eps = LayerNormKind, r.Float("attention.layer_norm_epsilon")
	}
	d.MaxContext = r.IntOr("context_length", 0)
	d.Rope = Rope{Layout: layout, RopeConfig: ops.RopeConfig{
		Theta: r.FloatOr("rope.freq_base", 10000),
		Dims:  r.IntOr("rope.dimension_count", d.HeadDim),
	}}
	switch s := r.StringOr("rope.scaling.type", "none"); s {
	case "none", "":
	case "linear":
		d.Rope.Scaling, d.Rope.Factor = ops.ScaleLinear, r.Float("rope.scaling.factor")
	case "yarn":
		d.Rope.Scaling, d.Rope.Factor = ops.ScaleYaRN, r.Float("rope.scaling.factor")
		d.Rope.OrigContext = r.Int("rope.scaling.original_context_length")
		d.Rope.BetaFast = r.FloatOr("rope.scaling.yarn_beta_fast", 0)
		d.Rope.BetaSlow = r.FloatOr("rope.scaling.yarn_beta_slow", 0)
	default:
		r.Fail("rope.scaling.type", ErrUnsupported, "rope scaling %q", s)
	}
	if r.Has("expert_count") && r.IntOr("expert_count", 0) > 0 {
		d.MoE = &MoE{Experts: r.PositiveAtMost("expert_count", MaxExperts), Used: r.Positive("expert_used_count"), FFN: r.IntOr("expert_feed_forward_length", d.FFN)}
	}
	emb, ok := f.Tensor("token_embd.weight")
	switch {
	case !ok:
		if r.err == nil {
			r.err = &TensorError{Model: arch, Tensor: "token_embd.weight", Err: ErrMissing, Detail: "the file has no token embedding"}
		}
	case len(emb.Dims) != 2 || int(emb.Dims[0]) != d.Dim:
		r.Fail("embedding_length", ErrInconsistent, "token_embd.weight has dims %v, want [%d, vocab]", emb.Dims, d.Dim)
	default:
		d.Vocab = int(emb.Dims[1])
		if v := r.IntOr("vocab_size", d.Vocab); v != d.Vocab {
			r.Fail("vocab_size", ErrInconsistent, "vocab_size %d, token_embd.weight has %d rows", v, d.Vocab)
		}
	}
	_, hasOut := f.Tensor("output.weight")
	d.Tied = !hasOut
	_, d.Rope.FreqFactors = f.Tensor("rope_freqs.weight")
	has := func(name string) bool { _, ok := f.Tensor(name); return ok }
	d.FusedQKV = has("blk.0.attn_qkv.weight") && !has("blk.0.attn_q.weight")
	d.QKVBias = has("blk.0.attn_q.bias") || (d.FusedQKV && has("blk.0.attn_qkv.bias"))
	d.OutBias = has("blk.0.attn_output.bias")
	d.QKNorm = has("blk.0.attn_q_norm.weight")
	d.NormBias = d.Norm == LayerNormKind && has("blk.0.attn_norm.bias")
	d.FFNBias = has("blk.0.ffn_up.bias")
	d.HeadBias = has("output.bias")
	return d, r
}

// HFDecoder reads the hyperparameters every Llama-like config.json stores
// (hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, head_dim, intermediate_size, rms_norm_eps,
// rope_theta, rope_scaling, vocab_size, max_position_embeddings,
// tie_word_embeddings with the family's default) and gives the model the
// Hugging Face weight map with rotary layout NeoX: Hugging Face keeps Q and
// K in "rotate half" order (llama.cpp's converter permutes Llama's rows to
// adjacent pairs for its NORM rope, so the same weights run with the
// interleaved layout from GGUF and the NeoX layout from safetensors).
func HFDecoder(cfg map[string]any, name string, tiedDefault bool) (*Decoder, *Reader) {
	r := HFReader(cfg)
	d := &Decoder{Name: name, Weight: HFNames().In(Safetensors)}
	d.Dim = r.Positive("hidden_size")
	d.Layers = r.PositiveAtMost("num_hidden_layers", MaxLayers)
	d.Heads = r.Positive("num_attention_heads")
	d.KVHeads = r.IntOr("num_key_value_heads", d.Heads)
	if d.Heads > 0 {
		d.HeadDim = r.IntOr("head_dim", d.Dim/d.Heads)
	}
	d.FFN = r.IntOr("intermediate_size", 0)
	d.Eps = r.FloatOr("rms_norm_eps", 1e-6)
	d.Vocab = r.Positive("vocab_size")
	d.MaxContext = r.IntOr("max_position_embeddings", 0)
	d.Tied = r.BoolOr("tie_word_embeddings", tiedDefault)
	d.Rope = Rope{Layout: ops.RopeNeoX, RopeConfig: ops.RopeConfig{
		Theta: r.FloatOr("rope_theta", 10000),
		Dims:  d.HeadDim,
	}}
	if pf := r.FloatOr("partial_rotary_factor", 1); pf != 1 {
		d.Rope.Dims = int(float64(d.HeadDim) * pf)
	}
	d.Rope.RopeConfig = HFRopeScaling(r, "rope_scaling", d.Rope.RopeConfig)
	return d, r
}

// PartialRotary writes partial_rotary_factor whatever its value: an
// HFStyle.Keys hook for families whose config.json default is not 1.
func PartialRotary(d *Decoder, cfg map[string]any) {
	cfg["partial_rotary_factor"] = float64(d.Rope.Dims) / float64(d.HeadDim)
}

// HFRopeScaling applies a config.json rope_scaling object (under key) to c:
// linear, llama3 and yarn scalings; "default" and absence leave c alone.
func HFRopeScaling(r *Reader, key string, c ops.RopeConfig) ops.RopeConfig {
	if !r.Has(key) {
		return c
	}
	kind := r.StringOr(key+".rope_type", r.StringOr(key+".type", "default"))
	switch kind {
	case "default":
	case "linear":
		c.Scaling, c.Factor = ops.ScaleLinear, r.Float(key+".factor")
	case "llama3":
		c.Scaling, c.Factor = ops.ScaleLlama3, r.Float(key+".factor")
		c.LowFreqFactor = r.Float(key + ".low_freq_factor")
		c.HighFreqFactor = r.Float(key + ".high_freq_factor")
		c.OrigContext = r.Int(key + ".original_max_position_embeddings")
	case "yarn":
		c.Scaling, c.Factor = ops.ScaleYaRN, r.Float(key+".factor")
		c.OrigContext = r.Int(key + ".original_max_position_embeddings")
		c.BetaFast = r.FloatOr(key+".beta_fast", 0)
		c.BetaSlow = r.FloatOr(key+".beta_slow", 0)
		c.AttnFactor = r.FloatOr(key+".attention_factor", 0)
	default:
		r.Fail(key+".rope_type", ErrUnsupported, "rope scaling %q", kind)
	}
	return c
}

// Finish returns d once r and d's own checks pass: the last line of a
// config reader.
func Finish(d *Decoder, r *Reader) (Model, error) {
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}
