package gptoss_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/gptoss"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
)

// tinyConfig has four layers (two windowed), a window of 3 that the test
// sequences outgrow, and YaRN scaling that moves the low frequencies.
func tinyConfig() map[string]any {
	return map[string]any{
		"architectures": []any{"GptOssForCausalLM"}, "model_type": "gpt_oss",
		"vocab_size": 64.0, "hidden_size": 32.0, "num_hidden_layers": 4.0,
		"num_attention_heads": 4.0, "num_key_value_heads": 2.0, "head_dim": 8.0,
		"num_local_experts": 4.0, "num_experts_per_tok": 2.0, "intermediate_size": 16.0,
		"rms_norm_eps": 1e-5, "rope_theta": 150000.0, "max_position_embeddings": 64.0,
		"sliding_window": 3.0, "attention_bias": true, "swiglu_limit": 7.0,
		"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16.0, "beta_fast": 32.0, "beta_slow": 1.0},
	}
}

var toks = []int32{1, 5, 9, 33, 2, 60, 17, 41}

func tiny(t *testing.T) families.Model {
	t.Helper()
	m, err := gptoss.FromHF(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// randomWeights gives random weights larger than familytest.Synth's (matrices and
// biases N(0, 0.3), sinks N(0, 1), norms 1 + N(0, 0.1)), so that sinks,
// biases, windows and routing all move the logits.
func randomWeights(t *testing.T, m families.Model, seed uint64) map[string][]float32 {
	rng := rand.New(rand.NewPCG(seed, 2))
	w := map[string][]float32{}
	for _, s := range familytest.Tensors(t, m) {
		v := make([]float32, s.Shape.Size())
		for i := range v {
			switch x := rng.NormFloat64(); s.Role {
			case "norm":
				v[i] = float32(1 + 0.1*x)
			case "sinks":
				v[i] = float32(x)
			default:
				v[i] = float32(0.3 * x)
			}
		}
		w[s.Name] = v
	}
	return w
}

func TestLayouts(t *testing.T) {
	m := tiny(t)
	familytest.CheckLayouts(t, m, familytest.MapBinder(randomWeights(t, m, 3)), toks, 16)
	// The F16 fixture, as stored (window 4, so 8 tokens outgrow it too).
	c, err := load.Open(filepath.Join("testdata", "tiny-f16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fm, err := registry.FromCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	familytest.CheckLayouts(t, fm, familytest.LoadBinder(c, fm.Weights()), []int32{1, 15, 27, 100, 200, 300, 400, 500}, 16)
}

func TestLayerKinds(t *testing.T) {
	want := []string{"attention(window 3)+moe", "attention+moe", "attention(window 3)+moe", "attention+moe"}
	if got := tiny(t).(families.Layered).LayerKinds(); !slices.Equal(got, want) {
		t.Errorf("default layer types: %v, want %v", got, want)
	}
	cfg := tinyConfig()
	cfg["layer_types"] = []any{"full_attention", "sliding_attention", "sliding_attention", "full_attention"}
	m, err := gptoss.FromHF(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"attention+moe", "attention(window 3)+moe", "attention(window 3)+moe", "attention+moe"}
	if got := m.(families.Layered).LayerKinds(); !slices.Equal(got, want) {
		t.Errorf("layer_types: %v, want %v", got, want)
	}
	// No period of llama.cpp's gives this pattern.
	if _, err := m.(families.GGUFWriter).GGUFMetadata(); !errors.Is(err, families.ErrUnsupported) {
		t.Errorf("GGUF metadata of an unperiodic pattern: got %v", err)
	}
}

// TestGGUFPattern reads llama.cpp's sliding_window_pattern: layer l is
// windowed unless l%p == p-1, and p = 0 windows every layer.
func TestGGUFPattern(t *testing.T) {
	m := tiny(t)
	w := randomWeights(t, m, 1)
	for _, c := range []struct {
		period uint32
		want   []bool
	}{
		{2, []bool{true, false, true, false}},
		{3, []bool{true, true, false, true}},
		{1, []bool{false, false, false, false}},
		{0, []bool{true, true, true, true}},
	} {
		kvs := metadata(t, m)
		for i := range kvs {
			if kvs[i].Key == "gpt-oss.attention.sliding_window_pattern" {
				kvs[i].Value = gguf.ValueOf(c.period)
			}
		}
		gm := openGGUF(t, familytest.WriteGGUF(t, m, kvs, w))
		for l, kind := range gm.(families.Layered).LayerKinds() {
			if windowed := kind != "attention+moe"; windowed != c.want[l] {
				t.Errorf("period %d: layer %d is %q", c.period, l, kind)
			}
		}
		// The period written back windows the same layers.
		again := openGGUF(t, familytest.WriteGGUF(t, gm, metadata(t, gm), w))
		if a, b := again.(families.Layered).LayerKinds(), gm.(families.Layered).LayerKinds(); !slices.Equal(a, b) {
			t.Errorf("period %d: written back as %v, read as %v", c.period, a, b)
		}
	}
}

func metadata(t *testing.T, m families.Model) []gguf.KV {
	t.Helper()
	kvs, err := m.(families.GGUFWriter).GGUFMetadata()
	if err != nil {
		t.Fatal(err)
	}
	return kvs
}

func openGGUF(t *testing.T, path string) families.Model {
	t.Helper()
	c, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m, err := registry.FromGGUF(c.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConfigErrors(t *testing.T) {
	for key, want := range map[string]error{
		"num_local_experts":   families.ErrMissing,
		"num_experts_per_tok": families.ErrMissing,
		"intermediate_size":   families.ErrMissing,
		"sliding_window":      families.ErrMissing,
		"hidden_size":         families.ErrMissing,
	} {
		cfg := tinyConfig()
		delete(cfg, key)
		_, err := gptoss.FromHF(cfg)
		var ce *families.ConfigError
		if !errors.Is(err, want) || !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("without %s: got %v", key, err)
		}
	}
	for key, c := range map[string]struct {
		value any
		want  error
	}{
		"quantization_config": {map[string]any{"quant_method": "mxfp4"}, families.ErrUnsupported},
		"attention_bias":      {false, families.ErrUnsupported},
		"tie_word_embeddings": {true, families.ErrUnsupported},
		"layer_types":         {[]any{"full_attention", "chunked_attention", "full_attention", "full_attention"}, families.ErrUnsupported},
		"swiglu_limit":        {-1.0, families.ErrWrongType},
		"num_experts_per_tok": {5.0, families.ErrInconsistent},
	} {
		cfg := tinyConfig()
		cfg[key] = c.value
		_, err := gptoss.FromHF(cfg)
		if !errors.Is(err, c.want) {
			t.Errorf("%s = %v: got %v, want %v", key, c.value, err, c.want)
		}
	}
	cfg := tinyConfig()
	cfg["layer_types"] = []any{"full_attention"}
	if _, err := gptoss.FromHF(cfg); !errors.Is(err, families.ErrInconsistent) {
		t.Errorf("one layer type for four layers: got %v", err)
	}
	cfg = tinyConfig()
	cfg["swiglu_limit"] = 10.0
	m, err := gptoss.FromHF(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.(families.GGUFWriter).GGUFMetadata(); !errors.Is(err, families.ErrUnsupported) {
		t.Errorf("GGUF metadata with clamp 10: got %v", err)
	}
}

// TestContainers runs one random model three ways: bound by canonical name,
// from the GGUF file its metadata describes (through the registry), and
// from the safetensors directory it writes (one tensor per expert); the
// logits must agree, and each form's config reads back to the same model.
func TestContainers(t *testing.T) {
	m := tiny(t)
	w := randomWeights(t, m, 5)
	n := len(toks)
	shape := families.StepShape{Rows: 1, New: n, Capacity: 16, Logits: families.AllTokens}
	run := func(m families.Model, bind familytest.Binder) []float32 {
		t.Helper()
		out, err := familytest.NewRunner(m, bind).Step(shape, toks, familytest.Seq(0, n), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := run(m, familytest.MapBinder(w))

	c, err := load.Open(familytest.WriteGGUF(t, m, metadata(t, m), w))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gm, err := registry.FromGGUF(c.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	if d := familytest.MaxDiff32(run(gm, familytest.LoadBinder(c, gm.Weights())), want); d > 1e-6 {
		t.Errorf("GGUF: max |Δlogit| %.3g", d)
	}

	d, err := load.Open(familytest.WriteHF(t, gm, familytest.GGUFValues(c.GGUF())))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range []string{"model.layers.1.mlp.experts.gate_up_proj", "model.layers.1.mlp.experts.gate_up_proj_bias",
		"model.layers.1.mlp.experts.down_proj", "model.layers.1.mlp.experts.down_proj_bias"} {
		if !slices.Contains(d.TensorNames(), name) {
			t.Errorf("the safetensors form has no %s (the published layout): %v", name, d.TensorNames())
		}
	}
	hm, err := registry.FromCheckpoint(d)
	if err != nil {
		t.Fatal(err)
	}
	if hm.Family() != gptoss.Family {
		t.Errorf("family %q", hm.Family())
	}
	if d := familytest.MaxDiff32(run(hm, familytest.LoadBinder(d, hm.Weights())), want); d > 1e-6 {
		t.Errorf("safetensors: max |Δlogit| %.3g", d)
	}
	for _, back := range []families.Model{gm, hm} {
		got, want := *back.(*gptoss.Model).Decoder, *m.(*gptoss.Model).Decoder
		got.Eps, want.Eps = float64(float32(got.Eps)), float64(float32(want.Eps)) // GGUF stores f32
		got.Weight, want.Weight, got.HF, want.HF, got.GGUF, want.GGUF = families.WeightMap{}, families.WeightMap{}, families.HFStyle{}, families.HFStyle{}, families.GGUFStyle{}, families.GGUFStyle{}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("read back as\n%+v\nwant\n%+v", got, want)
		}
	}
}

// TestUnsupportedType opens a GGUF file whose expert tensor is stored in a
// type poot does not decode, IQ4_NL (the type id patched in the tensor
// table): the registry refuses it with a TensorError naming the tensor,
// wrapping ErrUnsupported and gguf's UnsupportedTypeError.
func TestUnsupportedType(t *testing.T) {
	m := tiny(t)
	path := familytest.WriteGGUF(t, m, metadata(t, m), randomWeights(t, m, 1))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const name = "blk.0.ffn_gate_exps.weight"
	i := bytes.Index(data, []byte(name))
	if i < 0 {
		t.Fatal("tensor not in the file")
	}
	typ := i + len(name) + 4 + 3*8 // n_dims, then three u64 dims
	if got := binary.LittleEndian.Uint32(data[typ:]); got != uint32(gguf.GGMLTypeF32) {
		t.Fatalf("type id %d at the patched offset, want f32", got)
	}
	binary.LittleEndian.PutUint32(data[typ:], uint32(gguf.GGMLTypeIQ4_NL))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = registry.FromGGUF(c.GGUF())
	var te *families.TensorError
	var ue *gguf.UnsupportedTypeError
	if !errors.As(err, &te) || te.Tensor != name || !errors.Is(err, families.ErrUnsupported) || !errors.As(err, &ue) || ue.Type != gguf.GGMLTypeIQ4_NL {
		t.Fatalf("got %v", err)
	}
	t.Log(err)
}

// TestMXFP4Experts opens a GGUF file with MXFP4 matrices, the form of the
// published gpt-oss checkpoints' experts: the registry configures it and
// the expert stacks read as MXFP4 (TestReference runs it).
func TestMXFP4Experts(t *testing.T) {
	c, err := load.Open(filepath.Join("testdata", "tiny-mxfp4.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := registry.FromGGUF(c.GGUF()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight"} {
		tt, err := c.TensorType(name)
		if err != nil || tt.DType != poot.MXFP4 {
			t.Errorf("%s: %v, %v; want MXFP4", name, tt, err)
		}
	}
}

// TestStepSpec checks the step's outputs and states: Hidden adds the final
// hidden states, every layer carries its key and value caches, and a spec
// that names other carries is a StepError.
func TestStepSpec(t *testing.T) {
	m := tiny(t)
	shape := families.StepShape{Rows: 2, New: 3, Capacity: 8, Hidden: true}
	g, err := m.Trace(families.StepSpec{Program: families.Prefill, Shape: shape}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	outs := g.Outputs()
	if len(outs) != 2 || !g.Type(outs[0]).Shape.Equal(poot.Shape{2, 64}) || !g.Type(outs[1]).Shape.Equal(poot.Shape{6, 32}) {
		t.Errorf("outputs %v", outs)
	}
	states, err := families.States(m, shape)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range states {
		names = append(names, s.Name)
	}
	want := []string{"cache.k.0", "cache.v.0", "cache.k.1", "cache.v.1", "cache.k.2", "cache.v.2", "cache.k.3", "cache.v.3"}
	if !slices.Equal(names, want) {
		t.Errorf("states %v, want %v", names, want)
	}
	var se *families.StepError
	if _, err := m.Trace(families.StepSpec{Shape: shape, Carries: []string{"cache.k.0"}}, poot.Limits{}); !errors.As(err, &se) {
		t.Errorf("a spec carrying one cache: got %v", err)
	}
	if _, err := m.Trace(families.StepSpec{Shape: families.StepShape{Rows: 1, New: 1, Capacity: 65}}, poot.Limits{}); !errors.As(err, &se) {
		t.Errorf("capacity beyond the context: got %v", err)
	}
}
