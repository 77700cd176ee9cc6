package cpu_test

import (
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/lower/cpu"
)

// TestHalfKVCache: with F16 caches the fused attention reads the caches
// in place (no cast of a cache to F32 is left in the plan), and the CPU
// backend agrees with the oracle, which rounds the cached keys and values
// to binary16 alike, as closely as with F32 caches, with every pass on
// and each off; against the oracle with F32 caches the logits move by the
// rounding of the cache alone (binary16 keeps 11 significant bits, a
// relative error of at most 2^-11 a value): at most 2e-3 of their range
// here, 1e-4 to 3e-4 measured.
func TestHalfKVCache(t *testing.T) {
	for _, f := range []string{"tiny-llama-f32.gguf", "tiny-gemma3-f32.gguf", "stories260K-q8_0.gguf"} {
		t.Run(f, func(t *testing.T) {
			md := openModel(t, f)
			md.kv = poot.F16
			g, consts := md.step(t, 1, 32)
			plan, err := lower.Build(g, cpu.Target(false), lower.Options{})
			if err != nil {
				t.Fatal(err)
			}
			flash := 0
			for _, k := range plan.Kernels {
				if k.Kind == lower.FlashAttention {
					flash++
					if !k.Attention.Half || g.Type(k.Attention.K).DType != poot.F16 {
						t.Errorf("a fused attention over F16 caches reads %v keys (half %v)", g.Type(k.Attention.K), k.Attention.Half)
					}
				}
				if k.Kind == lower.Generic && k.Op == poot.Cast && g.Type(k.Inputs[0]).DType == poot.F16 {
					t.Errorf("a cache is cast to F32 by a kernel of its own: %v", g.Type(k.Inputs[0]))
				}
			}
			if flash == 0 {
				t.Fatal("no fused attention in the plan")
			}
			tol := 5e-6
			if f == "stories260K-q8_0.gguf" {
				tol = 4e-2
			}
			for _, cfg := range passConfigs() {
				t.Run(cfg.name, func(t *testing.T) { checkModel(t, md, tol, cfg.in) })
			}
			// The oracle with F16 caches against F32 caches.
			f32 := *md
			f32.kv = poot.F32
			g32, c32 := f32.step(t, 1, 32)
			a, b := oracleRun(t, g, consts), oracleRun(t, g32, c32)
			d := maxRelDiff(a, b)
			t.Logf("F16 against F32 caches: max relative logit difference %.3g", d)
			if d > 2e-3 || d == 0 {
				t.Errorf("F16 caches move the logits by %.3g of their range, want (0, 2e-3]", d)
			}
		})
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
