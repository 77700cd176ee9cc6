package ops_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/tensor"
	"pgregory.net/rapid"
)

// The tests of this file's author share a small harness: a builder of brand
// coreBrand, inputs declared together with their data, and evaluation under
// the oracle. References are naive float64 loops written in the tests.

type coreBrand struct{}

type coreT = poot.Traced[coreBrand]

// coreTB is what the harness needs of a *testing.T or a *rapid.T.
type coreTB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

type coreGraph struct {
	b      *poot.Builder[coreBrand]
	consts interp.ConstMap
	slots  interp.Slots
	state  *interp.State
	carry  []poot.Carry[coreBrand]
}

func newCore() *coreGraph {
	return &coreGraph{
		b:      poot.NewBuilder[coreBrand](poot.Limits{}),
		consts: interp.ConstMap{},
		slots:  interp.Slots{},
		state:  &interp.State{Tensors: map[string]tensor.Tensor{}},
	}
}

func coreF32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// coreRound returns v as the float32 values the graph sees, widened back.
func coreRound(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(float32(x))
	}
	return out
}

// constant declares an F32 constant holding v (rounded to float32, as the
// reference should also use).
func (g *coreGraph) constant(tb coreTB, name string, v []float64, shape ...int) coreT {
	tb.Helper()
	t, err := tensor.FromF32(poot.Shape(shape), coreF32s(v))
	if err != nil {
		tb.Fatal(err)
	}
	g.consts[name] = t
	return g.b.Constant(name, poot.T(poot.F32, shape...))
}

// stored declares a constant of dtype d holding v as d encodes it, and
// returns the decoded values the graph reads.
func (g *coreGraph) stored(tb coreTB, name string, d poot.DType, v []float64, shape ...int) (coreT, []float64) {
	tb.Helper()
	t, err := tensor.Quantize(poot.T(d, shape...), coreF32s(v))
	if err != nil {
		tb.Fatal(err)
	}
	dec, err := t.ToF32()
	if err != nil {
		tb.Fatal(err)
	}
	g.consts[name] = t
	out := make([]float64, len(dec))
	for i, x := range dec {
		out[i] = float64(x)
	}
	return g.b.Constant(name, t.Type), out
}

// positions declares the SlotPos slot with values pos in [0, max].
func (g *coreGraph) positions(tb coreTB, pos []int, max int) coreT {
	tb.Helper()
	v := make([]int32, len(pos))
	for i, p := range pos {
		v[i] = int32(p)
	}
	t, err := tensor.FromI32(poot.Shape{len(pos)}, v)
	if err != nil {
		tb.Fatal(err)
	}
	g.slots[poot.SlotPos.String()] = t
	return g.b.Slot(poot.SlotPos, poot.Shape{len(pos)}, 0, int64(max))
}

// cache declares an F32 state input holding v.
func (g *coreGraph) cache(tb coreTB, name string, v []float64, shape ...int) coreT {
	tb.Helper()
	t, err := tensor.FromF32(poot.Shape(shape), coreF32s(v))
	if err != nil {
		tb.Fatal(err)
	}
	g.state.Tensors[name] = t
	return g.b.StateInput(name, poot.T(poot.F32, shape...))
}

// run finishes the graph with outs (and the recorded carries), logs its
// size, evaluates it under the oracle and returns the outputs as float64.
func (g *coreGraph) run(tb coreTB, label string, outs ...coreT) [][]float64 {
	tb.Helper()
	o := poot.Out(outs...)
	for _, c := range g.carry {
		o = o.WithState(c.In, c.Out)
	}
	gr, err := g.b.Finish(o)
	if err != nil {
		tb.Fatalf("%s: %v", label, err)
	}
	if label != "" {
		tb.Logf("%s: %d equations, %d dispatches", label, gr.NumEqns(), poot.DispatchCount(gr))
	}
	res, err := interp.Eval(gr, g.consts, g.slots, g.state)
	if err != nil {
		tb.Fatalf("%s: eval: %v", label, err)
	}
	out := make([][]float64, len(res))
	for i, r := range res {
		f, err := r.ToF32()
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = make([]float64, len(f))
		for j, x := range f {
			out[i][j] = float64(x)
		}
	}
	return out
}

// stateOf returns the state tensor name after a run, as float64.
func (g *coreGraph) stateOf(tb coreTB, name string) []float64 {
	f, err := g.state.Tensors[name].ToF32()
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]float64, len(f))
	for i, x := range f {
		out[i] = float64(x)
	}
	return out
}

// coreRelErr is the largest absolute difference relative to the largest
// reference magnitude (at least 1e-3, so all-zero references compare by
// absolute error).
func coreRelErr(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	scale, worst := 1e-3, 0.0
	for _, w := range want {
		if !math.IsNaN(w) && !math.IsInf(w, 0) {
			scale = math.Max(scale, math.Abs(w))
		}
	}
	for i := range got {
		d := math.Abs(got[i] - want[i])
		if math.IsNaN(got[i]) != math.IsNaN(want[i]) {
			return math.Inf(1)
		}
		if !math.IsNaN(d) {
			worst = math.Max(worst, d)
		}
	}
	return worst / scale
}

const coreTol = 1e-5

func coreCheck(tb coreTB, label string, got, want []float64) {
	tb.Helper()
	if e := coreRelErr(got, want); !(e < coreTol) {
		tb.Errorf("%s: relative error %.3g (tolerance %g)\n got %v\nwant %v", label, e, coreTol, coreHead(got), coreHead(want))
	}
}

func coreHead(v []float64) []float64 {
	if len(v) > 8 {
		return v[:8]
	}
	return v
}

func coreRand(r *rand.Rand, n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = coreRound([]float64{(r.Float64()*2 - 1) * scale})[0]
	}
	return v
}

// --- naive references ---

func coreSigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func coreSoftmaxRows(x []float64, n int) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/n; r++ {
		row := x[r*n : (r+1)*n]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(v - m)
		}
		for i, v := range row {
			out[r*n+i] = math.Exp(v-m) / s
		}
	}
	return out
}

func coreMap(x []float64, f func(float64) float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = f(v)
	}
	return out
}

// --- tests ---

func TestUtilAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows, n = 3, 7
	xv := coreRand(r, rows*n, 20)

	g := newCore()
	x := g.constant(t, "x", xv, rows, n)
	out := g.run(t, "Softmax", ops.Softmax(g.b, x, -1))
	coreCheck(t, "Softmax", out[0], coreSoftmaxRows(xv, n))

	g = newCore()
	x = g.constant(t, "x", xv, rows, n)
	out = g.run(t, "LogSumExp", ops.LogSumExp(g.b, x, 1))
	want := make([]float64, rows)
	for i := range rows {
		s := 0.0
		for _, v := range xv[i*n : (i+1)*n] {
			s += math.Exp(v)
		}
		want[i] = math.Log(s)
	}
	coreCheck(t, "LogSumExp", out[0], want)

	g = newCore()
	x = g.constant(t, "x", xv, rows, n)
	out = g.run(t, "Sigmoid", ops.Sigmoid(g.b, x))
	coreCheck(t, "Sigmoid", out[0], coreMap(xv, coreSigmoid))

	g = newCore()
	x = g.constant(t, "x", xv, rows, n)
	out = g.run(t, "SiLU", ops.SiLU(g.b, x))
	coreCheck(t, "SiLU", out[0], coreMap(xv, func(v float64) float64 { return v * coreSigmoid(v) }))

	// Softmax over a leading axis.
	g = newCore()
	x = g.constant(t, "x", xv, rows, n)
	out = g.run(t, "Softmax(axis 0)", ops.Softmax(g.b, x, 0))
	tr := make([]float64, len(xv))
	for i := range rows {
		for j := range n {
			tr[j*rows+i] = xv[i*n+j]
		}
	}
	sm := coreSoftmaxRows(tr, rows)
	want = make([]float64, len(xv))
	for i := range rows {
		for j := range n {
			want[i*n+j] = sm[j*rows+i]
		}
	}
	coreCheck(t, "Softmax(axis 0)", out[0], want)

	// BroadcastTo prepends axes.
	g = newCore()
	v := g.constant(t, "v", xv[:n], n)
	out = g.run(t, "BroadcastTo", ops.BroadcastTo(g.b, v, rows, n))
	want = nil
	for range rows {
		want = append(want, xv[:n]...)
	}
	coreCheck(t, "BroadcastTo", out[0], want)
}

func TestSoftmaxRowsSumToOne(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rows := rapid.IntRange(1, 4).Draw(rt, "rows")
		n := rapid.IntRange(1, 9).Draw(rt, "n")
		xv := rapid.SliceOfN(rapid.Float64Range(-80, 80), rows*n, rows*n).Draw(rt, "x")
		xv = coreRound(xv)
		g := newCore()
		out := g.run(rt, "", ops.Softmax(g.b, g.constant(rt, "x", xv, rows, n), -1))
		for i := range rows {
			s := 0.0
			for _, p := range out[0][i*n : (i+1)*n] {
				if p < 0 || p > 1 {
					rt.Fatalf("probability %v outside [0,1]", p)
				}
				s += p
			}
			if math.Abs(s-1) > 1e-5 {
				rt.Fatalf("row %d sums to %v", i, s)
			}
		}
	})
}

// TestNoPanics drives every composite with operands of wrong shapes, foreign
// and poisoned handles: each must record an error and never panic.
func TestNoPanics(t *testing.T) {
	type fn func(b *poot.Builder[coreBrand], x, y coreT)
	var none coreT
	cases := map[string]fn{
		"RMSNorm":      func(b *poot.Builder[coreBrand], x, y coreT) { ops.RMSNorm(b, x, y, 1e-5) },
		"LayerNorm":    func(b *poot.Builder[coreBrand], x, y coreT) { ops.LayerNorm(b, x, y, y, 1e-5) },
		"L2Norm":       func(b *poot.Builder[coreBrand], x, y coreT) { ops.L2Norm(b, x, 1e-5) },
		"RMSNormHeads": func(b *poot.Builder[coreBrand], x, y coreT) { ops.RMSNormHeads(b, x, y, 3, 1e-5) },
		"L2NormHeads":  func(b *poot.Builder[coreBrand], x, y coreT) { ops.L2NormHeads(b, x, 0, 1e-5) },
		"Linear":       func(b *poot.Builder[coreBrand], x, y coreT) { ops.Linear(b, x, y, y) },
		"SplitQKV":     func(b *poot.Builder[coreBrand], x, y coreT) { ops.SplitQKV(b, x, 2, 1, 3) },
		"Softmax":      func(b *poot.Builder[coreBrand], x, y coreT) { ops.Softmax(b, x, 5) },
		"LogSumExp":    func(b *poot.Builder[coreBrand], x, y coreT) { ops.LogSumExp(b, x, -7) },
		"Mean":         func(b *poot.Builder[coreBrand], x, y coreT) { ops.Mean(b, x, 9) },
		"BroadcastTo":  func(b *poot.Builder[coreBrand], x, y coreT) { ops.BroadcastTo(b, x, 2) },
		"MergeHeads":   func(b *poot.Builder[coreBrand], x, y coreT) { ops.MergeHeads(b, y) },
		"RopeInvFreq":  func(b *poot.Builder[coreBrand], x, y coreT) { ops.RopeInvFreq(b, ops.RopeConfig{Dims: 3}) },
		"RopeTables":   func(b *poot.Builder[coreBrand], x, y coreT) { ops.RopeTables(b, x, y, 1, ops.RopeNeoX) },
		"RoPE":         func(b *poot.Builder[coreBrand], x, y coreT) { ops.RoPE(b, x, 5, ops.Rotary[coreBrand]{Cos: y, Sin: y}) },
		"RoPE(zero)":   func(b *poot.Builder[coreBrand], x, y coreT) { ops.RoPE(b, x, 1, ops.Rotary[coreBrand]{}) },
		"Temperature":  func(b *poot.Builder[coreBrand], x, y coreT) { ops.AttnTemperature(b, x, 0, 1) },
		"ScaleRows":    func(b *poot.Builder[coreBrand], x, y coreT) { ops.ScaleRows(b, x, y) },
		"RepeatKV":     func(b *poot.Builder[coreBrand], x, y coreT) { ops.RepeatKV(b, x, 0) },
		"CausalMask":   func(b *poot.Builder[coreBrand], x, y coreT) { ops.CausalMask(b, x, 4, -1, 0) },
		"CacheIndex":   func(b *poot.Builder[coreBrand], x, y coreT) { ops.CacheIndex(b, x, 0, 4) },
		"Attention": func(b *poot.Builder[coreBrand], x, y coreT) {
			ops.Attention(b, x, y, y, x, ops.AttentionConfig[coreBrand]{})
		},
		"Cached": func(b *poot.Builder[coreBrand], x, y coreT) {
			ops.CachedAttention(b, x, y, y, y, y, x, x, ops.AttentionConfig[coreBrand]{Rows: -1})
		},
		"OutputGate":    func(b *poot.Builder[coreBrand], x, y coreT) { ops.OutputGate(b, x, y) },
		"SwiGLUClamped": func(b *poot.Builder[coreBrand], x, y coreT) { ops.SwiGLUClamped(b, x, y, 7, 1.7) },
		"GatedFFN":      func(b *poot.Builder[coreBrand], x, y coreT) { ops.GatedFFN(b, x, y, y, y, ops.SwiGLU[coreBrand]) },
		"FFN":           func(b *poot.Builder[coreBrand], x, y coreT) { ops.FFN(b, x, y, none, y, none, ops.GeLU[coreBrand]) },
		"SoftCap":       func(b *poot.Builder[coreBrand], x, y coreT) { ops.SoftCap(b, x, 0) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			// Wrong shapes: a scalar and a rank-3 value.
			b := poot.NewBuilder[coreBrand](poot.Limits{})
			f(b, b.Scalar(1), b.Full(poot.T(poot.F32, 2, 3, 5), 1))
			b2 := poot.NewBuilder[coreBrand](poot.Limits{})
			f(b2, b2.Full(poot.T(poot.F32, 2, 3, 5), 1), b2.Scalar(1))
			if b.Err() == nil && b2.Err() == nil {
				t.Errorf("no error recorded for wrong shapes")
			}
			// Foreign handles.
			other := poot.NewBuilder[coreBrand](poot.Limits{})
			b3 := poot.NewBuilder[coreBrand](poot.Limits{})
			f(b3, other.Full(poot.T(poot.F32, 4, 6), 1), other.Full(poot.T(poot.F32, 6), 1))
			if b3.Err() == nil {
				t.Errorf("no error recorded for foreign handles")
			}
			// Zero handles, and a builder already in error.
			b4 := poot.NewBuilder[coreBrand](poot.Limits{})
			f(b4, none, none)
			b5 := poot.NewBuilder[coreBrand](poot.Limits{})
			b5.Reshape(b5.Scalar(1), 2)
			f(b5, b5.Scalar(1), b5.Scalar(1))
			if b5.Err() == nil {
				t.Errorf("error lost")
			}
		})
	}
}

// TestNoPanicsOnRandomInputs calls every composite with operands of random
// ranks and extents and random integer parameters (zero and negative
// included): whatever it records, nothing may panic.
func TestNoPanicsOnRandomInputs(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		b := poot.NewBuilder[coreBrand](poot.Limits{})
		shape := func(label string) []int {
			return rapid.SliceOfN(rapid.IntRange(1, 6), 0, 4).Draw(rt, label)
		}
		val := func(label string) coreT {
			switch rapid.IntRange(0, 3).Draw(rt, label+".kind") {
			case 0:
				return coreT{}
			case 1:
				return b.Full(poot.T(poot.I32, shape(label)...), 1)
			}
			return b.Full(poot.T(poot.F32, shape(label)...), 1)
		}
		n := func(label string) int { return rapid.IntRange(-2, 8).Draw(rt, label) }
		f := func(label string) float64 { return rapid.Float64Range(-3, 3).Draw(rt, label) }
		x, y, z := val("x"), val("y"), val("z")
		switch rapid.IntRange(0, 27).Draw(rt, "op") {
		case 0:
			ops.RMSNorm(b, x, y, f("eps"), ops.OnePlusWeight())
		case 1:
			ops.LayerNorm(b, x, y, z, f("eps"))
		case 2:
			ops.L2NormHeads(b, x, n("heads"), f("eps"))
		case 3:
			ops.RMSNormHeads(b, x, y, n("heads"), f("eps"))
		case 4:
			ops.Linear(b, x, y, z)
		case 5:
			ops.SplitColumns(b, x, n("a"), n("b"))
		case 6:
			ops.SplitQKV(b, x, n("h"), n("kv"), n("d"))
		case 7:
			ops.Softmax(b, x, n("axis"))
		case 8:
			ops.LogSumExp(b, x, n("axis"))
		case 9:
			ops.BroadcastTo(b, x, shape("to")...)
		case 10:
			ops.SplitHeads(b, x, n("heads"))
		case 11:
			ops.MergeHeads(b, x)
		case 12:
			ops.RopeInvFreq(b, ops.RopeConfig{Dims: n("dims"), Theta: f("theta") * 1e4, Scaling: ops.RopeScaling(n("scaling")), Factor: f("factor"), OrigContext: n("ctx"), LowFreqFactor: f("lo"), HighFreqFactor: f("hi")})
		case 13:
			ops.RoPE(b, x, n("heads"), ops.RopeTables(b, y, z, f("af"), ops.RopeLayout(n("layout"))))
		case 14:
			ops.AttnTemperature(b, x, f("floor"), f("scale"))
		case 15:
			ops.ScaleRows(b, x, y)
		case 16:
			ops.RepeatKV(b, x, n("rep"))
		case 17:
			ops.CausalMask(b, x, n("keys"), n("window"), n("chunk"))
		case 18:
			ops.CacheIndex(b, x, n("rows"), n("cap"))
		case 19:
			cfg := ops.AttentionConfig[coreBrand]{Heads: n("h"), KVHeads: n("kv"), HeadDim: n("d"), ValueDim: n("dv"), Rows: n("rows"), SoftCap: f("cap"), Sinks: z}
			ops.Attention(b, x, y, y, val("mask"), cfg)
		case 20:
			cfg := ops.AttentionConfig[coreBrand]{Heads: n("h"), KVHeads: n("kv"), HeadDim: n("d"), Rows: n("rows")}
			ops.CachedAttention(b, x, y, y, z, z, val("pos"), val("mask"), cfg)
		case 21:
			ops.OutputGate(b, x, y)
		case 22:
			ops.SwiGLUClamped(b, x, y, f("limit"), f("alpha"))
		case 23:
			ops.GatedFFN(b, x, y, z, y, ops.GeGLU[coreBrand])
		case 24:
			ops.FFN(b, x, y, z, y, z, ops.GeLUErf[coreBrand])
		case 25:
			ops.SoftCap(b, x, f("cap"))
		case 26:
			ops.Mean(b, x, n("axis"))
		case 27:
			ops.Like(b, x, y)
		}
	})
}

// TestPrimitiveCounts records how many equations each composite appends at
// a realistic decode shape (one token of a Llama-8B-like layer), so that a
// change in graph size is a visible, deliberate edit of this table.
func TestPrimitiveCounts(t *testing.T) {
	const dim, heads, kv, hd, ffn, capacity = 4096, 32, 8, 128, 14336, 8192
	var none coreT
	type mk = func(b *poot.Builder[coreBrand]) func()
	f32 := func(b *poot.Builder[coreBrand], name string, dims ...int) coreT {
		return b.Constant(name, poot.T(poot.F32, dims...))
	}
	pos := func(b *poot.Builder[coreBrand]) coreT { return b.Slot(poot.SlotPos, poot.Shape{1}, 0, capacity-1) }
	rot := func(b *poot.Builder[coreBrand]) ops.Rotary[coreBrand] {
		return ops.RopeTables(b, pos(b), f32(b, "freqs", hd/2), 1, ops.RopeNeoX)
	}
	cases := []struct {
		name string
		want int
		rec  mk
	}{
		{"RMSNorm", 11, func(b *poot.Builder[coreBrand]) func() {
			x, w := f32(b, "x", 1, dim), f32(b, "w", dim)
			return func() { ops.RMSNorm(b, x, w, 1e-5) }
		}},
		{"LayerNorm", 18, func(b *poot.Builder[coreBrand]) func() {
			x, w, bias := f32(b, "x", 1, dim), f32(b, "w", dim), f32(b, "b", dim)
			return func() { ops.LayerNorm(b, x, w, bias, 1e-5) }
		}},
		{"RMSNormHeads", 14, func(b *poot.Builder[coreBrand]) func() {
			x, w := f32(b, "x", 1, heads*hd), f32(b, "w", hd)
			return func() { ops.RMSNormHeads(b, x, w, heads, 1e-6) }
		}},
		{"Linear", 1, func(b *poot.Builder[coreBrand]) func() {
			x, w := f32(b, "x", 1, dim), b.Constant("w", poot.T(poot.Q4_K, dim, dim))
			return func() { ops.Linear(b, x, w, none) }
		}},
		{"SplitQKV", 3, func(b *poot.Builder[coreBrand]) func() {
			x := f32(b, "x", 1, (heads+2*kv)*hd)
			return func() { ops.SplitQKV(b, x, heads, kv, hd) }
		}},
		{"RopeInvFreq(llama3)", 17, func(b *poot.Builder[coreBrand]) func() {
			return func() {
				ops.RopeInvFreq(b, ops.RopeConfig{Dims: hd, Theta: 5e5, Scaling: ops.ScaleLlama3, Factor: 8, OrigContext: 8192, LowFreqFactor: 1, HighFreqFactor: 4})
			}
		}},
		{"RopeTables", 8, func(b *poot.Builder[coreBrand]) func() {
			p, f := pos(b), f32(b, "freqs", hd/2)
			return func() { ops.RopeTables(b, p, f, 1, ops.RopeNeoX) }
		}},
		{"RoPE(neox)", 15, func(b *poot.Builder[coreBrand]) func() {
			x, r := f32(b, "x", 1, heads*hd), rot(b)
			return func() { ops.RoPE(b, x, heads, r) }
		}},
		{"RoPE(interleaved)", 21, func(b *poot.Builder[coreBrand]) func() {
			x, r := f32(b, "x", 1, heads*hd), rot(b)
			r.Layout = ops.RopeInterleaved
			return func() { ops.RoPE(b, x, heads, r) }
		}},
		{"CausalMask", 4, func(b *poot.Builder[coreBrand]) func() {
			p := pos(b)
			return func() { ops.CausalMask(b, p, capacity, 0, 0) }
		}},
		{"CachedAttention(GQA)", 40, func(b *poot.Builder[coreBrand]) func() {
			q, k, v := f32(b, "q", 1, heads*hd), f32(b, "k", 1, kv*hd), f32(b, "v", 1, kv*hd)
			kc, vc := b.StateInput("kc", poot.T(poot.F32, capacity, kv*hd)), b.StateInput("vc", poot.T(poot.F32, capacity, kv*hd))
			p := pos(b)
			m := b.Full(poot.T(poot.Bool, 1, capacity), 1)
			return func() {
				ops.CachedAttention(b, q, k, v, kc, vc, p, m, ops.AttentionConfig[coreBrand]{Heads: heads, KVHeads: kv, HeadDim: hd})
			}
		}},
		{"GatedFFN(SwiGLU)", 9, func(b *poot.Builder[coreBrand]) func() {
			x := f32(b, "x", 1, dim)
			g, u, d := b.Constant("g", poot.T(poot.Q4_K, ffn, dim)), b.Constant("u", poot.T(poot.Q4_K, ffn, dim)), b.Constant("d", poot.T(poot.Q6_K, dim, ffn))
			return func() { ops.GatedFFN(b, x, g, u, d, ops.SwiGLU[coreBrand]) }
		}},
		{"GeLU", 13, func(b *poot.Builder[coreBrand]) func() {
			x := f32(b, "x", 1, ffn)
			return func() { ops.GeLU(b, x) }
		}},
		{"SwiGLUClamped", 17, func(b *poot.Builder[coreBrand]) func() {
			g, u := f32(b, "g", 1, ffn), f32(b, "u", 1, ffn)
			return func() { ops.SwiGLUClamped(b, g, u, 7, 1.702) }
		}},
		{"Softmax", 7, func(b *poot.Builder[coreBrand]) func() {
			x := f32(b, "x", 1, 128256)
			return func() { ops.Softmax(b, x, -1) }
		}},
		{"SoftCap", 5, func(b *poot.Builder[coreBrand]) func() {
			x := f32(b, "x", 1, 128256)
			return func() { ops.SoftCap(b, x, 30) }
		}},
	}
	for _, c := range cases {
		b := poot.NewBuilder[coreBrand](poot.Limits{})
		rec := c.rec(b)
		before := b.NumEqns()
		rec()
		if b.Err() != nil {
			t.Errorf("%s: %v", c.name, b.Err())
			continue
		}
		got := b.NumEqns() - before
		t.Logf("%-22s %3d equations", c.name, got)
		if got != c.want {
			t.Errorf("%s records %d equations, this table says %d: update it if the change is deliberate", c.name, got, c.want)
		}
	}
}
