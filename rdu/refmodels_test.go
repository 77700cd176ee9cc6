package rdu

import (
	"cmp"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/sim"
)

// refDir is the reference-model folder, or a skip.
func refDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join("..", "..", "shared", "refmodels")
	if _, err := os.Stat(d); err != nil {
		t.Skipf("reference models not found at %s: %v", d, err)
	}
	return d
}

// refRun is a llama.cpp reference run (see the refmodels README).
type refRun struct {
	Prompt    []int32     `json:"prompt_tokens"`
	Generated []int32     `json:"generated_tokens"`
	Logits    [][]float64 `json:"logits_all_positions"`
}

func readRef(t testing.TB, path string) *refRun {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r refRun
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// refModel is an opened reference checkpoint.
type refModel struct {
	c *load.Checkpoint
	m families.Model
}

func openRef(t testing.TB, file string) *refModel {
	t.Helper()
	return openModel(t, filepath.Join(refDir(t), file))
}

// openModel opens the checkpoint at path (closed when the test ends).
func openModel(t testing.TB, path string) *refModel {
	t.Helper()
	c, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m, err := registry.FromCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	return &refModel{c: c, m: m}
}

// step traces and binds a step of n new tokens with a cache of ctx.
func (r *refModel) step(t testing.TB, n, ctx int, logits families.LogitsMode) (*poot.Graph, interp.ConstMap) {
	t.Helper()
	g, err := r.m.Trace(families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: 1, New: n, Capacity: ctx, Logits: logits}}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bg, consts, err := load.Bind(g, r.c, r.m.Weights().Resolver())
	if err != nil {
		t.Fatal(err)
	}
	return bg, interp.ConstMap(consts)
}

// lower lowers a bound step with its weights located in the checkpoint.
func (r *refModel) lower(t testing.TB, g *poot.Graph, consts interp.ConstMap) *bundle.Bundle {
	t.Helper()
	b, err := Lower(g, Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Checkpoint: r.c.Path(), Consts: consts})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReferenceModels: the decode bundle of each reference model,
// simulated with its weights read from the checkpoint file at the byte
// ranges of the manifest, agrees with the oracle within 1e-5 over several
// steps, and decodes greedily the tokens llama.cpp decoded.
func TestReferenceModels(t *testing.T) {
	for _, c := range []struct {
		model, ref string
		kinds      int
	}{
		{"tiny-llama-f32.gguf", "tiny-llama-f32.ref.json", 1},
		{"tiny-gemma3-f32.gguf", "tiny-gemma3-f32.ref.json", 2},
		{"tiny-llama-f16.gguf", "tiny-llama-f16.ref.json", 1},
		{"tiny-gemma3-f16.gguf", "tiny-gemma3-f16.ref.json", 2},
		{"tiny-qwen3-f32.gguf", "tiny-qwen3-f32.ref.json", 1},
		{"stories260K-q8_0.gguf", "stories260K-q8_0.llamacpp.ref.json", 1},
	} {
		t.Run(c.model, func(t *testing.T) {
			r := openRef(t, c.model)
			ref := readRef(t, filepath.Join(refDir(t), c.ref))
			const ctx = 96
			g, consts := r.step(t, 1, ctx, families.LastToken)
			b := r.lower(t, g, consts)
			if len(b.Manifest.Kinds) != c.kinds {
				t.Errorf("%d kinds, want %d", len(b.Manifest.Kinds), c.kinds)
			}
			cert, err := Certify(b, g, consts, sim.Files{}, 12, DefaultTolerance)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("certified over %d steps: max |Δlogit| %.3g (largest logit %.3g)", cert.Steps, cert.MaxDiff, cert.MaxLogit)
			greedy(t, b, ref, 16)
		})
	}
}

// greedy runs a decode bundle over the reference's prompt, a token a run,
// and checks that it picks the tokens llama.cpp generated (up to most).
func greedy(t *testing.T, b *bundle.Bundle, ref *refRun, most int) {
	t.Helper()
	m, err := sim.New(b, sim.Files{})
	if err != nil {
		t.Fatal(err)
	}
	toks := ref.Prompt
	var res sim.Result
	for i, tok := range toks {
		if res, err = m.Step(int(tok), i); err != nil {
			t.Fatal(err)
		}
	}
	n := min(len(ref.Generated), most)
	for i := range n {
		if int32(res.Next) != ref.Generated[i] {
			t.Fatalf("greedy token %d: %d, llama.cpp %d", i, res.Next, ref.Generated[i])
		}
		if res, err = m.Step(res.Next, len(toks)+i); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFamilyReferences: every checkpoint of the families' tests that has
// a llama.cpp reference beside it (F32 and MXFP4 matrices; the F16 files'
// references differ from poot's by llama.cpp's F16 activations, which the
// families' tests measure) lowers to a decode bundle that certifies
// against the oracle and decodes greedily the tokens llama.cpp decoded.
// As in the families' tests, Phi-3's LongRoPE files run with the context
// of 256 llama.cpp ran them with (past the original context: the long
// factors), and GPT-NeoX's sequential file is compared up to its near tie
// (its eighth token, the two best logits 4e-4 apart). Each also lowers as
// the prefill deployment (certified, and continued by the decode bundle)
// and over 1 to 4 chips, certified where the model splits and refused
// with its reason where it does not.
func TestFamilyReferences(t *testing.T) {
	ctxs := map[string]int{"longrope-f32.gguf": 256}
	most := map[string]int{"tiny-sequential-f32.gguf": 7}
	refs, err := filepath.Glob(filepath.Join("..", "families", "*", "testdata", "*.ref.json"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ref := range refs {
		model := strings.TrimSuffix(ref, ".ref.json") + ".gguf"
		if _, err := os.Stat(model); err != nil || strings.Contains(filepath.Base(model), "f16") {
			continue
		}
		n++
		name := filepath.Base(filepath.Dir(filepath.Dir(model))) + "/" + filepath.Base(model)
		t.Run(name, func(t *testing.T) {
			r := openModel(t, model)
			g, consts := r.step(t, 1, cmp.Or(ctxs[filepath.Base(model)], 32), families.LastToken)
			b := r.lower(t, g, consts)
			cert, err := Certify(b, g, consts, sim.Files{}, 4, DefaultTolerance)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d kinds; max |Δlogit| %.3g of %.3g", len(b.Manifest.Kinds), cert.MaxDiff, cert.MaxLogit)
			greedy(t, b, readRef(t, ref), cmp.Or(most[filepath.Base(model)], 16))
			if _, err := checkPrefill(t, r, name, families.LastToken); err != nil {
				t.Errorf("prefill: %v", err)
			}
			for tp := 1; tp <= 4; tp++ {
				if _, err := certifyTP(t, r, g, consts, Decode, tp); err != nil && !errors.Is(err, ErrTensorParallel) {
					t.Errorf("tp %d: %v", tp, err)
				} else if err != nil {
					t.Logf("tp %d refused: %v", tp, err)
				}
			}
		})
	}
	if n < 15 {
		t.Errorf("%d reference checkpoints found in the families' testdata, want 15 or more", n)
	}
}
