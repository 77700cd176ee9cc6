package nb_test

import (
	"fmt"
	"github.com/google/go-cmp/cmp"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/nb"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/tensor"
)

// ref is the brand of the direct graphs the methods are compared with.
type ref struct{}

type (
	rb = poot.Builder[ref]
	rh = poot.Traced[ref]
)

// decl is an operand of a case: an F32 input (slot), an F32 weight
// (constant), the positions or the tokens.
type decl struct {
	name string
	kind string // "input", "weight", "pos", "token"
	dims []int
}

func in(name string, dims ...int) decl { return decl{name, "input", dims} }
func wt(name string, dims ...int) decl { return decl{name, "weight", dims} }

const vocab = 16

// equivCase is one method and the graph package ops or the builder records
// for it directly.
type equivCase struct {
	name   string
	decls  []decl
	method func(g *nb.Graph, v []nb.Value) nb.Value
	direct func(b *rb, h []rh) rh
}

func declareNB(g *nb.Graph, d decl) nb.Value {
	switch d.kind {
	case "weight":
		return g.Weight(d.name, d.dims...)
	case "pos":
		return g.Positions(d.dims[0])
	case "token":
		return g.Tokens(d.dims[0], vocab)
	}
	return g.Input(d.name, d.dims...)
}

func declareRef(b *rb, d decl) rh {
	switch d.kind {
	case "weight":
		return b.Constant(d.name, poot.T(poot.F32, d.dims...))
	case "pos":
		return b.Slot(poot.SlotPos, poot.Shape(d.dims), 0, math.MaxInt32)
	case "token":
		return b.Slot(poot.SlotToken, poot.Shape(d.dims), 0, vocab-1)
	}
	return b.SlotNamed(d.name, poot.T(poot.F32, d.dims...))
}

// randomData fills each operand: normal floats rounded to f32, positions
// and tokens in range.
func randomData(r *rand.Rand, decls []decl) map[string][]float64 {
	data := map[string][]float64{}
	for _, d := range decls {
		n := 1
		for _, x := range d.dims {
			n *= x
		}
		v := make([]float64, n)
		for i := range v {
			switch d.kind {
			case "pos":
				v[i] = float64(r.IntN(12))
			case "token":
				v[i] = float64(r.IntN(vocab))
			default:
				v[i] = float64(float32(r.NormFloat64()))
			}
		}
		name := d.name
		if d.kind == "pos" {
			name = "pos"
		} else if d.kind == "token" {
			name = "token"
		}
		data[name] = v
	}
	return data
}

func evalRef(t *testing.T, c equivCase, data map[string][]float64) (*poot.Graph, []float64) {
	t.Helper()
	b := poot.NewBuilder[ref](poot.Limits{})
	h := make([]rh, len(c.decls))
	for i, d := range c.decls {
		h[i] = declareRef(b, d)
	}
	g, err := b.Finish(poot.Out(c.direct(b, h)))
	if err != nil {
		t.Fatalf("direct graph: %v", err)
	}
	consts, slots := interp.ConstMap{}, interp.Slots{}
	for _, id := range append(g.Inputs(poot.Const), g.Inputs(poot.Slot)...) {
		v := g.Value(id)
		var tn tensor.Tensor
		if v.Type.DType == poot.I32 {
			ints := make([]int32, len(data[v.Name]))
			for i, x := range data[v.Name] {
				ints[i] = int32(x)
			}
			tn, err = tensor.FromI32(v.Type.Shape, ints)
		} else {
			fs := make([]float32, len(data[v.Name]))
			for i, x := range data[v.Name] {
				fs[i] = float32(x)
			}
			tn, err = tensor.FromF32(v.Type.Shape, fs)
		}
		if err != nil {
			t.Fatal(err)
		}
		if v.Kind == poot.Const {
			consts[v.Name] = tn
		} else {
			slots[v.Name] = tn
		}
	}
	out, err := interp.Eval(g, consts, slots, nil)
	if err != nil {
		t.Fatalf("direct graph: %v", err)
	}
	res, err := out[0].ToF32()
	if err != nil {
		t.Fatal(err)
	}
	f := make([]float64, len(res))
	for i, x := range res {
		f[i] = float64(x)
	}
	return g, f
}

func equivCases() []equivCase {
	var cs []equivCase
	unary := []struct {
		name string
		m    func(*nb.Graph, nb.Value) nb.Value
		d    func(*rb, rh) rh
	}{
		{"Neg", (*nb.Graph).Neg, (*rb).Neg}, {"Exp", (*nb.Graph).Exp, (*rb).Exp},
		{"Log", (*nb.Graph).Log, (*rb).Log}, {"Sqrt", (*nb.Graph).Sqrt, (*rb).Sqrt},
		{"Rsqrt", (*nb.Graph).Rsqrt, (*rb).Rsqrt}, {"Tanh", (*nb.Graph).Tanh, (*rb).Tanh},
		{"Erf", (*nb.Graph).Erf, (*rb).Erf}, {"Sin", (*nb.Graph).Sin, (*rb).Sin},
		{"Cos", (*nb.Graph).Cos, (*rb).Cos}, {"Abs", (*nb.Graph).Abs, (*rb).Abs},
		{"Sigmoid", (*nb.Graph).Sigmoid, ops.Sigmoid[ref]}, {"SiLU", (*nb.Graph).SiLU, ops.SiLU[ref]},
		{"GeLU", (*nb.Graph).GeLU, ops.GeLU[ref]}, {"GeLUErf", (*nb.Graph).GeLUErf, ops.GeLUErf[ref]},
		{"MergeHeads", (*nb.Graph).MergeHeads, ops.MergeHeads[ref]},
		{"ReLU", (*nb.Graph).ReLU, func(b *rb, x rh) rh { return b.Max(x, b.FullLike(x, 0)) }},
	}
	for _, u := range unary {
		u := u
		cs = append(cs, equivCase{u.name, []decl{in("x", 3, 4)},
			func(g *nb.Graph, v []nb.Value) nb.Value { return u.m(g, v[0]) },
			func(b *rb, h []rh) rh { return u.d(b, h[0]) }})
	}
	binary := []struct {
		name string
		m    func(*nb.Graph, nb.Value, nb.Value) nb.Value
		d    func(*rb, rh, rh) rh
		comp bool // a composite, which does not broadcast
	}{
		{"Add", (*nb.Graph).Add, (*rb).Add, false}, {"Sub", (*nb.Graph).Sub, (*rb).Sub, false},
		{"Mul", (*nb.Graph).Mul, (*rb).Mul, false}, {"Div", (*nb.Graph).Div, (*rb).Div, false},
		{"Max", (*nb.Graph).Max, (*rb).Max, false}, {"Min", (*nb.Graph).Min, (*rb).Min, false},
		{"Pow", (*nb.Graph).Pow, (*rb).Pow, false}, {"Eq", (*nb.Graph).Eq, (*rb).Eq, false},
		{"Ne", (*nb.Graph).Ne, (*rb).Ne, false}, {"Lt", (*nb.Graph).Lt, (*rb).Lt, false},
		{"Le", (*nb.Graph).Le, (*rb).Le, false}, {"Gt", (*nb.Graph).Gt, (*rb).Gt, false},
		{"Ge", (*nb.Graph).Ge, (*rb).Ge, false},
		{"SwiGLU", (*nb.Graph).SwiGLU, ops.SwiGLU[ref], true}, {"GeGLU", (*nb.Graph).GeGLU, ops.GeGLU[ref], true},
	}
	for _, o := range binary {
		o := o
		cs = append(cs, equivCase{o.name, []decl{in("x", 3, 4), in("y", 3, 4)},
			func(g *nb.Graph, v []nb.Value) nb.Value { return o.m(g, v[0], v[1]) },
			func(b *rb, h []rh) rh { return o.d(b, h[0], h[1]) }})
		if o.comp {
			continue
		}
		cs = append(cs, equivCase{o.name + "/broadcast", []decl{in("x", 2, 1, 4), in("y", 3, 1)},
			func(g *nb.Graph, v []nb.Value) nb.Value { return o.m(g, v[0], v[1]) },
			func(b *rb, h []rh) rh {
				return o.d(b, ops.BroadcastTo(b, h[0], 2, 3, 4), ops.BroadcastTo(b, h[1], 2, 3, 4))
			}})
	}
	xy := []decl{in("x", 3, 4), in("y", 3, 4)}
	x34 := []decl{in("x", 3, 4)}
	add := func(name string, decls []decl, m func(g *nb.Graph, v []nb.Value) nb.Value, d func(b *rb, h []rh) rh) {
		cs = append(cs, equivCase{name, decls, m, d})
	}
	add("Not", xy, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Not(g.Gt(v[0], v[1])) },
		func(b *rb, h []rh) rh { return b.Not(b.Gt(h[0], h[1])) })
	scalar := func(b *rb, v float64) rh { return ops.BroadcastTo(b, b.Scalar(v), 3, 4) }
	add("And", xy, func(g *nb.Graph, v []nb.Value) nb.Value { return g.And(g.Gt(v[0], v[1]), g.Lt(v[0], g.Scalar(0))) },
		func(b *rb, h []rh) rh { return b.And(b.Gt(h[0], h[1]), b.Lt(h[0], scalar(b, 0))) })
	add("Or", xy, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Or(g.Gt(v[0], v[1]), g.Lt(v[0], g.Scalar(0))) },
		func(b *rb, h []rh) rh { return b.Or(b.Gt(h[0], h[1]), b.Lt(h[0], scalar(b, 0))) })
	add("Select", xy, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Select(g.Gt(v[0], v[1]), v[0], g.Scalar(-1)) },
		func(b *rb, h []rh) rh { return b.Select(b.Gt(h[0], h[1]), h[0], scalar(b, -1)) })
	for _, axis := range []int{0, -1} {
		axis := axis
		sfx := fmt.Sprintf("/axis%d", axis)
		add("ReduceSum"+sfx, x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.ReduceSum(v[0], axis) },
			func(b *rb, h []rh) rh { return b.ReduceSum(h[0], axis) })
		add("ReduceMax"+sfx, x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.ReduceMax(v[0], axis) },
			func(b *rb, h []rh) rh { return b.ReduceMax(h[0], axis) })
		add("ArgMax"+sfx, x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.ArgMax(v[0], axis) },
			func(b *rb, h []rh) rh { return b.ArgMax(h[0], axis) })
		add("Mean"+sfx, x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Mean(v[0], axis) },
			func(b *rb, h []rh) rh { return ops.Mean(b, h[0], axis) })
		add("Softmax"+sfx, x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Softmax(v[0], axis) },
			func(b *rb, h []rh) rh { return ops.Softmax(b, h[0], axis) })
		add("LogSumExp"+sfx, x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.LogSumExp(v[0], axis) },
			func(b *rb, h []rh) rh { return ops.LogSumExp(b, h[0], axis) })
	}
	add("ArgTopK", x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.ArgTopK(v[0], 2) },
		func(b *rb, h []rh) rh { return b.ArgTopK(h[0], 2) })
	add("MatMul", []decl{in("a", 3, 4), wt("w", 5, 4)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.MatMul(v[0], v[1]) },
		func(b *rb, h []rh) rh { return b.MatMul(h[0], h[1]) })
	add("MatMul/batched", []decl{in("a", 2, 3, 4), in("w", 2, 5, 4)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.MatMul(v[0], v[1]) },
		func(b *rb, h []rh) rh { return b.MatMul(h[0], h[1]) })
	add("Reshape", x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Reshape(v[0], 2, -1, 3) },
		func(b *rb, h []rh) rh { return b.Reshape(h[0], 2, 2, 3) })
	add("Broadcast", []decl{in("x", 3, 1)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Broadcast(v[0], 2, 3, 4) },
		func(b *rb, h []rh) rh { return b.Broadcast(b.Reshape(h[0], 1, 3, 1), 2, 3, 4) })
	add("Transpose", []decl{in("x", 2, 3, 4)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Transpose(v[0], 1, 2, 0) },
		func(b *rb, h []rh) rh { return b.Transpose(h[0], 1, 2, 0) })
	add("Transpose/reverse", []decl{in("x", 2, 3, 4)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Transpose(v[0]) },
		func(b *rb, h []rh) rh { return b.Transpose(h[0], 2, 1, 0) })
	add("Slice", x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Slice(v[0], -1, 1, 3) },
		func(b *rb, h []rh) rh { return b.SliceAxis(h[0], -1, 1, 3) })
	add("Concat", xy, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Concat(-1, v[0], v[1], v[0]) },
		func(b *rb, h []rh) rh { return b.Concat(-1, h[0], h[1], h[0]) })
	tokens := decl{"token", "token", []int{5}}
	add("Gather", []decl{wt("table", vocab, 3), tokens}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Gather(v[0], v[1]) },
		func(b *rb, h []rh) rh { return b.Gather(h[0], h[1]) })
	add("Embed", []decl{wt("table", vocab, 3), tokens}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Embed(v[0], v[1]) },
		func(b *rb, h []rh) rh { return ops.AsF32(b, b.Gather(h[0], h[1])) })
	add("Cast", x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Cast(g.Cast(v[0], "bf16"), "f32") },
		func(b *rb, h []rh) rh { return b.Cast(b.Cast(h[0], poot.BF16), poot.F32) })
	add("Scalar/Full/Iota", x34, func(g *nb.Graph, v []nb.Value) nb.Value {
		return g.Add(g.Mul(v[0], g.Full(2, 3, 4)), g.Add(g.Iota(1, 3, 4), g.Scalar(0.5)))
	}, func(b *rb, h []rh) rh {
		m := b.Mul(h[0], b.Full(poot.T(poot.F32, 3, 4), 2))
		i := b.Iota(poot.T(poot.F32, 3, 4), 1)
		return b.Add(m, b.Add(i, scalar(b, 0.5)))
	})
	add("RMSNorm", []decl{in("x", 3, 4), wt("w", 4)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.RMSNorm(v[0], v[1], 1e-5) },
		func(b *rb, h []rh) rh { return ops.RMSNorm(b, h[0], h[1], 1e-5) })
	add("RMSNorm/noweight", x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.RMSNorm(v[0], nb.Value{}, 1e-5) },
		func(b *rb, h []rh) rh { return ops.RMSNorm(b, h[0], rh{}, 1e-5) })
	add("LayerNorm", []decl{in("x", 3, 4), wt("w", 4), wt("b", 4)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.LayerNorm(v[0], v[1], v[2], 1e-5) },
		func(b *rb, h []rh) rh { return ops.LayerNorm(b, h[0], h[1], h[2], 1e-5) })
	add("LayerNorm/plain", x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.LayerNorm(v[0], nb.Value{}, nb.Value{}, 1e-5) },
		func(b *rb, h []rh) rh { return ops.LayerNorm(b, h[0], rh{}, rh{}, 1e-5) })
	add("L2Norm", x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.L2Norm(v[0], 1e-6) },
		func(b *rb, h []rh) rh { return ops.L2Norm(b, h[0], 1e-6) })
	add("RMSNormHeads", []decl{in("x", 3, 8), wt("w", 4)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.RMSNormHeads(v[0], v[1], 2, 1e-5) },
		func(b *rb, h []rh) rh { return ops.RMSNormHeads(b, h[0], h[1], 2, 1e-5) })
	add("Linear", []decl{in("x", 3, 4), wt("w", 5, 4), wt("b", 5)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Linear(v[0], v[1], v[2]) },
		func(b *rb, h []rh) rh { return ops.Linear(b, h[0], h[1], h[2]) })
	add("Linear/3d-nobias", []decl{in("x", 2, 3, 4), wt("w", 5, 4)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.Linear(v[0], v[1], nb.Value{}) },
		func(b *rb, h []rh) rh { return ops.Linear(b, h[0], h[1], rh{}) })
	add("SoftCap", x34, func(g *nb.Graph, v []nb.Value) nb.Value { return g.SoftCap(v[0], 0.5) },
		func(b *rb, h []rh) rh { return ops.SoftCap(b, h[0], 0.5) })
	ffn := []decl{in("x", 3, 4), wt("gate", 6, 4), wt("up", 6, 4), wt("down", 4, 6)}
	for _, act := range []string{"swiglu", "geglu", "geglu_erf"} {
		act := act
		glu := map[string]ops.GLU[ref]{"swiglu": ops.SwiGLU[ref], "geglu": ops.GeGLU[ref], "geglu_erf": ops.GeGLUErf[ref]}[act]
		add("GatedFFN/"+act, ffn, func(g *nb.Graph, v []nb.Value) nb.Value { return g.GatedFFN(v[0], v[1], v[2], v[3], act) },
			func(b *rb, h []rh) rh { return ops.GatedFFN(b, h[0], h[1], h[2], h[3], glu) })
	}
	ffn2 := []decl{in("x", 3, 4), wt("up", 6, 4), wt("upb", 6), wt("down", 4, 6), wt("downb", 4)}
	for _, act := range []string{"gelu", "gelu_erf", "silu"} {
		act := act
		f := map[string]ops.Activation[ref]{"gelu": ops.GeLU[ref], "gelu_erf": ops.GeLUErf[ref], "silu": ops.SiLU[ref]}[act]
		add("FFN/"+act, ffn2, func(g *nb.Graph, v []nb.Value) nb.Value { return g.FFN(v[0], v[1], v[2], v[3], v[4], act) },
			func(b *rb, h []rh) rh { return ops.FFN(b, h[0], h[1], h[2], h[3], h[4], f) })
	}
	add("SplitHeads", []decl{in("x", 3, 8)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.SplitHeads(v[0], 2) },
		func(b *rb, h []rh) rh { return ops.SplitHeads(b, h[0], 2) })
	add("RepeatKV", []decl{in("x", 2, 3, 4)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.RepeatKV(v[0], 3) },
		func(b *rb, h []rh) rh { return ops.RepeatKV(b, h[0], 3) })
	pos := decl{"pos", "pos", []int{4}}
	add("CausalMask", []decl{pos}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.CausalMask(v[0], 12, 3) },
		func(b *rb, h []rh) rh { return ops.CausalMask(b, h[0], 12, 3, 0) })
	rope := func(rc ops.RopeConfig, layout ops.RopeLayout, b *rb, x, p rh) rh {
		return ops.RoPE(b, x, 2, ops.RopeTables(b, p, ops.RopeInvFreq(b, rc), rc.AttentionFactor(), layout))
	}
	add("RoPE", []decl{in("x", 4, 16)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.RoPE(v[0], nb.Value{}, 2, nb.RoPEConfig{}) },
		func(b *rb, h []rh) rh {
			return rope(ops.RopeConfig{Dims: 8, Theta: 10000}, ops.RopeNeoX, b, h[0], b.Iota(poot.T(poot.I32, 4), 0))
		})
	add("RoPE/interleaved-partial-pos", []decl{in("x", 4, 16), pos}, func(g *nb.Graph, v []nb.Value) nb.Value {
		return g.RoPE(v[0], v[1], 2, nb.RoPEConfig{Dims: 4, Theta: 500, Interleaved: true})
	}, func(b *rb, h []rh) rh {
		return rope(ops.RopeConfig{Dims: 4, Theta: 500}, ops.RopeInterleaved, b, h[0], h[1])
	})
	add("RoPE/llama3", []decl{in("x", 4, 16), pos}, func(g *nb.Graph, v []nb.Value) nb.Value {
		return g.RoPE(v[0], v[1], 2, nb.RoPEConfig{Scaling: "llama3", Factor: 8, OrigContext: 64, LowFreqFactor: 1, HighFreqFactor: 4})
	}, func(b *rb, h []rh) rh {
		rc := ops.RopeConfig{Dims: 8, Theta: 10000, Scaling: ops.ScaleLlama3, Factor: 8, OrigContext: 64, LowFreqFactor: 1, HighFreqFactor: 4}
		return rope(rc, ops.RopeNeoX, b, h[0], h[1])
	})
	attn := []decl{in("q", 3, 8), in("k", 5, 4), in("v", 5, 6)}
	add("Attention/causal-gqa", attn, func(g *nb.Graph, v []nb.Value) nb.Value {
		return g.Attention(v[0], v[1], v[2], nb.Value{}, nb.AttentionConfig{Heads: 2, KVHeads: 1})
	}, func(b *rb, h []rh) rh {
		p := b.Add(b.Iota(poot.T(poot.I32, 3), 0), b.Full(poot.T(poot.I32, 3), 2))
		m := ops.CausalMask(b, p, 5, 0, 0)
		return ops.Attention(b, h[0], h[1], h[2], m, ops.AttentionConfig[ref]{Heads: 2, KVHeads: 1, HeadDim: 4, ValueDim: 6, Scale: 0.5})
	})
	add("Attention/mask-softcap", append(attn, pos), func(g *nb.Graph, v []nb.Value) nb.Value {
		m := g.CausalMask(g.Slice(v[3], 0, 0, 3), 5, 2)
		return g.Attention(v[0], v[1], v[2], m, nb.AttentionConfig{Heads: 2, KVHeads: 1, SoftCap: 3, Scale: 0.25})
	}, func(b *rb, h []rh) rh {
		m := ops.CausalMask(b, b.SliceAxis(h[3], 0, 0, 3), 5, 2, 0)
		return ops.Attention(b, h[0], h[1], h[2], m, ops.AttentionConfig[ref]{Heads: 2, KVHeads: 1, HeadDim: 4, ValueDim: 6, Scale: 0.25, SoftCap: 3})
	})
	add("GeGLUErf", xy, func(g *nb.Graph, v []nb.Value) nb.Value { return g.GeGLUErf(v[0], v[1]) },
		func(b *rb, h []rh) rh { return ops.GeGLUErf(b, h[0], h[1]) })
	add("SwiGLUClamped", xy, func(g *nb.Graph, v []nb.Value) nb.Value { return g.SwiGLUClamped(v[0], v[1], 0.7, 1.702) },
		func(b *rb, h []rh) rh { return ops.SwiGLUClamped(b, h[0], h[1], 0.7, 1.702) })
	add("L2NormHeads", []decl{in("x", 3, 8)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.L2NormHeads(v[0], 2, 1e-6) },
		func(b *rb, h []rh) rh { return ops.L2NormHeads(b, h[0], 2, 1e-6) })
	add("OutputGate", xy, func(g *nb.Graph, v []nb.Value) nb.Value { return g.OutputGate(v[0], v[1]) },
		func(b *rb, h []rh) rh { return ops.OutputGate(b, h[0], h[1]) })
	add("ScaleRows", []decl{in("x", 3, 4), in("s", 3)}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.ScaleRows(v[0], v[1]) },
		func(b *rb, h []rh) rh { return ops.ScaleRows(b, h[0], h[1]) })
	add("AttnTemperature", []decl{pos}, func(g *nb.Graph, v []nb.Value) nb.Value { return g.AttnTemperature(v[0], 3, 0.1) },
		func(b *rb, h []rh) rh { return ops.AttnTemperature(b, h[0], 3, 0.1) })
	add("Split", []decl{in("x", 3, 9)}, func(g *nb.Graph, v []nb.Value) nb.Value {
		p := g.Split(v[0], 4, 2, 3)
		return g.Concat(-1, p[2], p[0], p[1])
	}, func(b *rb, h []rh) rh {
		p := ops.SplitColumns(b, h[0], 4, 2, 3)
		return b.Concat(-1, p[2], p[0], p[1])
	})
	moeDecls := []decl{in("x", 5, 4), wt("router", 4, 4), wt("gate", 4, 6, 4), wt("up", 4, 6, 4), wt("down", 4, 4, 6),
		wt("sgate", 3, 4), wt("sup", 3, 4), wt("sdown", 4, 3), wt("sel", 4)}
	for _, mc := range []nb.MoEConfig{
		{TopK: 2},
		{TopK: 2, Gating: "sigmoid_topk", Groups: 2, TopGroups: 1, Renormalize: true, Scale: 2.5},
		{TopK: 1, Gating: "topk_softmax", ClampedSwiGLU: true, Alpha: 1.702, Limit: 7},
	} {
		mc := mc
		gating := map[string]ops.Gating{"": ops.SoftmaxTopK, "sigmoid_topk": ops.SigmoidTopK, "topk_softmax": ops.TopKSoftmax}[mc.Gating]
		add("MoE/"+mc.Gating, moeDecls, func(g *nb.Graph, v []nb.Value) nb.Value {
			w := nb.MoEWeights{Router: v[1], Gate: v[2], Up: v[3], Down: v[4], SharedGate: v[5], SharedUp: v[6], SharedDown: v[7]}
			if mc.Gating == "sigmoid_topk" {
				w.SelectionBias = v[8]
			}
			return g.MoE(v[0], w, mc)
		}, func(b *rb, h []rh) rh {
			w := ops.MoEWeights[ref]{Router: h[1], Gate: h[2], Up: h[3], Down: h[4], SharedGate: h[5], SharedUp: h[6], SharedDown: h[7]}
			if mc.Gating == "sigmoid_topk" {
				w.SelectionBias = h[8]
			}
			oc := ops.MoEConfig{TopK: mc.TopK, Gating: gating, Groups: mc.Groups, TopGroups: mc.TopGroups,
				Renormalize: mc.Renormalize, Scale: mc.Scale, Alpha: mc.Alpha, Limit: mc.Limit}
			if mc.ClampedSwiGLU {
				oc.Activation = ops.ExpertClampedSwiGLU
			}
			return ops.MoESparse(b, h[0], w, oc)
		})
	}
	add("Scope", x34, func(g *nb.Graph, v []nb.Value) nb.Value {
		var y nb.Value
		g.Scope("block", func() { y = g.Exp(v[0]) })
		return g.Neg(y)
	}, func(b *rb, h []rh) rh {
		var y rh
		b.Scope("block", func() { y = b.Exp(h[0]) })
		return b.Neg(y)
	})
	return cs
}

// Every method records what the ops function or builder method it stands
// for records, and computes the same numbers, bit for bit.
func TestMethodsMatchDirectGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range equivCases() {
		t.Run(c.name, func(t *testing.T) {
			for trial := 0; trial < 3; trial++ {
				data := randomData(r, c.decls)
				g := nb.New()
				v := make([]nb.Value, len(c.decls))
				for i, d := range c.decls {
					v[i] = declareNB(g, d)
				}
				y := c.method(g, v)
				res, err := g.Run(y, data)
				if err != nil {
					t.Fatal(err)
				}
				got := res.Data
				rg, want := evalRef(t, c, data)
				fg, err := g.Finish(y)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(rg.String(), fg.String()); d != "" {
					t.Fatalf("the method records another graph than the direct one (-direct +method):\n%s", d)
				}
				if len(got) != len(want) {
					t.Fatalf("%d results, want %d", len(got), len(want))
				}
				for i := range got {
					if math.Float32bits(float32(got[i])) != math.Float32bits(float32(want[i])) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
						t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
					}
				}
				if sh := y.Shape(); len(sh) != len(rg.Type(rg.Outputs()[0]).Shape) || fmt.Sprint(sh) != fmt.Sprint(res.Shape) {
					t.Fatalf("shape %v, want %v", sh, rg.Type(rg.Outputs()[0]).Shape)
				}
			}
		})
	}
}
