package families

import (
	"fmt"
	"math"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
)

// Activation is a gated feed-forward's activation.
type Activation uint8

// The activations.
const (
	// SiLU gives SwiGLU: down(silu(gate·x) ⊙ up·x).
	SiLU Activation = iota
	// GELUTanh gives GeGLU with the tanh approximation of GELU (and, for
	// an ungated feed-forward, down(gelu(up·x))).
	GELUTanh
)

// Rope is a rotary embedding: the ops configuration of its frequencies,
// the channel layout, and whether a GGUF rope_freqs.weight table of
// per-frequency divisors (Llama 3.1 conversions) applies.
type Rope struct {
	ops.RopeConfig
	Layout      ops.RopeLayout
	FreqFactors bool
}

// MoE describes a routed feed-forward: Experts experts of hidden width FFN,
// each token sent to Used of them.
type MoE struct {
	Experts, Used, FFN int
	Gating             ops.Gating
	Renormalize        bool
}

// Decoder holds the hyperparameters of a standard decoder: the shape every
// family in the first batch shares. A family's config reader fills it, and
// it is a Model: the shared tracer (Stack over Layer, Attention and
// FeedForward or RoutedFFN) records its steps.
type Decoder struct {
	Name    string // family name, for errors and the Model interface
	Vocab   int
	Dim     int
	Layers  int
	Heads   int
	KVHeads int
	// LayerKVHeads, when set, gives each layer's key/value head count
	// (GGUF's per-layer head_count_kv array); KVHeads is then layer 0's.
	LayerKVHeads []int
	HeadDim      int
	FFN          int // gated FFN hidden width (dense layers)
	Eps          float64
	MaxContext   int

	Rope Rope
	// LocalRope, when non-nil, is the rotary embedding of the layers with a
	// sliding window (Gemma 3's local base).
	LocalRope *Rope
	// Windows gives each layer's sliding window; 0 (or a nil slice) means
	// global attention.
	Windows []int

	// Norm is the kind of every norm but the QK norms; NormBias adds
	// LayerNorm biases (attn_norm.bias, ffn_norm.bias, output_norm.bias).
	Norm     NormKind
	NormBias bool
	// FusedQKV reads one attn_qkv.weight (with attn_qkv.bias under
	// QKVBias) for the query, key and value projections.
	FusedQKV bool
	// Parallel runs attention and the feed-forward side by side from the
	// layer's input; with SharedNorm both read attn_norm (no ffn_norm).
	Parallel, SharedNorm bool
	// Ungated is a two-matrix feed-forward, down(act(up·x)); FFNBias adds
	// ffn_up.bias and ffn_down.bias (and ffn_gate.bias when gated).
	Ungated, FFNBias bool
	HeadBias         bool // output.bias
	QKVBias          bool // attn_q/k/v.bias (Qwen2), attn_qkv.bias when fused
	OutBias          bool // attn_output.bias (Llama's attention_bias)
	QKNorm           bool // attn_q_norm/attn_k_norm per-head RMSNorm before RoPE (Qwen3, Gemma 3)
	PostNorms        bool // post_attention_norm and post_ffw_norm on the branch outputs (Gemma 2/3)
	// NormPlusOne scales norms by (1 + w): Gemma's Hugging Face weights
	// (GGUF conversions fold the one in).
	NormPlusOne bool
	EmbedScale  float64 // multiplies the embeddings; 0 means 1
	AttnScale   float64 // multiplies the attention scores; 0 means 1/sqrt(HeadDim)
	AttnSoftCap float64 // cap·tanh(s/cap) on attention scores; 0 means none
	// FinalSoftCap is the same on the logits.
	FinalSoftCap float64
	// ResidualScale multiplies each branch's output before it joins the
	// residual stream; LogitScale divides the logits (Granite's residual
	// multiplier and logits scaling). 0 means 1.
	ResidualScale, LogitScale float64
	Act                       Activation
	Tied                      bool // no output.weight: the head reads token_embd.weight
	MoE                       *MoE // routed FFN in every layer when non-nil (see MoELayers)
	// MoELayers, when set with MoE, says which layers are routed; the
	// others are dense gated FFNs of width FFN (Qwen3-MoE's mlp_only_layers
	// and decoder_sparse_step).
	MoELayers []bool

	// Weight is the weight map for the container the model came from.
	Weight WeightMap
	// HF says how the model is written as a Hugging Face checkpoint, GGUF
	// how it is written as a GGUF file.
	HF   HFStyle
	GGUF GGUFStyle
}

type decoderBrand struct{}

// Family returns d.Name.
func (d *Decoder) Family() string { return d.Name }

// Weights returns d.Weight.
func (d *Decoder) Weights() WeightMap { return d.Weight }

// Window returns layer l's sliding window (0 for global attention).
func (d *Decoder) Window(l int) int {
	if l < len(d.Windows) {
		return d.Windows[l]
	}
	return 0
}

// Schema returns the driver's facts about the model.
func (d *Decoder) Schema() Schema {
	return Schema{Vocab: d.Vocab, Dim: d.Dim, Layers: d.Layers, MaxContext: d.MaxContext}
}

// LayerKV returns layer l's key/value head count.
func (d *Decoder) LayerKV(l int) int {
	if l < len(d.LayerKVHeads) {
		return d.LayerKVHeads[l]
	}
	return d.KVHeads
}

// LayerKinds names each layer's mixer and feed-forward.
func (d *Decoder) LayerKinds() []string {
	out := make([]string, d.Layers)
	for l := range out {
		mixer, ffn := "attention", "dense"
		if w := d.Window(l); w > 0 {
			mixer = fmt.Sprintf("attention(window %d)", w)
		}
		if d.Routed(l) {
			ffn = "moe"
		}
		out[l] = mixer + "+" + ffn
	}
	return out
}

// Routed reports whether layer l's feed-forward is the routed one.
func (d *Decoder) Routed(l int) bool {
	return d.MoE != nil && (d.MoELayers == nil || (l < len(d.MoELayers) && d.MoELayers[l]))
}

// Validate checks the hyperparameters against each other. A config reader
// calls it last; its errors name the field.
func (d *Decoder) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Source: d.Name, Key: field, Err: ErrInconsistent, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case d.Vocab < 1 || d.Dim < 1 || d.Layers < 1 || d.Heads < 1 || d.KVHeads < 1 || d.HeadDim < 1:
		return bad("shape", "vocab %d, dim %d, layers %d, heads %d/%d, head dim %d must all be positive", d.Vocab, d.Dim, d.Layers, d.Heads, d.KVHeads, d.HeadDim)
	case d.Heads%d.KVHeads != 0:
		return bad("KVHeads", "%d query heads are not a multiple of %d key/value heads", d.Heads, d.KVHeads)
	case (d.MoE == nil || d.MoELayers != nil) && d.FFN < 1:
		return bad("FFN", "feed-forward width %d", d.FFN)
	case !(d.Eps > 0):
		return bad("Eps", "norm epsilon %v must be positive", d.Eps)
	case d.Rope.Dims < 2 || d.Rope.Dims > d.HeadDim || d.Rope.Dims%2 != 0:
		return bad("Rope.Dims", "%d rotary dims for head dim %d", d.Rope.Dims, d.HeadDim)
	case !(d.Rope.Theta > 1) || (d.LocalRope != nil && !(d.LocalRope.Theta > 1)):
		return bad("Rope.Theta", "rotary base %v must exceed 1", d.Rope.Theta)
	case d.MaxContext < 0 || d.EmbedScale < 0 || d.AttnSoftCap < 0 || d.FinalSoftCap < 0 || d.LogitScale < 0 || math.IsNaN(d.AttnScale+d.EmbedScale+d.AttnSoftCap+d.FinalSoftCap+d.Eps+d.ResidualScale+d.LogitScale):
		return bad("scales", "negative or NaN context, scale or soft cap")
	case len(d.Windows) != 0 && len(d.Windows) != d.Layers:
		return bad("Windows", "%d windows for %d layers", len(d.Windows), d.Layers)
	case d.MoELayers != nil && (d.MoE == nil || len(d.MoELayers) != d.Layers):
		return bad("MoELayers", "%d routed-layer flags for %d layers (experts configured: %v)", len(d.MoELayers), d.Layers, d.MoE != nil)
	case d.SharedNorm && !d.Parallel:
		return bad("SharedNorm", "one norm for both branches needs parallel layers")
	case len(d.LayerKVHeads) != 0 && len(d.LayerKVHeads) != d.Layers:
		return bad("LayerKVHeads", "%d key/value head counts for %d layers", len(d.LayerKVHeads), d.Layers)
	}
	for l, n := range d.LayerKVHeads {
		if n < 1 || d.Heads%n != 0 {
			return bad("LayerKVHeads", "layer %d: %d query heads are not a multiple of %d key/value heads", l, d.Heads, n)
		}
	}
	if m := d.MoE; m != nil && (m.Experts < 1 || m.Used < 1 || m.Used > m.Experts || m.FFN < 1) {
		return bad("MoE", "%d experts, %d used, width %d", m.Experts, m.Used, m.FFN)
	}
	return nil
}

// Trace checks spec against the schema and records the step.
func (d *Decoder) Trace(spec StepSpec, limits poot.Limits) (*poot.Graph, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	schema := d.Schema()
	if err := schema.Check(d.Name, spec.Shape); err != nil {
		return nil, err
	}
	b := poot.NewBuilder[decoderBrand](limits)
	step := NewStep(b, spec.Shape, d.Vocab)
	g, err := TraceDecoder(step, d)
	if err != nil {
		return nil, err
	}
	if err := CheckCarries(d.Name, spec.Carries, g); err != nil {
		return nil, err
	}
	return g, nil
}

// TraceDecoder records one step of the standard decoder d on step's
// builder and finishes the graph: the shared wrapper every standard family
// traces with.
func TraceDecoder[B any](step *Step[B], d *Decoder) (*poot.Graph, error) {
	b := step.B
	w := func(name string, dims ...int) poot.Traced[B] { return b.Constant(name, poot.T(poot.F32, dims...)) }
	var norm []ops.NormOption
	if d.NormPlusOne {
		norm = append(norm, ops.OnePlusWeight())
	}
	stack := StackWeights[B]{Embed: w("token_embd.weight", d.Vocab, d.Dim)}
	var freq poot.Traced[B]
	if d.Rope.FreqFactors {
		freq = w("rope_freqs.weight", d.Rope.Dims/2)
	}
	global := step.Rotary(d.Rope, freq)
	local := global
	if d.LocalRope != nil {
		local = step.Rotary(*d.LocalRope, freq)
	}
	q := d.Heads * d.HeadDim
	layer := func(l int, x poot.Traced[B]) poot.Traced[B] {
		p := fmt.Sprintf("blk.%d.", l)
		kv := d.LayerKV(l) * d.HeadDim
		opt := func(on bool, name string, dims ...int) poot.Traced[B] {
			if !on {
				return poot.Traced[B]{}
			}
			return w(p+name, dims...)
		}
		aw := AttentionWeights[B]{
			QNorm: opt(d.QKNorm, "attn_q_norm.weight", d.HeadDim), KNorm: opt(d.QKNorm, "attn_k_norm.weight", d.HeadDim),
			Out: w(p+"attn_output.weight", d.Dim, q), OutBias: opt(d.OutBias, "attn_output.bias", d.Dim),
		}
		if d.FusedQKV {
			aw.QKV, aw.QKVBias = w(p+"attn_qkv.weight", q+2*kv, d.Dim), opt(d.QKVBias, "attn_qkv.bias", q+2*kv)
		} else {
			aw.Q, aw.K, aw.V = w(p+"attn_q.weight", q, d.Dim), w(p+"attn_k.weight", kv, d.Dim), w(p+"attn_v.weight", kv, d.Dim)
			aw.QBias, aw.KBias, aw.VBias = opt(d.QKVBias, "attn_q.bias", q), opt(d.QKVBias, "attn_k.bias", kv), opt(d.QKVBias, "attn_v.bias", kv)
		}
		ac := AttentionConfig[B]{Layer: l, Heads: d.Heads, KVHeads: d.LayerKV(l), Eps: d.Eps, Norm: norm,
			Scale: d.AttnScale, SoftCap: d.AttnSoftCap, Window: d.Window(l), Rotary: global}
		if ac.Window > 0 {
			ac.Rotary = local
		}
		ln := LayerNorms[B]{
			Mixer: w(p+"attn_norm.weight", d.Dim), MixerPost: opt(d.PostNorms, "post_attention_norm.weight", d.Dim),
			MixerBias: opt(d.NormBias, "attn_norm.bias", d.Dim), FFNPost: opt(d.PostNorms, "post_ffw_norm.weight", d.Dim),
			Kind: d.Norm, Parallel: d.Parallel, Scale: d.ResidualScale, Eps: d.Eps, Options: norm,
		}
		if !d.Parallel || !d.SharedNorm {
			ln.FFN, ln.FFNBias = w(p+"ffn_norm.weight", d.Dim), opt(d.NormBias, "ffn_norm.bias", d.Dim)
		}
		var ffn func(h poot.Traced[B]) poot.Traced[B]
		if m := d.MoE; d.Routed(l) {
			mw := ops.MoEWeights[B]{
				Router: w(p+"ffn_gate_inp.weight", m.Experts, d.Dim),
				Gate:   w(p+"ffn_gate_exps.weight", m.Experts, m.FFN, d.Dim),
				Up:     w(p+"ffn_up_exps.weight", m.Experts, m.FFN, d.Dim),
				Down:   w(p+"ffn_down_exps.weight", m.Experts, d.Dim, m.FFN),
			}
			mc := ops.MoEConfig{TopK: m.Used, Gating: m.Gating, Renormalize: m.Renormalize}
			ffn = func(h poot.Traced[B]) poot.Traced[B] { return RoutedFFN(b, h, mw, mc) }
		} else {
			fw := FFNWeights[B]{Up: w(p+"ffn_up.weight", d.FFN, d.Dim), Down: w(p+"ffn_down.weight", d.Dim, d.FFN),
				UpBias: opt(d.FFNBias, "ffn_up.bias", d.FFN), DownBias: opt(d.FFNBias, "ffn_down.bias", d.Dim)}
			if !d.Ungated {
				fw.Gate, fw.GateBias = w(p+"ffn_gate.weight", d.FFN, d.Dim), opt(d.FFNBias, "ffn_gate.bias", d.FFN)
			}
			ffn = func(h poot.Traced[B]) poot.Traced[B] { return FeedForward(b, h, fw, d.Act) }
		}
		return Layer(b, x, ln,
			func(h poot.Traced[B]) poot.Traced[B] { return Attention(step, h, aw, ac) },
			ffn)
	}
	stack.Norm = w("output_norm.weight", d.Dim)
	if d.NormBias {
		stack.NormBias = w("output_norm.bias", d.Dim)
	}
	if !d.Tied {
		stack.Output = w("output.weight", d.Vocab, d.Dim)
	}
	if d.HeadBias {
		stack.OutputBias = w("output.bias", d.Vocab)
	}
	cfg := StackConfig{Layers: d.Layers, EmbedScale: d.EmbedScale, NormKind: d.Norm, Eps: d.Eps, Norm: norm, SoftCap: d.FinalSoftCap, LogitScale: d.LogitScale}
	logits, hidden := Stack(step, stack, cfg, layer)
	if step.Shape.Hidden {
		return step.Finish(logits, hidden)
	}
	return step.Finish(logits)
}
