package interp_test

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/tensor"
)

// Evaluate a projection with a Q8_0 weight read as stored (its f16 scale
// 1/127 is inexact, hence 31.998 rather than 32), then a step whose slot
// leaves its declared range.
func ExampleEval() {
	b := poot.NewBuilder[struct{}](poot.Limits{})
	tok := b.Slot(poot.SlotToken, poot.Shape{1}, 0, 1)
	emb := b.Constant("embd", poot.T(poot.F32, 2, 32))
	w := b.Constant("w", poot.T(poot.Q8_0, 1, 32))
	g, err := b.Finish(poot.Out(b.MatMul(b.Gather(emb, tok), w)))
	if err != nil {
		panic(err)
	}
	ones := make([]float32, 64)
	for i := range ones {
		ones[i] = float32(i / 32) // row 0 is zeros, row 1 ones
	}
	embd, _ := tensor.FromF32(poot.Shape{2, 32}, ones)
	wq, _ := tensor.Quantize(poot.T(poot.Q8_0, 1, 32), ones[32:])
	token, _ := tensor.FromI32(poot.Shape{1}, []int32{1})

	out, err := interp.Eval(g, interp.ConstMap{"embd": embd, "w": wq}, interp.Slots{"token": token}, nil)
	fmt.Println(out[0].F32(), err)

	token, _ = tensor.FromI32(poot.Shape{1}, []int32{2})
	_, err = interp.Eval(g, interp.ConstMap{"embd": embd, "w": wq}, interp.Slots{"token": token}, nil)
	fmt.Println(err)
	// Output:
	// [31.998047] <nil>
	// interp: "token": slot value out of range: element 0 is 2, outside [0, 1]
}
