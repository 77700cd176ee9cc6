// Package familytest holds the test helpers every family uses and that
// authors of new families can import: reading llama.cpp's reference
// outputs, binding a model's graphs to a checkpoint (load.Bind) or to
// random weights (Synth), writing a model as a GGUF file or a Hugging Face
// directory, running steps on the oracle the way a driver would (Runner),
// and the laws every family must satisfy (CheckReference, CheckLayouts,
// CheckIdenticalExperts).
package familytest

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/tensor"
)

// Dir returns the reference-model folder shared/refmodels, looked for in
// the test's directory and each directory above it (so a family's tests
// find it beside poot's checkout from any package, in poot or outside),
// skipping the test when none has it.
func Dir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Skipf("reference models: %v", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, "shared", "refmodels")); err == nil && st.IsDir() {
			return filepath.Join(d, "shared", "refmodels")
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	t.Skipf("reference models not found: no shared/refmodels in %s or above it (../shared absent)", wd)
	return ""
}

// Ref is one llama.cpp reference run.
type Ref struct {
	Model     string      `json:"model"`
	Prompt    []int32     `json:"prompt_tokens"`
	Generated []int32     `json:"generated_tokens"`
	Logits    [][]float64 `json:"logits_all_positions"`
}

// Relative returns frac of the reference's logit range (the largest
// logit minus the smallest over its positions): a tolerance that scales
// with the logits, so that one bound means the same on weak random weights
// (logits within ±0.7) and strong ones (±7), where a wrong rotary layout
// moves logits by 1e-3 and by whole units respectively.
func (r *Ref) Relative(frac float64) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range r.Logits {
		for _, v := range row {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi < lo {
		return 0
	}
	return frac * (hi - lo)
}

// Tokens is the prompt followed by the generated tokens.
func (r *Ref) Tokens() []int32 { return append(append([]int32{}, r.Prompt...), r.Generated...) }

// ReadRef reads a reference JSON file.
func ReadRef(t testing.TB, path string) *Ref {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r Ref
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &r
}

// Binder binds a traced graph to a checkpoint: it returns the graph with
// its constants retyped to the stored dtypes and the constants' data.
type Binder func(g *poot.Graph) (*poot.Graph, interp.Consts, error)

// Runner runs a model's steps on an interpreter (the oracle when Interp
// is nil), compiling each distinct step shape once, with one State shared
// by every step.
type Runner struct {
	Model  families.Model
	Bind   Binder
	Interp interp.Interpreter
	State  *interp.State
	progs  map[families.StepShape]interp.Executable
}

// NewRunner returns a runner on the oracle with an empty state.
func NewRunner(m families.Model, bind Binder) *Runner {
	return &Runner{Model: m, Bind: bind, progs: map[families.StepShape]interp.Executable{}}
}

// Step runs one step. slotMap and writeMap are used for paged shapes only.
// It returns the logits as float32, rows-major.
func (r *Runner) Step(shape families.StepShape, tokens, pos, slotMap, writeMap []int32) ([]float32, error) {
	p, ok := r.progs[shape]
	if !ok {
		g, err := r.Model.Trace(families.StepSpec{Program: "test", Shape: shape}, poot.Limits{})
		if err != nil {
			return nil, err
		}
		bg, consts, err := r.Bind(g)
		if err != nil {
			return nil, err
		}
		in := r.Interp
		if in == nil {
			in = interp.Oracle{}
		}
		if p, err = in.Compile(bg, consts); err != nil {
			return nil, err
		}
		r.progs[shape] = p
		if r.State == nil {
			if r.State, err = interp.NewState(bg); err != nil {
				return nil, err
			}
		}
	}
	slots := interp.Slots{}
	var err error
	put := func(name string, shape poot.Shape, v []int32) {
		if err == nil {
			slots[name], err = tensor.FromI32(shape, v)
		}
	}
	n := poot.Shape{shape.Tokens()}
	put("token", n, tokens)
	put("pos", n, pos)
	if shape.Layout == families.Paged {
		put("slot_map", poot.Shape{shape.Rows, shape.Capacity}, slotMap)
		put("write_map", n, writeMap)
	}
	if err != nil {
		return nil, err
	}
	out, err := p.Run(slots, r.State)
	if err != nil {
		return nil, err
	}
	return append([]float32(nil), out[0].F32()...), nil
}

// Seq returns positions start, start+1, …, start+n-1.
func Seq(start, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(start + i)
	}
	return out
}

// ArgMax returns the index of the largest element (the first on ties).
func ArgMax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// MaxDiff returns the largest |a[i]-b[i]|.
func MaxDiff(a []float32, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i])-b[i]))
	}
	return m
}

// MaxDiff32 returns the largest |a[i]-b[i]|.
func MaxDiff32(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}
