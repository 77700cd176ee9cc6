package synth_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families/familytest"
)

// TestSafetensorsAgreeWithLlamaCpp writes each family's tiny preset as a
// Hugging Face directory (strong random weights, N(0, 0.25), seed 3) and
// checks poot on it, through the driver on the oracle and the cpu
// backend, against llama.cpp run on llama.cpp's own conversion of the same
// directory (convert_hf_to_gguf.py): so the safetensors poot writes and
// reads are the layout llama.cpp's converter reads, tensor names, fused
// projections, rotary orders and norm offsets included. The references,
// and how they were made, are in each family's testdata folder.
func TestSafetensorsAgreeWithLlamaCpp(t *testing.T) {
	for family, pkg := range map[string]string{
		"llama": "llama", "gemma3": "gemma3", "qwen3moe": "qwen3moe", "mixtral": "mixtral", "llama4": "llama4",
		"deepseek2": "deepseek2", "olmo2": "olmo2", "phi3": "phi3", "granite": "granite",
		"qwen3next": "qwen3next", "qwen35": "qwen3next", "qwen35moe": "qwen3next", "gpt-oss": "gptoss",
		"phi2": "phi2", "stablelm": "stablelm", "gptneox": "gptneox", "falcon": "falcon",
	} {
		t.Run(family, func(t *testing.T) {
			p, err := synth.FindPreset(family, "tiny")
			if err != nil {
				t.Fatal(err)
			}
			cfg := p.Config
			if family == "gemma3" {
				// The converter writes no sliding-window pattern, and
				// llama.cpp's Gemma 3 default is five windowed layers in
				// six: a six-layer model says the same in both forms.
				raw, err := os.ReadFile(filepath.Join("..", "..", "families", "gemma3", "testdata", "six-layers.config.json"))
				if err != nil {
					t.Fatal(err)
				}
				cfg = nil
				if err := json.Unmarshal(raw, &cfg); err != nil {
					t.Fatal(err)
				}
			}
			m, err := synth.Model(family, cfg)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "hf")
			if err := synth.Write(m, dir, synth.Options{Format: "safetensors", Scale: 0.25, Seed: 3}); err != nil {
				t.Fatal(err)
			}
			ref := familytest.ReadRef(t, filepath.Join("..", "..", "families", pkg, "testdata", "tiny-hf-"+family+".ref.json"))
			tol := 1e-3
			switch family {
			case "gemma3", "phi2", "gptneox", "falcon":
				tol = 5e-3 // ggml's GELU reads an f16 table: 1.9e-3 to 2.2e-3 with these weights
			}
			drivertest.CheckReference(t, dir, ref, tol)
		})
	}
}
