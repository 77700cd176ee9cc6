package poot_test

import (
	"fmt"

	"github.com/pootlabs/poot"
)

// A model family picks a brand of its own; handles of a Builder[tinyModel]
// cannot be passed to a Builder of any other brand.
type tinyModel struct{}

// Example traces y = exp(x·Wᵀ) and prints the graph.
func Example() {
	b := poot.NewBuilder[tinyModel](poot.Limits{})
	x := b.SlotNamed("x", poot.T(poot.F32, 1, 4))
	w := b.Constant("w", poot.T(poot.F32, 3, 4))
	var y poot.Traced[tinyModel]
	b.Scope("proj", func() {
		y = b.Exp(b.MatMul(x, w))
	})
	g, err := b.Finish(poot.Out(y))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(g)
	// Output:
	// graph: 1 constant, 1 slot, 0 states, 2 equations (2 dispatches)
	//   %0 = slot "x" f32[1,4]
	//   %1 = const "w" f32[3,4]
	// proj:
	//   %2 : f32[1,3] = matmul %0 %1
	//   %3 : f32[1,3] = exp %2
	// outputs: %3
}

type otherModel struct{}

// Example_brands shows the two ways handles are kept apart. Across brands
// it is a compile error:
//
//	a := poot.NewBuilder[tinyModel](poot.Limits{})
//	o := poot.NewBuilder[otherModel](poot.Limits{})
//	o.Neg(a.Scalar(1)) // does not compile: Traced[tinyModel] is not Traced[otherModel]
//
// Across two builders of one brand it is a typed error.
func Example_brands() {
	a := poot.NewBuilder[tinyModel](poot.Limits{})
	b := poot.NewBuilder[tinyModel](poot.Limits{})
	b.Neg(a.Scalar(1))
	fmt.Println(b.Err())
	_ = poot.NewBuilder[otherModel]
	// Output:
	// poot: neg: foreign handle: operand 0 was made by another builder (at example_test.go:51)
}

// Example_errors shows that model code needs no error plumbing: the builder
// keeps the first error, with the scope, the operands and the model code's
// position, and Finish reports it.
func Example_errors() {
	b := poot.NewBuilder[tinyModel](poot.Limits{})
	x := b.Constant("x", poot.T(poot.F32, 4))
	y := b.Constant("y", poot.T(poot.F32, 8))
	b.Push("layer.0")
	z := b.Add(x, y) // wrong: shapes differ and no broadcast was asked for
	z = b.Exp(z)     // records nothing
	b.Pop()
	_, err := b.Finish(poot.Out(z))
	fmt.Println(err)
	// Output:
	// poot: layer.0: add(f32[4], f32[8]): invalid types: shapes differ: [4] and [8] (broadcast explicitly) (at example_test.go:66)
}

// A composite records its name, attributes, operands and results around the
// primitive equations of its body; printing folds it into one line.
func ExampleBuilder_Composite() {
	b := poot.NewBuilder[tinyModel](poot.Limits{})
	x := b.SlotNamed("x", poot.T(poot.F32, 2))
	y := b.Composite("scaled_tanh", poot.Attrs{{Name: "scale", Value: 2.0}}, []poot.Traced[tinyModel]{x},
		func() []poot.Traced[tinyModel] {
			return []poot.Traced[tinyModel]{b.Tanh(b.Mul(x, b.FullLike(x, 2)))}
		})[0]
	g, err := b.Finish(poot.Out(y))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(g)
	c := g.Composite(1)
	scale, _ := c.Attrs.Float("scale")
	fmt.Println(c.Name, scale, c.Operands, c.Results, c.Lo, c.Hi)
	// Output:
	// graph: 0 constants, 1 slot, 0 states, 3 equations (3 dispatches), 1 composite
	//   %0 = slot "x" f32[2]
	// (root):
	//   %3 : f32[2] = scaled_tanh[scale=2] %0  {3 equations}
	// outputs: %3
	// scaled_tanh 2 [0] [3] 0 3
}
