package load_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/safetensors"
	"github.com/pootlabs/poot/tokenizer"
)

// fuzzLimits caps what one input may make the tracer record. A model that
// passes the tensor-table check is sized by its file, and fuzz inputs are
// kilobytes, so these caps are never reached by a correct loader: reaching
// one means a header number leaked past the checks.
var fuzzLimits = poot.Limits{MaxEquations: 1 << 16, MaxConstBytes: 64 << 20, MaxValueBytes: 64 << 20, MaxDeviceBytes: 256 << 20}

// openModel goes from an opened checkpoint through everything that runs
// before an interpreter: the family's config reader and the tensor-table
// check, the tokenizer and its size check, a decode and a prefill trace
// under fuzzLimits, binding, and the data scan of inspect --check.
func openModel(t *testing.T, c *load.Checkpoint) {
	for _, name := range c.TensorNames() {
		if _, err := c.TensorType(name); err == nil {
			if _, err := c.CheckData(name); err != nil {
				t.Fatalf("CheckData(%s): %v", name, err)
			}
		}
	}
	m, err := registry.FromCheckpoint(c)
	if err != nil {
		return
	}
	if f := c.GGUF(); f != nil && f.Has(tokenizer.KeyTokens) {
		if tok, err := tokenizer.FromGGUF(f); err == nil {
			families.CheckVocab(m.Schema().Vocab, tok.VocabSize())
		}
	}
	if d := c.Safetensors(); d != nil && d.TokenizerJSON() != nil {
		tokenizer.FromHFJSON(d.TokenizerJSON())
	}
	for _, n := range []int{1, 3} {
		program := families.Decode
		if n > 1 {
			program = families.Prefill
		}
		spec := families.StepSpec{Program: program, Shape: families.StepShape{Rows: 1, New: n, Capacity: 8}}
		g, err := m.Trace(spec, fuzzLimits)
		if errors.Is(err, poot.ErrLimit) {
			t.Fatalf("a checked model of a %d-tensor file exceeds the trace limits: %v", c.NumTensors(), err)
		}
		if err != nil {
			return
		}
		if _, _, err := load.Bind(g, c, m.Weights().Resolver()); err != nil {
			return
		}
	}
}

// FuzzGGUFCheckpoint opens arbitrary bytes as a GGUF checkpoint and goes on
// to configuring, tracing and binding its model. The seeds
// (testdata/fuzz/FuzzGGUFCheckpoint) are valid tiny models and near misses
// from the command's hostile corpus (package cli).
func FuzzGGUFCheckpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		gf, err := gguf.Parse(data)
		if err != nil {
			return
		}
		c := load.FromGGUF(gf, "fuzz.gguf")
		defer c.Close()
		openModel(t, c)
	})
}

// fuzzDir is this fuzzing process's model directory, rewritten for each
// input.
var fuzzDir string

// FuzzSafetensorsCheckpoint writes config.json, model.safetensors and
// tokenizer.json from its inputs into a directory, opens it, and goes on
// to configuring, tracing and binding the model.
func FuzzSafetensorsCheckpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, config, weights, tok []byte) {
		if fuzzDir == "" {
			d, err := os.MkdirTemp("", "poot-fuzz-st-")
			if err != nil {
				t.Fatal(err)
			}
			fuzzDir = d
		}
		files := map[string][]byte{safetensors.ConfigFile: config, safetensors.SingleFile: weights, safetensors.TokenizerFile: tok}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(fuzzDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if len(tok) == 0 {
			os.Remove(filepath.Join(fuzzDir, safetensors.TokenizerFile))
		}
		c, err := load.Open(fuzzDir)
		if err != nil {
			return
		}
		defer c.Close()
		openModel(t, c)
	})
}
