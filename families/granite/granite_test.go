package granite_test

import (
	"errors"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/granite"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower/cpu"
)

var toks = []int32{1, 15, 27, 100, 200, 300, 400, 500}

// open opens a fixture through the registry, which also checks the
// model against the file's tensor table.
func open(t *testing.T, name string) (*load.Checkpoint, families.Model) {
	t.Helper()
	c := familytest.OpenTestdata(t, name)
	m, err := registry.FromGGUF(c.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	if m.Family() != "granite" {
		t.Fatalf("family %q", m.Family())
	}
	return c, m
}

func ref(t *testing.T, name string) *familytest.Ref {
	return familytest.ReadRef(t, filepath.Join("testdata", name))
}

// TestReference compares with llama.cpp's logits at every position and its
// greedy tokens on the oracle and the CPU backend. See halfTolerance for
// the F16 file.
func TestReference(t *testing.T) {
	for _, c := range []struct {
		name string
		f16  bool
	}{{"tiny-f32", false}, {"tiny-f16", true}} {
		t.Run(c.name, func(t *testing.T) {
			ck, m := open(t, c.name+".gguf")
			checkReference(t, m, familytest.LoadBinder(ck, m.Weights()), ref(t, c.name+".ref.json"), 32, c.f16)
		})
	}
}

// halfTolerance bounds poot's logits on an F16 file against llama.cpp's.
// ggml rounds a contraction's activations to F16 when the weight is F16;
// poot keeps them F32. With weights of scale 0.25 (logits of a few units)
// that rounding moves llama.cpp's logits by up to a few thousandths of
// their range: 7.5e-4 (the logits are divided by 4) here. So an F16 file is checked twice on the
// oracle: with ggml's rounding reproduced (familytest.HalfActivations),
// which agrees to about 1e-6 except where an activation lies near a
// rounding tie (1.7e-4 here), within 5e-3; and as poot runs it, within
// halfTolerance, with the same greedy tokens, on the oracle and the CPU
// backend.
const halfTolerance = 5e-3

// checkReference checks m against ref on the oracle (prefill, then
// decode steps) and on the CPU backend (one prefill).
func checkReference(t *testing.T, m families.Model, bind familytest.Binder, r *familytest.Ref, capacity int, f16 bool) {
	t.Helper()
	familytest.CheckReference(t, m, bind, r, capacity, tolerance(f16), true)
	familytest.CheckReferenceOn(t, cpu.Interpreter{}, m, bind, r, capacity, tolerance(f16))
	if f16 {
		familytest.CheckReference(t, m, familytest.HalfActivations(bind), r, capacity, 5e-3, true)
	}
}

func tolerance(f16 bool) float64 {
	if f16 {
		return halfTolerance
	}
	return 1e-3
}

// TestDriver checks the tiny fixtures end to end through the driver, on
// the oracle and the CPU backend: what a user of poot gets.
func TestDriver(t *testing.T) {
	for _, c := range []struct {
		name string
		f16  bool
	}{{"tiny-f32", false}, {"tiny-f16", true}} {
		t.Run(c.name, func(t *testing.T) {
			drivertest.CheckReference(t, filepath.Join("testdata", c.name+".gguf"), ref(t, c.name+".ref.json"), tolerance(c.f16))
		})
	}
}

// TestSafetensors writes the F32 fixture as a Hugging Face directory
// (config.json with Granite's multipliers; Q and K rows and biases back in
// rotate-half order), reads it back through the registry and checks it
// against llama.cpp like the GGUF. (A GGUF and a safetensors checkpoint
// synthesised from one seed are different models: GGUF granite rotates
// adjacent pairs, Hugging Face halves, so the same random rows differ.)
func TestSafetensors(t *testing.T) {
	ck, gm := open(t, "tiny-f32.gguf")
	d, err := load.Open(familytest.WriteHF(t, gm, familytest.GGUFValues(ck.GGUF())))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	hm, err := registry.FromCheckpoint(d)
	if err != nil {
		t.Fatal(err)
	}
	if hm.Family() != "granite" || !slices.EqualFunc(familytest.Tensors(t, gm), familytest.Tensors(t, hm), func(a, b families.TensorSpec) bool {
		return a.Name == b.Name && a.Shape.Equal(b.Shape)
	}) {
		t.Fatalf("config.json model %q reads other tensors than the GGUF one", hm.Family())
	}
	familytest.CheckReference(t, hm, familytest.LoadBinder(d, hm.Weights()), ref(t, "tiny-f32.ref.json"), 32, 1e-3, true)
}

func TestLayouts(t *testing.T) {
	ck, m := open(t, "tiny-f32.gguf")
	familytest.CheckLayouts(t, m, familytest.LoadBinder(ck, m.Weights()), toks, 16)
}

func tinyConfig(t *testing.T) map[string]any {
	p, err := synth.FindPreset("granite", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	return maps.Clone(p.Config)
}

func checkErr(t *testing.T, what string, err, want error, key string) {
	t.Helper()
	var ce *families.ConfigError
	if !errors.Is(err, want) || !errors.As(err, &ce) || ce.Key != key {
		t.Errorf("%s: got %v, want %v naming %q", what, err, want, key)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, key := range []string{"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size"} {
		cfg := tinyConfig(t)
		delete(cfg, key)
		_, err := granite.FromHF(cfg)
		checkErr(t, "without "+key, err, families.ErrMissing, key)
	}
	for _, c := range []struct {
		key  string
		v    any
		want error
	}{
		{"num_key_value_heads", 3, families.ErrInconsistent},
		{"logits_scaling", 0, families.ErrWrongType},
		{"logits_scaling", -2, families.ErrWrongType},
		{"rope_scaling", map[string]any{"rope_type": "dynamic", "factor": 2.0}, families.ErrUnsupported},
	} {
		cfg := tinyConfig(t)
		cfg[c.key] = c.v
		_, err := granite.FromHF(cfg)
		key := c.key
		if key == "rope_scaling" {
			key = "rope_scaling.rope_type"
		}
		checkErr(t, c.key, err, c.want, key)
	}
	// Hugging Face's defaults: every multiplier 1, attention_multiplier too
	// (not 1/sqrt(head_dim)).
	cfg := tinyConfig(t)
	for _, k := range []string{"embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling"} {
		delete(cfg, k)
	}
	m, err := granite.FromHF(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if g := m.(*granite.Model); g.EmbedScale != 1 || g.ResidualScale != 1 || g.AttnScale != 1 || g.LogitScale != 1 {
		t.Errorf("defaults: embedding %v, residual %v, attention %v, logits %v; want 1 each", g.EmbedScale, g.ResidualScale, g.AttnScale, g.LogitScale)
	}

	f := familytest.OpenTestdata(t, "tiny-f32.gguf").GGUF()
	// edit returns f with key set to v, or removed when v is nil.
	edit := func(key string, v *gguf.Value) *gguf.File {
		var kvs []gguf.KV
		for _, kv := range f.KVs() {
			if kv.Key != key {
				kvs = append(kvs, kv)
			}
		}
		if v != nil {
			kvs = append(kvs, gguf.KV{Key: key, Value: *v})
		}
		return familytest.ParseGGUF(t, familytest.EditGGUF(t, f, kvs, nil))
	}
	u32 := func(n int) *gguf.Value { v := gguf.ValueOf(uint32(n)); return &v }
	for _, key := range []string{"granite.embedding_length", "granite.attention.head_count", "granite.feed_forward_length", "granite.block_count", "granite.logit_scale"} {
		_, err := granite.FromGGUF(edit(key, nil))
		checkErr(t, "without "+key, err, families.ErrMissing, key)
	}
	no := gguf.ValueOf(false)
	_, err = granite.FromGGUF(edit("granite.rope.scaling.finetuned", &no))
	checkErr(t, "no rope", err, families.ErrUnsupported, "granite.rope.scaling.finetuned")
	experts := append(f.KVs(), gguf.KV{Key: "granite.expert_count", Value: *u32(4)}, gguf.KV{Key: "granite.expert_used_count", Value: *u32(2)})
	_, err = granite.FromGGUF(familytest.ParseGGUF(t, familytest.EditGGUF(t, f, experts, nil)))
	checkErr(t, "experts", err, families.ErrUnsupported, "granite.expert_count")
	_, err = granite.FromGGUF(edit("granite.attention.head_count_kv", u32(3)))
	checkErr(t, "3 kv heads", err, families.ErrInconsistent, "granite.attention.head_count_kv")
	zero := gguf.ValueOf(float32(0))
	_, err = granite.FromGGUF(edit("granite.logit_scale", &zero))
	checkErr(t, "logit scale 0", err, families.ErrWrongType, "granite.logit_scale")
	_, err = granite.FromGGUF(edit("granite.block_count", u32(3)))
	var te *families.TensorError
	if !errors.As(err, &te) || !errors.Is(err, families.ErrMissing) {
		t.Errorf("3 layers in a 2-layer file: got %v", err)
	}
}

// TestMalformedConfigs sets every key of the tiny config to values of the
// wrong type or range: configuring and tracing must return errors, never
// panic.
func TestMalformedConfigs(t *testing.T) {
	bad := []any{nil, "x", -1.0, 0.0, 0.5, 1e12, true, []any{1.0}, map[string]any{}, math.NaN()}
	spec := families.StepSpec{Program: families.Prefill, Shape: families.StepShape{Rows: 2, New: 2, Capacity: 8}}
	base := tinyConfig(t)
	for key := range base {
		for _, v := range bad {
			c := maps.Clone(base)
			c[key] = v
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s = %v: panic %v", key, v, p)
					}
				}()
				if m, err := granite.FromHF(c); err == nil {
					m.Trace(spec, poot.Limits{MaxEquations: 1 << 16, MaxDeviceBytes: 1 << 28, MaxConstBytes: 1 << 28})
				}
			}()
		}
	}
}

// TestPresets configures every preset of the family and reads its weights
// from a trace (the real-size shape is listed, never written in tests).
func TestPresets(t *testing.T) {
	for _, p := range synth.Presets() {
		if p.Family != "granite" {
			continue
		}
		m, err := synth.Model(p.Family, p.Config)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		params := int64(0)
		for _, s := range familytest.Tensors(t, m) {
			params += s.Shape.Size()
		}
		t.Logf("%s: %d tensors, %.3g parameters", p.Name, len(familytest.Tensors(t, m)), float64(params))
	}
}
