package parallel_test

import (
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/examples/parallel"
)

// TestFamily is the one call a family's test makes: on every registered
// interpreter, the step laws and agreement with the oracle (there is no
// llama.cpp for this family to compare with) through the driver.
func TestFamily(t *testing.T) {
	m := &parallel.Model{Vocab: 512, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, MaxContext: 128, Eps: 1e-5, RopeTheta: 10000}
	path := filepath.Join(t.TempDir(), "parallel.gguf")
	if err := synth.Write(m, path, synth.Options{Seed: 2, Scale: 0.25}); err != nil {
		t.Fatal(err)
	}
	drivertest.CheckFamily(t, drivertest.Family{Row: parallel.Row, Checkpoint: path})
}
