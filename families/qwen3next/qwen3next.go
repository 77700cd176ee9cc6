// Package qwen3next is the Qwen3-Next family: a hybrid decoder whose layers
// are gated delta nets (linear attention with a carried state) except every
// full_attention_interval-th, which is gated attention, with a routed
// mixture of experts and a sigmoid-gated shared expert in every layer.
//
// A gated delta net layer projects the normalised rows to q, k and v (one
// fused projection), the output gate z, and per value head the write
// strength β and the decay input α; convolves q, k and v causally over the
// last conv_kernel rows of the sequence and applies SiLU; runs the gated
// delta rule with L2-normalised q and k, q scaled by 1/sqrt(head dim),
// β = sigmoid(b) and the log decay A·softplus(α + dt_bias); normalises each
// value head's read-out and gates it with silu(z). Value head h reads key
// head h / (value heads / key heads). Its state is the convolution window
// and the delta rule's matrix, per sequence (families.Step.SequenceState).
//
// An attention layer's query projection carries a sigmoid output gate: per
// head, hd query rows then hd gate rows. Queries and keys get per-head
// RMSNorms, then NeoX rope on the first rope.dimension_count channels.
//
// GGUF files come in two layouts, both read: llama.cpp's current converter
// writes attn_qkv (q, k, v rows of every head in that order) and attn_gate
// (z); older ones write ssm_in, the fused Hugging Face in_proj_qkvz whose
// rows are grouped by key head (q, k, then the head's values and gates).
// Hugging Face checkpoints are read in the fused layout. llama.cpp's
// converter folds the (1 + w) of Qwen3-Next's RMSNorms into the weights
// (all but the gated norm's) and stores A = -exp(A_log); a model read from
// config.json scales its norms by (1 + w) and reads A_log.
//
// Hugging Face's own checkpoints store the convolution filters as
// [channels, 1, taps]; the weights a model reads have their GGUF shapes
// ([channels, taps], which is what poot writes in safetensors too), and the
// loader binds shapes exactly, so such a checkpoint is refused with a
// TensorError naming linear_attn.conv1d.weight.
package qwen3next

import (
	"fmt"
	"math"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{
	Family:            "qwen3next",
	GGUFArchitectures: []string{"qwen3next"},
	HFArchitectures:   []string{"Qwen3NextForCausalLM"},
	HFModelTypes:      []string{"qwen3_next"},
	FromGGUF:          FromGGUF,
	FromHF:            FromHF,
}

// Model is a configured Qwen3-Next model. The embedded decoder holds the
// attention layers' and the experts' hyperparameters and writes the
// metadata every decoder shares.
type Model struct {
	families.Decoder
	// Recurrent says, per layer, whether it is a gated delta net (else
	// gated attention).
	Recurrent []bool
	// KeyHeads and ValueHeads are the delta nets' query/key and value
	// heads, of StateSize channels each; ConvKernel is the convolution's
	// taps.
	KeyHeads, ValueHeads, StateSize, ConvKernel int
	// SharedFFN is the shared expert's hidden width.
	SharedFFN int
	// ExpertScale multiplies the routing weights (expert_weights_scale); 0
	// means 1.
	ExpertScale float64
	// Fused says q, k, v and z come from one ssm_in projection in Hugging
	// Face's order, rather than attn_qkv and attn_gate.
	Fused bool
	// LogDecay says ssm_a holds A_log (Hugging Face) rather than
	// A = -exp(A_log) (GGUF).
	LogDecay bool
}

type brand struct{}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	d, r := families.GGUFDecoder(f, "qwen3next", ops.RopeNeoX)
	m := &Model{Decoder: *d}
	m.Layers -= r.IntOr("nextn_predict_layers", 0) // MTP blocks follow the trunk; they are not run
	if r.Err() == nil && m.Layers < 1 {
		r.Fail("nextn_predict_layers", families.ErrInconsistent, "no trunk layers left of %d blocks", d.Layers)
	}
	m.Recurrent = make([]bool, max(m.Layers, 0))
	if r.Has("attention.recurrent_layers") {
		for l, v := range r.IntOrPerLayer("attention.recurrent_layers", d.Layers, 0)[:len(m.Recurrent)] {
			m.Recurrent[l] = v != 0
		}
	} else {
		m.every(r, r.IntOr("full_attention_interval", 4))
	}
	m.ConvKernel = r.Positive("ssm.conv_kernel")
	m.StateSize = r.Positive("ssm.state_size")
	m.KeyHeads = r.Positive("ssm.group_count")
	m.ValueHeads = r.Positive("ssm.time_step_rank")
	if in := r.Positive("ssm.inner_size"); r.Err() == nil && in != m.StateSize*m.ValueHeads {
		r.Fail("ssm.inner_size", families.ErrUnsupported, "inner size %d is not state size %d × %d value heads (value heads of another width)", in, m.StateSize, m.ValueHeads)
	}
	if m.MoE == nil {
		r.Fail("expert_count", families.ErrMissing, "a qwen3next file needs experts")
	} else {
		m.MoE.Gating, m.MoE.Renormalize = ops.SoftmaxTopK, true // as llama.cpp routes it
		if !r.Has("expert_feed_forward_length") && m.MoE.Used > 0 {
			m.MoE.FFN = m.FFN / m.MoE.Used // llama.cpp's default
		}
	}
	if m.SharedFFN = r.IntOr("expert_shared_feed_forward_length", m.FFN); m.SharedFFN < 1 {
		r.Fail("expert_shared_feed_forward_length", families.ErrMissing, "no shared expert width and no feed_forward_length")
	}
	m.ExpertScale = r.FloatOr("expert_weights_scale", 0)
	m.AttnScale = r.FloatOr("attention.scale", 0)
	for l, rec := range m.Recurrent {
		if rec {
			_, m.Fused = f.Tensor(fmt.Sprintf("blk.%d.ssm_in.weight", l))
			break
		}
	}
	return m.finish(r, families.GGUF)
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "qwen3next", false)
	m := &Model{Decoder: *d, Fused: true, LogDecay: true}
	m.NormPlusOne = true
	if !r.Has("rope_theta") {
		m.Rope.Theta = r.FloatOr("rope_parameters.rope_theta", 10000)
	}
	pf := r.FloatOr("partial_rotary_factor", r.FloatOr("rope_parameters.partial_rotary_factor", 0.25))
	m.Rope.Dims = int(float64(m.HeadDim) * pf)
	m.Recurrent = make([]bool, m.Layers)
	if types := r.Strings("layer_types"); types != nil {
		if len(types) != m.Layers {
			r.Fail("layer_types", families.ErrInconsistent, "%d entries for %d layers", len(types), m.Layers)
		}
		for l := range min(len(types), m.Layers) {
			m.Recurrent[l] = types[l] == "linear_attention"
			if !m.Recurrent[l] && types[l] != "full_attention" {
				r.Fail("layer_types", families.ErrUnsupported, "layer %d is %q", l, types[l])
			}
		}
	} else {
		m.every(r, r.IntOr("full_attention_interval", 4))
	}
	m.ConvKernel = r.Positive("linear_conv_kernel_dim")
	m.StateSize = r.Positive("linear_key_head_dim")
	m.KeyHeads = r.Positive("linear_num_key_heads")
	m.ValueHeads = r.Positive("linear_num_value_heads")
	if v := r.IntOr("linear_value_head_dim", m.StateSize); v != m.StateSize {
		r.Fail("linear_value_head_dim", families.ErrUnsupported, "value heads of %d channels, key heads of %d", v, m.StateSize)
	}
	m.MoE = &families.MoE{
		Experts: r.PositiveAtMost("num_experts", families.MaxExperts), Used: r.Positive("num_experts_per_tok"),
		FFN: r.Positive("moe_intermediate_size"), Gating: ops.SoftmaxTopK, Renormalize: r.BoolOr("norm_topk_prob", true),
	}
	m.SharedFFN = r.Positive("shared_expert_intermediate_size")
	if s := r.IntOr("decoder_sparse_step", 1); s != 1 {
		r.Fail("decoder_sparse_step", families.ErrUnsupported, "dense layers between sparse ones (step %d)", s)
	}
	if l := r.Ints("mlp_only_layers"); len(l) > 0 {
		r.Fail("mlp_only_layers", families.ErrUnsupported, "dense layers %v", l)
	}
	if r.BoolOr("attention_bias", false) {
		r.Fail("attention_bias", families.ErrUnsupported, "attention projections with biases")
	}
	return m.finish(r, families.Safetensors)
}

// every makes every interval-th layer attention, the others recurrent.
func (m *Model) every(r *families.Reader, interval int) {
	if interval < 1 {
		r.Fail("full_attention_interval", families.ErrWrongType, "interval %d", interval)
		return
	}
	for l := range m.Recurrent {
		m.Recurrent[l] = (l+1)%interval != 0
	}
}

func (m *Model) finish(r *families.Reader, c families.Container) (families.Model, error) {
	m.Name = "qwen3next"
	m.QKNorm = true
	m.Weight = names().In(c)
	if m.MoE != nil {
		m.Weight.Experts = m.MoE.Experts
	}
	m.GGUF = families.GGUFStyle{Architecture: "qwen3next"}
	m.HF = families.HFStyle{Architecture: "Qwen3NextForCausalLM", ModelType: "qwen3_next"}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

func names() families.WeightMap {
	return families.HFNames().With(map[string]string{
		"post_attention_norm.weight": "post_attention_layernorm.weight",
		"ffn_norm.weight":            "",
		"ssm_in.weight":              "linear_attn.in_proj_qkvz.weight",
		"ssm_ba.weight":              "linear_attn.in_proj_ba.weight",
		"ssm_conv1d.weight":          "linear_attn.conv1d.weight",
		"ssm_dt.bias":                "linear_attn.dt_bias",
		"ssm_a":                      "linear_attn.A_log",
		"ssm_norm.weight":            "linear_attn.norm.weight",
		"ssm_out.weight":             "linear_attn.out_proj.weight",
		"ffn_gate_inp.weight":        "mlp.gate.weight",
		"ffn_gate_exps.weight":       "mlp.experts.{e}.gate_proj.weight",
		"ffn_up_exps.weight":         "mlp.experts.{e}.up_proj.weight",
		"ffn_down_exps.weight":       "mlp.experts.{e}.down_proj.weight",
		"ffn_gate_inp_shexp.weight":  "mlp.shared_expert_gate.weight",
		"ffn_gate_shexp.weight":      "mlp.shared_expert.gate_proj.weight",
		"ffn_up_shexp.weight":        "mlp.shared_expert.up_proj.weight",
		"ffn_down_shexp.weight":      "mlp.shared_expert.down_proj.weight",
	})
}

// Validate checks the hyperparameters against each other.
func (m *Model) Validate() error {
	if err := m.Decoder.Validate(); err != nil {
		return err
	}
	bad := func(field, format string, args ...any) error {
		return &families.ConfigError{Source: m.Name, Key: field, Err: families.ErrInconsistent, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(m.Recurrent) != m.Layers:
		return bad("Recurrent", "%d layer kinds for %d layers", len(m.Recurrent), m.Layers)
	case m.KeyHeads < 1 || m.ValueHeads < 1 || m.ValueHeads%m.KeyHeads != 0 || m.StateSize < 1:
		return bad("ValueHeads", "%d value heads for %d key heads of %d channels", m.ValueHeads, m.KeyHeads, m.StateSize)
	case m.ConvKernel < 2:
		return bad("ConvKernel", "a convolution of %d taps", m.ConvKernel)
	case m.MoE == nil || m.SharedFFN < 1:
		return bad("SharedFFN", "routed experts and a shared expert of width %d", m.SharedFFN)
	}
	return nil
}

// LayerKinds names each layer's mixer and feed-forward.
func (m *Model) LayerKinds() []string {
	out := make([]string, m.Layers)
	for l := range out {
		out[l] = "attention(gated)+moe(shared)"
		if l < len(m.Recurrent) && m.Recurrent[l] {
			out[l] = "gated_delta+moe(shared)"
		}
	}
	return out
}

// Trace checks spec against the schema and records the step.
func (m *Model) Trace(spec families.StepSpec, limits poot.Limits) (*poot.Graph, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if err := m.Schema().Check(m.Name, spec.Shape); err != nil {
		return nil, err
	}
	step := families.NewStep(poot.NewBuilder[brand](limits), spec.Shape, m.Vocab)
	g, err := trace(step, m)
	if err != nil {
		return nil, err
	}
	if err := families.CheckCarries(m.Name, spec.Carries, g); err != nil {
		return nil, err
	}
	return g, nil
}

func trace[B any](step *families.Step[B], m *Model) (*poot.Graph, error) {
	b := step.B
	weight := func(name string, dims ...int) poot.Traced[B] { return b.Constant(name, poot.T(poot.F32, dims...)) }
	var norm []ops.NormOption
	if m.NormPlusOne {
		norm = append(norm, ops.OnePlusWeight())
	}
	rot := step.Rotary(m.Rope, poot.Traced[B]{})
	layer := func(l int, x poot.Traced[B]) poot.Traced[B] {
		p := fmt.Sprintf("blk.%d.", l)
		w := func(name string, dims ...int) poot.Traced[B] { return weight(p+name, dims...) }
		ln := families.LayerNorms[B]{Mixer: w("attn_norm.weight", m.Dim), FFN: w("post_attention_norm.weight", m.Dim), Eps: m.Eps, Options: norm}
		mixer := func(h poot.Traced[B]) poot.Traced[B] { return attention(step, m, l, h, w, rot, norm) }
		if m.Recurrent[l] {
			mixer = func(h poot.Traced[B]) poot.Traced[B] { return deltaNet(step, m, l, h, w) }
		}
		e, d, f, s := m.MoE.Experts, m.Dim, m.MoE.FFN, m.SharedFFN
		mw := ops.MoEWeights[B]{
			Router: w("ffn_gate_inp.weight", e, d),
			Gate:   w("ffn_gate_exps.weight", e, f, d), Up: w("ffn_up_exps.weight", e, f, d), Down: w("ffn_down_exps.weight", e, d, f),
			SharedRouter: w("ffn_gate_inp_shexp.weight", 1, d),
			SharedGate:   w("ffn_gate_shexp.weight", s, d), SharedUp: w("ffn_up_shexp.weight", s, d), SharedDown: w("ffn_down_shexp.weight", d, s),
		}
		mc := ops.MoEConfig{TopK: m.MoE.Used, Gating: m.MoE.Gating, Renormalize: m.MoE.Renormalize, Scale: m.ExpertScale}
		return families.Layer(b, x, ln, mixer, func(h poot.Traced[B]) poot.Traced[B] { return families.RoutedFFN(b, h, mw, mc) })
	}
	stack := families.StackWeights[B]{Embed: weight("token_embd.weight", m.Vocab, m.Dim), Norm: weight("output_norm.weight", m.Dim)}
	if !m.Tied {
		stack.Output = weight("output.weight", m.Vocab, m.Dim)
	}
	logits, hidden := families.Stack(step, stack, families.StackConfig{Layers: m.Layers, Eps: m.Eps, Norm: norm}, layer)
	if step.Shape.Hidden {
		return step.Finish(logits, hidden)
	}
	return step.Finish(logits)
}

// attention is the gated attention mixer.
func attention[B any](step *families.Step[B], m *Model, l int, h poot.Traced[B], w func(string, ...int) poot.Traced[B], rot ops.Rotary[B], norm []ops.NormOption) poot.Traced[B] {
	b, none := step.B, poot.Traced[B]{}
	hd, n := m.HeadDim, b.Dim(h, 0)
	// Each head's rows are hd query rows, then hd gate rows.
	qg := b.Reshape(ops.Linear(b, h, w("attn_q.weight", 2*m.Heads*hd, m.Dim), none), n, m.Heads, 2, hd)
	half := func(i int) poot.Traced[B] { return b.Reshape(b.SliceAxis(qg, 2, i, i+1), n, m.Heads*hd) }
	q := ops.RMSNormHeads(b, half(0), w("attn_q_norm.weight", hd), m.Heads, m.Eps, norm...)
	k := ops.RMSNormHeads(b, ops.Linear(b, h, w("attn_k.weight", m.KVHeads*hd, m.Dim), none), w("attn_k_norm.weight", hd), m.KVHeads, m.Eps, norm...)
	v := ops.Linear(b, h, w("attn_v.weight", m.KVHeads*hd, m.Dim), none)
	q, k = ops.RoPE(b, q, m.Heads, rot), ops.RoPE(b, k, m.KVHeads, rot)
	out := ops.Attention(b, q, step.Cache(families.CacheName("k", l), k), step.Cache(families.CacheName("v", l), v), step.Mask(0),
		ops.AttentionConfig[B]{Heads: m.Heads, KVHeads: m.KVHeads, HeadDim: hd, Rows: step.Shape.Rows, Scale: m.AttnScale})
	return ops.Linear(b, ops.OutputGate(b, out, half(1)), w("attn_output.weight", m.Dim, m.Heads*hd), none)
}

// deltaNet is the gated delta net mixer.
func deltaNet[B any](step *families.Step[B], m *Model, l int, h poot.Traced[B], w func(string, ...int) poot.Traced[B]) poot.Traced[B] {
	b, none := step.B, poot.Traced[B]{}
	hk, hv, ds, n := m.KeyHeads, m.ValueHeads, m.StateSize, b.Dim(h, 0)
	kd, vd, per := hk*ds, hv*ds, hv/hk
	var qkv, z poot.Traced[B]
	if m.Fused {
		// Per key head: q, k, then its value heads' v and z.
		g := b.Reshape(ops.Linear(b, h, w("ssm_in.weight", 2*kd+2*vd, m.Dim), none), n, hk, 2*ds+2*per*ds)
		part := func(from, width int) poot.Traced[B] {
			return b.Reshape(b.SliceAxis(g, 2, from, from+width), n, hk*width)
		}
		qkv = b.Concat(1, part(0, ds), part(ds, ds), part(2*ds, per*ds))
		z = part(2*ds+per*ds, per*ds)
	} else {
		qkv = ops.Linear(b, h, w("attn_qkv.weight", 2*kd+vd, m.Dim), none)
		z = ops.Linear(b, h, w("attn_gate.weight", vd, m.Dim), none)
	}
	// Per key head: β of its value heads, then α.
	ba := b.Reshape(ops.Linear(b, h, w("ssm_ba.weight", 2*hv, m.Dim), none), n, hk, 2*per)
	beta := ops.Sigmoid(b, b.Reshape(b.SliceAxis(ba, 2, 0, per), n, hv))
	alpha := b.Reshape(b.SliceAxis(ba, 2, per, 2*per), n, hv)
	decay := ops.GatedDeltaDecayRate[B]
	if m.LogDecay {
		decay = ops.GatedDeltaDecay[B]
	}
	g := decay(b, alpha, w("ssm_dt.bias", hv), w("ssm_a", hv))
	// The filter is stored one channel a row; the convolution reads one tap
	// a row.
	conv := b.Transpose(ops.AsF32(b, w("ssm_conv1d.weight", 2*kd+vd, m.ConvKernel)), 1, 0)
	var st ops.GatedDeltaNetState[B]
	var storeConv, storeDelta func(poot.Traced[B])
	st.Conv, storeConv = step.SequenceState(families.CacheName("conv", l), m.ConvKernel-1, 2*kd+vd)
	st.Delta, storeDelta = step.SequenceState(families.CacheName("delta", l), hv, ds, ds)
	chunk := 64
	if step.Shape.New == 1 {
		chunk = 0
	}
	o, next := ops.GatedDeltaMix(b, qkv, z, g, beta, conv, w("ssm_norm.weight", ds), st, ops.GatedDeltaConfig{
		KeyHeads: hk, ValueHeads: hv, L2Eps: m.Eps, NormEps: m.Eps, ChunkSize: chunk,
	})
	storeConv(next.Conv)
	storeDelta(next.Delta)
	return ops.Linear(b, o, w("ssm_out.weight", m.Dim, vd), none)
}

// GGUFMetadata writes llama.cpp's qwen3next keys.
func (m *Model) GGUFMetadata() ([]gguf.KV, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if !m.MoE.Renormalize {
		return nil, &families.ConfigError{Source: m.Name, Key: "norm_topk_prob", Err: families.ErrUnsupported, Detail: "llama.cpp always renormalises the routing weights"}
	}
	kvs, err := m.Decoder.GGUFMetadata()
	if err != nil {
		return nil, err
	}
	put := func(key string, n int) {
		kvs = append(kvs, gguf.KV{Key: "qwen3next." + key, Value: gguf.ValueOf(uint32(n))})
	}
	put("expert_shared_feed_forward_length", m.SharedFFN)
	put("ssm.conv_kernel", m.ConvKernel)
	put("ssm.state_size", m.StateSize)
	put("ssm.group_count", m.KeyHeads)
	put("ssm.time_step_rank", m.ValueHeads)
	put("ssm.inner_size", m.ValueHeads*m.StateSize)
	if interval, ok := m.interval(); ok {
		put("full_attention_interval", interval)
	} else {
		layers := make([]uint32, m.Layers)
		for l, rec := range m.Recurrent {
			if rec {
				layers[l] = 1
			}
		}
		kvs = append(kvs, gguf.KV{Key: "qwen3next.attention.recurrent_layers", Value: gguf.ArrayOf(layers)})
	}
	scalar := func(key string, x float64) {
		if x != 0 {
			kvs = append(kvs, gguf.KV{Key: "qwen3next." + key, Value: gguf.ValueOf(float32(x))})
		}
	}
	scalar("expert_weights_scale", m.ExpertScale)
	scalar("attention.scale", m.AttnScale)
	return kvs, nil
}

// interval returns the full_attention_interval that gives the model's
// layer kinds, if one does.
func (m *Model) interval() (int, bool) {
	for n := 1; n <= m.Layers+1; n++ {
		ok := true
		for l, rec := range m.Recurrent {
			ok = ok && rec == ((l+1)%n != 0)
		}
		if ok {
			return n, true
		}
	}
	return 0, false
}

// HFConfig writes the config.json of Qwen3NextForCausalLM.
func (m *Model) HFConfig() (map[string]any, error) {
	unsupported := func(key, detail string) (map[string]any, error) {
		return nil, &families.ConfigError{Source: m.Name, Key: key, Err: families.ErrUnsupported, Detail: detail}
	}
	switch err := m.Validate(); {
	case err != nil:
		return nil, err
	case !m.Fused:
		return unsupported("linear_attn.in_proj_qkvz", "Hugging Face stores q, k, v and z as one projection whose rows interleave them by key head; this model's attn_qkv and attn_gate cannot be written as it")
	case m.ExpertScale != 0 || m.AttnScale != 0:
		return unsupported("expert_weights_scale", "Qwen3-Next's config.json has no routed or attention scale")
	}
	cfg, err := m.Decoder.HFConfig()
	if err != nil {
		return nil, err
	}
	types := make([]any, m.Layers)
	for l, rec := range m.Recurrent {
		types[l] = "full_attention"
		if rec {
			types[l] = "linear_attention"
		}
	}
	cfg["layer_types"] = types
	if n, ok := m.interval(); ok {
		cfg["full_attention_interval"] = n
	}
	cfg["partial_rotary_factor"] = float64(m.Rope.Dims) / float64(m.HeadDim)
	cfg["linear_conv_kernel_dim"], cfg["linear_key_head_dim"], cfg["linear_value_head_dim"] = m.ConvKernel, m.StateSize, m.StateSize
	cfg["linear_num_key_heads"], cfg["linear_num_value_heads"] = m.KeyHeads, m.ValueHeads
	cfg["num_experts"], cfg["num_experts_per_tok"], cfg["moe_intermediate_size"] = m.MoE.Experts, m.MoE.Used, m.MoE.FFN
	cfg["norm_topk_prob"], cfg["shared_expert_intermediate_size"] = m.MoE.Renormalize, m.SharedFFN
	cfg["hidden_act"] = "silu"
	return cfg, nil
}

// HFTensor converts a canonical (GGUF) tensor to its Hugging Face form: the
// RMSNorms other than the gated one lose the one llama.cpp folded in, and
// the stored rate A becomes A_log.
func (m *Model) HFTensor(name string, v []float32) []float32 {
	switch {
	case strings.HasSuffix(name, ".ssm_a"):
		for i, a := range v {
			v[i] = float32(math.Log(-float64(a)))
		}
	case strings.HasSuffix(name, "norm.weight") && !strings.HasSuffix(name, "ssm_norm.weight"):
		for i := range v {
			v[i]--
		}
	}
	return v
}
