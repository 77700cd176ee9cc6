package qwen3next_test

import (
	"errors"
	"testing"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/qwen3next"
)

// tinyConfig is a config.json with both layer kinds (layers 0 and 2 are
// gated delta nets, 1 and 3 attention), two value heads per key head,
// partial rope and a shared expert.
func tinyConfig() map[string]any {
	return map[string]any{
		"architectures": []any{"Qwen3NextForCausalLM"}, "model_type": "qwen3_next",
		"vocab_size": 64.0, "hidden_size": 32.0, "num_hidden_layers": 4.0, "full_attention_interval": 2.0,
		"num_attention_heads": 4.0, "num_key_value_heads": 2.0, "head_dim": 16.0, "partial_rotary_factor": 0.25,
		"linear_conv_kernel_dim": 4.0, "linear_key_head_dim": 8.0, "linear_value_head_dim": 8.0,
		"linear_num_key_heads": 2.0, "linear_num_value_heads": 4.0,
		"num_experts": 4.0, "num_experts_per_tok": 2.0, "moe_intermediate_size": 24.0, "shared_expert_intermediate_size": 16.0,
		"rms_norm_eps": 1e-6, "rope_theta": 1e6, "max_position_embeddings": 64.0,
	}
}

var toks = []int32{1, 5, 9, 33, 2, 60, 17, 41}

func tiny(t *testing.T) *qwen3next.Model {
	t.Helper()
	m, err := qwen3next.FromHF(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	return m.(*qwen3next.Model)
}

// asGGUF is m as a GGUF file of the given layout describes it: plain norm
// weights, the rate A stored, canonical names.
func asGGUF(m *qwen3next.Model, fused bool) *qwen3next.Model {
	g := *m
	g.Fused, g.LogDecay, g.NormPlusOne = fused, false, false
	g.Weight = m.Weight.In(families.GGUF)
	return &g
}

func TestLayerKinds(t *testing.T) {
	m := tiny(t)
	want := []string{"gated_delta+moe(shared)", "attention(gated)+moe(shared)", "gated_delta+moe(shared)", "attention(gated)+moe(shared)"}
	got := m.LayerKinds()
	for l := range want {
		if got[l] != want[l] {
			t.Errorf("layer %d: %q, want %q", l, got[l], want[l])
		}
	}
	if m.Rope.Dims != 4 {
		t.Errorf("%d rotary dims, want 4 (a quarter of 16)", m.Rope.Dims)
	}
}

// TestLayouts holds every layout of the model to the step laws: chunked
// prefill equals token-by-token decode, paged equals contiguous, batched
// rows equal rows alone, for both projection layouts.
func TestLayouts(t *testing.T) {
	for _, c := range []struct {
		name string
		m    *qwen3next.Model
	}{{"hf", tiny(t)}, {"gguf-split", asGGUF(tiny(t), false)}} {
		t.Run(c.name, func(t *testing.T) {
			familytest.CheckLayouts(t, c.m, familytest.MapBinder(familytest.Synth(t, c.m, 3)), toks, 16)
		})
	}
}

func TestConfigErrors(t *testing.T) {
	for key, want := range map[string]error{
		"num_experts":                     families.ErrMissing,
		"linear_num_key_heads":            families.ErrMissing,
		"linear_conv_kernel_dim":          families.ErrMissing,
		"shared_expert_intermediate_size": families.ErrMissing,
		"hidden_size":                     families.ErrMissing,
	} {
		cfg := tinyConfig()
		delete(cfg, key)
		_, err := qwen3next.FromHF(cfg)
		var ce *families.ConfigError
		if !errors.Is(err, want) || !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("without %s: got %v", key, err)
		}
	}
	for key, v := range map[string]any{
		"linear_value_head_dim": 16.0,
		"mlp_only_layers":       []any{1.0},
		"decoder_sparse_step":   2.0,
		"attention_bias":        true,
		"layer_types":           []any{"linear_attention", "full_attention", "sliding_attention", "full_attention"},
	} {
		cfg := tinyConfig()
		cfg[key] = v
		if _, err := qwen3next.FromHF(cfg); !errors.Is(err, families.ErrUnsupported) {
			t.Errorf("%s = %v: got %v", key, v, err)
		}
	}
	for key, v := range map[string]any{
		"linear_num_value_heads":  3.0,
		"num_experts_per_tok":     9.0,
		"full_attention_interval": 0.0,
		"layer_types":             []any{"linear_attention", "full_attention"},
	} {
		cfg := tinyConfig()
		cfg[key] = v
		if _, err := qwen3next.FromHF(cfg); err == nil {
			t.Errorf("%s = %v: accepted", key, v)
		}
	}
}
