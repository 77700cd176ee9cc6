package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/pootest"
	"github.com/pootlabs/poot/tensor"
)

// TestBatchedLayouts holds the CPU backend to the oracle on steps of two
// sequences with three new tokens each, over contiguous and paged caches
// that already hold random keys and values, all logits returned; rotary
// embedding's concatenation is written in place by its program.
func TestBatchedLayouts(t *testing.T) {
	tol := pootest.Tolerance{F32: pootest.Bound{Abs: 1e-4, Rel: 1e-3}}
	for _, file := range []string{"tiny-llama-f32.gguf", "tiny-gemma3-f32.gguf", "stories260K-q8_0.gguf"} {
		for _, layout := range []families.KVLayout{families.Contiguous, families.Paged} {
			t.Run(file+"/"+layout.String(), func(t *testing.T) {
				md := openModel(t, file)
				shape := families.StepShape{Rows: 2, New: 3, Capacity: 16, Layout: layout, Logits: families.AllTokens}
				if layout == families.Paged {
					shape.PageSize = 4
				}
				g, err := md.m.Trace(families.StepSpec{Program: "test", Shape: shape}, poot.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				bg, consts, err := load.Bind(g, md.c, md.m.Weights().Resolver())
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(7, 8))
				state, err := interp.NewState(bg)
				if err != nil {
					t.Fatal(err)
				}
				for _, ten := range state.Tensors {
					for i, v := range ten.F32() {
						_ = v
						ten.F32()[i] = float32(rng.NormFloat64())
					}
				}
				toks := []int32{1, 5, 9, 13, 2, 7}
				pos := []int32{4, 5, 6, 9, 10, 11}
				slots := interp.Slots{}
				slots["token"], _ = tensor.FromI32(poot.Shape{6}, toks)
				slots["pos"], _ = tensor.FromI32(poot.Shape{6}, pos)
				if layout == families.Paged {
					// Row r's logical position j lives at physical row
					// r*16 + 15 - j: the pool reversed within each row.
					sm := make([]int32, 2*16)
					for r := range 2 {
						for j := range 16 {
							sm[r*16+j] = int32(r*16 + 15 - j)
						}
					}
					wm := make([]int32, 6)
					for i, p := range pos {
						wm[i] = sm[(i/3)*16+int(p)]
					}
					slots["slot_map"], _ = tensor.FromI32(poot.Shape{2, 16}, sm)
					slots["write_map"], _ = tensor.FromI32(poot.Shape{6}, wm)
				}
				for _, cfg := range passConfigs() {
					// Quantized activations are held to their own bound
					// elsewhere; here packed weights run exactly.
					cfg.in.Exact = file == "stories260K-q8_0.gguf"
					if err := pootest.Compare(interp.Oracle{}, cfg.in, bg, interp.ConstMap(consts), slots, state, tol); err != nil {
						t.Errorf("%s: %v", cfg.name, err)
					}
				}
				x, err := cpu.Interpreter{}.CompileExec(bg, interp.ConstMap(consts))
				if err != nil {
					t.Fatal(err)
				}
				fused, concats := 0, 0
				for _, k := range x.Plan().Kernels {
					if k.Kind == lower.FlashAttention {
						fused++
					}
					if k.Kind == lower.Generic && k.Op == poot.Concat {
						concats++
					}
				}
				if fused == 0 {
					t.Errorf("no attention was fused:\n%v", x.Plan())
				}
				if concats > 0 {
					// Rotary embedding's halves are stored in place by its program.
					t.Errorf("%d concatenations were not fused:\n%v", concats, x.Plan())
				}
			})
		}
	}
}
