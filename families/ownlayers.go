package families

import (
	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
)

// This file holds what families whose layers are not the standard
// decoder's (olmo2, phi3, granite) share: the Trace every such family
// writes around its own layer function, and the attention mixer after its
// projections, for layers that project or normalise queries and keys in
// their own way (a fused QKV matrix, a norm over the whole projection).

// TraceLayers is the body of a family's Trace when the family writes its
// own layers: it checks spec's shape against schema, records the step on
// a fresh builder of brand B through body (which returns the logits and
// the final hidden states), finishes the graph with the hidden states as
// a second output when the shape asks for them, and checks the carries.
func TraceLayers[B any](family string, schema Schema, spec StepSpec, limits poot.Limits, body func(step *Step[B]) (logits, hidden poot.Traced[B])) (*poot.Graph, error) {
	if err := schema.Check(family, spec.Shape); err != nil {
		return nil, err
	}
	step := NewStep(poot.NewBuilder[B](limits), spec.Shape, schema.Vocab)
	logits, hidden := body(step)
	outs := []poot.Traced[B]{logits}
	if spec.Shape.Hidden {
		outs = append(outs, hidden)
	}
	g, err := step.Finish(outs...)
	if err != nil {
		return nil, err
	}
	if err := CheckCarries(family, spec.Carries, g); err != nil {
		return nil, err
	}
	return g, nil
}

// AttendProjected is Attention from its projected queries q f32[rows*new,
// heads*head_dim], keys and values k, v f32[rows*new, kv_heads*head_dim]
// on: rotate queries and keys (when c.Rotary is set), write the new keys
// and values to layer c.Layer's cache and read every row's cache back,
// attend causally within c.Window with grouped-query heads, scaled by
// c.Scale and capped by c.SoftCap, and project through out (with outBias
// when given). c.Eps and c.Norm are not used: the caller has normalised
// what it normalises.
func AttendProjected[B any](step *Step[B], q, k, v, out, outBias poot.Traced[B], c AttentionConfig[B]) poot.Traced[B] {
	b := step.B
	if c.Rotary.Cos != (poot.Traced[B]{}) {
		q = ops.RoPE(b, q, c.Heads, c.Rotary)
		k = ops.RoPE(b, k, c.KVHeads, c.Rotary)
	}
	kAll := step.Cache(CacheName("k", c.Layer), k)
	vAll := step.Cache(CacheName("v", c.Layer), v)
	o := ops.Attention(b, q, kAll, vAll, step.Mask(c.Window), ops.AttentionConfig[B]{
		Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: b.Dim(q, -1) / max(c.Heads, 1), Rows: step.Shape.Rows,
		Scale: c.Scale, SoftCap: c.SoftCap,
	})
	return ops.Linear(b, o, out, outBias)
}

// DenseWidths reads what GGUFDecoder and HFDecoder leave optional (they
// also read mixtures of experts) but a dense family needs, the
// feed-forward width, and checks the head counts, naming the keys of r's
// container: feed_forward_length and attention.head_count_kv in GGUF,
// intermediate_size and num_key_value_heads in a config.json.
func DenseWidths(r *Reader, d *Decoder) {
	ffn, kv := "intermediate_size", "num_key_value_heads"
	if r.GGUF() {
		ffn, kv = "feed_forward_length", "attention.head_count_kv"
	}
	d.FFN = r.Positive(ffn)
	if d.Heads > 0 && (d.KVHeads < 1 || d.Heads%d.KVHeads != 0) {
		r.Fail(kv, ErrInconsistent, "%d query heads are not a multiple of %d key/value heads", d.Heads, d.KVHeads)
	}
}
