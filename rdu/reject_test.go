package rdu

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/rdu/sim"
	"github.com/pootlabs/poot/tensor"
)

type toyBrand struct{}

type toyB = poot.Builder[toyBrand]
type toyT = poot.Traced[toyBrand]

const (
	toyDim   = 8
	toyVocab = 16
	toyCtx   = 8
)

// toy is a model small enough to write each feature into by hand: an
// embedding, layers of attention over a cache (and whatever a test adds),
// a head.
type toy struct {
	b    *toyB
	step *families.Step[toyBrand]
}

func (m *toy) w(name string, dims ...int) toyT { return m.b.Constant(name, poot.T(poot.F32, dims...)) }

// attention is one attention block of layer l over h: q, k, v projections,
// the cache, causal attention with cfg (heads 2, head width 4 unless set).
func (m *toy) attention(l int, h toyT, window int, cfg ops.AttentionConfig[toyBrand]) toyT {
	b, p := m.b, fmt.Sprintf("blk.%d.", l)
	q := ops.Linear(b, h, m.w(p+"attn_q.weight", toyDim, toyDim), toyT{})
	k := ops.Linear(b, h, m.w(p+"attn_k.weight", toyDim, toyDim), toyT{})
	v := ops.Linear(b, h, m.w(p+"attn_v.weight", toyDim, toyDim), toyT{})
	if cfg.Heads == 0 {
		cfg.Heads, cfg.HeadDim = 2, toyDim/2
	}
	kAll := m.step.Cache(families.CacheName("k", l), k)
	vAll := m.step.Cache(families.CacheName("v", l), v)
	return ops.Attention(b, q, kAll, vAll, m.step.Mask(window), cfg)
}

// build traces a toy of the given layers; layer returns the layer's result
// from its input, head the logits from the last hidden state (nil: a norm
// and a projection).
func build(t *testing.T, layers int, layer func(m *toy, l int, x toyT) toyT, head func(m *toy, x toyT) toyT) *poot.Graph {
	t.Helper()
	b := poot.NewBuilder[toyBrand](poot.Limits{})
	m := &toy{b: b, step: families.NewStep(b, families.StepShape{Rows: 1, New: 1, Capacity: toyCtx}, toyVocab)}
	var x toyT
	b.Scope("embed", func() { x = b.Gather(m.w("token_embd.weight", toyVocab, toyDim), m.step.Tokens) })
	for l := range layers {
		b.Scope(fmt.Sprintf("layer.%d", l), func() { x = layer(m, l, x) })
	}
	var logits toyT
	b.Scope("head", func() {
		if head != nil {
			logits = head(m, x)
			return
		}
		h := ops.RMSNorm(b, x, m.w("output_norm.weight", toyDim), 1e-5)
		logits = ops.Linear(b, h, m.w("output.weight", toyVocab, toyDim), toyT{})
	})
	g, err := m.step.Finish(logits)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// plain is a layer of attention and a residual.
func plain(m *toy, l int, x toyT) toyT {
	h := ops.RMSNorm(m.b, x, m.w(fmt.Sprintf("blk.%d.attn_norm.weight", l), toyDim), 1e-5)
	return m.b.Add(x, m.attention(l, h, 0, ops.AttentionConfig[toyBrand]{}))
}

// fakeMoE records a "moe" composite with the given attributes over x (its
// body is a stand-in: the lifter refuses it from its record alone).
func fakeMoE(m *toy, l int, x toyT, attrs poot.Attrs) toyT {
	b, p := m.b, fmt.Sprintf("blk.%d.", l)
	e := 4
	router := m.w(p+"ffn_gate_inp.weight", e, toyDim)
	gate := b.Constant(p+"ffn_gate_exps.weight", poot.T(poot.F32, e, 4, toyDim))
	up := b.Constant(p+"ffn_up_exps.weight", poot.T(poot.F32, e, 4, toyDim))
	down := b.Constant(p+"ffn_down_exps.weight", poot.T(poot.F32, e, toyDim, 4))
	z := toyT{}
	return b.Composite("moe", attrs, []toyT{x, router, z, z, gate, up, down, z, z, z, z, z, z, z}, func() []toyT {
		return []toyT{b.Mul(x, x)}
	})[0]
}

func moeAttrs(topK, gating, groups, topGroups, groupScore int, scale float64, act int) poot.Attrs {
	return poot.Attrs{{Name: "form", Value: "sparse"}, {Name: "top_k", Value: topK}, {Name: "gating", Value: gating},
		{Name: "groups", Value: groups}, {Name: "top_groups", Value: topGroups}, {Name: "group_score", Value: groupScore},
		{Name: "renormalize", Value: true}, {Name: "scale", Value: scale}, {Name: "scale_inputs", Value: false},
		{Name: "activation", Value: act}, {Name: "alpha", Value: 0.0}, {Name: "limit", Value: 0.0}}
}

// TestRefusals: each feature the language cannot write is a *Reject with
// its own cause, naming the program, the statement and its binder.
func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name   string
		graph  func(t *testing.T) *poot.Graph
		cause  error
		prog   string
		binder string
	}{
		{"epsilon zero", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				h := ops.RMSNorm(m.b, x, m.w("blk.0.attn_norm.weight", toyDim), 0)
				return m.b.Add(x, m.attention(l, h, 0, ops.AttentionConfig[toyBrand]{}))
			}, nil)
		}, ErrEpsilon, "kind0 (layer 0)", "xn0"},
		{"epsilon negative", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				h := ops.RMSNorm(m.b, x, m.w("blk.0.attn_norm.weight", toyDim), -1e-6)
				return m.b.Add(x, m.attention(l, h, 0, ops.AttentionConfig[toyBrand]{}))
			}, nil)
		}, ErrEpsilon, "kind0 (layer 0)", "xn0"},
		{"logit soft cap", func(t *testing.T) *poot.Graph {
			return build(t, 1, plain, func(m *toy, x toyT) toyT {
				y := ops.Linear(m.b, x, m.w("output.weight", toyVocab, toyDim), toyT{})
				return m.b.Composite("soft_cap", poot.Attrs{{Name: "cap", Value: -30.0}}, []toyT{y}, func() []toyT { return []toyT{m.b.Tanh(y)} })[0]
			})
		}, ErrSoftCap, "head", "logits"},
		{"attention soft cap", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				return m.b.Add(x, m.attention(l, x, 0, ops.AttentionConfig[toyBrand]{Heads: 2, HeadDim: 4, SoftCap: math.NaN()}))
			}, nil)
		}, ErrSoftCap, "kind0 (layer 0)", "ct0"},
		{"hyper-connections", func(t *testing.T) *poot.Graph {
			var stream toyT
			return build(t, 2, func(m *toy, l int, x toyT) toyT {
				if l == 0 {
					stream = m.b.Exp(x) // a second stream carried past layer 0
					return plain(m, l, x)
				}
				return m.b.Add(plain(m, l, x), stream)
			}, nil)
		}, ErrHyperConnections, "layer 0", "layer 0 result"},
		{"per-layer embedding", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				ple := m.b.Gather(m.w("blk.0.per_layer_embd.weight", toyVocab, toyDim), m.step.Tokens)
				return m.b.Add(plain(m, l, x), ple)
			}, nil)
		}, ErrPerLayerEmbedding, "kind0 (layer 0)", "xe0"},
		{"sparse attention indexer", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				b := m.b
				q := ops.Linear(b, x, m.w("blk.0.attn_q.weight", toyDim, toyDim), toyT{})
				k := ops.Linear(b, x, m.w("blk.0.attn_k.weight", toyDim, toyDim), toyT{})
				kAll := m.step.Cache(families.CacheName("k", 0), k)
				vAll := m.step.Cache(families.CacheName("v", 0), k)
				idx := ops.Linear(b, x, m.w("blk.0.indexer.weight", toyCtx, toyDim), toyT{})
				mask := b.And(b.Gt(idx, b.FullLike(idx, 0)), m.step.Mask(0))
				return b.Add(x, ops.Attention(b, q, kAll, vAll, mask, ops.AttentionConfig[toyBrand]{Heads: 2, HeadDim: 4}))
			}, nil)
		}, ErrSparseAttention, "kind0 (layer 0)", "ct0"},
		{"output gate over wide values", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				b := m.b
				q := ops.Linear(b, x, m.w("blk.0.attn_q.weight", toyDim, toyDim), toyT{})
				k := ops.Linear(b, x, m.w("blk.0.attn_k.weight", toyDim, toyDim), toyT{})
				v := ops.Linear(b, x, m.w("blk.0.attn_v.weight", 2*toyDim, toyDim), toyT{})
				kAll, vAll := m.step.Cache(families.CacheName("k", 0), k), m.step.Cache(families.CacheName("v", 0), v)
				o := ops.Attention(b, q, kAll, vAll, m.step.Mask(0), ops.AttentionConfig[toyBrand]{Heads: 2, HeadDim: 4, ValueDim: 8})
				gate := ops.Linear(b, x, m.w("blk.0.attn_gate.weight", 2*toyDim, toyDim), toyT{})
				o = b.Mul(o, ops.Sigmoid(b, gate))
				return b.Add(x, ops.Linear(b, o, m.w("blk.0.attn_output.weight", toyDim, 2*toyDim), toyT{}))
			}, nil)
		}, ErrOutputGate, "kind0 (layer 0)", "hd0"},
		{"output gate on a fused projection", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				b := m.b
				qg := ops.Linear(b, x, m.w("blk.0.attn_qg.weight", 2*toyDim, toyDim), toyT{})
				parts := ops.SplitColumns(b, qg, toyDim, toyDim)
				k := ops.Linear(b, x, m.w("blk.0.attn_k.weight", toyDim, toyDim), toyT{})
				kAll, vAll := m.step.Cache(families.CacheName("k", 0), k), m.step.Cache(families.CacheName("v", 0), k)
				o := ops.Attention(b, parts[0], kAll, vAll, m.step.Mask(0), ops.AttentionConfig[toyBrand]{Heads: 2, HeadDim: 4})
				o = b.Mul(o, ops.Sigmoid(b, parts[1]))
				return b.Add(x, o)
			}, nil)
		}, ErrOutputGate, "kind0 (layer 0)", "hd0"},
		{"exact gelu", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				y := plain(m, l, x)
				g := ops.Linear(m.b, y, m.w("blk.0.ffn_gate.weight", 16, toyDim), toyT{})
				u := ops.Linear(m.b, y, m.w("blk.0.ffn_up.weight", 16, toyDim), toyT{})
				h := ops.GeGLUErf(m.b, g, u)
				return m.b.Add(y, ops.Linear(m.b, h, m.w("blk.0.ffn_down.weight", toyDim, 16), toyT{}))
			}, nil)
		}, ErrActivation, "kind0 (layer 0)", "hh0"},
		{"experts gated otherwise", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				return m.b.Add(plain(m, l, x), fakeMoE(m, l, x, moeAttrs(2, gatingSoftmaxTopK, 0, 0, 0, 0, 7)))
			}, nil)
		}, ErrExperts, "kind0 (layer 0)", "mo0"},
		{"routed scale negative", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				return m.b.Add(plain(m, l, x), fakeMoE(m, l, x, moeAttrs(2, gatingSoftmaxTopK, 0, 0, 0, -2.5, 0)))
			}, nil)
		}, ErrExperts, "kind0 (layer 0)", "mo0"},
		{"group limit over kept logits", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				return m.b.Add(plain(m, l, x), fakeMoE(m, l, x, moeAttrs(2, gatingTopKSoftmax, 2, 1, groupMax, 0, 0)))
			}, nil)
		}, ErrGroups, "kind0 (layer 0)", "mo0"},
		{"groups that do not split the experts", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				return m.b.Add(plain(m, l, x), fakeMoE(m, l, x, moeAttrs(1, gatingSoftmaxTopK, 3, 1, groupMax, 0, 0)))
			}, nil)
		}, ErrGroups, "kind0 (layer 0)", "mo0"},
		{"groups keeping fewer than chosen", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT {
				return m.b.Add(plain(m, l, x), fakeMoE(m, l, x, moeAttrs(3, gatingSigmoidTopK, 2, 1, groupTop2Sum, 0, 0)))
			}, nil)
		}, ErrGroups, "kind0 (layer 0)", "mo0"},
		{"unliftable primitive", func(t *testing.T) *poot.Graph {
			return build(t, 1, func(m *toy, l int, x toyT) toyT { return m.b.Exp(plain(m, l, x)) }, nil)
		}, ErrUnliftable, "kind0 (layer 0)", "xo0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Lower(c.graph(t), Options{})
			var r *Reject
			if !errors.As(err, &r) || !errors.Is(err, c.cause) {
				t.Fatalf("%v, want a rejection for %v", err, c.cause)
			}
			if r.Program != c.prog || r.Binder != c.binder || r.Statement < 0 {
				t.Errorf("rejected as program %q, statement %d, binder %q; want %q, %q", r.Program, r.Statement, r.Binder, c.prog, c.binder)
			}
		})
	}
}

// randomConsts binds every constant of g to small pseudo-random values.
func randomConsts(t *testing.T, g *poot.Graph) interp.ConstMap {
	t.Helper()
	out := interp.ConstMap{}
	seed := uint32(12345)
	for _, id := range g.Inputs(poot.Const) {
		v := g.Value(id)
		vals := make([]float32, v.Type.Shape.Size())
		for i := range vals {
			seed = seed*1664525 + 1013904223
			vals[i] = (float32(seed>>8)/float32(1<<24) - 0.5) * 0.6
		}
		ten, err := tensor.FromF32(v.Type.Shape, vals)
		if err != nil {
			t.Fatal(err)
		}
		out[v.Name] = ten
	}
	return out
}

// TestTemperatureOverAnOddHeadWidth: the seed refuses a query temperature
// over an odd head width, because it turns queries by their temperature
// through the rotary unit, which pairs channels. This lowering writes a
// position-dependent scale as the product with a row of a host table, so
// it has no such limit: a temperature over heads of width 3 lowers and
// certifies.
func TestTemperatureOverAnOddHeadWidth(t *testing.T) {
	const heads, hd = 2, 3
	g := build(t, 2, func(m *toy, l int, x toyT) toyT {
		b, p := m.b, fmt.Sprintf("blk.%d.", l)
		q := ops.Linear(b, x, m.w(p+"attn_q.weight", heads*hd, toyDim), toyT{})
		k := ops.Linear(b, x, m.w(p+"attn_k.weight", heads*hd, toyDim), toyT{})
		v := ops.Linear(b, x, m.w(p+"attn_v.weight", heads*hd, toyDim), toyT{})
		q = ops.ScaleRows(b, q, ops.AttnTemperature(b, m.step.Pos, 2, 0.5))
		kAll, vAll := m.step.Cache(families.CacheName("k", l), k), m.step.Cache(families.CacheName("v", l), v)
		o := ops.Attention(b, q, kAll, vAll, m.step.Mask(0), ops.AttentionConfig[toyBrand]{Heads: heads, HeadDim: hd})
		return b.Add(x, ops.Linear(b, o, m.w(p+"attn_output.weight", toyDim, heads*hd), toyT{}))
	}, nil)
	b, err := Lower(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Manifest.Tables) != 1 || b.Manifest.Tables[0].Cols != heads*hd {
		t.Errorf("tables %+v, want the temperature by position", b.Manifest.Tables)
	}
	consts := randomConsts(t, g)
	cert, err := Certify(b, g, consts, sim.InMemory{Consts: consts}, toyCtx, DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d steps, max |Δlogit| %.3g", cert.Steps, cert.MaxDiff)
}
