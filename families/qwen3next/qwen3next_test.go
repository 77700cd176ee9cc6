package qwen3next_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/qwen3next"
	"github.com/pootlabs/poot/gguf"
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
		"rms_norm_eps": 1e-6, "rope_theta": 1e6, "max_position_embeddings": 128.0,
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
// rows equal rows alone, for both projection layouts and for the F16
// fixture as the loader binds it.
func TestLayouts(t *testing.T) {
	for _, c := range []struct {
		name string
		m    *qwen3next.Model
	}{{"hf", tiny(t)}, {"gguf-split", asGGUF(tiny(t), false)}} {
		t.Run(c.name, func(t *testing.T) {
			familytest.CheckLayouts(t, c.m, familytest.MapBinder(familytest.Synth(t, c.m, 3)), toks, 16)
		})
	}
	t.Run("tiny-f16.gguf", func(t *testing.T) {
		c, m := open(t, "testdata/tiny-f16.gguf")
		familytest.CheckLayouts(t, m, familytest.LoadBinder(c, m.Weights()), []int32{1, 15, 27, 100, 200, 300, 400, 500}, 16)
	})
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

// TestRealShape configures synth's Qwen3-Next-80B-A3B preset (without
// writing it) and checks its structure: 12 attention layers in 48, and
// about 80 billion parameters.
func TestRealShape(t *testing.T) {
	p, err := synth.FindPreset("qwen3next", "80b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	attention := 0
	for _, k := range m.(families.Layered).LayerKinds() {
		if k == "attention(gated)+moe(shared)" {
			attention++
		}
	}
	var params int64
	for _, s := range familytest.Tensors(t, m) {
		params += int64(s.Shape.Size())
	}
	if attention != 12 || params < 79e9 || params > 82e9 {
		t.Errorf("%d attention layers, %d parameters; want 12 and about 80e9", attention, params)
	}
	t.Logf("%d parameters", params)
}

// ggufFile writes m (in its GGUF form) with metadata kvs and random
// weights, and configures a model from the file.
func ggufFile(t *testing.T, m *qwen3next.Model, kvs []gguf.KV) (families.Model, error) {
	t.Helper()
	g := asGGUF(m, true)
	f, err := gguf.Open(familytest.WriteGGUF(t, g, kvs, familytest.Synth(t, g, 1)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return qwen3next.FromGGUF(f)
}

// TestGGUFMetadata: the metadata a model writes reads back to the same
// model, for a periodic layer pattern (full_attention_interval) and an
// irregular one (attention.recurrent_layers); a missing or inconsistent key
// is a ConfigError naming it.
func TestGGUFMetadata(t *testing.T) {
	for _, pattern := range [][]bool{{true, false, true, false}, {true, false, false, true}} {
		m := tiny(t)
		m.Recurrent = pattern
		kvs, err := m.GGUFMetadata()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ggufFile(t, m, kvs)
		if err != nil {
			t.Fatal(err)
		}
		want := asGGUF(m, true)
		g := got.(*qwen3next.Model)
		if fmt.Sprint(g.LayerKinds()) != fmt.Sprint(want.LayerKinds()) || g.KeyHeads != want.KeyHeads || g.ValueHeads != want.ValueHeads ||
			g.StateSize != want.StateSize || g.ConvKernel != want.ConvKernel || g.SharedFFN != want.SharedFFN || *g.MoE != *want.MoE ||
			g.Rope != want.Rope || g.HeadDim != want.HeadDim || g.Heads != want.Heads || g.KVHeads != want.KVHeads || !g.Fused || g.LogDecay || g.NormPlusOne {
			t.Errorf("pattern %v: read back %+v, want %+v", pattern, g, want)
		}
	}
	m := tiny(t)
	kvs, err := m.GGUFMetadata()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(key string, v gguf.Value) []gguf.KV {
		var out []gguf.KV
		for _, kv := range kvs {
			if kv.Key != key {
				out = append(out, kv)
			}
		}
		if v.IsValid() {
			out = append(out, gguf.KV{Key: key, Value: v})
		}
		return out
	}
	for _, c := range []struct {
		key  string
		v    gguf.Value
		want error
	}{
		{"qwen3next.ssm.state_size", gguf.Value{}, families.ErrMissing},
		{"qwen3next.ssm.group_count", gguf.Value{}, families.ErrMissing},
		{"qwen3next.expert_count", gguf.Value{}, families.ErrMissing},
		{"qwen3next.ssm.inner_size", gguf.ValueOf(uint32(48)), families.ErrUnsupported},
		{"qwen3next.nextn_predict_layers", gguf.ValueOf(uint32(4)), families.ErrInconsistent},
		{"qwen3next.full_attention_interval", gguf.ValueOf(uint32(0)), families.ErrWrongType},
	} {
		_, err := ggufFile(t, m, edit(c.key, c.v))
		var ce *families.ConfigError
		if !errors.Is(err, c.want) || !errors.As(err, &ce) || ce.Key != c.key {
			t.Errorf("%s = %v: got %v, want %v", c.key, c.v, err, c.want)
		}
	}
	// An MTP block after the trunk is not run: the model has one layer
	// fewer than the file's blocks.
	got, err := ggufFile(t, m, edit("qwen3next.nextn_predict_layers", gguf.ValueOf(uint32(1))))
	if err != nil {
		t.Fatal(err)
	}
	if got.Schema().Layers != 3 {
		t.Errorf("with one MTP block: %d layers, want 3", got.Schema().Layers)
	}
}

// TestZeroModel: a model not made by a reader is refused with errors, not
// panics.
func TestZeroModel(t *testing.T) {
	m := &qwen3next.Model{}
	if _, err := m.Trace(families.StepSpec{Shape: families.ProbeShape}, poot.Limits{}); err == nil {
		t.Error("Trace accepted the zero model")
	}
	if _, err := m.GGUFMetadata(); err == nil {
		t.Error("GGUFMetadata accepted the zero model")
	}
	if _, err := m.HFConfig(); err == nil {
		t.Error("HFConfig accepted the zero model")
	}
	half := tiny(t)
	half.Recurrent = half.Recurrent[:1]
	if len(half.LayerKinds()) != 4 {
		t.Error("LayerKinds of a model with too few layer kinds")
	}
	if _, err := half.Trace(families.StepSpec{Shape: families.ProbeShape}, poot.Limits{}); !errors.Is(err, families.ErrInconsistent) {
		t.Errorf("Trace with 1 layer kind for 4 layers: %v", err)
	}
}

// TestChunks: a prompt run in chunks of 1, 3 and 64 tokens (the delta
// rule's chunked form over several chunks, and its token-by-token form)
// gives every position the logits of one prefill of all of it.
func TestChunks(t *testing.T) { checkChunks(t, tiny(t), 64) }

// checkChunks runs a prompt of 70 tokens below vocab in chunks of 1, 3
// and 64 and compares every position with one prefill.
func checkChunks(t *testing.T, m families.Model, vocab int) {
	t.Helper()
	bind := familytest.MapBinder(familytest.Synth(t, m, 9))
	const n, capacity = 70, 80
	prompt := make([]int32, n)
	for i := range prompt {
		prompt[i] = int32((i*37 + 11) % vocab)
	}
	all, err := familytest.NewRunner(m, bind).Step(families.StepShape{Rows: 1, New: n, Capacity: capacity, Logits: families.AllTokens}, prompt, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	width := m.Schema().Vocab
	for _, size := range []int{1, 3, 64} {
		r, worst := familytest.NewRunner(m, bind), 0.0
		for from := 0; from < n; from += size {
			k := min(size, n-from)
			got, err := r.Step(families.StepShape{Rows: 1, New: k, Capacity: capacity, Logits: families.AllTokens}, prompt[from:from+k], familytest.Seq(from, k), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := familytest.MaxDiff32(got, all[from*width:(from+k)*width])
			worst = max(worst, d)
			if d > 1e-5 {
				t.Fatalf("chunks of %d, tokens [%d, %d): max |Δlogit| %.3g", size, from, from+k, d)
			}
		}
		t.Logf("chunks of %d: max |Δlogit| %.3g", size, worst)
	}
}
