package sim

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
)

func mat(r, c int, v ...float32) *matrix { return &matrix{rows: r, cols: c, data: v} }

func near(t *testing.T, what string, got []float32, want ...float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-6*math.Max(1, math.Abs(want[i])) {
			t.Errorf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// eval parses "Let y be EXPR." and evaluates it in env.
func eval(t *testing.T, env map[string]value, expr string) value {
	t.Helper()
	p, err := lang.Parse("## t\nLet y be " + expr + ".")
	if err != nil {
		t.Fatal(err)
	}
	v, err := (&Machine{}).eval(env, p.Stmts[0].(lang.Let).Expr)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRope: a quarter turn moves each channel pair as the language says,
// (i, i+h) by default and (2i, 2i+1) interleaved, reading the table row of
// the position; channels past the tables pass through.
func TestRope(t *testing.T) {
	c, s := float32(math.Cos(math.Pi/2)), float32(math.Sin(math.Pi/2))
	env := map[string]value{
		"x":   mat(1, 6, 1, 2, 3, 4, 5, 6),
		"Cos": mat(2, 2, 1, 1, c, 1), // row 2: a quarter turn of the first pair only
		"Sin": mat(2, 2, 0, 0, s, 0),
		"pos": 2,
	}
	near(t, "neox", eval(t, env, "rope of x with cos Cos and sin Sin from position pos across 1 heads").(*matrix).data,
		-3, 2, 1, 4, 5, 6)
	near(t, "interleaved", eval(t, env, "rope of x with cos Cos and sin Sin from position pos across 1 heads interleaved").(*matrix).data,
		-2, 1, 3, 4, 5, 6)
	env["pos"] = 1
	near(t, "position 1", eval(t, env, "rope of x with cos Cos and sin Sin from position pos across 1 heads").(*matrix).data,
		1, 2, 3, 4, 5, 6)
}

// TestAttention: the visible rows are the positions up to pos, within the
// window, in the chunk of pos; grouped heads read their group's keys.
func TestAttention(t *testing.T) {
	// One head of width 1; keys all 0, so the scores are equal and the
	// result is the mean of the visible values.
	env := map[string]value{
		"q": mat(1, 1, 1), "K": mat(5, 1, 0, 0, 0, 0, 0), "V": mat(5, 1, 1, 2, 3, 4, 100), "pos": 4,
	}
	for _, c := range []struct {
		clauses string
		want    float64
	}{
		{"up to pos", 2.5},
		{"up to pos within a window of 2", 3.5},
		{"up to pos in chunks of 3", 4},
		{"up to 1", 1},
	} {
		got := eval(t, env, "attention of q over K and V with 1 heads 1 groups "+c.clauses).(*matrix).data
		near(t, c.clauses, got, c.want)
	}
	// Two heads in one group over keys that prefer row 2 for head 1 and
	// row 1 for head 2, sharply.
	env = map[string]value{"q": mat(1, 2, 20, -20), "K": mat(2, 1, -1, 1), "V": mat(2, 1, 7, 9), "pos": 2}
	near(t, "grouped", eval(t, env, "attention of q over K and V with 2 heads 1 groups up to pos scaled by 1").(*matrix).data, 9, 7)
	// A sink as large as the only score halves the weight of the values.
	env = map[string]value{"q": mat(1, 1, 0), "K": mat(1, 1, 0), "V": mat(1, 1, 6), "S": mat(1, 1, 0), "pos": 1}
	near(t, "sinks", eval(t, env, "attention of q over K and V with 1 heads 1 groups up to pos with sinks S").(*matrix).data, 3)
}

// TestForms: the primitive forms and the activations.
func TestForms(t *testing.T) {
	env := map[string]value{
		"xa": mat(1, 4, 1, 2, 3, 4), "xb": mat(1, 4, 10, 20, 30, 40),
		"W": mat(4, 2, 1, 0, 0, 1, 1, 0, 0, 1), "Wt": &matrix{rows: 4, cols: 2, data: []float32{1, 0, 1, 0, 0, 1, 0, 1}, transposed: true},
		"H": mat(4, 1, 1, 1, 1, 1), "T": mat(3, 4, 0, 0, 0, 0, 5, 6, 7, 8, 9, 9, 9, 9), "w": mat(1, 4, 1, 1, 1, 1), "w2": mat(1, 2, 1, 1), "p": 2,
		"w2x": mat(1, 4, 2, 2, 2, 2), "bx": mat(1, 4, 1, 0, 1, 0),
	}
	for _, c := range []struct {
		expr string
		want []float64
	}{
		{"xa matmul W", []float64{4, 6}},
		{"xa matmul Wt", []float64{4, 6}},
		{"xa matmul H across 2 heads", []float64{3, 7}},
		{"xa plus xb", []float64{11, 22, 33, 44}},
		{"xa hadamard xb", []float64{10, 40, 90, 160}},
		{"xa joined with xb across 2 heads", []float64{1, 2, 10, 20, 3, 4, 30, 40}},
		{"xa scaled by 0.5", []float64{0.5, 1, 1.5, 2}},
		{"xa capped at 2", []float64{2 * math.Tanh(0.5), 2 * math.Tanh(1), 2 * math.Tanh(1.5), 2 * math.Tanh(2)}},
		{"row p of T", []float64{5, 6, 7, 8}},
		{"the first 1 of every 2 of xa", []float64{1, 3}},
		{"the last 1 of every 2 of xa", []float64{2, 4}},
		{"the 2 after the first 1 of every 4 of xb", []float64{20, 30}},
		// xa's mean 2.5 and biased variance 1.25.
		{"layernorm of xa with weight w2x and bias bx with epsilon 0.25", []float64{-3/math.Sqrt(1.5) + 1, -1 / math.Sqrt(1.5), 1/math.Sqrt(1.5) + 1, 3 / math.Sqrt(1.5)}},
		{"layernorm of xa with bias bx", []float64{-1.5/math.Sqrt(1.25+1e-6) + 1, -0.5 / math.Sqrt(1.25+1e-6), 0.5/math.Sqrt(1.25+1e-6) + 1, 1.5 / math.Sqrt(1.25+1e-6)}},
		{"swiglu of xa and xb", []float64{10 / (1 + math.Exp(-1)), 40 / (1 + math.Exp(-2)), 90 / (1 + math.Exp(-3)), 160 / (1 + math.Exp(-4))}},
		{"sigmoid of xa", []float64{1 / (1 + math.Exp(-1)), 1 / (1 + math.Exp(-2)), 1 / (1 + math.Exp(-3)), 1 / (1 + math.Exp(-4))}},
		{"rmsnorm of xa with weight w", []float64{1 / math.Sqrt(7.5+1e-6), 2 / math.Sqrt(7.5+1e-6), 3 / math.Sqrt(7.5+1e-6), 4 / math.Sqrt(7.5+1e-6)}},
		{"rmsnorm of xa with weight one plus w2 across 2 heads with epsilon 0.5", []float64{2 / math.Sqrt(3), 4 / math.Sqrt(3), 6 / math.Sqrt(13), 8 / math.Sqrt(13)}},
		{"l2norm of xa across 2 heads", []float64{1 / math.Sqrt(5+1e-6), 2 / math.Sqrt(5+1e-6), 3 / math.Sqrt(25+1e-6), 4 / math.Sqrt(25+1e-6)}},
	} {
		near(t, c.expr, eval(t, env, c.expr).(*matrix).data, c.want...)
	}
	if g := float64(gelu(1)); math.Abs(g-0.5*(1+math.Tanh(math.Sqrt(2/math.Pi)*1.044715))) > 1e-7 {
		t.Errorf("gelu(1) = %v", g)
	}
	env["l"] = mat(1, 5, 1, 9, 3, 9, 2)
	if n := eval(t, env, "argmax of l"); n != 2 {
		t.Errorf("argmax: item %v, want 2 (the first of equals, from 1)", n)
	}
}

// TestMoE: each row goes to its top experts, weighted by their
// renormalized softmax scores.
func TestMoE(t *testing.T) {
	// Two experts of width 1 over inputs of width 1: expert e's gate is
	// a large number, so swiglu ≈ up = e+1 times x; down is 1.
	env := map[string]value{
		"x": mat(1, 1, 1), "R": mat(1, 2, 0, 1), // logits 0 and 1
		"G": mat(2, 1, 50, 50), "U": mat(2, 1, 1, 2), "D": mat(2, 1, 1, 1),
	}
	p0, p1 := 1/(1+math.E), math.E/(1+math.E)
	near(t, "top 2", eval(t, env, "moe of x with router R gate G up U down D choosing 2 of 2").(*matrix).data, 50*(p0*1+p1*2))
	near(t, "top 1", eval(t, env, "moe of x with router R gate G up U down D choosing 1 of 2").(*matrix).data, 50*2)
	near(t, "unnormalized", eval(t, env, "moe of x with router R gate G up U down D choosing 1 of 2 without renormalizing").(*matrix).data, 50*2*p1)
}

// TestCheckComposition: a bundle whose bindings do not cover its
// declarations, or bind a tensor of another shape, does not certify.
func TestCheckComposition(t *testing.T) {
	progs := map[string]string{
		"embed":  "## embed\nLet tok be 1.\nLet Emb be a 4 by 2 tensor of Real.\nLet x be row tok of Emb.\n",
		"kind0":  "## kind0\nLet x be a 1 by 2 tensor of Real.\nLet W0 be a 2 by 2 tensor of Real.\nLet xo0 be x matmul W0.\n",
		"head":   "## head\nLet xo0 be a 1 by 2 tensor of Real.\nLet logits be xo0 scaled by 2.\nLet next be argmax of logits.\n",
		"broken": "",
	}
	mk := func(w0 bundle.Binding) *bundle.Bundle {
		b := &bundle.Bundle{Programs: map[string]*lang.Program{}}
		for n, src := range progs {
			if src == "" {
				continue
			}
			p, err := lang.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			b.Programs[n] = p
		}
		weight := func(name string, shape ...int) bundle.Binding {
			return bundle.Binding{Name: name, Source: bundle.SourceWeight, Const: name, DType: "f32", Shape: shape, Storage: bundle.StorageDense}
		}
		b.Manifest = bundle.Manifest{Format: bundle.Format, Deployment: bundle.Deployment{Kind: "decode", Ctx: 4, Tokens: 1},
			Inputs: []bundle.Input{{Name: "tok"}, {Name: "pos"}}, Output: "logits", Next: "next",
			Embed: bundle.Program{Name: "embed", File: "embed.prog", Output: "x", Bindings: map[string]bundle.Binding{
				"tok": {Name: "tok", Source: bundle.SourceRuntime}, "Emb": weight("Emb", 4, 2)}},
			Head: bundle.Program{Name: "head", File: "head.prog", Input: "xo0", Output: "logits", Bindings: map[string]bundle.Binding{
				"xo0": {Name: "xo0", Source: bundle.SourceInput}}},
			Kinds: []bundle.Kind{{Name: "kind0", File: "kind0.prog", Layers: []int{0}, Input: "x", Output: "xo0"}},
			Layers: []bundle.Layer{{Layer: 0, Kind: "kind0", Bindings: map[string]bundle.Binding{
				"x": {Name: "x", Source: bundle.SourceInput}}}},
		}
		if w0.Name != "" {
			b.Manifest.Layers[0].Bindings["W0"] = w0
		}
		return b
	}
	good := bundle.Binding{Name: "W0", Source: bundle.SourceWeight, Const: "W", DType: "f32", Shape: []int{2, 2}, Storage: bundle.StorageDense, Transposed: true}
	if err := Check(mk(good)); err != nil {
		t.Fatalf("a composing bundle: %v", err)
	}
	for _, c := range []struct {
		w    bundle.Binding
		want string
	}{
		{bundle.Binding{}, "binds it to nothing"},
		{bundle.Binding{Name: "W0", Source: bundle.SourceWeight, DType: "f32", Shape: []int{3, 2}, Storage: bundle.StorageDense, Transposed: true}, "stored [3 2]"},
		{bundle.Binding{Name: "W0", Source: bundle.SourceWeight, DType: "f16", Shape: []int{2, 2}, Storage: bundle.StorageQ8_0, Transposed: true}, "declared Q8_0"},
		{bundle.Binding{Name: "W0", Source: bundle.SourceState, State: "s"}, "a cache holds"},
		{bundle.Binding{Name: "W0", Source: bundle.SourceWeight, DType: "f32", Shape: []int{2, 2}, Storage: bundle.StorageDense, Transposed: true,
			Slices: []bundle.Slice{{Axis: "cols", From: 0, N: 2, Shape: []int{2, 2}, Bytes: 16, Count: 1, Stride: 8}}}, "cut in slices"},
		{bundle.Binding{Name: "W0", Source: bundle.SourceState, State: "s", Recurrent: true, Slices: []bundle.Slice{{Axis: "cols", N: 2}}}, "over 0 chips"},
		{bundle.Binding{Name: "W0", Source: bundle.SourceState, State: "s", Recurrent: true, Slices: []bundle.Slice{{Axis: "diagonal", N: 2}}}, "slice 0 of diagonal"},
	} {
		err := Check(mk(c.w))
		var ce *CompositionError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.w, err, c.want)
		}
	}
	b := mk(good)
	b.Manifest.Layers[0].Bindings["extra"] = good
	if err := Check(b); err == nil || !strings.Contains(err.Error(), "declares no such name") {
		t.Errorf("an extra binding: %v", err)
	}
	b = mk(good)
	p, _ := lang.Parse("## head\nLet xo0 be a 1 by 3 tensor of Real.\nLet logits be xo0 scaled by 2.\nLet next be argmax of logits.\n")
	b.Programs["head"] = p
	if err := Check(b); err == nil || !strings.Contains(err.Error(), "leaves") {
		t.Errorf("a head reading another width: %v", err)
	}
}
