package cuda

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/tensor"
)

// refModels are the reference checkpoints the host harness runs. The GEMV
// reads packed weights as stored and does not quantize activations, so
// every model agrees with the oracle to float32 summation noise.
var refModels = []string{
	"stories260K-f32.gguf", "stories260K-q8_0.gguf", "stories260K-q4_0.gguf",
	"tiny-llama-f32.gguf", "tiny-llama-f16.gguf", "tiny-qwen3-f32.gguf",
	"tiny-qwen3-f16.gguf", "tiny-gemma3-f32.gguf", "tiny-gemma3-f16.gguf",
}

// refTol is the largest max|cuda-oracle| / max|oracle| allowed for the
// logits of a step.
const refTol = 2e-6

func refDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join("..", "..", "shared", "refmodels")
	if _, err := os.Stat(d); err != nil {
		t.Skipf("reference models not found at %s: %v", d, err)
	}
	return d
}

// refStep traces and binds one step shape of a reference checkpoint.
func refStep(t testing.TB, c *load.Checkpoint, m families.Model, newTokens, capacity int) (*poot.Graph, interp.Consts) {
	t.Helper()
	return refStepKV(t, c, m, newTokens, capacity, poot.F32)
}

// refStepKV is refStep with caches of dtype kv.
func refStepKV(t testing.TB, c *load.Checkpoint, m families.Model, newTokens, capacity int, kv poot.DType) (*poot.Graph, interp.Consts) {
	t.Helper()
	g, err := m.Trace(families.StepSpec{Program: "test", Shape: families.StepShape{Rows: 1, New: newTokens, Capacity: capacity, Logits: families.LastToken, KV: kv}}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bg, consts, err := load.Bind(g, c, m.Weights().Resolver())
	if err != nil {
		t.Fatal(err)
	}
	return bg, interp.ConstMap(consts)
}

func stepSlots(t testing.TB, toks []int32, start int) interp.Slots {
	t.Helper()
	pos := make([]int32, len(toks))
	for i := range pos {
		pos[i] = int32(start + i)
	}
	tt, err := tensor.FromI32(poot.Shape{len(toks)}, toks)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := tensor.FromI32(poot.Shape{len(toks)}, pos)
	if err != nil {
		t.Fatal(err)
	}
	return interp.Slots{"token": tt, "pos": pt}
}

func maxRelDiff(a, b []float32) float64 {
	var d, m float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	return d / max(m, 1e-30)
}

// TestHostReferenceModels runs a prefill of eight tokens and four greedy
// decode steps of every reference model under the oracle and under the
// host harness, and fails when the logits differ by more than refTol of
// their range.
func TestHostReferenceModels(t *testing.T) {
	host(t)
	dir := refDir(t)
	type pair struct {
		name            string
		pg, dg          *poot.Graph
		pc, dc          interp.Consts
		prefill, decode *lower.Plan
	}
	var pairs []pair
	var mods []*Module
	const capacity = 32
	prompt := []int32{1, 5, 9, 13, 2, 7, 11, 3}
	for _, name := range refModels {
		c, err := load.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		m, err := registry.FromGGUF(c.GGUF())
		if err != nil {
			t.Fatal(err)
		}
		p := pair{name: name}
		p.pg, p.pc = refStep(t, c, m, len(prompt), capacity)
		p.dg, p.dc = refStep(t, c, m, 1, capacity)
		for _, g := range []*poot.Graph{p.pg, p.dg} {
			plan, err := lower.Build(g, Target(), lower.Options{})
			if err != nil {
				t.Fatal(err)
			}
			mod, err := Generate(plan)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			mods = append(mods, mod)
		}
		pairs = append(pairs, p)
	}
	lib := hostLibrary(t, mods)
	in := sharedHost{lib: lib}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			po, err := interp.Compile(p.pg, p.pc)
			if err != nil {
				t.Fatal(err)
			}
			do, err := interp.Compile(p.dg, p.dc)
			if err != nil {
				t.Fatal(err)
			}
			px, err := in.Compile(p.pg, p.pc)
			if err != nil {
				t.Fatal(err)
			}
			defer px.(*Exec).Close()
			dx, err := in.Compile(p.dg, p.dc)
			if err != nil {
				t.Fatal(err)
			}
			defer dx.(*Exec).Close()
			so, err := interp.NewState(p.pg)
			if err != nil {
				t.Fatal(err)
			}
			sc := so.Clone()
			compare := func(what string, a, b []tensor.Tensor) int32 {
				la, lb := a[0].F32(), b[0].F32()
				d := maxRelDiff(lb, la)
				t.Logf("%s: max relative logit difference %.3g", what, d)
				if d > refTol {
					t.Errorf("%s: logits differ by %.3g of their range, above %.3g", what, d, refTol)
				}
				best := 0
				for i, x := range la {
					if x > la[best] {
						best = i
					}
				}
				return int32(best)
			}
			ro, err := po.Run(stepSlots(t, prompt, 0), so)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := px.Run(stepSlots(t, prompt, 0), sc)
			if err != nil {
				t.Fatal(err)
			}
			next := compare("prefill", ro, rc)
			for i := range 4 {
				s := stepSlots(t, []int32{next}, len(prompt)+i)
				if ro, err = do.Run(s, so); err != nil {
					t.Fatal(err)
				}
				if rc, err = dx.Run(s, sc); err != nil {
					t.Fatal(err)
				}
				next = compare("decode", ro, rc)
			}
		})
	}
}

// TestHostHalfKV: a step over F16 or Q8_0 caches (the casts of the new
// keys and values to F16 or Q8_0 and the cache writes run as generic
// kernels; the fused attention reads the caches in place, so the plan
// casts no F16 or Q8_0 value to F32) agrees with the oracle in the host
// harness: as F32 caches do for F16, within 2e-3 of the logit range for
// Q8_0.
func TestHostHalfKV(t *testing.T) {
	host(t)
	r := openRef(t, "tiny-llama-f32.gguf")
	c, m := r.ckpt, r.model
	for _, kv := range []poot.DType{poot.F16, poot.Q8_0} {
		for _, n := range []int{1, 4} {
			g, consts := refStepKV(t, c, m, n, 16, kv)
			ex, err := (HostInterpreter{CacheDir: testCache}).CompileExec(g, consts)
			if err != nil {
				t.Fatal(err)
			}
			cast := "cast_" + strings.ToLower(kv.String()) + "_f32_"
			for _, l := range ex.Module().Launches {
				if strings.HasPrefix(l.Kernel, cast) {
					t.Errorf("%d tokens: the plan casts a %v value to F32 (launch %s)", n, kv, l.Kernel)
				}
			}
			if !slices.ContainsFunc(ex.Plan().Kernels, func(k *lower.Kernel) bool { return k.Attention != nil && k.Attention.KV == kv }) {
				t.Errorf("%d tokens: no fused attention reads the %v caches", n, kv)
			}
			// A key computed a rounding apart can land a quantization step
			// away (see lower/cpu's TestNarrowKVCache).
			tol := refTol
			if kv == poot.Q8_0 {
				tol = 2e-3
			}
			toks := []int32{1, 5, 9, 13}[:n]
			d := compareStep(t, fmt.Sprintf("%d tokens over %v caches", n, kv), g, consts, ex, stepSlots(t, toks, 0), tol)
			ex.Close()
			t.Logf("%v caches, %d tokens: max relative logit difference %.3g", kv, n, d)
		}
	}
}
