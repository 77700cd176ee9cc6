package cpu_test

import (
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/lower/cpu"
)

// TestNarrowKVCache: with F16 or Q8_0 caches the fused attention reads
// the caches in place (no cast of a cache to F32 is left in the plan; Q8_0
// heads of 8 and 16 values included, which start inside a block), and the
// CPU backend agrees with the oracle, which
// rounds or quantizes the cached keys and values alike, with every pass on
// and each off. F16 agrees as closely as F32 caches do. Q8_0 agrees within
// 2e-3 of the logit range for F32 weights (6e-7 measured) and 8e-2 for
// Q8_0 weights (5.4e-2 measured, against 4e-2 with F32 caches): a key
// computed a rounding apart by the two (the CPU's Q8_0 products round
// their activations to int8) can land on the other side of a quantization
// step, which moves it by one step, 1/127 of its block's largest value.
// Against the oracle with F32 caches the logits move by the rounding of
// the cache alone: binary16 keeps 11 significant bits (at most 2e-3 of
// the range here, 1e-4 to 3e-4 measured), Q8_0 about 7 (at most 3e-2,
// 2.7e-3 to 2.3e-2 measured).
func TestNarrowKVCache(t *testing.T) {
	for _, kv := range []poot.DType{poot.F16, poot.Q8_0} {
		for _, f := range []string{"tiny-llama-f32.gguf", "tiny-gemma3-f32.gguf", "tiny-qwen3-f32.gguf", "stories260K-q8_0.gguf"} {
			t.Run(kv.String()+"/"+f, func(t *testing.T) {
				md := openModel(t, f)
				md.kv = kv
				g, consts := md.step(t, 1, 32)
				plan, err := lower.Build(g, cpu.Target(false), lower.Options{})
				if err != nil {
					t.Fatal(err)
				}
				flash := 0
				for _, k := range plan.Kernels {
					if k.Kind == lower.FlashAttention {
						flash++
						if k.Attention.KV != kv || g.Type(k.Attention.K).DType != kv {
							t.Errorf("a fused attention over %v caches with head dim %d reads %v keys (kv %v)", kv, k.Attention.D, g.Type(k.Attention.K), k.Attention.KV)
						}
					}
					// A cache is capacity (32) rows; a Q8_0 embedding row
					// gathered for the token is cast to F32 as it should be.
					if it := g.Type(k.Inputs[0]); k.Kind == lower.Generic && k.Op == poot.Cast && it.DType == kv && it.Shape[0] == 32 {
						t.Errorf("a cache is cast to F32 by a kernel of its own: %v", g.Type(k.Inputs[0]))
					}
				}
				if flash == 0 {
					t.Fatal("no fused attention in the plan")
				}
				tol := 5e-6
				switch {
				case f == "stories260K-q8_0.gguf" && kv == poot.Q8_0:
					tol = 8e-2
				case f == "stories260K-q8_0.gguf":
					tol = 4e-2
				case kv == poot.Q8_0:
					tol = 2e-3
				}
				for _, cfg := range passConfigs() {
					t.Run(cfg.name, func(t *testing.T) { checkModel(t, md, tol, cfg.in) })
				}
				// The oracle with narrow caches against F32 caches.
				f32 := *md
				f32.kv = poot.F32
				g32, c32 := f32.step(t, 1, 32)
				a, b := oracleRun(t, g, consts), oracleRun(t, g32, c32)
				d := maxRelDiff(a, b)
				t.Logf("%v against F32 caches: max relative logit difference %.3g", kv, d)
				bound := 2e-3
				if kv == poot.Q8_0 {
					bound = 3e-2
				}
				if d > bound || d == 0 {
					t.Errorf("%v caches move the logits by %.3g of their range, want (0, %g]", kv, d, bound)
				}
			})
		}
	}
}

// oracleRun runs five decode steps of g (a step of one token) on the
// oracle and returns the last logits.
func oracleRun(t *testing.T, g *poot.Graph, consts interp.Consts) []float32 {
	t.Helper()
	x, err := interp.Compile(g, consts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := interp.NewState(g)
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	for i, tok := range []int32{1, 5, 9, 13, 2} {
		res, err := x.Run(slots(t, []int32{tok}, i), st)
		if err != nil {
			t.Fatal(err)
		}
		out = res[0].F32()
	}
	return out
}
