package registry_test

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/load"
)

// A config.json whose hyperparameters the weights do not hold fails
// before tracing, naming the first missing or misshapen tensor.
func TestFromCheckpointChecksTensors(t *testing.T) {
	p, err := synth.FindPreset("llama", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model("llama", p.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := synth.Write(m, dir, synth.Options{Format: "safetensors"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key    string
		value  any
		tensor string
		cause  error
	}{
		{"num_hidden_layers", 1_000, "blk.2.attn_norm.weight", families.ErrMissing},
		{"intermediate_size", 96, "blk.0.ffn_gate.weight", families.ErrShape},
		{"vocab_size", 1 << 30, "token_embd.weight", families.ErrShape},
	} {
		cfg := maps.Clone(p.Config)
		cfg[c.key] = c.value
		js, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
			t.Fatal(err)
		}
		ck, err := load.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = registry.FromCheckpoint(ck)
		ck.Close()
		var te *families.TensorError
		if !errors.As(err, &te) || te.Tensor != c.tensor || !errors.Is(err, c.cause) {
			t.Errorf("%s = %v: got %v, want %v for %s", c.key, c.value, err, c.cause, c.tensor)
		}
	}
}
