package nb_test

import (
	"fmt"

	"github.com/pootlabs/poot/nb"
)

// The code of this file sticks to Go 1.18 syntax and library, as a
// gomacro cell must; TestExamplesAreGo118 checks it.

type myModel struct{ eps float64 }

func (m myModel) Forward(g *nb.Graph, x nb.Value) (nb.Value, error) {
	return g.RMSNorm(x, g.Input("w"), m.eps), nil
}

// The example of the notebook notes. It is as written there but for the
// ", nil" after RMSNorm: methods keep their errors in the graph, as the
// builder does, so they return one Value, and Forward adds the error
// slot for a model's own errors. No shapes are given, so the graph is
// traced at Run from the lengths of the data.
func ExampleTrace() {
	g, y, err := nb.Trace(myModel{eps: 1e-6})
	if err != nil {
		fmt.Println(err)
	}
	g.Dump()
	out, err := g.Run(y, map[string][]float64{"x": {3, 4}, "w": {1, 2}})
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println(out)
	g.Dump()
	// Output:
	// graph: traced at each Run; the shapes of "x", "w" come from its data
	// f32[2]
	//   0.84853 2.2627
	// graph: 0 constants, 2 slots, 0 states, 10 equations (10 dispatches), 1 composite
	//   %0 = slot "x" f32[2]
	//   %1 = slot "w" f32[2]
	// (root):
	//   %11 : f32[2] = rmsnorm[epsilon=1e-06 one_plus=false] %0 %1  {10 equations}
	// outputs: %11
}

type shapedModel struct{}

func (shapedModel) InputDims() []int { return []int{2, 4} }

func (shapedModel) Forward(g *nb.Graph, x nb.Value) (nb.Value, error) {
	h := g.Linear(x, g.Weight("w", 3, 4), g.Weight("b", 3))
	return g.Softmax(g.SiLU(h), -1), nil
}

// A model that declares its shapes is traced once, by Trace itself.
func ExampleTrace_shaped() {
	g, y, err := nb.Trace(shapedModel{})
	fmt.Println(y, err)
	data := map[string][]float64{
		"x": {1, 0, 0, 0, 0, 1, 0, 0},
		"w": {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0},
		"b": {0, 0, 0},
	}
	out, err := g.Run(y, data)
	fmt.Println(out, err)
	// Output:
	// f32[2,3] <nil>
	// f32[2,3]
	//   0.50948 0.24526 0.24526
	//   0.24526 0.50948 0.24526 <nil>
}

// A graph built cell by cell, without a model.
func ExampleNew() {
	g := nb.New()
	x := g.Input("x", 2, 2)
	y := g.Add(g.MatMul(x, x), g.Scalar(1))
	fmt.Println(y)
	out, err := g.Run(y, map[string][]float64{"x": {1, 2, 3, 4}})
	fmt.Println(out, err)
	fmt.Println(out.At(1, 0))

	// Errors are kept, never panicked: the first one is reported.
	z := g.Add(x, g.Input("v", 3))
	fmt.Println(z.Shape(), g.Err() != nil)
	// Output:
	// f32[2,2]
	// f32[2,2]
	//    6 12
	//   12 26 <nil>
	// 12 <nil>
	// [] true
}

// A decoder block in a notebook: norm, rotary attention with grouped
// key/value heads, and a gated feed-forward, over four tokens of width 8.
func ExampleGraph_Attention() {
	g := nb.New()
	x := g.Input("x", 4, 8)
	var out nb.Value
	g.Scope("block", func() {
		h := g.RMSNorm(x, g.Weight("attn_norm", 8), 1e-5)
		q := g.RoPE(g.Linear(h, g.Weight("wq", 8, 8), nb.Value{}), nb.Value{}, 2, nb.RoPEConfig{})
		k := g.RoPE(g.Linear(h, g.Weight("wk", 4, 8), nb.Value{}), nb.Value{}, 1, nb.RoPEConfig{})
		v := g.Linear(h, g.Weight("wv", 4, 8), nb.Value{})
		a := g.Attention(q, k, v, nb.Value{}, nb.AttentionConfig{Heads: 2, KVHeads: 1})
		x2 := g.Add(x, g.Linear(a, g.Weight("wo", 8, 8), nb.Value{}))
		f := g.GatedFFN(g.RMSNorm(x2, g.Weight("ffn_norm", 8), 1e-5), g.Weight("gate", 16, 8), g.Weight("up", 16, 8), g.Weight("down", 8, 16), "swiglu")
		out = g.Add(x2, f)
	})
	fmt.Println(out, g.Err())

	// Feed it something simple: every weight 0.1, x counting up.
	data := map[string][]float64{}
	for _, name := range g.Names() {
		v, _ := g.Lookup(name)
		vals := make([]float64, v.Size())
		for i := range vals {
			vals[i] = 0.1
			if name == "x" {
				vals[i] = float64(i) / 32
			}
		}
		data[name] = vals
	}
	y, err := g.Run(out, data)
	fmt.Printf("%v values, first %.4f, %v\n", y.Shape, y.Data[0], err)
	// Output:
	// f32[4,8] <nil>
	// [4 8] values, first 0.0580, <nil>
}

// Open a checkpoint and generate from it (a GGUF file or a safetensors
// directory; this example is compiled, not run).
func ExampleOpen() {
	m, err := nb.Open("tinyllama.gguf")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	ids, _ := m.Tokenize("Once upon a time")
	logits, _ := m.Logits(ids)
	text, _ := m.Generate("Once upon a time", 20)
	fmt.Println(len(ids), len(logits), text)
}
