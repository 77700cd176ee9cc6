// Package phi3 is the Phi-3 family (Microsoft's Phi3ForCausalLM: Phi-3,
// Phi-3.5-mini, Phi-4 and Phi-4-mini; GGUF architecture phi3). Its layers
// are Llama's with two fused projections, stored fused in both containers
// and split in the graph after one contraction each:
//
//   - attn_qkv (qkv_proj) holds the query, key and value rows, in that
//     order;
//   - ffn_up (gate_up_proj) holds the gate rows, then the up rows:
//     down(silu(gate·x) ⊙ up·x).
//
// Rotary embedding is NeoX, possibly partial (Phi-4-mini), and may be
// LongRoPE: per-frequency divisors, one table for short contexts and one
// for long ones (GGUF tensors rope_factors_short.weight and
// rope_factors_long.weight, config.json rope_scaling short_factor and
// long_factor), with cos and sin multiplied by an attention factor
// (GGUF rope.scaling.attn_factor; for config.json rope_scaling
// attention_factor, else llama.cpp's converter's
// sqrt(1 + ln(s)/ln(original)) for s = max/original context > 1).
//
// Which table applies is decided per step from the context the caller
// gives it, as llama.cpp decides from the context size it was given: the
// long table when the step's Capacity exceeds the original context
// (rope.scaling.original_context_length, config.json
// original_max_position_embeddings), the short one otherwise. A driver
// keeps one capacity for a session, so its prefill and decode steps agree.
// The tables are tensors in GGUF and configuration in config.json, so a
// LongRoPE model writes the container it was read from: its config.json
// (HFConfig) configures the model whose safetensors form is written, and a
// model read from config.json refuses to describe itself as GGUF.
//
// Sliding window: a configured attention.sliding_window (config.json
// sliding_window) shorter than the context masks every layer, as Hugging
// Face's Phi-3 does. llama.cpp disables Phi-3's window (it warns and runs
// global attention), so the two agree only within the window: 2047
// tokens for Phi-3-mini-4k.
package phi3

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{
	Family:            "phi3",
	GGUFArchitectures: []string{"phi3"},
	HFArchitectures:   []string{"Phi3ForCausalLM"},
	HFModelTypes:      []string{"phi3"},
	FromGGUF:          FromGGUF,
	FromHF:            FromHF,
}

// The LongRoPE tables' GGUF names.
const (
	LongFactors  = "rope_factors_long.weight"
	ShortFactors = "rope_factors_short.weight"
)

// Model is one Phi-3 model: the standard decoder's hyperparameters and
// writers, traced by the family's own layers, with its rotary extension.
type Model struct {
	*families.Decoder
	// OrigContext is the pre-training context that decides between the
	// LongRoPE tables.
	OrigContext int
	// AttnFactor multiplies cos and sin (1 for none).
	AttnFactor float64
	// LongRoPE holds the factor tables; nil when the model has none.
	LongRoPE *LongRoPE
}

// LongRoPE are a model's two tables of rotary divisors, Rope.Dims/2 each.
type LongRoPE struct {
	// Long and Short are the tables' values: from config.json, or read
	// from a GGUF file's F32 tables (nil when stored otherwise).
	Long, Short []float64
	// Tensors says the graph reads the tables as the checkpoint's
	// constants (GGUF) rather than from Long and Short (config.json).
	Tensors bool
}

type brand struct{}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	d, r := families.GGUFDecoder(f, "phi3", ops.RopeNeoX)
	families.DenseWidths(r, d)
	m := &Model{Decoder: d, OrigContext: r.IntOr("rope.scaling.original_context_length", d.MaxContext),
		AttnFactor: r.FloatOr("rope.scaling.attn_factor", 1)}
	_, long := f.Tensor(LongFactors)
	_, short := f.Tensor(ShortFactors)
	if long || short {
		// Both must be there: the trace declares both, so a missing one is a
		// TensorError.
		m.LongRoPE = &LongRoPE{Tensors: true, Long: table(f, LongFactors), Short: table(f, ShortFactors)}
	}
	model, err := finish(m, r, r.IntOr("attention.sliding_window", 0), families.GGUF)
	if _, bias := f.Tensor("blk.0.attn_qkv.bias"); err == nil && bias {
		return nil, &families.ConfigError{Source: "gguf", Key: "blk.0.attn_qkv.bias", Err: families.ErrUnsupported, Detail: "QKV biases"}
	}
	return model, err
}

// table reads an F32 GGUF vector, or returns nil.
func table(f *gguf.File, name string) []float64 {
	info, ok := f.Tensor(name)
	if !ok || info.Type != gguf.GGMLTypeF32 {
		return nil
	}
	b, err := f.TensorData(name)
	if err != nil {
		return nil
	}
	out := make([]float64, len(b)/4)
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	plain := maps.Clone(cfg)
	delete(plain, "rope_scaling") // LongRoPE is read below: the shared reader knows no such scaling
	d, r := families.HFDecoder(plain, "phi3", false)
	families.DenseWidths(r, d)
	m := &Model{Decoder: d, OrigContext: r.IntOr("original_max_position_embeddings", d.MaxContext), AttnFactor: 1}
	rs := families.HFReader(cfg)
	if rs.Has("rope_scaling") {
		if kind := rs.StringOr("rope_scaling.type", rs.StringOr("rope_scaling.rope_type", "")); kind != "longrope" && kind != "su" {
			rs.Fail("rope_scaling.type", families.ErrUnsupported, "rope scaling %q (Phi-3 scales with longrope)", kind)
		}
		m.LongRoPE = &LongRoPE{Long: factors(rs, "rope_scaling.long_factor", d.Rope.Dims/2), Short: factors(rs, "rope_scaling.short_factor", d.Rope.Dims/2)}
		if s := float64(d.MaxContext) / float64(m.OrigContext); s > 1 && m.OrigContext > 1 {
			m.AttnFactor = math.Sqrt(1 + math.Log(s)/math.Log(float64(m.OrigContext)))
		}
		m.AttnFactor = rs.FloatOr("rope_scaling.attention_factor", m.AttnFactor)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return finish(m, r, r.IntOr("sliding_window", 0), families.Safetensors)
}

// factors reads a list of n positive divisors.
func factors(r *families.Reader, key string, n int) []float64 {
	v := r.Floats(key)
	if len(v) != n {
		r.Fail(key, families.ErrInconsistent, "%d factors, want %d (half the rotary dims)", len(v), n)
	}
	for i, x := range v {
		if !(x > 0) || math.IsInf(x, 0) {
			r.Fail(key, families.ErrWrongType, "factor %d is %v, want a positive number", i, x)
		}
	}
	return v
}

func finish(m *Model, r *families.Reader, window int, c families.Container) (families.Model, error) {
	d := m.Decoder
	d.Name = "phi3"
	if window > 0 && (d.MaxContext == 0 || window < d.MaxContext) {
		d.Windows = slices.Repeat([]int{window}, d.Layers)
	}
	orig, attn := "original_max_position_embeddings", "rope_scaling.attention_factor"
	if r.GGUF() {
		orig, attn = "rope.scaling.original_context_length", "rope.scaling.attn_factor"
	}
	if m.OrigContext < 1 {
		r.Fail(orig, families.ErrWrongType, "original context %d", m.OrigContext)
	}
	if !(m.AttnFactor > 0) || math.IsInf(m.AttnFactor, 0) {
		r.Fail(attn, families.ErrWrongType, "attention factor %v must be positive", m.AttnFactor)
	}
	d.Weight = families.HFNames().With(map[string]string{
		"attn_q.weight": "", "attn_k.weight": "", "attn_v.weight": "", "ffn_gate.weight": "",
		"attn_qkv.weight": "self_attn.qkv_proj.weight",
		"ffn_up.weight":   "mlp.gate_up_proj.weight",
	}).In(c)
	d.GGUF = families.GGUFStyle{Architecture: "phi3", Keys: m.ggufKeys}
	d.HF = families.HFStyle{Architecture: "Phi3ForCausalLM", ModelType: "phi3", Keys: m.hfKeys}
	if _, err := families.Finish(d, r); err != nil {
		return nil, err
	}
	return m, nil
}

// Trace checks spec against the schema and records the step.
func (m *Model) Trace(spec families.StepSpec, limits poot.Limits) (*poot.Graph, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return families.TraceLayers(m.Name, m.Schema(), spec, limits, m.trace)
}

// rotary returns the step's cos/sin tables: the frequencies divided by the
// LongRoPE table the step's capacity selects, times the attention factor.
func (m *Model) rotary(step *families.Step[brand], w func(string, ...int) poot.Traced[brand]) ops.Rotary[brand] {
	b, r := step.B, m.Rope
	var rot ops.Rotary[brand]
	b.Scope("rope", func() {
		inv := ops.RopeInvFreq(b, r.RopeConfig)
		if lr := m.LongRoPE; lr != nil {
			long := step.Shape.Capacity > m.OrigContext
			var div poot.Traced[brand]
			switch {
			case lr.Tensors:
				// Both tables are declared, so every step reads (and a
				// writer writes) both, whichever this one uses.
				l, s := w(LongFactors, r.Dims/2), w(ShortFactors, r.Dims/2)
				div = s
				if long {
					div = l
				}
				div = ops.AsF32(b, div)
			case long:
				div = vector(b, lr.Long)
			default:
				div = vector(b, lr.Short)
			}
			inv = b.Div(inv, div)
		}
		rot = ops.RopeTables(b, step.Pos, inv, m.AttnFactor, r.Layout)
	})
	return rot
}

// vector records the values v as an F32 vector.
func vector(b *poot.Builder[brand], v []float64) poot.Traced[brand] {
	parts := make([]poot.Traced[brand], len(v))
	for i, x := range v {
		parts[i] = b.Full(poot.T(poot.F32, 1), x)
	}
	return b.Concat(0, parts...)
}

func (m *Model) trace(step *families.Step[brand]) (logits, hidden poot.Traced[brand]) {
	d, b := m.Decoder, step.B
	w := func(name string, dims ...int) poot.Traced[brand] { return b.Constant(name, poot.T(poot.F32, dims...)) }
	var none poot.Traced[brand]
	q := d.Heads * d.HeadDim
	stack := families.StackWeights[brand]{Embed: w("token_embd.weight", d.Vocab, d.Dim)}
	rot := m.rotary(step, w)
	layer := func(l int, x poot.Traced[brand]) poot.Traced[brand] {
		p, kv := fmt.Sprintf("blk.%d.", l), d.LayerKV(l)
		qkv := w(p+"attn_qkv.weight", q+2*kv*d.HeadDim, d.Dim)
		out := w(p+"attn_output.weight", d.Dim, q)
		up, down := w(p+"ffn_up.weight", 2*d.FFN, d.Dim), w(p+"ffn_down.weight", d.Dim, d.FFN)
		norms := families.LayerNorms[brand]{Mixer: w(p+"attn_norm.weight", d.Dim), FFN: w(p+"ffn_norm.weight", d.Dim), Eps: d.Eps}
		return families.Layer(b, x, norms, func(h poot.Traced[brand]) poot.Traced[brand] {
			qh, kh, vh := ops.SplitQKV(b, ops.Linear(b, h, qkv, none), d.Heads, kv, d.HeadDim)
			return families.AttendProjected(step, qh, kh, vh, out, none,
				families.AttentionConfig[brand]{Layer: l, Heads: d.Heads, KVHeads: kv, Window: d.Window(l), Rotary: rot})
		}, func(h poot.Traced[brand]) poot.Traced[brand] {
			gu := ops.SplitColumns(b, ops.Linear(b, h, up, none), d.FFN, d.FFN)
			return ops.Linear(b, ops.SwiGLU(b, gu[0], gu[1]), down, none)
		})
	}
	stack.Norm = w("output_norm.weight", d.Dim)
	if !d.Tied {
		stack.Output = w("output.weight", d.Vocab, d.Dim)
	}
	return families.Stack(step, stack, families.StackConfig{Layers: d.Layers, Eps: d.Eps}, layer)
}
