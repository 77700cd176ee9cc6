package mixtral

import (
	"errors"
	"testing"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/llama"
)

func tinyConfig() map[string]any {
	return map[string]any{
		"architectures": []any{"MixtralForCausalLM"}, "model_type": "mixtral",
		"vocab_size": 64.0, "hidden_size": 32.0, "num_hidden_layers": 2.0,
		"num_attention_heads": 4.0, "num_key_value_heads": 2.0, "head_dim": 16.0,
		"num_local_experts": 4.0, "num_experts_per_tok": 2.0, "intermediate_size": 24.0,
		"rms_norm_eps": 1e-6, "rope_theta": 1e6, "max_position_embeddings": 64.0,
	}
}

var toks = []int32{1, 5, 9, 33, 2, 60, 17, 41}

func TestIdenticalExpertsEqualDense(t *testing.T) {
	m, err := FromHF(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	dcfg := tinyConfig()
	dcfg["architectures"], dcfg["model_type"] = []any{"MistralForCausalLM"}, "mistral"
	dense, err := llama.FromHF(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	familytest.CheckIdenticalExperts(t, m, dense, 4, toks, 16)
}

func TestLayouts(t *testing.T) {
	m, err := FromHF(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	familytest.CheckLayouts(t, m, familytest.MapBinder(familytest.Synth(t, m, 3)), toks, 16)
}

func TestConfigErrors(t *testing.T) {
	for key, want := range map[string]error{
		"num_local_experts":   families.ErrMissing,
		"num_experts_per_tok": families.ErrMissing,
		"hidden_size":         families.ErrMissing,
	} {
		cfg := tinyConfig()
		delete(cfg, key)
		_, err := FromHF(cfg)
		var ce *families.ConfigError
		if !errors.Is(err, want) || !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("without %s: got %v", key, err)
		}
	}
	cfg := tinyConfig()
	cfg["num_experts_per_tok"] = 9.0
	if _, err := FromHF(cfg); !errors.Is(err, families.ErrInconsistent) {
		t.Errorf("9 of 4 experts: got %v", err)
	}
}
