package qwen3moe_test

import (
	"errors"
	"testing"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/llama"
	"github.com/pootlabs/poot/families/qwen3moe"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
)

func tinyConfig() map[string]any {
	return map[string]any{
		"architectures": []any{"Qwen3MoeForCausalLM"}, "model_type": "qwen3_moe",
		"vocab_size": 64.0, "hidden_size": 32.0, "num_hidden_layers": 2.0,
		"num_attention_heads": 4.0, "num_key_value_heads": 2.0, "head_dim": 16.0,
		"num_experts": 4.0, "num_experts_per_tok": 2.0, "moe_intermediate_size": 24.0,
		"rms_norm_eps": 1e-6, "rope_theta": 1e6, "max_position_embeddings": 64.0,
		"norm_topk_prob": true,
	}
}

var toks = []int32{1, 5, 9, 33, 2, 60, 17, 41}

func TestIdenticalExpertsEqualDense(t *testing.T) {
	m, err := qwen3moe.FromHF(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	dcfg := tinyConfig()
	dcfg["architectures"], dcfg["model_type"], dcfg["intermediate_size"] = []any{"Qwen3ForCausalLM"}, "qwen3", 24.0
	dense, err := llama.FromHF(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	familytest.CheckIdenticalExperts(t, m, dense, 4, toks, 16)
}

func TestLayouts(t *testing.T) {
	m, err := qwen3moe.FromHF(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	familytest.CheckLayouts(t, m, familytest.MapBinder(familytest.Synth(t, m, 3)), toks, 16)
}

func TestConfigErrors(t *testing.T) {
	for key, want := range map[string]error{
		"num_experts":         families.ErrMissing,
		"num_experts_per_tok": families.ErrMissing,
		"hidden_size":         families.ErrMissing,
	} {
		cfg := tinyConfig()
		delete(cfg, key)
		_, err := qwen3moe.FromHF(cfg)
		var ce *families.ConfigError
		if !errors.Is(err, want) || !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("without %s: got %v", key, err)
		}
	}
	cfg := tinyConfig()
	cfg["num_experts_per_tok"] = 9.0
	if _, err := qwen3moe.FromHF(cfg); !errors.Is(err, families.ErrInconsistent) {
		t.Errorf("9 of 4 experts: got %v", err)
	}
	cfg = tinyConfig()
	cfg["mlp_only_layers"] = []any{2.0}
	if _, err := qwen3moe.FromHF(cfg); !errors.Is(err, families.ErrInconsistent) {
		t.Errorf("mlp_only_layers beyond the layers: got %v", err)
	}
	cfg = tinyConfig()
	cfg["mlp_only_layers"] = []any{1.0}
	if _, err := qwen3moe.FromHF(cfg); !errors.Is(err, families.ErrInconsistent) {
		t.Errorf("dense layers without intermediate_size: got %v", err)
	}
}

// TestDenseLayers reads Qwen3-MoE's dense layers both ways Hugging Face
// configures them (mlp_only_layers, decoder_sparse_step) and checks the
// round trip through GGUF (where the tensor table tells the dense layers)
// and safetensors, and the layout laws.
func TestDenseLayers(t *testing.T) {
	for name, edit := range map[string]func(map[string]any){
		"mlp_only_layers":     func(c map[string]any) { c["mlp_only_layers"] = []any{0.0} },
		"decoder_sparse_step": func(c map[string]any) { c["decoder_sparse_step"] = 2.0 },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg["intermediate_size"] = 40.0
			edit(cfg)
			m, err := qwen3moe.FromHF(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if k := m.(families.Layered).LayerKinds(); k[0] != "attention+dense" || k[1] != "attention+moe" {
				t.Fatalf("layer kinds %v, want a dense layer 0 and a routed layer 1", k)
			}
			roundTrip(t, m, 6, nil)
			familytest.CheckLayouts(t, m, familytest.MapBinder(familytest.Synth(t, m, 3)), toks, 16)
		})
	}
}

// TestContainers runs one random model three ways: bound by canonical name,
// from a GGUF file written with llama.cpp's qwen3moe keys (read through the
// registry), and from a Hugging Face directory with one tensor per expert;
// the logits must agree.
func TestContainers(t *testing.T) {
	m, err := qwen3moe.FromHF(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	kv := func(k string, v gguf.Value) gguf.KV { return gguf.KV{Key: k, Value: v} }
	u := func(x int) gguf.Value { return gguf.ValueOf(uint32(x)) }
	roundTrip(t, m, 5, []gguf.KV{
		kv("general.architecture", gguf.ValueOf("qwen3moe")),
		kv("qwen3moe.context_length", u(64)), kv("qwen3moe.embedding_length", u(32)),
		kv("qwen3moe.block_count", u(2)), kv("qwen3moe.attention.head_count", u(4)),
		kv("qwen3moe.attention.head_count_kv", u(2)), kv("qwen3moe.attention.key_length", u(16)),
		kv("qwen3moe.attention.value_length", u(16)), kv("qwen3moe.rope.freq_base", gguf.ValueOf(float32(1e6))),
		kv("qwen3moe.attention.layer_norm_rms_epsilon", gguf.ValueOf(float32(1e-6))),
		kv("qwen3moe.expert_count", u(4)), kv("qwen3moe.expert_used_count", u(2)),
		kv("qwen3moe.expert_feed_forward_length", u(24)),
	})
}

// roundTrip checks that m's random weights give the same logits bound by
// name, from a GGUF file with metadata kvs (m's own when nil), read through
// the registry, and from a Hugging Face directory.
func roundTrip(t *testing.T, m families.Model, seed uint64, kvs []gguf.KV) {
	t.Helper()
	w := familytest.Synth(t, m, seed)
	n := len(toks)
	shape := families.StepShape{Rows: 1, New: n, Capacity: 16, Logits: families.AllTokens}
	want, err := familytest.NewRunner(m, familytest.MapBinder(w)).Step(shape, toks, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	if kvs == nil {
		if kvs, err = m.(families.GGUFWriter).GGUFMetadata(); err != nil {
			t.Fatal(err)
		}
	}
	path := familytest.WriteGGUF(t, m, kvs, w)
	gc, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	gm, err := registry.FromGGUF(gc.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	got, err := familytest.NewRunner(gm, familytest.LoadBinder(gc, gm.Weights())).Step(shape, toks, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := familytest.MaxDiff32(got, want); d > 1e-6 {
		t.Errorf("GGUF: max |Δlogit| %.3g", d)
	}

	d, err := load.Open(familytest.WriteHF(t, m, familytest.MapValues(w)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	hm, err := registry.FromHF(d.HFConfig())
	if err != nil {
		t.Fatal(err)
	}
	if hm.Family() != "qwen3moe" {
		t.Errorf("family %q", hm.Family())
	}
	got, err = familytest.NewRunner(hm, familytest.LoadBinder(d, hm.Weights())).Step(shape, toks, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := familytest.MaxDiff32(got, want); d > 1e-6 {
		t.Errorf("safetensors: max |Δlogit| %.3g", d)
	}
}
