package llama4_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/llama4"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/load"
)

// TestReference compares with llama.cpp on the tiny preset (strong random
// weights: chunked rope layers with QK norms, a global layer without rope,
// dense and routed layers with a shared expert), through the driver on the
// oracle and the cpu backend.
func TestReference(t *testing.T) {
	for _, c := range []struct {
		name string
		tol  float64
	}{{"tiny-f32", 1e-3}, {"tiny-f16", 5e-3}} {
		t.Run(c.name, func(t *testing.T) {
			ref := familytest.ReadRef(t, filepath.Join("testdata", c.name+".ref.json"))
			drivertest.CheckReference(t, filepath.Join("testdata", c.name+".gguf"), ref, c.tol)
		})
	}
}

func tinyConfig(t *testing.T) map[string]any {
	t.Helper()
	p, err := synth.FindPreset("llama4", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	return p.Config
}

var toks = []int32{1, 15, 27, 100, 200, 300, 400, 500}

// TestLayouts checks chunked prefill against decoding, paged against
// contiguous caches and batched rows against rows alone.
func TestLayouts(t *testing.T) {
	m, err := llama4.FromHF(tinyConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	familytest.CheckLayouts(t, m, familytest.MapBinder(familytest.Synth(t, m, 3)), toks, 16)
}

// TestChunksAndTemperature checks what the tiny reference cannot (llama.cpp
// fixes chunks at 8192 positions and the temperature starts moving there):
// with chunks of 2 and a temperature floor of 2, the model must still keep
// its layout laws, and must differ from the unchunked one.
func TestChunksAndTemperature(t *testing.T) {
	cfg := tinyConfig(t)
	cfg["attention_chunk_size"], cfg["floor_scale"] = 2, 2
	m, err := llama4.FromHF(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := familytest.Synth(t, m, 4)
	familytest.CheckLayouts(t, m, familytest.MapBinder(w), toks, 16)
	plain, err := llama4.FromHF(tinyConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	shape := families.StepShape{Rows: 1, New: len(toks), Capacity: 16, Logits: families.AllTokens}
	a, err := familytest.NewRunner(m, familytest.MapBinder(w)).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := familytest.NewRunner(plain, familytest.MapBinder(w)).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := familytest.MaxDiff32(a, b); !(d > 1e-3) {
		t.Errorf("chunks of 2 and a temperature floor of 2 change the logits by only %.3g", d)
	}
	if _, err := m.(families.GGUFWriter).GGUFMetadata(); !errors.Is(err, families.ErrUnsupported) {
		t.Errorf("chunks of 2 written as GGUF (whose readers fix 8192): %v", err)
	}
}

// TestContainers checks that the GGUF file poot writes and the Hugging Face
// directory (experts stored fused as [E, in, out] stacks, gate and up in
// one) give the same logits as the weights bound by name.
func TestContainers(t *testing.T) {
	m, err := llama4.FromHF(tinyConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	w := familytest.Synth(t, m, 5)
	shape := families.StepShape{Rows: 1, New: len(toks), Capacity: 16, Logits: families.AllTokens}
	want, err := familytest.NewRunner(m, familytest.MapBinder(w)).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := m.(families.GGUFWriter).GGUFMetadata()
	if err != nil {
		t.Fatal(err)
	}
	open := func(path string, fromHF bool) families.Model {
		c, err := load.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		var got families.Model
		if fromHF {
			got, err = registry.FromHF(c.HFConfig())
		} else {
			got, err = registry.FromGGUF(c.GGUF())
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := families.CheckTensors(got, c); err != nil {
			t.Fatal(err)
		}
		logits, err := familytest.NewRunner(got, familytest.LoadBinder(c, got.Weights())).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := familytest.MaxDiff32(logits, want); d > 1e-5 {
			t.Errorf("%s: max |Δlogit| %.3g", path, d)
		}
		return got
	}
	open(familytest.WriteGGUF(t, m, kvs, w), false)
	hm := open(familytest.WriteHF(t, m, familytest.MapValues(w)), true)
	if k := hm.(families.Layered).LayerKinds(); k[3] != "attention(global, no rope)+moe(shared)" || k[0] != "attention(chunk 8192)+dense" {
		t.Errorf("layer kinds %v", k)
	}
}

// TestConfigErrors checks that bad configs are typed errors naming the key.
func TestConfigErrors(t *testing.T) {
	for key, want := range map[string]error{
		"num_local_experts": families.ErrMissing,
		"intermediate_size": families.ErrMissing,
		"hidden_size":       families.ErrMissing,
	} {
		cfg := tinyConfig(t)
		delete(cfg, key)
		_, err := llama4.FromHF(cfg)
		var ce *families.ConfigError
		if !errors.Is(err, want) || !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("without %s: got %v", key, err)
		}
	}
	cfg := tinyConfig(t)
	cfg["no_rope_layers"] = []any{1, 1}
	var ce *families.ConfigError
	if _, err := llama4.FromHF(cfg); !errors.As(err, &ce) || ce.Key != "no_rope_layers" {
		t.Errorf("no_rope_layers of 2 entries for 4 layers: got %v", err)
	}
	cfg = tinyConfig(t)
	cfg["num_experts_per_tok"] = 5
	if _, err := llama4.FromHF(cfg); !errors.Is(err, families.ErrInconsistent) {
		t.Errorf("5 of 4 experts: got %v", err)
	}
}
