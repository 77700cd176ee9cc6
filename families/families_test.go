package families_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

func TestStepShapeValidate(t *testing.T) {
	ok := families.StepShape{Rows: 2, New: 3, Capacity: 8}
	for _, c := range []struct {
		name  string
		edit  func(*families.StepShape)
		field string
	}{
		{"valid", func(*families.StepShape) {}, ""},
		{"paged", func(s *families.StepShape) { s.Layout, s.PageSize = families.Paged, 4 }, ""},
		{"no rows", func(s *families.StepShape) { s.Rows = 0 }, "Rows"},
		{"no tokens", func(s *families.StepShape) { s.New = 0 }, "New"},
		{"more tokens than capacity", func(s *families.StepShape) { s.New = 9 }, "New"},
		{"no capacity", func(s *families.StepShape) { s.Capacity = 0 }, "Capacity"},
		{"paged without pages", func(s *families.StepShape) { s.Layout = families.Paged }, "PageSize"},
		{"contiguous with pages", func(s *families.StepShape) { s.PageSize = 4 }, "PageSize"},
		{"unknown layout", func(s *families.StepShape) { s.Layout = 7 }, "Layout"},
		{"unknown logits", func(s *families.StepShape) { s.Logits = 7 }, "Logits"},
		{"overflow", func(s *families.StepShape) { s.Rows, s.Capacity, s.New = 1<<20, 1<<20, 1 }, "Rows"},
		{"f16 caches", func(s *families.StepShape) { s.KV = poot.F16 }, ""},
		{"q8_0 caches", func(s *families.StepShape) { s.KV = poot.Q8_0 }, ""},
		{"q4_0 caches", func(s *families.StepShape) { s.KV = poot.Q4_0 }, "KV"},
	} {
		s := ok
		c.edit(&s)
		err := s.Validate()
		var se *families.StepError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.field != "" && (!errors.As(err, &se) || se.Field != c.field):
			t.Errorf("%s: got %v, want a StepError on %s", c.name, err, c.field)
		}
	}
	if got := (families.StepShape{Rows: 3, Capacity: 10, Layout: families.Paged, PageSize: 4}).PoolRows(); got != 36 {
		t.Errorf("default pool: %d rows, want 3 rows × 3 pages × 4", got)
	}
}

func tiny() *families.Decoder {
	return &families.Decoder{
		Name: "tiny", Vocab: 32, Dim: 16, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 4, FFN: 24,
		Eps: 1e-5, MaxContext: 64,
		Rope: families.Rope{RopeConfig: ops.RopeConfig{Dims: 4, Theta: 10000}},
	}
}

func TestTraceChecksSpec(t *testing.T) {
	d := tiny()
	spec := families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: 1, New: 1, Capacity: 128}}
	var se *families.StepError
	if _, err := d.Trace(spec, poot.Limits{}); !errors.As(err, &se) || se.Field != "Capacity" || se.Model != "tiny" {
		t.Errorf("capacity beyond the context: got %v", err)
	}
	spec.Shape.Capacity = 16
	spec.Carries = []string{"cache.k.0"}
	if _, err := d.Trace(spec, poot.Limits{}); !errors.As(err, &se) || se.Field != "Carries" {
		t.Errorf("partial carries: got %v", err)
	}
	states, err := families.States(d, spec.Shape)
	if err != nil {
		t.Fatal(err)
	}
	spec.Carries = nil
	for _, v := range states {
		spec.Carries = append(spec.Carries, v.Name)
	}
	g, err := d.Trace(spec, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.States()); n != 4 {
		t.Errorf("%d state pairs, want 4", n)
	}
	for _, name := range []string{"token", "pos", "cache.k.1", "blk.1.ffn_down.weight", "output.weight"} {
		if _, ok := g.Lookup(name); !ok {
			t.Errorf("graph has no %q", name)
		}
	}
	if _, err := d.Trace(spec, poot.Limits{MaxEquations: 10}); !errors.Is(err, poot.ErrLimit) {
		t.Errorf("equation limit: got %v", err)
	}
	spec.Shape = families.StepShape{Rows: 2, New: 3, Capacity: 8, Layout: families.Paged, PageSize: 2, Logits: families.AllTokens, Hidden: true}
	if g, err = d.Trace(spec, poot.Limits{}); err != nil {
		t.Fatal(err)
	}
	outs := g.Outputs()
	if len(outs) != 2 || !g.Type(outs[0]).Equal(poot.T(poot.F32, 6, 32)) || !g.Type(outs[1]).Equal(poot.T(poot.F32, 6, 16)) {
		t.Errorf("outputs %d: want logits f32[6,32] and hidden f32[6,16]", len(outs))
	}
	// Default pool: 2 rows × 4 pages × 2 cache rows; width 2 heads × 4.
	if id, ok := g.Lookup("cache.v.0"); !ok || !g.Type(id).Equal(poot.T(poot.F32, 16, 8)) {
		t.Errorf("paged cache: %v, want f32[16,8]", g.Type(id))
	}
	if id, ok := g.Lookup("slot_map"); !ok || g.Value(id).Max != 15 {
		t.Errorf("slot_map range: %+v", g.Value(id))
	}
}

func TestDecoderValidate(t *testing.T) {
	for name, edit := range map[string]func(*families.Decoder){
		"heads":     func(d *families.Decoder) { d.KVHeads = 3 },
		"rope dims": func(d *families.Decoder) { d.Rope.Dims = 6 },
		"windows":   func(d *families.Decoder) { d.Windows = []int{4} },
		"experts":   func(d *families.Decoder) { d.MoE = &families.MoE{Experts: 2, Used: 3, FFN: 8} },
		"eps":       func(d *families.Decoder) { d.Eps = 0 },
		"layer kv":  func(d *families.Decoder) { d.LayerKVHeads = []int{2, 3} },
		"layer kvs": func(d *families.Decoder) { d.LayerKVHeads = []int{2} },
	} {
		d := tiny()
		edit(d)
		if err := d.Validate(); !errors.Is(err, families.ErrInconsistent) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func ggufFile(t *testing.T, kvs []gguf.KV) *gguf.File {
	t.Helper()
	var buf bytes.Buffer
	ts := []gguf.WriterTensor{{Name: "token_embd.weight", DType: poot.F32, Shape: poot.Shape{32, 16}, Data: make([]byte, 32*16*4)},
		{Name: "blk.0.attn_norm.weight", DType: poot.F32, Shape: poot.Shape{16}, Data: make([]byte, 16*4)},
		{Name: "blk.1.attn_norm.weight", DType: poot.F32, Shape: poot.Shape{16}, Data: make([]byte, 16*4)}}
	if err := gguf.Write(&buf, kvs, ts, 0); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGGUFDecoderErrors(t *testing.T) {
	kv := func(k string, v gguf.Value) gguf.KV { return gguf.KV{Key: k, Value: v} }
	base := func() []gguf.KV {
		return []gguf.KV{
			kv("general.architecture", gguf.ValueOf("llama")),
			kv("llama.embedding_length", gguf.ValueOf(uint32(16))),
			kv("llama.block_count", gguf.ValueOf(uint32(2))),
			kv("llama.attention.head_count", gguf.ValueOf(uint32(4))),
			kv("llama.feed_forward_length", gguf.ValueOf(uint32(24))),
		}
	}
	d, r := families.GGUFDecoder(ggufFile(t, base()), "llama", ops.RopeInterleaved)
	if _, err := families.Finish(d, r); err != nil {
		t.Fatalf("valid file: %v", err)
	}
	if d.Vocab != 32 || d.KVHeads != 4 || d.HeadDim != 4 || d.Rope.Theta != 10000 || !d.Tied {
		t.Errorf("defaults: %+v", d)
	}
	for _, c := range []struct {
		name string
		edit func([]gguf.KV) []gguf.KV
		key  string
		err  error
	}{
		{"missing", func(k []gguf.KV) []gguf.KV { return k[:2] }, "llama.block_count", families.ErrMissing},
		{"wrong type", func(k []gguf.KV) []gguf.KV { k[2].Value = gguf.ValueOf("two"); return k }, "llama.block_count", families.ErrWrongType},
		{"zero", func(k []gguf.KV) []gguf.KV { k[2].Value = gguf.ValueOf(uint32(0)); return k }, "llama.block_count", families.ErrWrongType},
		{"beyond MaxLayers", func(k []gguf.KV) []gguf.KV { k[2].Value = gguf.ValueOf(uint32(2_000_000_000)); return k }, "llama.block_count", families.ErrWrongType},
		{"width", func(k []gguf.KV) []gguf.KV { k[1].Value = gguf.ValueOf(uint32(8)); return k }, "llama.embedding_length", families.ErrInconsistent},
		{"vocab", func(k []gguf.KV) []gguf.KV { return append(k, kv("llama.vocab_size", gguf.ValueOf(uint32(33)))) }, "llama.vocab_size", families.ErrInconsistent},
		{"rope scaling", func(k []gguf.KV) []gguf.KV { return append(k, kv("llama.rope.scaling.type", gguf.ValueOf("weird"))) }, "llama.rope.scaling.type", families.ErrUnsupported},
	} {
		d, r := families.GGUFDecoder(ggufFile(t, c.edit(base())), "llama", ops.RopeInterleaved)
		_, err := families.Finish(d, r)
		var ce *families.ConfigError
		if !errors.Is(err, c.err) || !errors.As(err, &ce) || ce.Key != c.key || ce.Source != "gguf" {
			t.Errorf("%s: got %v, want %v on %s", c.name, err, c.err, c.key)
		}
	}
}

// A layer count the tensor table does not hold is an error naming the first
// layer's first tensor, found without sizing anything by the count.
func TestGGUFDecoderLayersBeyondFile(t *testing.T) {
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.ValueOf("llama")},
		{Key: "llama.embedding_length", Value: gguf.ValueOf(uint32(16))},
		{Key: "llama.block_count", Value: gguf.ValueOf(uint32(1000))},
		{Key: "llama.attention.head_count", Value: gguf.ValueOf(uint32(4))},
		{Key: "llama.feed_forward_length", Value: gguf.ValueOf(uint32(24))},
	}
	d, r := families.GGUFDecoder(ggufFile(t, kvs), "llama", ops.RopeInterleaved)
	_, err := families.Finish(d, r)
	var te *families.TensorError
	if !errors.As(err, &te) || te.Tensor != "blk.2.attn_norm.weight" || !errors.Is(err, families.ErrMissing) {
		t.Fatalf("got %v, want a TensorError for blk.2.attn_norm.weight", err)
	}
	if !strings.Contains(err.Error(), "llama.block_count is 1000") {
		t.Errorf("the error does not name the key: %v", err)
	}
}

func TestCheckVocab(t *testing.T) {
	for _, c := range []struct {
		rows, tokens int
		ok           bool
	}{{512, 512, true}, {151936, 151665, true}, {512, 3, false}, {512, 513, false}, {512, 448, true}, {512, 447, false}} {
		err := families.CheckVocab(c.rows, c.tokens)
		var ve *families.VocabError
		if (err == nil) != c.ok || (err != nil && !errors.As(err, &ve)) {
			t.Errorf("CheckVocab(%d rows, %d tokens) = %v", c.rows, c.tokens, err)
		}
	}
}

func TestHFReader(t *testing.T) {
	cfg := map[string]any{
		"model_type":   "gemma3",
		"rope_scaling": map[string]any{"rope_type": "linear", "factor": 8.0},
		"text_config":  map[string]any{"hidden_size": 64.0},
		"frac":         1.5,
	}
	r := families.HFReader(cfg)
	if r.Int("hidden_size") != 64 || r.Float("rope_scaling.factor") != 8 || r.StringOr("model_type", "") != "gemma3" {
		t.Errorf("lookups failed: %v", r.Err())
	}
	r.Int("frac")
	var ce *families.ConfigError
	if err := r.Err(); !errors.As(err, &ce) || ce.Key != "frac" || !errors.Is(err, families.ErrWrongType) {
		t.Errorf("fraction as an integer: %v", err)
	}
	c := families.HFRopeScaling(families.HFReader(cfg), "rope_scaling", ops.RopeConfig{Dims: 4, Theta: 1e4})
	if c.Scaling != ops.ScaleLinear || c.Factor != 8 {
		t.Errorf("rope scaling: %+v", c)
	}
}

func TestWeightMap(t *testing.T) {
	w := families.HFNames().With(map[string]string{
		"ffn_up_exps.weight": "mlp.experts.{e}.up_proj.weight",
		"ffn_norm.weight":    "",
	}).In(families.Safetensors)
	w.Experts = 2
	for canon, want := range map[string]string{
		"token_embd.weight":        "model.embed_tokens.weight",
		"blk.11.attn_q.weight":     "model.layers.11.self_attn.q_proj.weight",
		"blk.0.ffn_down.weight":    "model.layers.0.mlp.down_proj.weight",
		"blk.0.ffn_norm.weight":    "",
		"blk.x.attn_q.weight":      "",
		"blk.1.ffn_up_exps.weight": "",
	} {
		got, ok := w.Stored(canon)
		if got != want || ok != (want != "") {
			t.Errorf("%s: got %q, %v; want %q", canon, got, ok, want)
		}
	}
	if p := w.Parts("blk.1.ffn_up_exps.weight"); strings.Join(p, " ") != "model.layers.1.mlp.experts.0.up_proj.weight model.layers.1.mlp.experts.1.up_proj.weight" {
		t.Errorf("parts: %v", p)
	}
	if s, ok := w.In(families.GGUF).Stored("blk.3.attn_k.weight"); !ok || s != "blk.3.attn_k.weight" {
		t.Errorf("GGUF names are canonical: %q", s)
	}
}

// TestTensorsFromTrace checks that the weights a model reads come from its
// trace: every constant once, in the order of first use, with the shapes the
// hyperparameters give and roles read from the composites that use them.
func TestTensorsFromTrace(t *testing.T) {
	d := tiny()
	d.QKVBias, d.QKNorm, d.PostNorms = true, true, true
	ts, err := families.Tensors(d)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name, role string
		shape      poot.Shape
	}{
		{"token_embd.weight", "weight", poot.Shape{32, 16}},
		{"blk.0.attn_norm.weight", "norm", poot.Shape{16}},
		{"blk.0.attn_q.weight", "weight", poot.Shape{16, 16}},
		{"blk.0.attn_q.bias", "bias", poot.Shape{16}},
		{"blk.0.attn_k.weight", "weight", poot.Shape{8, 16}},
		{"blk.0.attn_k.bias", "bias", poot.Shape{8}},
		{"blk.0.attn_v.weight", "weight", poot.Shape{8, 16}},
		{"blk.0.attn_v.bias", "bias", poot.Shape{8}},
		{"blk.0.attn_q_norm.weight", "norm", poot.Shape{4}},
		{"blk.0.attn_k_norm.weight", "norm", poot.Shape{4}},
		{"blk.0.attn_output.weight", "weight", poot.Shape{16, 16}},
		{"blk.0.post_attention_norm.weight", "norm", poot.Shape{16}},
		{"blk.0.ffn_norm.weight", "norm", poot.Shape{16}},
		{"blk.0.ffn_gate.weight", "weight", poot.Shape{24, 16}},
	}
	if len(ts) != 3+2*16 {
		t.Errorf("%d tensors, want 35 (embedding, final norm, head, 16 per layer)", len(ts))
	}
	for i, w := range want {
		if i >= len(ts) || ts[i].Name != w.name || ts[i].Role != w.role || !ts[i].Shape.Equal(w.shape) {
			t.Fatalf("tensor %d: got %+v, want %s %v (%s)", i, ts[i], w.name, w.shape, w.role)
		}
	}
	last := ts[len(ts)-1]
	if last.Name != "output.weight" || ts[len(ts)-2].Name != "output_norm.weight" || ts[len(ts)-2].Role != "norm" {
		t.Errorf("the list ends %v, %v; want output_norm.weight (norm), output.weight", ts[len(ts)-2], last)
	}
	d.Tied = true
	if ts, _ := families.Tensors(d); ts[len(ts)-1].Name != "output_norm.weight" {
		t.Errorf("a tied head still reads %s", ts[len(ts)-1].Name)
	}
}

// TestPerLayerKVAndOutputBias traces a decoder whose layers have different
// key/value head counts (GGUF's per-layer head_count_kv) and output
// projection biases (Llama's attention_bias): each layer's cache has its
// own width, the bias is read, and the GGUF metadata writes the array back.
func TestPerLayerKVAndOutputBias(t *testing.T) {
	d := tiny()
	d.LayerKVHeads, d.OutBias = []int{2, 1}, true
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	g, err := d.Trace(families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: 1, New: 1, Capacity: 8}}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for name, width := range map[string]int{"cache.k.0": 8, "cache.v.0": 8, "cache.k.1": 4, "cache.v.1": 4} {
		if id, ok := g.Lookup(name); !ok || !g.Type(id).Equal(poot.T(poot.F32, 8, width)) {
			t.Errorf("%s: %v, want f32[8,%d]", name, g.Type(id), width)
		}
	}
	ts, err := families.Tensors(d)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range ts {
		if s.Name == "blk.1.attn_output.bias" {
			found = s.Role == "bias" && s.Shape.Equal(poot.Shape{16})
		}
		if s.Name == "blk.1.attn_k.weight" && !s.Shape.Equal(poot.Shape{4, 16}) {
			t.Errorf("blk.1.attn_k.weight: %v, want [4 16]", s.Shape)
		}
	}
	if !found {
		t.Error("the output bias is not read as a bias [16]")
	}
	kvs, err := d.GGUFMetadata()
	if err == nil {
		t.Error("a decoder without a GGUF architecture wrote metadata")
	}
	d.GGUF.Architecture = "llama"
	if kvs, err = d.GGUFMetadata(); err != nil {
		t.Fatal(err)
	}
	for _, kv := range kvs {
		if kv.Key == "llama.attention.head_count_kv" {
			if a, ok := kv.Value.AsArray(); !ok || fmt.Sprint(a) != "[2 1]" {
				t.Errorf("head_count_kv written as %v, want the array [2 1]", kv.Value)
			}
		}
	}
}

// TestErrorPositionsPointAtTheFamily: an error raised inside a shared
// component (here Step.Cache declaring a state twice) is reported at the
// line of the family's code that called it, not inside package families.
func TestErrorPositionsPointAtTheFamily(t *testing.T) {
	b := poot.NewBuilder[struct{}](poot.Limits{})
	step := families.NewStep(b, families.StepShape{Rows: 1, New: 1, Capacity: 4}, 8)
	x := b.Full(poot.T(poot.F32, 1, 2), 0)
	step.Cache("cache.k.0", x)
	step.Cache("cache.k.0", x) // the line the error must name
	err := b.Err()
	if err == nil {
		t.Fatal("declaring a state twice is not an error")
	}
	if !strings.Contains(err.Error(), "families_test.go:") || strings.Contains(err.Error(), "step.go") {
		t.Errorf("error %q does not point at the caller's line", err)
	}
}

// TestStateNamedForAnotherLayer: a cache state named for layer 1 declared
// in layer 0's scope (a copied line) is an error, not a silent second
// owner of the state.
func TestStateNamedForAnotherLayer(t *testing.T) {
	b := poot.NewBuilder[struct{}](poot.Limits{})
	step := families.NewStep(b, families.StepShape{Rows: 1, New: 1, Capacity: 4}, 8)
	x := b.Full(poot.T(poot.F32, 1, 2), 0)
	b.Scope("layer.0", func() { step.Cache(families.CacheName("k", 0), x) })
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	b.Scope("layer.0", func() { step.Cache(families.CacheName("v", 1), x) })
	var se *families.StepError
	if err := b.Err(); !errors.As(err, &se) || !strings.Contains(err.Error(), `"cache.v.1" is declared in the scope of layer 0`) {
		t.Errorf("got %v, want a StepError naming the state and the layer", err)
	}
}

// TestQ8CacheWidth: a Q8_0 cache holds whole blocks of 32 values, so a
// cache 48 values wide is a StepError on KV naming the cache and its
// width, and one 64 wide is a Q8_0 state read back as F32.
func TestQ8CacheWidth(t *testing.T) {
	b := poot.NewBuilder[struct{}](poot.Limits{})
	step := families.NewStep(b, families.StepShape{Rows: 1, New: 1, Capacity: 4, KV: poot.Q8_0}, 8)
	out := step.Cache("cache.k.0", b.Full(poot.T(poot.F32, 1, 64), 1))
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if tt := b.Aval(out); tt.DType != poot.F32 || !tt.Shape.Equal(poot.Shape{4, 64}) {
		t.Errorf("the cache reads back as %v, want f32[4,64]", tt)
	}
	step.Cache("cache.v.0", b.Full(poot.T(poot.F32, 1, 48), 1))
	var se *families.StepError
	if err := b.Err(); !errors.As(err, &se) || se.Field != "KV" || !strings.Contains(err.Error(), "cache.v.0 is 48 wide") {
		t.Errorf("got %v, want a StepError on KV naming cache.v.0 and its width", err)
	}
}
