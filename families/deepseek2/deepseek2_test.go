package deepseek2_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/deepseek2"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/pootest"
	"github.com/pootlabs/poot/tensor"
)

var toks = []int32{1, 15, 27, 100, 200, 300, 400, 500}

func tinyConfig(t testing.TB) map[string]any {
	t.Helper()
	p, err := synth.FindPreset("deepseek2", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	return p.Config
}

func tinyModel(t testing.TB) *deepseek2.Model {
	t.Helper()
	m, err := deepseek2.FromHF(tinyConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return m.(*deepseek2.Model)
}

// open loads a fixture through the registry, as a driver does.
func open(t testing.TB, path string) (families.Model, familytest.Binder) {
	t.Helper()
	c, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m, err := registry.FromCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	return m, familytest.LoadBinder(c, m.Weights())
}

// The fixtures: tiny-f32/f16 are written by poot synth from the tiny preset
// (a Hugging Face config, so kv_b is fused: llama.cpp's older GGUF layout,
// which it runs without absorption); tiny-mla-f32/f16 are the same files
// converted as llama.cpp's converter splits kv_b_proj (absorb below), which
// llama.cpp runs absorbed.
//
// F32 files agree within 1e-3 (about 2e-5 in fact). With F16 weights
// llama.cpp rounds the activations to F16 inside its products, which moves
// these logits (±8, from weights of scale 0.25) by up to 0.04, as much as
// the F16 rounding of the weights themselves; poot keeps activations in
// F32. So the F16 files are held to 5e-2 against llama.cpp's F16 run, and
// to 1e-3 against llama.cpp run on the same weights widened to F32
// (tiny-f16-widened.ref.json, see widen), which they meet to about 1e-5.
var fixtures = []struct {
	name, ref string
	tol       float64
}{
	{"tiny-f32", "tiny-f32", 1e-3}, {"tiny-mla-f32", "tiny-mla-f32", 1e-3},
	{"tiny-f16", "tiny-f16", 5e-2}, {"tiny-mla-f16", "tiny-mla-f16", 5e-2},
	{"tiny-f16", "tiny-f16-widened", 1e-3}, {"tiny-mla-f16", "tiny-f16-widened", 1e-3},
}

// TestReference checks every fixture against llama.cpp: logits at every
// position of one prefill and of a prefill followed by decodes, the greedy
// tokens, on the oracle and on the CPU backend.
func TestReference(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name+"/"+fx.ref, func(t *testing.T) {
			m, bind := open(t, filepath.Join("testdata", fx.name+".gguf"))
			ref := familytest.ReadRef(t, filepath.Join("testdata", fx.ref+".ref.json"))
			familytest.CheckReference(t, m, bind, ref, 64, fx.tol, true)
			checkCPU(t, m, bind, ref, fx.tol)
		})
	}
}

// checkCPU runs the prompt and then one decode step per reference token on
// the CPU backend, against llama.cpp's logits.
func checkCPU(t *testing.T, m families.Model, bind familytest.Binder, ref *familytest.Ref, tol float64) {
	t.Helper()
	vocab, np, n := m.Schema().Vocab, len(ref.Prompt), len(ref.Logits)
	compile := func(tokens int) interp.Executable {
		shape := families.StepShape{Rows: 1, New: tokens, Capacity: 64, Logits: families.AllTokens}
		g, err := m.Trace(families.StepSpec{Program: "test", Shape: shape}, poot.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		bg, consts, err := bind(g)
		if err != nil {
			t.Fatal(err)
		}
		x, err := cpu.Interpreter{}.Compile(bg, consts)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	prefill, decode := compile(np), compile(1)
	shape := families.StepShape{Rows: 1, New: 1, Capacity: 64}
	g, err := m.Trace(families.StepSpec{Program: "test", Shape: shape}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	state, err := interp.NewState(g)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	run := func(x interp.Executable, tokens []int32, start int) []float32 {
		tt, err1 := tensor.FromI32(poot.Shape{len(tokens)}, tokens)
		pt, err2 := tensor.FromI32(poot.Shape{len(tokens)}, familytest.Seq(start, len(tokens)))
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		out, err := x.Run(interp.Slots{"token": tt, "pos": pt}, state)
		if err != nil {
			t.Fatal(err)
		}
		logits := out[0].F32()
		for i := range tokens {
			d := familytest.MaxDiff(logits[i*vocab:(i+1)*vocab], ref.Logits[start+i])
			worst = max(worst, d)
			if d > tol {
				t.Errorf("cpu: position %d: max |Δlogit| %.3g > %.3g", start+i, d, tol)
			}
		}
		return logits
	}
	run(prefill, ref.Prompt, 0)
	for i := np; i < n; i++ {
		run(decode, ref.Tokens()[i:i+1], i)
	}
	t.Logf("cpu: %d positions, max |Δlogit| %.3g", n, worst)
}

// TestCPUBatched holds the CPU backend to the oracle on a step of two rows
// of three new tokens over caches that already hold random rows,
// contiguous and paged (each row's pages reversed), for both kv_b forms.
func TestCPUBatched(t *testing.T) {
	for _, name := range []string{"tiny-f32", "tiny-mla-f32"} {
		for _, layout := range []families.KVLayout{families.Contiguous, families.Paged} {
			m, bind := open(t, filepath.Join("testdata", name+".gguf"))
			shape := families.StepShape{Rows: 2, New: 3, Capacity: 16, Layout: layout, Logits: families.AllTokens}
			pos := []int32{4, 5, 6, 9, 10, 11}
			slots := interp.Slots{}
			if layout == families.Paged {
				shape.PageSize = 4
				slot, write := make([]int32, 2*16), make([]int32, len(pos))
				for i := range slot {
					slot[i] = int32((i/16)*16 + 15 - i%16)
				}
				for i, p := range pos {
					write[i] = slot[(i/3)*16+int(p)]
				}
				slots["slot_map"], _ = tensor.FromI32(poot.Shape{2, 16}, slot)
				slots["write_map"], _ = tensor.FromI32(poot.Shape{6}, write)
			}
			g, err := m.Trace(families.StepSpec{Program: "test", Shape: shape}, poot.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			bg, consts, err := bind(g)
			if err != nil {
				t.Fatal(err)
			}
			state, err := interp.NewState(bg)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(7, 8))
			for _, ten := range state.Tensors {
				for i := range ten.F32() {
					ten.F32()[i] = float32(rng.NormFloat64())
				}
			}
			slots["token"], _ = tensor.FromI32(poot.Shape{6}, []int32{1, 5, 9, 13, 2, 7})
			slots["pos"], _ = tensor.FromI32(poot.Shape{6}, pos)
			tol := pootest.Tolerance{F32: pootest.Bound{Abs: 1e-4, Rel: 1e-3}}
			if err := pootest.Compare(interp.Oracle{}, cpu.Interpreter{}, bg, consts, slots, state, tol); err != nil {
				t.Errorf("%s %v: %v", name, layout, err)
			}
		}
	}
}

// absorb converts a fused GGUF file to llama.cpp's converter layout: each
// head's key rows of kv_b, transposed, become attn_k_b [H, lora, nope] and
// its value rows attn_v_b [H, vd, lora], the metadata is the split model's,
// every other key and tensor is copied as stored.
func absorb(t testing.TB, src, dst string) {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fm, err := deepseek2.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	m := *fm.(*deepseek2.Model)
	m.Fused = false
	kvs, err := m.GGUFMetadata()
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range f.KVs() {
		if !strings.HasPrefix(kv.Key, "deepseek2.") && kv.Key != gguf.KeyArchitecture {
			kvs = append(kvs, kv)
		}
	}
	c := m.MLA
	var ts []gguf.WriterTensor
	for _, info := range f.Tensors() {
		data, err := f.RawTensorData(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		dt, err := info.DType()
		if err != nil {
			t.Fatal(err)
		}
		layer, fused := strings.CutSuffix(info.Name, ".attn_kv_b.weight")
		if !fused {
			ts = append(ts, gguf.WriterTensor{Name: info.Name, DType: dt, Shape: info.Shape(), Data: data})
			continue
		}
		es, row := dt.BlockBytes(), c.KVLoraRank*dt.BlockBytes()
		var kbt, vb []byte
		for h := range c.Heads {
			head := data[h*(c.NopeDim+c.ValueDim)*row:]
			for l := range c.KVLoraRank {
				for n := range c.NopeDim {
					kbt = append(kbt, head[n*row+l*es:n*row+(l+1)*es]...)
				}
			}
			vb = append(vb, head[c.NopeDim*row:(c.NopeDim+c.ValueDim)*row]...)
		}
		ts = append(ts,
			gguf.WriterTensor{Name: layer + ".attn_k_b.weight", DType: dt, Shape: poot.Shape{c.Heads, c.KVLoraRank, c.NopeDim}, Data: kbt},
			gguf.WriterTensor{Name: layer + ".attn_v_b.weight", DType: dt, Shape: poot.Shape{c.Heads, c.ValueDim, c.KVLoraRank}, Data: vb})
	}
	if err := gguf.WriteFile(dst, kvs, ts, 0); err != nil {
		t.Fatal(err)
	}
}

// widen writes src with every tensor decoded to F32 (the keys copied), the
// file llama.cpp ran for tiny-f16-widened.ref.json.
func widen(t testing.TB, src, dst string) {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []gguf.WriterTensor
	for _, info := range f.Tensors() {
		data, err1 := f.RawTensorData(info.Name)
		tt, err2 := info.TensorType()
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		v, err := tensor.View(tt, data)
		if err != nil {
			t.Fatal(err)
		}
		x, err := v.ToF32()
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4*len(x))
		for i, y := range x {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(y))
		}
		ts = append(ts, gguf.WriterTensor{Name: info.Name, DType: poot.F32, Shape: info.Shape(), Data: b})
	}
	if err := gguf.WriteFile(dst, f.KVs(), ts, 0); err != nil {
		t.Fatal(err)
	}
}

// TestWidened: the widened file runs as the F16 one (the loader decodes F16
// exactly). POOT_WRITE_FIXTURES=1 leaves it at testdata/tiny-f16-widened.gguf
// for the reference harness (it is not committed).
func TestWidened(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "widened.gguf")
	if os.Getenv("POOT_WRITE_FIXTURES") != "" {
		dst = filepath.Join("testdata", "tiny-f16-widened.gguf")
	}
	widen(t, filepath.Join("testdata", "tiny-f16.gguf"), dst)
	hm, hb := open(t, filepath.Join("testdata", "tiny-f16.gguf"))
	wm, wb := open(t, dst)
	shape := families.StepShape{Rows: 1, New: len(toks), Capacity: 16, Logits: families.AllTokens}
	x, err := familytest.NewRunner(hm, hb).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	y, err := familytest.NewRunner(wm, wb).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := familytest.MaxDiff32(x, y); d > 1e-6 {
		t.Errorf("F16 vs widened: max |Δlogit| %.3g", d)
	}
}

// TestAbsorbedFixtures: the committed tiny-mla files are absorb's output
// for the committed tiny files (POOT_WRITE_FIXTURES=1 rewrites them), and
// they run as the fused files do.
func TestAbsorbedFixtures(t *testing.T) {
	for _, kind := range []string{"f32", "f16"} {
		src, want := filepath.Join("testdata", "tiny-"+kind+".gguf"), filepath.Join("testdata", "tiny-mla-"+kind+".gguf")
		dst := filepath.Join(t.TempDir(), "mla.gguf")
		if os.Getenv("POOT_WRITE_FIXTURES") != "" {
			dst = want
		}
		absorb(t, src, dst)
		a, err1 := os.ReadFile(dst)
		b, err2 := os.ReadFile(want)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s is not absorb(%s)", want, src)
		}
		fused, fb := open(t, src)
		split, sb := open(t, want)
		if split.(*deepseek2.Model).Fused || !fused.(*deepseek2.Model).Fused {
			t.Fatalf("%s and %s: kv_b layouts not read from the files", src, want)
		}
		shape := families.StepShape{Rows: 1, New: len(toks), Capacity: 16, Logits: families.AllTokens}
		x, err := familytest.NewRunner(fused, fb).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		y, err := familytest.NewRunner(split, sb).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := familytest.MaxDiff32(x, y); d > 1e-4 {
			t.Errorf("%s: absorbed vs decompressed: max |Δlogit| %.3g", kind, d)
		}
	}
}

// TestLayouts checks the step laws (chunked prefill, paged caches, batched
// rows) for the three forms: fused kv_b decompressed (GGUF), fused kv_b
// absorbed (Hugging Face), split k_b/v_b absorbed.
func TestLayouts(t *testing.T) {
	hf := tinyModel(t)
	familytest.CheckLayouts(t, hf, familytest.MapBinder(familytest.Synth(t, hf, 3)), toks, 16)
	for _, name := range []string{"tiny-f32", "tiny-mla-f32"} {
		m, bind := open(t, filepath.Join("testdata", name+".gguf"))
		familytest.CheckLayouts(t, m, bind, toks, 16)
	}
}

// TestContainers: the GGUF fixture, written as a Hugging Face directory and
// read back through the registry, gives the same logits; the model written
// as GGUF metadata and as a config.json reads back as itself.
func TestContainers(t *testing.T) {
	path := filepath.Join("testdata", "tiny-f32.gguf")
	gm, gb := open(t, path)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := familytest.WriteHF(t, gm, familytest.GGUFValues(f))
	hm, hb := open(t, dir)
	if hm.Family() != "deepseek2" || hm.Weights().Container != families.Safetensors {
		t.Fatalf("%s: family %q, container %v", dir, hm.Family(), hm.Weights().Container)
	}
	shape := families.StepShape{Rows: 1, New: len(toks), Capacity: 16, Logits: families.AllTokens}
	want, err := familytest.NewRunner(gm, gb).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := familytest.NewRunner(hm, hb).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := familytest.MaxDiff32(got, want); d > 1e-4 {
		t.Errorf("safetensors vs GGUF: max |Δlogit| %.3g", d)
	}

	m := tinyModel(t)
	kvs, err := m.GGUFMetadata()
	if err != nil {
		t.Fatal(err)
	}
	back := readGGUF(t, m, kvs)
	if !same(back, m) {
		t.Errorf("GGUF metadata reads back as\n%+v\nnot\n%+v", back, m)
	}
	cfg, err := m.HFConfig()
	if err != nil {
		t.Fatal(err)
	}
	hf, err := deepseek2.FromHF(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !same(hf.(*deepseek2.Model), m) {
		t.Errorf("config.json reads back as\n%+v\nnot\n%+v", hf, m)
	}
}

// readGGUF writes m's weights (random) under kvs and configures a model
// from the file through the registry.
func readGGUF(t *testing.T, m families.Model, kvs []gguf.KV) *deepseek2.Model {
	t.Helper()
	path := familytest.WriteGGUF(t, m, kvs, familytest.Synth(t, m, 1))
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := registry.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return back.(*deepseek2.Model)
}

// same compares two models' configurations, whatever their containers;
// GGUF stores the floats as float32, and the YaRN coefficients as a tenth
// of mscale_all_dim.
func same(a, b *deepseek2.Model) bool {
	x, y := *a, *b
	near := func(p, q *float64) bool {
		ok := math.Abs(*p-*q) <= 1e-6*math.Abs(*q)
		*p, *q = 0, 0
		return ok
	}
	floats := near(&x.Eps, &y.Eps) && near(&x.Rope.MScale, &y.Rope.MScale) && near(&x.Rope.MScaleAllDim, &y.Rope.MScaleAllDim)
	x.Rope.BetaFast, x.Rope.BetaSlow, y.Rope.BetaFast, y.Rope.BetaSlow = cmp.Or(x.Rope.BetaFast, 32), cmp.Or(x.Rope.BetaSlow, 1), cmp.Or(y.Rope.BetaFast, 32), cmp.Or(y.Rope.BetaSlow, 1)
	return floats && x.Vocab == y.Vocab && x.Dim == y.Dim && x.Layers == y.Layers && x.MaxContext == y.MaxContext &&
		x.Tied == y.Tied && x.MLA == y.MLA && x.QLoraRank == y.QLoraRank && x.Fused == y.Fused && x.Rope == y.Rope &&
		x.DenseLayers == y.DenseLayers && x.FFN == y.FFN && x.Experts == y.Experts && x.ExpertFFN == y.ExpertFFN &&
		x.Shared == y.Shared && x.Routing == y.Routing && x.SelectionBias == y.SelectionBias
}

// liteConfig is DeepSeek-V2-Lite's shape, shrunk: queries without a
// low-rank path, softmax gating over all experts without groups or
// normalisation, YaRN with mscale = mscale_all_dim.
func liteConfig() map[string]any {
	return map[string]any{
		"architectures": []any{"DeepseekV2ForCausalLM"}, "model_type": "deepseek_v2", "vocab_size": 512.0, "hidden_size": 32.0,
		"num_hidden_layers": 2.0, "num_attention_heads": 2.0, "num_key_value_heads": 2.0, "q_lora_rank": nil, "kv_lora_rank": 8.0,
		"qk_nope_head_dim": 6.0, "qk_rope_head_dim": 4.0, "v_head_dim": 5.0, "intermediate_size": 24.0, "first_k_dense_replace": 1.0,
		"n_routed_experts": 4.0, "num_experts_per_tok": 2.0, "moe_intermediate_size": 8.0, "n_shared_experts": 2.0,
		"topk_method": "greedy", "scoring_func": "softmax", "norm_topk_prob": false, "routed_scaling_factor": 1.5,
		"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 128.0,
		"rope_scaling": map[string]any{"type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4.0, "mscale": 0.707, "mscale_all_dim": 0.707},
	}
}

// TestLite runs the V2-Lite shape: the step laws, and the same logits from
// its GGUF form (metadata written by the model, read through the registry).
func TestLite(t *testing.T) {
	m, err := deepseek2.FromHF(liteConfig())
	if err != nil {
		t.Fatal(err)
	}
	lite := m.(*deepseek2.Model)
	if lite.QLoraRank != 0 || lite.Routing.Gating != 0 || lite.Routing.Groups != 0 || lite.SelectionBias {
		t.Fatalf("lite read as %+v", lite)
	}
	w := familytest.Synth(t, m, 9)
	familytest.CheckLayouts(t, m, familytest.MapBinder(w), toks, 16)
	kvs, err := lite.GGUFMetadata()
	if err != nil {
		t.Fatal(err)
	}
	back := readGGUF(t, m, kvs)
	if !same(back, lite) {
		t.Errorf("GGUF metadata reads back as\n%+v\nnot\n%+v", back, lite)
	}
	shape := families.StepShape{Rows: 1, New: len(toks), Capacity: 16, Logits: families.AllTokens}
	want, err := familytest.NewRunner(m, familytest.MapBinder(w)).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := familytest.NewRunner(back, familytest.MapBinder(w)).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The safetensors model absorbs, the GGUF one decompresses.
	if d := familytest.MaxDiff32(got, want); d > 1e-4 {
		t.Errorf("GGUF form vs config.json form: max |Δlogit| %.3g", d)
	}
	if kinds := lite.LayerKinds(); len(kinds) != 2 || kinds[0] != "latent_attention+dense" || kinds[1] != "latent_attention+moe(shared)" {
		t.Errorf("layer kinds %v", kinds)
	}
}

// TestSteps: the hidden states come out when asked, the carries are one
// latent cache per layer of kv_lora_rank + rope dims, and the weights'
// roles come from the composites that read them.
func TestSteps(t *testing.T) {
	m := tinyModel(t)
	g, err := m.Trace(families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: 2, New: 1, Capacity: 8, Hidden: true}}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.Outputs()); n != 2 {
		t.Errorf("%d outputs with hidden states, want 2", n)
	}
	states, err := families.States(m, families.StepShape{Rows: 2, New: 1, Capacity: 8})
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != m.Layers || states[0].Name != "cache.latent.0" || !states[0].Type.Shape.Equal(poot.Shape{16, 16 + 8}) {
		t.Errorf("states %v", states)
	}
	_, err = m.Trace(families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: 1, New: 1, Capacity: 8}, Carries: []string{"cache.k.0"}}, poot.Limits{})
	var se *families.StepError
	if !errors.As(err, &se) {
		t.Errorf("carries of another model: got %v", err)
	}
	roles := map[string]string{}
	for _, s := range familytest.Tensors(t, m) {
		roles[s.Name] = s.Role
	}
	for name, want := range map[string]string{"blk.0.attn_q_a_norm.weight": "norm", "blk.0.attn_kv_a_norm.weight": "norm",
		"blk.1.exp_probs_b.bias": "bias", "blk.1.attn_kv_b.weight": "weight", "blk.1.ffn_gate_shexp.weight": "weight"} {
		if roles[name] != want {
			t.Errorf("%s: role %q, want %q", name, roles[name], want)
		}
	}
}

// TestConfigErrors: every bad or unsupported setting is a *ConfigError
// naming the key, from config.json and from GGUF.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		key  string
		edit func(cfg map[string]any)
		want error
	}{
		{"kv_lora_rank", func(cfg map[string]any) { delete(cfg, "kv_lora_rank") }, families.ErrMissing},
		{"num_experts_per_tok", func(cfg map[string]any) { delete(cfg, "num_experts_per_tok") }, families.ErrMissing},
		{"scoring_func", func(cfg map[string]any) { cfg["scoring_func"] = "sqrtsoftplus" }, families.ErrUnsupported},
		{"topk_method", func(cfg map[string]any) { cfg["topk_method"] = "auction" }, families.ErrUnsupported},
		{"moe_layer_freq", func(cfg map[string]any) { cfg["moe_layer_freq"] = 2.0 }, families.ErrUnsupported},
		{"attention_bias", func(cfg map[string]any) { cfg["attention_bias"] = true }, families.ErrUnsupported},
		{"rope_scaling", func(cfg map[string]any) { cfg["rope_scaling"] = map[string]any{"type": "linear", "factor": 2.0} }, families.ErrUnsupported},
		{"experts", func(cfg map[string]any) { cfg["num_experts_per_tok"] = 9.0 }, families.ErrInconsistent},
		{"exp_probs_b", func(cfg map[string]any) { cfg["scoring_func"] = "softmax" }, families.ErrUnsupported},
	} {
		cfg := tinyConfig(t)
		copyCfg := map[string]any{}
		for k, v := range cfg {
			copyCfg[k] = v
		}
		c.edit(copyCfg)
		_, err := deepseek2.FromHF(copyCfg)
		var ce *families.ConfigError
		if !errors.Is(err, c.want) || !errors.As(err, &ce) || ce.Key != c.key {
			t.Errorf("config.json %s: got %v", c.key, err)
		}
	}

	m := tinyModel(t)
	base, err := m.GGUFMetadata()
	if err != nil {
		t.Fatal(err)
	}
	w := familytest.Synth(t, m, 1)
	for _, c := range []struct {
		key  string
		v    *gguf.Value // nil: delete the key
		want error
	}{
		{"deepseek2.attention.kv_lora_rank", nil, families.ErrMissing},
		{"deepseek2.expert_shared_count", nil, families.ErrMissing},
		{"deepseek2.expert_gating_func", ptr(gguf.ValueOf(uint32(3))), families.ErrUnsupported},
		{"deepseek2.attention.head_count_kv", ptr(gguf.ValueOf(uint32(1))), families.ErrInconsistent},
		{"deepseek2.rope.scaling.type", ptr(gguf.ValueOf("linear")), families.ErrUnsupported},
		{"deepseek2.rope.scaling.attn_factor", ptr(gguf.ValueOf(float32(2))), families.ErrUnsupported},
		{"deepseek2.attention.temperature_scale", ptr(gguf.ValueOf(float32(0.1))), families.ErrUnsupported},
		{"deepseek2.attention.key_length", ptr(gguf.ValueOf(uint32(8))), families.ErrInconsistent},
	} {
		var kvs []gguf.KV
		found := false
		for _, kv := range base {
			if kv.Key == c.key {
				found = true
				if c.v == nil {
					continue
				}
				kv.Value = *c.v
			}
			kvs = append(kvs, kv)
		}
		if !found {
			kvs = append(kvs, gguf.KV{Key: c.key, Value: *c.v})
		}
		f, err := gguf.Open(familytest.WriteGGUF(t, m, kvs, w))
		if err != nil {
			t.Fatal(err)
		}
		_, err = deepseek2.FromGGUF(f)
		f.Close()
		var ce *families.ConfigError
		if !errors.Is(err, c.want) || !errors.As(err, &ce) || !strings.HasPrefix(ce.Key, "deepseek2.") {
			t.Errorf("GGUF %s: got %v", c.key, err)
		}
	}

	// More layers than the file holds: the first missing layer is named.
	var kvs []gguf.KV
	for _, kv := range base {
		if kv.Key == "deepseek2.block_count" {
			kv.Value = gguf.ValueOf(uint32(7))
		}
		kvs = append(kvs, kv)
	}
	f, err := gguf.Open(familytest.WriteGGUF(t, m, kvs, w))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = deepseek2.FromGGUF(f)
	var te *families.TensorError
	if !errors.As(err, &te) || !strings.HasPrefix(te.Tensor, "blk.3.") {
		t.Errorf("7 layers in a file of 3: got %v", err)
	}

	// What GGUF cannot say is refused by the writer.
	g := *m
	g.Rope.MScale = 1
	if _, err := g.GGUFMetadata(); !errors.Is(err, families.ErrUnsupported) {
		t.Errorf("mscale ≠ mscale_all_dim: got %v", err)
	}
	g = *m
	g.Routing.GroupScore = 1
	if _, err := g.GGUFMetadata(); !errors.Is(err, families.ErrUnsupported) {
		t.Errorf("groups scored by their best expert: got %v", err)
	}
	g = *m
	g.Fused = false
	if _, err := g.HFConfig(); !errors.Is(err, families.ErrUnsupported) {
		t.Errorf("split k_b/v_b as config.json: got %v", err)
	}
}

func ptr(v gguf.Value) *gguf.Value { return &v }

// TestRealShape: the DeepSeek-V3 preset configures, traces a decode step
// (no data) and describes itself in both containers.
func TestRealShape(t *testing.T) {
	p, err := synth.FindPreset("deepseek2", "deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	m, err := deepseek2.FromHF(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	kinds := m.(families.Layered).LayerKinds()
	if len(kinds) != 61 || kinds[2] != "latent_attention+dense" || kinds[3] != "latent_attention+moe(shared)" {
		t.Errorf("layer kinds %v", kinds)
	}
	if _, err := m.Trace(families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: 1, New: 1, Capacity: 4096}}, poot.Limits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.(families.GGUFWriter).GGUFMetadata(); err != nil {
		t.Error(err)
	}
	if _, err := m.(families.HFWriter).HFConfig(); err != nil {
		t.Error(err)
	}
}
