package cpu_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/tensor"
)

// refDir is the reference-model folder, seen from lower/cpu.
func refDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join("..", "..", "..", "shared", "refmodels")
	if _, err := os.Stat(d); err != nil {
		t.Skipf("reference models not found at %s: %v", d, err)
	}
	return d
}

// model opens a reference checkpoint and returns its model and a function
// tracing and binding one step shape.
type model struct {
	m families.Model
	c *load.Checkpoint
	// kv is the caches' dtype (zero: F32).
	kv poot.DType
}

func openModel(t testing.TB, name string) *model {
	t.Helper()
	c, err := load.Open(filepath.Join(refDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m, err := registry.FromGGUF(c.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	return &model{m: m, c: c}
}

func (md *model) step(t testing.TB, newTokens, capacity int) (*poot.Graph, interp.Consts) {
	t.Helper()
	g, err := md.m.Trace(families.StepSpec{Program: "test", Shape: families.StepShape{Rows: 1, New: newTokens, Capacity: capacity, Logits: families.LastToken, KV: md.kv}}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bg, consts, err := load.Bind(g, md.c, md.m.Weights().Resolver())
	if err != nil {
		t.Fatal(err)
	}
	return bg, interp.ConstMap(consts)
}

func slots(t testing.TB, toks []int32, start int) interp.Slots {
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

// maxRelDiff is max|a-b| / max|b|.
func maxRelDiff(a, b []float32) float64 {
	var d, m float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	return d / max(m, 1e-30)
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// refCases are the reference models with the largest relative logit
// difference (max|cpu-oracle| / max|oracle|) allowed over a prefill and
// four decode steps. F32 and F16 weights sum in float32 (a few ulps of
// Σ|x·w|); Q8_0 and Q4_0 weights also quantize activations to int8 per
// block of 32, which moves logits by up to about 1% of their range on
// these tiny models.
var refCases = []struct {
	file string
	tol  float64
}{
	{"stories260K-f32.gguf", 5e-6},
	{"stories260K-q8_0.gguf", 4e-2},
	{"stories260K-q4_0.gguf", 4e-2},
	{"tiny-llama-f32.gguf", 5e-6},
	{"tiny-llama-f16.gguf", 5e-6},
	{"tiny-qwen3-f32.gguf", 5e-6},
	{"tiny-qwen3-f16.gguf", 5e-6},
	{"tiny-gemma3-f32.gguf", 5e-6},
	{"tiny-gemma3-f16.gguf", 5e-6},
}

func TestReferenceModels(t *testing.T) {
	for _, rc := range refCases {
		for _, cfg := range passConfigs() {
			t.Run(rc.file+"/"+cfg.name, func(t *testing.T) { checkReference(t, rc.file, rc.tol, cfg.in) })
		}
	}
}

type passConfig struct {
	name string
	in   cpu.Interpreter
}

// passConfigs are every pass on, then each pass off in turn.
func passConfigs() []passConfig {
	out := []passConfig{{"all", cpu.Interpreter{}}}
	for _, p := range lower.Passes() {
		out = append(out, passConfig{"no_" + p, cpu.Interpreter{Options: lower.Options{Disabled: []string{p}}}})
	}
	return out
}

func checkReference(t *testing.T, file string, tol float64, in cpu.Interpreter) {
	checkModel(t, openModel(t, file), tol, in)
}

// checkModel runs a prefill of eight tokens and four greedy decode steps
// under the oracle and under in, and fails when the logits differ by more
// than tol of their range.
func checkModel(t *testing.T, md *model, tol float64, in cpu.Interpreter) {
	{
		{
			const capacity = 32
			prompt := []int32{1, 5, 9, 13, 2, 7, 11, 3}
			pg, pc := md.step(t, len(prompt), capacity)
			dg, dc := md.step(t, 1, capacity)
			po, err := interp.Compile(pg, pc)
			if err != nil {
				t.Fatal(err)
			}
			do, err := interp.Compile(dg, dc)
			if err != nil {
				t.Fatal(err)
			}
			pcx, err := in.CompileExec(pg, pc)
			if err != nil {
				t.Fatal(err)
			}
			defer pcx.Close()
			dcx, err := in.CompileExec(dg, dc)
			if err != nil {
				t.Fatal(err)
			}
			defer dcx.Close()
			so, err := interp.NewState(pg)
			if err != nil {
				t.Fatal(err)
			}
			sc := so.Clone()
			compare := func(what string, a, b []tensor.Tensor) int {
				la, lb := a[0].F32(), b[0].F32()
				d := maxRelDiff(lb, la)
				t.Logf("%s: max relative logit difference %.3g", what, d)
				if d > tol {
					t.Errorf("%s: logits differ by %.3g of their range, above %.3g", what, d, tol)
				}
				return argmax(la)
			}
			ro, err := po.Run(slots(t, prompt, 0), so)
			if err != nil {
				t.Fatal(err)
			}
			rcpu, err := pcx.Run(slots(t, prompt, 0), sc)
			if err != nil {
				t.Fatal(err)
			}
			next := compare("prefill", ro, rcpu)
			for i := range 4 {
				s := slots(t, []int32{int32(next)}, len(prompt)+i)
				ro, err = do.Run(s, so)
				if err != nil {
					t.Fatal(err)
				}
				rcpu, err = dcx.Run(s, sc)
				if err != nil {
					t.Fatal(err)
				}
				next = compare("decode", ro, rcpu)
			}
		}
	}
}
