package nb_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/nb"
	"pgregory.net/rapid"
)

// Bad calls are recorded as typed errors, never panics; the first error is
// the one kept.
func TestErrors(t *testing.T) {
	other := nb.New()
	foreign := other.Input("z", 2)
	cases := []struct {
		name  string
		build func(g *nb.Graph)
		want  error
		text  string
	}{
		{"shapes do not broadcast", func(g *nb.Graph) { g.Add(g.Input("a", 2, 3), g.Input("b", 4)) }, poot.ErrType, "do not broadcast"},
		{"matmul extents", func(g *nb.Graph) { g.MatMul(g.Input("a", 2, 3), g.Weight("w", 4, 2)) }, poot.ErrType, "contracted extents"},
		{"reshape size", func(g *nb.Graph) { g.Reshape(g.Input("a", 2, 3), 4, 2) }, poot.ErrType, "cannot reshape"},
		{"reshape free extent", func(g *nb.Graph) { g.Reshape(g.Input("a", 2, 3), 4, -1) }, poot.ErrType, ""},
		{"negative dims", func(g *nb.Graph) { g.Input("a", 2, -3) }, poot.ErrType, "extent below 1"},
		{"input without dims", func(g *nb.Graph) { g.Input("a") }, poot.ErrType, "needs its dims"},
		{"redeclared", func(g *nb.Graph) { g.Input("a", 2); g.Input("a", 3) }, poot.ErrName, "declared twice"},
		{"input and weight", func(g *nb.Graph) { g.Input("a", 2); g.Weight("a", 2) }, poot.ErrName, "declared twice"},
		{"foreign value", func(g *nb.Graph) { g.Exp(foreign) }, poot.ErrForeignHandle, "another nb.Graph"},
		{"zero value", func(g *nb.Graph) { g.Add(g.Input("a", 2), nb.Value{}) }, nb.ErrValue, "zero Value"},
		{"cast dtype", func(g *nb.Graph) { g.Cast(g.Input("a", 2), "f64") }, poot.ErrType, "unknown dtype"},
		{"weight dtype", func(g *nb.Graph) { g.WeightAs("w", "i32", 32) }, poot.ErrType, "not a float type"},
		{"packed weight extents", func(g *nb.Graph) { g.WeightAs("w", "q8_0", 2, 30) }, poot.ErrType, "32-element blocks"},
		{"activation", func(g *nb.Graph) {
			x := g.Input("a", 2, 4)
			g.GatedFFN(x, g.Weight("g", 3, 4), g.Weight("u", 3, 4), g.Weight("d", 4, 3), "relu")
		}, poot.ErrType, "unknown activation"},
		{"rope scaling", func(g *nb.Graph) { g.RoPE(g.Input("a", 2, 8), nb.Value{}, 2, nb.RoPEConfig{Scaling: "long"}) }, poot.ErrType, "unknown scaling"},
		{"rope heads", func(g *nb.Graph) { g.RoPE(g.Input("a", 2, 8), nb.Value{}, 0, nb.RoPEConfig{}) }, poot.ErrType, "0 heads"},
		{"rope odd dims", func(g *nb.Graph) { g.RoPE(g.Input("a", 2, 6), nb.Value{}, 2, nb.RoPEConfig{}) }, poot.ErrType, "even"},
		{"attention heads", func(g *nb.Graph) {
			x := g.Input("a", 2, 8)
			g.Attention(x, x, x, nb.Value{}, nb.AttentionConfig{Heads: 3, KVHeads: 2})
		}, poot.ErrType, "heads"},
		{"attention too few keys", func(g *nb.Graph) {
			g.Attention(g.Input("q", 3, 8), g.Input("k", 2, 8), g.Input("v", 2, 8), nb.Value{}, nb.AttentionConfig{Heads: 2})
		}, poot.ErrType, "cannot be causal"},
		{"tokens vocab", func(g *nb.Graph) { g.Tokens(2, 0) }, poot.ErrType, "empty"},
		{"slice bounds", func(g *nb.Graph) { g.Slice(g.Input("a", 4), 0, 3, 9) }, poot.ErrType, "slice"},
		{"concat nothing", func(g *nb.Graph) { g.Concat(0) }, poot.ErrType, "at least one operand"},
		{"soft cap", func(g *nb.Graph) { g.SoftCap(g.Input("a", 2), -1) }, poot.ErrType, "positive"},
		{"split widths", func(g *nb.Graph) { g.Split(g.Input("a", 2, 5), 2, 2) }, poot.ErrType, "add up to 4"},
		{"moe gating", func(g *nb.Graph) {
			x := g.Input("x", 2, 4)
			g.MoE(x, nb.MoEWeights{Router: g.Weight("r", 2, 4), Gate: g.Weight("g", 2, 3, 4), Up: g.Weight("u", 2, 3, 4), Down: g.Weight("d", 2, 4, 3)}, nb.MoEConfig{TopK: 1, Gating: "max"})
		}, poot.ErrType, "unknown gating"},
		{"moe missing experts", func(g *nb.Graph) {
			g.MoE(g.Input("x", 2, 4), nb.MoEWeights{Router: g.Weight("r", 2, 4)}, nb.MoEConfig{TopK: 1})
		}, nb.ErrValue, "zero Value"},
		{"scope name", func(g *nb.Graph) { g.Scope("a/b", func() {}) }, poot.ErrScope, "invalid scope name"},
		{"first error kept", func(g *nb.Graph) {
			g.Reshape(g.Input("a", 2, 3), 5)
			g.Input("a", 9)
		}, poot.ErrType, "cannot reshape"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := nb.New()
			c.build(g)
			err := g.Err()
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("error %q does not say %q", err, c.text)
			}
			if _, rerr := g.Run(g.Scalar(1), nil); rerr != err {
				t.Errorf("Run returns %v, want the kept error", rerr)
			}
			if s := g.String(); !strings.HasPrefix(s, "error: ") {
				t.Errorf("String prints %q", s)
			}
			if d := g.DOT(); !strings.Contains(d, "error") {
				t.Errorf("DOT prints %q", d)
			}
		})
	}
}

// A nil or zero Graph records nothing and says why.
func TestNilGraph(t *testing.T) {
	for _, g := range []*nb.Graph{nil, new(nb.Graph)} {
		v := g.Add(g.Input("a", 2), g.Scalar(1))
		if v != (nb.Value{}) || v.Shape() != nil || v.String() != "(absent)" {
			t.Errorf("got value %v", v)
		}
		g.Scope("s", func() {})
		if !errors.Is(g.Err(), nb.ErrNilGraph) {
			t.Errorf("Err = %v", g.Err())
		}
		if _, err := g.Run(v, nil); !errors.Is(err, nb.ErrNilGraph) {
			t.Errorf("Run: %v", err)
		}
		if !strings.Contains(g.String(), "nil graph") || g.Names() != nil {
			t.Errorf("String %q, Names %v", g.String(), g.Names())
		}
	}
}

// Run checks the data against the graph and says which name is wrong.
func TestRunDataErrors(t *testing.T) {
	g := nb.New()
	x := g.Input("x", 2)
	tok := g.Tokens(2, 4)
	e := g.Embed(g.Weight("table", 4, 2), tok)
	y := g.Add(e, g.Broadcast(x, 2, 2))
	ok := map[string][]float64{"x": {1, 2}, "token": {0, 3}, "table": {0, 1, 2, 3, 4, 5, 6, 7}}
	if out, err := g.Run(y, ok); err != nil || fmt.Sprint(out.Data) != "[1 3 7 9]" {
		t.Fatalf("Run = %v, %v", out, err)
	}
	with := func(name string, v []float64) map[string][]float64 {
		m := map[string][]float64{}
		for k, d := range ok {
			m[k] = d
		}
		if v == nil {
			delete(m, name)
		} else {
			m[name] = v
		}
		return m
	}
	for _, c := range []struct {
		data map[string][]float64
		name string
		want error
	}{
		{with("x", nil), "x", nb.ErrData},
		{with("table", nil), "table", nb.ErrData},
		{with("x", []float64{1, 2, 3}), "x", nb.ErrData},
		{with("token", []float64{0, 1.5}), "token", nb.ErrData},
		{with("tokens", []float64{0, 1}), "tokens", nb.ErrData},
		{with("token", []float64{0, 4}), "token", interp.ErrSlotRange},
	} {
		_, err := g.Run(y, c.data)
		var de *nb.DataError
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), `"`+c.name+`"`) {
			t.Errorf("%v: error %v, want %v naming %q", c.data, err, c.want, c.name)
		}
		if c.want == nb.ErrData && (!errors.As(err, &de) || de.Name != c.name) {
			t.Errorf("error %v is not a *DataError for %q", err, c.name)
		}
	}
	// Only what the output reads must be bound.
	if out, err := g.Run(x, map[string][]float64{"x": {5, 6}}); err != nil || fmt.Sprint(out.Data) != "[5 6]" {
		t.Errorf("Run(x) = %v, %v", out, err)
	}
	if _, err := g.RunAll(nil, ok); !errors.Is(err, nb.ErrValue) {
		t.Errorf("RunAll without outputs: %v", err)
	}
	if outs, err := g.RunAll([]nb.Value{x, y}, ok); err != nil || len(outs) != 2 || len(outs[1].Data) != 4 {
		t.Errorf("RunAll = %v, %v", outs, err)
	}
	// Running a value that is not the graph's is an error of the call only.
	for _, bad := range []nb.Value{{}, nb.New().Scalar(1)} {
		if _, err := g.Run(bad, ok); !errors.Is(err, nb.ErrValue) && !errors.Is(err, poot.ErrForeignHandle) {
			t.Errorf("Run(%v): %v", bad, err)
		}
	}
	if g.Err() != nil {
		t.Errorf("a bad Run poisoned the graph: %v", g.Err())
	}
}

type funcModel func(g *nb.Graph, x nb.Value) (nb.Value, error)

func (f funcModel) Forward(g *nb.Graph, x nb.Value) (nb.Value, error) { return f(g, x) }

// Trace reports what goes wrong in the model.
func TestTraceErrors(t *testing.T) {
	other := nb.New()
	foreign := other.Input("z", 2)
	errNoWeights := errors.New("no weights")
	for _, c := range []struct {
		name string
		m    nb.Model
		want error
	}{
		{"nil model", nil, nb.ErrModel},
		{"forward error", funcModel(func(g *nb.Graph, x nb.Value) (nb.Value, error) { return x, errNoWeights }), errNoWeights},
		{"forward panic", funcModel(func(g *nb.Graph, x nb.Value) (nb.Value, error) { panic("oops") }), nb.ErrModel},
		{"foreign output", funcModel(func(g *nb.Graph, x nb.Value) (nb.Value, error) { return foreign, nil }), poot.ErrForeignHandle},
		{"error while shapes wait for data", funcModel(func(g *nb.Graph, x nb.Value) (nb.Value, error) {
			return g.Mul(x, g.Input("w")), errors.New("no weights")
		}), nb.ErrModel},
		{"bad shapes", funcModel(func(g *nb.Graph, x nb.Value) (nb.Value, error) { return g.MatMul(x, g.Weight("w", 3, 3)), nil }), poot.ErrType},
	} {
		g, y, err := nb.Trace(c.m, 2, 2)
		if !errors.Is(err, c.want) || !errors.Is(g.Err(), c.want) {
			t.Errorf("%s: Trace error %v, Err %v, want %v", c.name, err, g.Err(), c.want)
		}
		if _, err := g.Run(y, map[string][]float64{"x": {1, 2, 3, 4}}); err == nil {
			t.Errorf("%s: Run succeeds", c.name)
		}
	}
}

// Where shapes come from the data, each Run traces again with the lengths
// it is given, and the traced output stays valid.
func TestTraceFromData(t *testing.T) {
	var inner nb.Value
	m := funcModel(func(g *nb.Graph, x nb.Value) (nb.Value, error) {
		inner = g.Mul(x, g.Input("w"))
		return g.ReduceSum(inner, 0), nil
	})
	g, y, err := nb.Trace(m)
	if err != nil || g.Err() != nil || y.Shape() != nil || y.String() != "(waits for data)" {
		t.Fatalf("Trace: %v, %v, shape %v %v", err, g.Err(), y.Shape(), y)
	}
	if _, err := g.Finish(y); err == nil || !strings.Contains(err.Error(), "come from its data") {
		t.Errorf("Finish before the first Run: %v", err)
	}
	if d := g.DOT(); !strings.Contains(d, `the shapes of \"x\", \"w\" come from its data`) {
		t.Errorf("DOT before the first Run:\n%s", d)
	}
	for _, n := range []int{2, 5, 3} {
		x, w := make([]float64, n), make([]float64, n)
		want := 0.0
		for i := range x {
			x[i], w[i] = float64(i+1), 2
			want += 2 * float64(i+1)
		}
		out, err := g.Run(y, map[string][]float64{"x": x, "w": w})
		if err != nil || len(out.Data) != 1 || out.Data[0] != want {
			t.Fatalf("n=%d: %v, %v; want [%v]", n, out, err, want)
		}
		if fmt.Sprint(y.Shape()) != "[1]" || y.Size() != 1 || !strings.Contains(g.String(), fmt.Sprintf(`"w" f32[%d]`, n)) {
			t.Fatalf("n=%d: shape %v, graph\n%s", n, y.Shape(), g)
		}
	}
	if _, err := g.Run(inner, map[string][]float64{"x": {1}, "w": {1}}); !errors.Is(err, nb.ErrValue) {
		t.Errorf("running a value of the trace: %v", err)
	}
	old := inner
	if _, err := g.Run(y, map[string][]float64{"x": {1}, "w": {1}}); err != nil {
		t.Fatal(err)
	}
	if g.Exp(old); !errors.Is(g.Err(), nb.ErrValue) {
		t.Errorf("using a value of an earlier trace: %v", g.Err())
	}
	if _, err := g.Run(y, map[string][]float64{"x": {1, 2}}); !errors.Is(err, nb.ErrData) || !strings.Contains(err.Error(), `"w"`) {
		t.Errorf("missing data for a shape: %v", err)
	}
	if _, err := g.Run(y, nil); !errors.Is(err, nb.ErrData) {
		t.Errorf("no data: %v", err)
	}
	// A failed Run leaves the graph ready for the next.
	if out, err := g.Run(y, map[string][]float64{"x": {1, 2}, "w": {3, 4}}); err != nil || out.Data[0] != 11 {
		t.Errorf("after a failed Run: %v, %v", out, err)
	}
}

// Dims given to Trace fix the input; declaring a name again returns it.
func TestTraceWithDims(t *testing.T) {
	m := funcModel(func(g *nb.Graph, x nb.Value) (nb.Value, error) {
		w := g.Weight("w", 3)
		if again := g.Weight("w"); again != w {
			return x, errors.New("redeclaring w gave another value")
		}
		return g.Mul(x, g.Weight("w", 3)), nil
	})
	g, y, err := nb.Trace(m, 2, 3)
	if err != nil || fmt.Sprint(y.Shape()) != "[2 3]" || y.DType() != "f32" || fmt.Sprint(g.Names()) != "[x w]" {
		t.Fatalf("Trace: %v, %v %v, names %v", err, y.Shape(), y.DType(), g.Names())
	}
	out, err := g.Run(y, map[string][]float64{"x": {1, 2, 3, 4, 5, 6}, "w": {1, 0, -1}})
	if err != nil || fmt.Sprint(out.Data) != "[1 0 -3 4 0 -6]" || fmt.Sprint(out.Shape) != "[2 3]" {
		t.Errorf("Run = %v, %v", out, err)
	}
	pg, err := g.Finish(y)
	if err != nil || pg.NumEqns() != 3 || len(pg.Outputs()) != 1 || pg.Validate() != nil {
		t.Errorf("Finish: %v, %v", pg, err)
	}
	z := g.Exp(y)
	if out, err := g.Run(z, map[string][]float64{"x": {0, 0, 0, 0, 0, 0}, "w": {1, 1, 1}}); err != nil || out.Data[0] != 1 {
		t.Errorf("a value recorded after Trace: %v, %v", out, err)
	}
	if !strings.Contains(g.DOT(), "digraph poot") {
		t.Errorf("DOT:\n%s", g.DOT())
	}
}

// A quantized weight is read as stored: the product differs from the f32
// one by the rounding of Q8_0, and no more.
func TestWeightAs(t *testing.T) {
	g := nb.New()
	x := g.Input("x", 1, 32)
	yq := g.Linear(x, g.WeightAs("wq", "q8_0", 2, 32), nb.Value{})
	yf := g.Linear(x, g.Weight("wf", 2, 32), nb.Value{})
	data := map[string][]float64{"x": make([]float64, 32), "wq": make([]float64, 64), "wf": make([]float64, 64)}
	for i := range data["x"] {
		data["x"][i] = 1
		data["wq"][i], data["wf"][i] = 0.01*float64(i), 0.01*float64(i)
		data["wq"][32+i], data["wf"][32+i] = -0.3, -0.3
	}
	outs, err := g.RunAll([]nb.Value{yq, yf}, data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range outs[0].Data {
		if d := outs[0].Data[i] - outs[1].Data[i]; d == 0 || d > 0.05 || d < -0.05 {
			t.Errorf("q8_0 %v vs f32 %v", outs[0], outs[1])
		}
	}
}

// A property: any sequence of method calls with any arguments, valid or
// not, never panics; once an error is recorded it stays the one reported;
// and a graph without error runs on data of the declared shapes, failing
// only with a runtime fault of the oracle.
func TestRandomCallsNeverPanic(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := nb.New()
		other := nb.New()
		foreign := other.Input("o", 2)
		var pool []nb.Value
		inputs := map[string]nb.Value{}
		dims := func() []int {
			if rapid.IntRange(0, 9).Draw(rt, "usual") > 1 {
				return rapid.SampledFrom([][]int{{4}, {2, 4}, {2, 2, 4}, {4, 4}}).Draw(rt, "dims")
			}
			d := make([]int, rapid.IntRange(0, 3).Draw(rt, "rank"))
			for i := range d {
				d[i] = rapid.IntRange(-1, 4).Draw(rt, "dim")
			}
			return d
		}
		pick := func() nb.Value {
			switch k := rapid.IntRange(0, 59).Draw(rt, "pick"); {
			case k == 0:
				return nb.Value{}
			case k == 1:
				return foreign
			case len(pool) == 0 || k < 8:
				name := fmt.Sprintf("in%d", len(inputs))
				v := g.Input(name, dims()...)
				inputs[name] = v
				return v
			}
			return pool[rapid.IntRange(0, len(pool)-1).Draw(rt, "i")]
		}
		pickLike := func(v nb.Value) nb.Value {
			if rapid.IntRange(0, 9).Draw(rt, "like") < 8 {
				for _, u := range pool {
					if fmt.Sprint(u.Shape()) == fmt.Sprint(v.Shape()) && u.DType() == v.DType() && u != v {
						return u
					}
				}
			}
			return pick()
		}
		two := func() (nb.Value, nb.Value) {
			a := pick()
			return a, pickLike(a)
		}
		n := func() int { return rapid.SampledFrom([]int{1, 2, 4, -1, 1, 2, 0, -2, 5}).Draw(rt, "n") }
		f := func() float64 { return rapid.SampledFrom([]float64{0, 1, -1, 0.5, 1e-6, 3}).Draw(rt, "f") }
		act := func() string {
			return rapid.SampledFrom([]string{"swiglu", "geglu", "gelu", "silu", "x"}).Draw(rt, "act")
		}
		calls := []func() nb.Value{
			func() nb.Value { return g.Exp(pick()) },
			func() nb.Value { return g.Tanh(pick()) },
			func() nb.Value { return g.SiLU(pick()) },
			func() nb.Value { return g.RMSNorm(pick(), nb.Value{}, 1e-5) },
			func() nb.Value { return g.Softmax(pick(), -1) },
			func() nb.Value { return g.Sub(two()) },
			func() nb.Value { return g.Neg(pick()) },
			func() nb.Value { return g.Not(pick()) },
			func() nb.Value { return g.Add(two()) },
			func() nb.Value { return g.Mul(two()) },
			func() nb.Value { return g.Div(two()) },
			func() nb.Value { return g.Lt(two()) },
			func() nb.Value { return g.And(two()) },
			func() nb.Value { return g.Select(pick(), pick(), pick()) },
			func() nb.Value { return g.ReduceSum(pick(), n()) },
			func() nb.Value { return g.ArgMax(pick(), n()) },
			func() nb.Value { return g.ArgTopK(pick(), n()) },
			func() nb.Value { return g.MatMul(pick(), pick()) },
			func() nb.Value { return g.Reshape(pick(), dims()...) },
			func() nb.Value { return g.Broadcast(pick(), dims()...) },
			func() nb.Value { return g.Transpose(pick(), dims()...) },
			func() nb.Value { return g.Slice(pick(), n(), n(), n()) },
			func() nb.Value { return g.Concat(n(), pick(), pick()) },
			func() nb.Value { return g.Gather(pick(), pick()) },
			func() nb.Value {
				return g.Cast(pick(), rapid.SampledFrom([]string{"f32", "i32", "bool", "bf16", "q8_0", "?"}).Draw(rt, "dt"))
			},
			func() nb.Value { return g.Scalar(f()) },
			func() nb.Value { return g.Full(f(), dims()...) },
			func() nb.Value { return g.Iota(n(), dims()...) },
			func() nb.Value { return g.Weight(fmt.Sprintf("w%d", n()), dims()...) },
			func() nb.Value { return g.Tokens(n(), n()) },
			func() nb.Value { return g.Positions(n()) },
			func() nb.Value { return g.RMSNorm(pick(), pick(), f()) },
			func() nb.Value { return g.LayerNorm(pick(), pick(), pick(), f()) },
			func() nb.Value { return g.Linear(pick(), pick(), pick()) },
			func() nb.Value { return g.Softmax(pick(), n()) },
			func() nb.Value { return g.Mean(pick(), n()) },
			func() nb.Value { return g.SoftCap(pick(), f()) },
			func() nb.Value { return g.SwiGLU(two()) },
			func() nb.Value { return g.GatedFFN(pick(), pick(), pick(), pick(), act()) },
			func() nb.Value { return g.FFN(pick(), pick(), pick(), pick(), pick(), act()) },
			func() nb.Value { return g.SplitHeads(pick(), n()) },
			func() nb.Value { return g.MergeHeads(pick()) },
			func() nb.Value { return g.RepeatKV(pick(), n()) },
			func() nb.Value { return g.CausalMask(pick(), n(), n()) },
			func() nb.Value {
				return g.RoPE(pick(), pick(), n(), nb.RoPEConfig{Dims: n(), Theta: f() * 1e4, Interleaved: n() > 2})
			},
			func() nb.Value {
				return g.Attention(pick(), pick(), pick(), pick(), nb.AttentionConfig{Heads: n(), KVHeads: n(), Window: n()})
			},
			func() nb.Value { return g.Embed(pick(), pick()) },
			func() nb.Value { return g.SwiGLUClamped(pick(), pick(), f(), f()) },
			func() nb.Value { return g.ScaleRows(pick(), pick()) },
			func() nb.Value { return g.AttnTemperature(pick(), f(), f()) },
			func() nb.Value {
				p := g.Split(pick(), n(), n())
				return p[rapid.IntRange(0, 1).Draw(rt, "part")]
			},
			func() nb.Value {
				return g.MoE(pick(), nb.MoEWeights{Router: pick(), Gate: pick(), Up: pick(), Down: pick(), SharedGate: pick()},
					nb.MoEConfig{TopK: n(), Gating: rapid.SampledFrom([]string{"", "topk_softmax", "sigmoid_topk", "?"}).Draw(rt, "gating"), Groups: n(), TopGroups: n()})
			},
			func() nb.Value {
				var v nb.Value
				g.Scope(rapid.SampledFrom([]string{"a", "b", "", "c/d"}).Draw(rt, "scope"), func() { v = g.Exp(pick()) })
				return v
			},
		}
		// The property is only as good as the graphs that run, so half the
		// cases are drawn from calls that are valid on one [2, 4] input
		// and must run.
		valid := []func() nb.Value{
			func() nb.Value { return g.Exp(pool[len(pool)-1]) },
			func() nb.Value { return g.Tanh(pool[len(pool)-1]) },
			func() nb.Value { return g.SiLU(pool[len(pool)-1]) },
			func() nb.Value { return g.Neg(pool[len(pool)-1]) },
			func() nb.Value { return g.Softmax(pool[len(pool)-1], -1) },
			func() nb.Value { return g.RMSNorm(pool[len(pool)-1], nb.Value{}, f()+1e-6) },
			func() nb.Value { return g.Add(pool[len(pool)-1], pool[rapid.IntRange(0, len(pool)-1).Draw(rt, "i")]) },
			func() nb.Value { return g.Mul(pool[len(pool)-1], pool[0]) },
		}
		mustRun := rapid.Bool().Draw(rt, "must_run")
		if mustRun {
			calls = valid
			inputs["in0"] = g.Input("in0", 2, 4)
			pool = append(pool, inputs["in0"])
		}
		var first error
		steps := rapid.IntRange(1, 8).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			v := calls[rapid.IntRange(0, len(calls)-1).Draw(rt, "call")]()
			_ = v.Shape()
			_ = v.String()
			pool = append(pool, v)
			if err := g.Err(); first != nil && err != first {
				rt.Fatalf("the kept error changed from %v to %v", first, err)
			} else if first == nil {
				first = err
			}
		}
		_ = g.String()
		_ = g.DOT()
		out := pool[rapid.IntRange(0, len(pool)-1).Draw(rt, "out")]
		data := map[string][]float64{}
		for _, name := range g.Names() {
			if v, ok := inputs[name]; ok {
				size := 1
				for _, d := range v.Shape() {
					size *= d
				}
				data[name] = make([]float64, size)
			}
		}
		_, err := g.Run(out, data)
		if mustRun && err != nil {
			rt.Fatalf("a graph of valid calls does not run: %v", err)
		}
		if g.Err() != nil {
			if err != g.Err() {
				rt.Fatalf("Run returns %v, the graph's error is %v", err, g.Err())
			}
			return
		}
		var ie *interp.Error
		var de *nb.DataError
		switch {
		case err == nil, errors.As(err, &ie), errors.As(err, &de) && !isInput(inputs, de.Name):
			// Weights, tokens and positions get no data here.
		case (errors.Is(err, nb.ErrValue) || errors.Is(err, poot.ErrForeignHandle)) && (out == nb.Value{} || out == foreign):
		default:
			rt.Fatalf("Run on a graph without error: %v", err)
		}
	})
}

func isInput(inputs map[string]nb.Value, name string) bool {
	_, ok := inputs[name]
	return ok
}

// An error names the line of the user's code that made the bad call.
func TestErrorPosition(t *testing.T) {
	g := nb.New()
	x := g.Input("x", 2, 3)
	_, _, line, _ := runtime.Caller(0)
	g.RMSNorm(x, g.Weight("w", 4), 1e-5) // the bad call: line+1
	want := fmt.Sprintf("errors_test.go:%d", line+1)
	var e *poot.Error
	if !errors.As(g.Err(), &e) || e.Pos != want || !strings.Contains(e.Error(), "rmsnorm") {
		t.Errorf("error %v at %q, want at %s", g.Err(), e.Pos, want)
	}
	m := funcModel(func(g *nb.Graph, x nb.Value) (nb.Value, error) {
		return g.Linear(x, g.Weight("w", 3, 3), nb.Value{}), nil
	})
	_, _, err := nb.Trace(m, 2)
	if !errors.As(err, &e) || !strings.HasPrefix(e.Pos, "errors_test.go:") {
		t.Errorf("a traced model's error %v is placed at %q", err, e.Pos)
	}
}
