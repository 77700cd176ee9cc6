package registry

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
)

var refModels = []struct {
	model, ref, family string
	capacity           int
}{
	{"stories260K-f32.gguf", "stories260K-f32.llamacpp.ref.json", "llama", 128},
	{"tiny-llama-f32.gguf", "tiny-llama-f32.ref.json", "llama", 32},
	{"tiny-qwen3-f32.gguf", "tiny-qwen3-f32.ref.json", "llama", 32},
	{"tiny-gemma3-f32.gguf", "tiny-gemma3-f32.ref.json", "gemma3", 32},
}

// TestSafetensorsRoundTrip writes each reference GGUF as a Hugging Face
// directory (HF names, config.json, Q/K rows back in rotate-half order for
// llama, Gemma norms as offsets from one), reads it back through the
// registry, and checks it against llama.cpp's logits like the GGUF.
func TestSafetensorsRoundTrip(t *testing.T) {
	for _, c := range refModels {
		t.Run(c.model, func(t *testing.T) {
			dir := familytest.Dir(t)
			f := familytest.Open(t, c.model).GGUF()
			gm, err := FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			if gm.Family() != c.family {
				t.Errorf("family %q, want %q", gm.Family(), c.family)
			}
			hf := familytest.WriteHF(t, gm, familytest.GGUFValues(f))
			d, err := load.Open(hf)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			hm, err := FromHF(d.HFConfig())
			if err != nil {
				t.Fatal(err)
			}
			if hm.Family() != c.family {
				t.Errorf("config.json family %q, want %q", hm.Family(), c.family)
			}
			if !sameTensors(familytest.Tensors(t, gm), familytest.Tensors(t, hm)) {
				t.Errorf("GGUF and config.json models read different tensors")
			}
			ref := familytest.ReadRef(t, filepath.Join(dir, c.ref))
			familytest.CheckReference(t, hm, familytest.LoadBinder(d, hm.Weights()), ref, c.capacity, 1e-3, true)
		})
	}
}

func sameTensors(a, b []families.TensorSpec) bool {
	return slices.EqualFunc(a, b, func(x, y families.TensorSpec) bool {
		return x.Name == y.Name && x.Shape.Equal(y.Shape)
	})
}

func TestLookup(t *testing.T) {
	for _, c := range []struct {
		cfg    map[string]any
		family string
	}{
		{map[string]any{"architectures": []any{"LlamaForCausalLM"}}, "llama"},
		{map[string]any{"architectures": []any{"Qwen3MoeForCausalLM"}}, "qwen3moe"},
		{map[string]any{"model_type": "gemma3_text"}, "gemma3"},
		{map[string]any{"architectures": []any{"Unknown"}, "model_type": "mixtral"}, "mixtral"},
	} {
		r, ok := ByHFConfig(c.cfg)
		if !ok || r.Family != c.family {
			t.Errorf("%v: got %q, %v; want %q", c.cfg, r.Family, ok, c.family)
		}
	}
	for arch, family := range map[string]string{"llama": "llama", "qwen2": "llama", "qwen3": "llama", "gemma3": "gemma3", "gemma2": "gemma3", "qwen3moe": "qwen3moe"} {
		if r, ok := ByGGUFArchitecture(arch); !ok || r.Family != family {
			t.Errorf("GGUF %q: got %q, %v; want %q", arch, r.Family, ok, family)
		}
	}
	_, err := FromHF(map[string]any{"architectures": []any{"BertModel"}})
	if !errors.Is(err, families.ErrUnknownArchitecture) {
		t.Errorf("unknown architecture: got %v", err)
	}
	// Architectures poot knows and refuses name the feature.
	for arch, feature := range map[string]string{"Gemma3nForConditionalGeneration": "per-layer embeddings",
		"DeepseekV32ForCausalLM": "sparse attention indexer", "DeepseekV4ForCausalLM": "hyper-connections"} {
		_, err := FromHF(map[string]any{"architectures": []any{arch}})
		if !errors.Is(err, families.ErrUnsupported) || !strings.Contains(err.Error(), feature) {
			t.Errorf("%s: got %v, want an unsupported error naming %s", arch, err, feature)
		}
	}
	for _, arch := range []string{"gemma3n", "deepseek32", "deepseek4"} {
		var buf bytes.Buffer
		if err := gguf.Write(&buf, []gguf.KV{{Key: gguf.KeyArchitecture, Value: gguf.ValueOf(arch)}}, nil, 0); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := FromGGUF(f); !errors.Is(err, families.ErrUnsupported) {
			t.Errorf("GGUF %s: got %v, want an unsupported error", arch, err)
		}
	}
}

// TestGGUFMetadataRoundTrip writes each reference model's metadata back
// (GGUFMetadata) with its tensors and checks that the new file configures
// a model with identical logits.
func TestGGUFMetadataRoundTrip(t *testing.T) {
	for _, c := range refModels {
		t.Run(c.model, func(t *testing.T) {
			f := familytest.Open(t, c.model).GGUF()
			gm, err := FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			kvs, err := gm.(families.GGUFWriter).GGUFMetadata()
			if err != nil {
				t.Fatal(err)
			}
			values := map[string][]float32{}
			get := familytest.GGUFValues(f)
			for _, s := range familytest.Tensors(t, gm) {
				if values[s.Name], err = get(s.Name); err != nil {
					t.Fatal(err)
				}
			}
			c2, err := load.Open(familytest.WriteGGUF(t, gm, kvs, values))
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			m2, err := FromGGUF(c2.GGUF())
			if err != nil {
				t.Fatal(err)
			}
			toks := []int32{1, 15, 27, 100, 200, 300}
			shape := families.StepShape{Rows: 1, New: len(toks), Capacity: 8, Logits: families.AllTokens}
			want, err := familytest.NewRunner(gm, familytest.MapBinder(values)).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := familytest.NewRunner(m2, familytest.LoadBinder(c2, m2.Weights())).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := familytest.MaxDiff32(got, want); d != 0 {
				t.Errorf("rewritten GGUF: max |Δlogit| %.3g", d)
			}
		})
	}
}

// TestMalformedConfigs sets every key of each family's config.json to
// values of the wrong type or range: configuring and tracing must return
// errors, never panic.
func TestMalformedConfigs(t *testing.T) {
	base := map[string]map[string]any{
		"llama": {"architectures": []any{"Qwen2ForCausalLM"}, "model_type": "qwen2", "vocab_size": 64.0, "hidden_size": 32.0,
			"intermediate_size": 48.0, "num_hidden_layers": 2.0, "num_attention_heads": 4.0, "num_key_value_heads": 2.0,
			"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 16.0}},
		"gemma3": {"architectures": []any{"Gemma3ForCausalLM"}, "vocab_size": 64.0, "hidden_size": 32.0, "intermediate_size": 48.0,
			"num_hidden_layers": 3.0, "num_attention_heads": 4.0, "num_key_value_heads": 1.0, "head_dim": 8.0, "sliding_window": 4.0,
			"layer_types": []any{"sliding_attention", "sliding_attention", "full_attention"}},
		"qwen3moe": {"architectures": []any{"Qwen3MoeForCausalLM"}, "vocab_size": 64.0, "hidden_size": 32.0, "num_hidden_layers": 2.0,
			"num_attention_heads": 4.0, "num_experts": 4.0, "num_experts_per_tok": 2.0, "moe_intermediate_size": 16.0},
		"mixtral": {"architectures": []any{"MixtralForCausalLM"}, "vocab_size": 64.0, "hidden_size": 32.0, "num_hidden_layers": 2.0,
			"num_attention_heads": 4.0, "num_local_experts": 4.0, "num_experts_per_tok": 2.0, "intermediate_size": 16.0},
	}
	bad := []any{nil, "x", -1.0, 0.0, 0.5, 1e12, true, []any{1.0}, map[string]any{}, math.NaN()}
	spec := families.StepSpec{Program: families.Prefill, Shape: families.StepShape{Rows: 2, New: 2, Capacity: 8}}
	for family, cfg := range base {
		m, err := FromHF(cfg)
		if err != nil || m.Family() != family {
			t.Fatalf("%s: valid config: %v", family, err)
		}
		if _, err := m.Trace(spec, poot.Limits{}); err != nil {
			t.Fatalf("%s: valid config: %v", family, err)
		}
		for key := range cfg {
			for _, v := range bad {
				c := maps.Clone(cfg)
				c[key] = v
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Errorf("%s: %s = %v: panic %v", family, key, v, p)
						}
					}()
					if m, err := FromHF(c); err == nil {
						m.Trace(spec, poot.Limits{MaxEquations: 1 << 16, MaxDeviceBytes: 1 << 28, MaxConstBytes: 1 << 28})
					}
				}()
			}
		}
	}
}
