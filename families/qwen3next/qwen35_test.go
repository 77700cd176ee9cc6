package qwen3next_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/qwen3next"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
)

// qwen35Tiny configures synth's tiny preset of family (qwen35 or
// qwen35moe), as read from its config.json.
func qwen35Tiny(t *testing.T, family string) *qwen3next.Model {
	t.Helper()
	p, err := synth.FindPreset(family, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	return m.(*qwen3next.Model)
}

// qwen35Config is a copy of the tiny preset's config.json of family.
func qwen35Config(t *testing.T, family string) map[string]any {
	t.Helper()
	p, err := synth.FindPreset(family, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	for k, v := range p.Config {
		cfg[k] = v
	}
	rope := map[string]any{}
	for k, v := range p.Config["rope_parameters"].(map[string]any) {
		rope[k] = v
	}
	cfg["rope_parameters"] = rope
	return cfg
}

// asTiled is m as a GGUF file describes it (asGGUF) with llama.cpp's tiled
// value heads.
func asTiled(m *qwen3next.Model) *qwen3next.Model {
	g := asGGUF(m, false)
	g.TiledHeads = true
	return g
}

// withMTP appends a multi-token-prediction block to the GGUF file at path,
// as llama.cpp's converter writes one: block_count counts it,
// nextn_predict_layers says it is not a trunk layer, and it is an attention
// layer (a copy of the trunk's first) with the nextn tensors. It does
// nothing to a file that has one.
func withMTP(t *testing.T, path string) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	arch, _ := f.Architecture()
	_, done := f.Get(arch + ".nextn_predict_layers")
	n, _ := f.Get(arch + ".block_count")
	trunk, _ := n.AsUint()
	f.Close()
	if done {
		return
	}
	src := fmt.Sprintf("blk.%d.", 1) // the first attention layer
	mtp := fmt.Sprintf("blk.%d.", trunk)
	var head, norm gguf.WriterTensor
	rewriteKV(t, path, path, func(kvs []gguf.KV) []gguf.KV {
		for i, kv := range kvs {
			if kv.Key == arch+".block_count" {
				kvs[i].Value = gguf.ValueOf(uint32(trunk + 1))
			}
		}
		return append(kvs, gguf.KV{Key: arch + ".nextn_predict_layers", Value: gguf.ValueOf(uint32(1))})
	}, func(info gguf.TensorInfo, data []byte) []gguf.WriterTensor {
		out := []gguf.WriterTensor{asIs(info, data)}
		switch {
		case info.Name == "token_embd.weight":
			// eh_proj [dim, 2·dim] from the first rows of the embedding.
			dim := info.Shape()[1]
			head = gguf.WriterTensor{Name: mtp + "nextn.eh_proj.weight", GGMLType: info.Type, Shape: poot.Shape{dim, 2 * dim}, Data: data[:len(data)/info.Shape()[0]*2*dim]}
		case info.Name == "output_norm.weight":
			norm = asIs(info, data)
		case strings.HasPrefix(info.Name, src):
			c := asIs(info, data)
			c.Name = mtp + strings.TrimPrefix(info.Name, src)
			out = append(out, c)
		}
		return out
	}, func() []gguf.WriterTensor {
		out := []gguf.WriterTensor{head}
		for _, n := range []string{"enorm", "hnorm", "shared_head_norm"} {
			c := norm
			c.Name = mtp + "nextn." + n + ".weight"
			out = append(out, c)
		}
		return out
	})
}

// TestWriteQwen35Fixtures appends an MTP block to the synthesised dense
// Qwen3.5 fixtures (the MoE ones are kept without, to keep them small) and
// writes the files whose references are kept without them: the
// F16 files widened to F32, and the dense F32 file with rope sections
// [0, 1, 1, 0] (testdata/README.md). It runs only with -write-fixtures.
func TestWriteQwen35Fixtures(t *testing.T) {
	if !*writeFixtures {
		t.Skip("run with -write-fixtures to rewrite testdata")
	}
	for _, ty := range []string{"f32", "f16"} {
		withMTP(t, filepath.Join("testdata", "qwen35-"+ty+".gguf"))
	}
	for _, name := range []string{"qwen35", "qwen35moe"} {
		rewrite(t, "testdata/"+name+"-f16.gguf", "testdata/"+name+"-f16-widened.gguf", widen(func(string) bool { return true }))
	}
	sectioned(t, "testdata/qwen35-f32.gguf", "testdata/qwen35-sections-f32.gguf")
}

// sectioned writes src with rope sections [0, 1, 1, 0]: over 4 rotary
// pairs llama.cpp's interleaved sections give pairs 0 and 2 (the fastest)
// to the fourth section, which text sees at position 0.
func sectioned(t *testing.T, src, dst string) {
	t.Helper()
	rewriteKV(t, src, dst, func(kvs []gguf.KV) []gguf.KV {
		for i, kv := range kvs {
			if strings.HasSuffix(kv.Key, ".rope.dimension_sections") {
				kvs[i].Value = gguf.ArrayOf([]int32{0, 1, 1, 0})
			}
		}
		return kvs
	}, func(info gguf.TensorInfo, data []byte) []gguf.WriterTensor {
		return []gguf.WriterTensor{asIs(info, data)}
	}, nil)
}

// TestQwen35Fixtures: the fixtures read as llama.cpp reads them: three
// trunk layers, and in the dense ones an MTP block, named and not run;
// tiled value heads; Qwen3.5's projections.
func TestQwen35Fixtures(t *testing.T) {
	for _, name := range []string{"qwen35-f32.gguf", "qwen35-f16.gguf", "qwen35moe-f32.gguf", "qwen35moe-f16.gguf"} {
		c, m := open(t, filepath.Join("testdata", name))
		want := []string{"gated_delta+dense", "attention(gated)+dense", "gated_delta+dense", "mtp (ignored)"}
		if strings.HasPrefix(name, "qwen35moe") {
			want = []string{"gated_delta+moe(shared)", "attention(gated)+moe(shared)", "gated_delta+moe(shared)"}
		}
		if got := m.LayerKinds(); !slices.Equal(got, want) || m.Schema().Layers != 3 || m.NextN != len(want)-3 {
			t.Errorf("%s: layers %v (%d trunk), want %v", name, got, m.Schema().Layers, want)
		}
		if !m.TiledHeads || !m.SplitBA || m.Fused || m.Sections != [4]int{2, 1, 1, 0} || m.Rope.Dims != 8 {
			t.Errorf("%s: tiled %v, split β/α %v, fused %v, sections %v, rope dims %d", name, m.TiledHeads, m.SplitBA, m.Fused, m.Sections, m.Rope.Dims)
		}
		// The MTP block is in the file and no weight of the model reads it.
		if _, ok := c.GGUF().Tensor("blk.3.nextn.eh_proj.weight"); ok != (m.NextN == 1) {
			t.Errorf("%s: MTP block in the file %v, NextN %d", name, ok, m.NextN)
		}
		for _, s := range familytest.Tensors(t, m) {
			if strings.HasPrefix(s.Name, "blk.3.") {
				t.Errorf("%s: the model reads %s", name, s.Name)
			}
		}
	}
}

// TestFusedGateUp: experts stored with gate and up in one tensor
// (convert_hf_to_gguf.py --fuse-gate-up-exps) are refused, naming it.
func TestFusedGateUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fused.gguf")
	rewrite(t, "testdata/qwen35moe-f32.gguf", path, func(info gguf.TensorInfo, data []byte) []gguf.WriterTensor {
		c := asIs(info, data)
		switch info.Name {
		case "blk.0.ffn_up_exps.weight":
			return nil
		case "blk.0.ffn_gate_exps.weight":
			c.Name = "blk.0.ffn_gate_up_exps.weight"
		}
		return []gguf.WriterTensor{c}
	})
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = registry.FromGGUF(f)
	var te *families.TensorError
	if !errors.As(err, &te) || !errors.Is(err, families.ErrUnsupported) || te.Tensor != "blk.0.ffn_gate_up_exps.weight" {
		t.Errorf("fused gate and up experts: got %v", err)
	}
}

// TestStillPairs: llama.cpp's interleaved sections for text are plain rope
// unless a pair falls to the fourth section.
func TestStillPairs(t *testing.T) {
	for _, c := range []struct {
		sections [4]int
		half     int
		still    []int
	}{
		{[4]int{11, 11, 10, 0}, 32, nil},           // Qwen3.5
		{[4]int{24, 20, 20, 0}, 64, []int{61, 62}}, // Qwen3-VL's: its two slowest pairs
		{[4]int{2, 1, 1, 0}, 4, nil},               // the tiny preset
		{[4]int{8, 8, 8, 0}, 32, nil},              // sectors wrap round
		{[4]int{1, 1, 1, 1}, 4, []int{3}},
		{[4]int{0, 1, 1, 0}, 4, []int{0, 2}},
		{[4]int{16, 8, 8, 0}, 32, []int{25, 26, 28, 29, 31}},
		{[4]int{4, 0, 0, 0}, 4, []int{1, 2}},
	} {
		got := qwen3next.StillPairs(c.sections, c.half)
		var idx []int
		for i, s := range got {
			if s {
				idx = append(idx, i)
			}
		}
		if !slices.Equal(idx, c.still) || (c.still == nil) != (got == nil) {
			t.Errorf("sections %v over %d pairs: still %v, want %v", c.sections, c.half, idx, c.still)
		}
	}
}

// TestSections: with sections that give a rotary pair to the fourth
// section, poot matches llama.cpp (which rotates that pair by position 0),
// and the logits are not those of plain rope.
func TestSections(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sections.gguf")
	sectioned(t, "testdata/qwen35-f32.gguf", path)
	c, m := open(t, path)
	if m.Sections != [4]int{0, 1, 1, 0} {
		t.Fatalf("sections %v", m.Sections)
	}
	bind := familytest.LoadBinder(c, m.Weights())
	familytest.CheckReference(t, m, bind, familytest.ReadRef(t, "testdata/qwen35-sections-f32.ref.json"), 32, 1e-3, true)
	plain := familytest.ReadRef(t, "testdata/qwen35-f32.ref.json")
	n := len(plain.Logits)
	got, err := familytest.NewRunner(m, bind).Step(families.StepShape{Rows: 1, New: n, Capacity: 32, Logits: families.AllTokens}, plain.Tokens()[:n], familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i := range n {
		vocab := m.Schema().Vocab
		worst = max(worst, familytest.MaxDiff(got[i*vocab:(i+1)*vocab], plain.Logits[i]))
	}
	if worst < 0.01 {
		t.Errorf("sections [0 1 1 0] vs plain rope: max |Δlogit| %.3g, want a difference", worst)
	}
	if _, err := m.HFConfig(); !errors.Is(err, families.ErrUnsupported) {
		t.Errorf("a still pair as config.json: %v", err)
	}
}

// TestQwen35Layouts holds Qwen3.5 models to the step laws (chunked prefill
// equals token-by-token decode, paged equals contiguous, batched equals
// alone), grouped (config.json) and tiled (GGUF), and the F16 fixtures as
// the loader binds them.
func TestQwen35Layouts(t *testing.T) {
	for _, family := range []string{"qwen35", "qwen35moe"} {
		m := qwen35Tiny(t, family)
		tied := asTiled(m)
		tied.Tied = true
		for name, m := range map[string]*qwen3next.Model{"hf": m, "gguf": asTiled(m), "gguf-tied": tied} {
			t.Run(family+"-"+name, func(t *testing.T) {
				familytest.CheckLayouts(t, m, familytest.MapBinder(familytest.Synth(t, m, 3)), toks, 16)
			})
		}
		t.Run(family+"-f16.gguf", func(t *testing.T) {
			c, m := open(t, "testdata/"+family+"-f16.gguf")
			familytest.CheckLayouts(t, m, familytest.LoadBinder(c, m.Weights()), []int32{1, 15, 27, 100, 200, 300, 400, 500}, 16)
		})
	}
}

// TestQwen35Chunks: prompts in chunks of 1, 3 and 64 tokens give every
// position the logits of one prefill (tiled heads, sectioned rope).
func TestQwen35Chunks(t *testing.T) {
	for _, family := range []string{"qwen35", "qwen35moe"} {
		t.Run(family, func(t *testing.T) { checkChunks(t, asTiled(qwen35Tiny(t, family)), 512) })
	}
}

// TestQwen35Safetensors writes each F32 fixture as a Hugging Face
// checkpoint (grouped value heads, A_log, norms without the folded one,
// fused expert stacks) and reads it back through config.json: the logits
// must be the GGUF file's. Reading the GGUF weights with grouped heads
// instead must not give them.
func TestQwen35Safetensors(t *testing.T) {
	for _, name := range []string{"qwen35", "qwen35moe"} {
		t.Run(name, func(t *testing.T) {
			c, gm := open(t, "testdata/"+name+"-f32.gguf")
			dir := familytest.WriteHF(t, gm, familytest.GGUFValues(c.GGUF()))
			hc, err := load.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer hc.Close()
			hm, err := registry.FromHF(hc.HFConfig())
			if err != nil {
				t.Fatal(err)
			}
			if hm.Family() != name || hm.(*qwen3next.Model).TiledHeads {
				t.Fatalf("family %q, tiled %v", hm.Family(), hm.(*qwen3next.Model).TiledHeads)
			}
			n := len(toks)
			shape := families.StepShape{Rows: 1, New: n, Capacity: 16, Logits: families.AllTokens}
			run := func(m families.Model, bind familytest.Binder) []float32 {
				out, err := familytest.NewRunner(m, bind).Step(shape, toks, familytest.Seq(0, n), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			want := run(gm, familytest.LoadBinder(c, gm.Weights()))
			if d := familytest.MaxDiff32(run(hm, familytest.LoadBinder(hc, hm.Weights())), want); d > 1e-4 {
				t.Errorf("safetensors vs GGUF: max |Δlogit| %.3g", d)
			}
			grouped := *gm
			grouped.TiledHeads = false
			if d := familytest.MaxDiff32(run(&grouped, familytest.LoadBinder(c, gm.Weights())), want); d < 1e-2 {
				t.Errorf("grouped vs tiled heads on the same weights: max |Δlogit| %.3g, want a difference", d)
			}
		})
	}
}

// TestQwen35SynthSafetensors: synth's safetensors form of each tiny preset
// holds the weights its GGUF form holds under the Hugging Face names, so
// the model read from config.json gives the same logits bound to either.
func TestQwen35SynthSafetensors(t *testing.T) {
	for _, family := range []string{"qwen35", "qwen35moe"} {
		t.Run(family, func(t *testing.T) { checkSynthSafetensors(t, family) })
	}
}

// TestConditionalGeneration: a multimodal checkpoint's config.json is read
// for its language model, whose weights are under model.language_model.
func TestConditionalGeneration(t *testing.T) {
	text := qwen35Config(t, "qwen35moe")
	cfg := map[string]any{"architectures": []any{"Qwen3_5MoeForConditionalGeneration"}, "model_type": "qwen3_5_moe",
		"tie_word_embeddings": false, "text_config": text, "vision_config": map[string]any{"depth": 27.0}}
	text["model_type"] = "qwen3_5_moe_text"
	delete(text, "architectures")
	m, err := registry.FromHF(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := m.Weights()
	for canonical, want := range map[string]string{
		"token_embd.weight":          "model.language_model.embed_tokens.weight",
		"output.weight":              "lm_head.weight",
		"blk.0.attn_qkv.weight":      "model.language_model.layers.0.linear_attn.in_proj_qkv.weight",
		"blk.2.ffn_down_exps.weight": "model.language_model.layers.2.mlp.experts.down_proj",
	} {
		if got, _ := w.Stored(canonical); got != want {
			t.Errorf("%s is stored as %q, want %q", canonical, got, want)
		}
	}
	if v, ok := w.View("blk.1.ffn_up_exps.weight"); !ok || v.Tensor != "model.language_model.layers.1.mlp.experts.gate_up_proj" || v.RowStart != 16 || v.RowEnd != 32 {
		t.Errorf("up experts view %+v", v)
	}
}

// TestQwen35RealShape configures synth's real-size presets (without
// writing them): the attention layers every fourth, an MTP block named, and
// the trunk's parameters (the vision tower and the MTP block are not
// counted).
func TestQwen35RealShape(t *testing.T) {
	for _, c := range []struct {
		family, preset, attention string
		layers, attn              int
		low, high                 float64
	}{
		{"qwen35", "0.8b", "attention(gated)+dense", 24, 6, 0.7e9, 0.8e9},
		{"qwen35moe", "35b-a3b", "attention(gated)+moe(shared)", 40, 10, 33e9, 36e9},
	} {
		p, err := synth.FindPreset(c.family, c.preset)
		if err != nil {
			t.Fatal(err)
		}
		m, err := synth.Model(p.Family, p.Config)
		if err != nil {
			t.Fatal(err)
		}
		kinds := m.(families.Layered).LayerKinds()
		attention := 0
		for _, k := range kinds {
			if k == c.attention {
				attention++
			}
		}
		var params int64
		for _, s := range familytest.Tensors(t, m) {
			params += int64(s.Shape.Size())
		}
		if attention != c.attn || len(kinds) != c.layers+1 || kinds[c.layers] != "mtp (ignored)" || float64(params) < c.low || float64(params) > c.high {
			t.Errorf("%s: %d attention layers of %d kinds, %d parameters; want %d of %d and [%g, %g]", c.preset, attention, len(kinds), params, c.attn, c.layers+1, c.low, c.high)
		}
		t.Logf("%s: %d parameters", c.preset, params)
	}
}

// TestQwen35GGUFMetadata: the metadata a model writes reads back to the
// same model; a missing or inconsistent key is a ConfigError naming it.
func TestQwen35GGUFMetadata(t *testing.T) {
	for _, family := range []string{"qwen35", "qwen35moe"} {
		m := qwen35Tiny(t, family)
		kvs, err := m.GGUFMetadata()
		if err != nil {
			t.Fatal(err)
		}
		read := func(kvs []gguf.KV) (families.Model, error) {
			g := asTiled(m)
			f, err := gguf.Open(familytest.WriteGGUF(t, g, kvs, familytest.Synth(t, g, 1)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return qwen3next.FromGGUF(f)
		}
		got, err := read(kvs)
		if err != nil {
			t.Fatal(err)
		}
		g, want := got.(*qwen3next.Model), asTiled(m)
		if fmt.Sprint(g.LayerKinds()) != fmt.Sprint(want.LayerKinds()) || g.Sections != want.Sections || g.Rope != want.Rope ||
			g.KeyHeads != want.KeyHeads || g.ValueHeads != want.ValueHeads || g.FFN != want.FFN || g.Tied != want.Tied ||
			(g.MoE == nil) != (want.MoE == nil) || (g.MoE != nil && (*g.MoE != *want.MoE || g.SharedFFN != want.SharedFFN)) ||
			!g.TiledHeads || !g.SplitBA || g.Fused || g.LogDecay || g.NormPlusOne {
			t.Errorf("%s: read back %+v, want %+v", family, g, want)
		}
		// edit sets key to v (deletes it for the zero Value), and sets the
		// extra keys.
		edit := func(key string, v gguf.Value, extra ...gguf.KV) []gguf.KV {
			var out []gguf.KV
			for _, kv := range kvs {
				if kv.Key != key {
					out = append(out, kv)
				}
			}
			if v.IsValid() {
				out = append(out, gguf.KV{Key: key, Value: v})
			}
			return append(out, extra...)
		}
		type bad struct {
			key   string
			v     gguf.Value
			want  error
			extra []gguf.KV
		}
		cases := []bad{
			{family + ".rope.dimension_sections", gguf.Value{}, families.ErrMissing, nil},
			{family + ".rope.dimension_sections", gguf.ArrayOf([]int32{2, 1, 1}), families.ErrInconsistent, nil},
			{family + ".rope.dimension_sections", gguf.ArrayOf([]int32{8, 8, 8, 0}), families.ErrInconsistent, nil},
			{family + ".rope.dimension_sections", gguf.ArrayOf([]int32{0, 0, 0, 4}), families.ErrInconsistent, nil},
			{family + ".ssm.group_count", gguf.Value{}, families.ErrMissing, nil},
			{family + ".nextn_predict_layers", gguf.ValueOf(uint32(3)), families.ErrInconsistent, nil},
		}
		if family == "qwen35" {
			cases = append(cases, bad{"qwen35.feed_forward_length", gguf.Value{}, families.ErrMissing, nil},
				bad{"qwen35.expert_count", gguf.ValueOf(uint32(4)), families.ErrInconsistent, []gguf.KV{{Key: "qwen35.expert_used_count", Value: gguf.ValueOf(uint32(2))}}})
		} else {
			cases = append(cases, bad{"qwen35moe.expert_count", gguf.Value{}, families.ErrMissing, nil})
		}
		for _, c := range cases {
			_, err := read(edit(c.key, c.v, c.extra...))
			var ce *families.ConfigError
			if !errors.Is(err, c.want) || !errors.As(err, &ce) || ce.Key != c.key {
				t.Errorf("%s = %v: got %v, want %v", c.key, c.v, err, c.want)
			}
		}
	}
}

// TestQwen35ConfigErrors: a config.json that is missing a key, or sets
// one to what the family cannot run, is a ConfigError naming the key.
func TestQwen35ConfigErrors(t *testing.T) {
	for _, c := range []struct {
		family, key string
		v           any // nil deletes the key
		want        error
	}{
		{"qwen35", "intermediate_size", nil, families.ErrMissing},
		{"qwen35", "linear_num_value_heads", nil, families.ErrMissing},
		{"qwen35", "linear_conv_kernel_dim", nil, families.ErrMissing},
		{"qwen35moe", "num_experts", nil, families.ErrMissing},
		{"qwen35moe", "shared_expert_intermediate_size", nil, families.ErrMissing},
		{"qwen35", "rope_parameters.mrope_section", []any{2.0, 2.0}, families.ErrInconsistent},
		{"qwen35", "rope_parameters.mrope_section", []any{4.0, 0.0, 0.0}, families.ErrUnsupported},
		{"qwen35", "rope_parameters.mrope_section", []any{8.0, 8.0, 8.0}, families.ErrInconsistent},
		{"qwen35", "linear_value_head_dim", 32.0, families.ErrUnsupported},
		{"qwen35moe", "layer_types", []any{"linear_attention", "full_attention", "sliding_attention"}, families.ErrUnsupported},
		{"qwen35moe", "layer_types", []any{"linear_attention"}, families.ErrInconsistent},
	} {
		cfg := qwen35Config(t, c.family)
		target, key := cfg, c.key
		if k, ok := strings.CutPrefix(c.key, "rope_parameters."); ok {
			target, key = cfg["rope_parameters"].(map[string]any), k
		}
		if c.v == nil {
			delete(target, key)
		} else {
			target[key] = c.v
		}
		_, err := qwen3next.FromHF(cfg)
		var ce *families.ConfigError
		if !errors.Is(err, c.want) || !errors.As(err, &ce) || ce.Key != c.key {
			t.Errorf("%s: %s = %v: got %v, want %v", c.family, c.key, c.v, err, c.want)
		}
	}
	// The defaults: Qwen3.5's sections, a quarter of the head rotated, an
	// MTP block counted.
	cfg := qwen35Config(t, "qwen35")
	delete(cfg, "rope_parameters")
	cfg["head_dim"], cfg["mtp_num_hidden_layers"] = 256.0, 1.0
	m, err := qwen3next.FromHF(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if q := m.(*qwen3next.Model); q.Sections != [4]int{11, 11, 10, 0} || q.Rope.Dims != 64 || q.NextN != 1 || q.Rope.Theta != 10000 {
		t.Errorf("defaults: sections %v, rope %+v, MTP blocks %d", q.Sections, q.Rope, q.NextN)
	}
}
