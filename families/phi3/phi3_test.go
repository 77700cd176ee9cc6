package phi3_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/phi3"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower/cpu"
)

var toks = []int32{1, 15, 27, 100, 200, 300, 400, 500}

// The LongRoPE fixtures' tables (four frequencies: half of the tiny
// preset's 16-wide heads are rotated), original context and attention
// factor: llama.cpp's converter's sqrt(1 + ln(256/128)/ln(128)).
var (
	longTable    = []float32{1, 2.5, 6, 14}
	shortTable   = []float32{1, 1.15, 1.4, 1.8}
	longOrig     = 128
	longAttn     = float32(math.Sqrt(1 + math.Log(2)/math.Log(128)))
	longCapacity = 256 // beyond longOrig, as llama.cpp's padded context of 256
)

func tinyConfig(t *testing.T) map[string]any {
	t.Helper()
	p, err := synth.FindPreset("phi3", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	return maps.Clone(p.Config)
}

// fixtures makes the testdata GGUF files: the tiny preset written by
// poot synth (F32 or F16 matrices, scale 0.25, seed 1), general.name
// renamed, and that file with LongRoPE tables and keys added.
//
// The rename: llama.cpp gives the tokens of a model whose general.name
// contains "phi3" Phi-3's special attributes and requires Phi-3's
// <|endoftext|> token, which synth's vocabulary has not; synth names its
// files "poot synth <family>".
func fixtures(t *testing.T, typ poot.DType) (tiny, longrope []byte) {
	t.Helper()
	m, err := synth.Model("phi3", tinyConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.Write(m, path, synth.Options{Type: typ, Seed: 1, Scale: 0.25}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	set := func(kvs []gguf.KV, key string, v gguf.Value) []gguf.KV {
		kvs = slices.DeleteFunc(slices.Clone(kvs), func(kv gguf.KV) bool { return kv.Key == key })
		return append(kvs, gguf.KV{Key: key, Value: v})
	}
	kvs := set(f.KVs(), "general.name", gguf.ValueOf("poot synth tiny"))
	tiny = familytest.EditGGUF(t, f, kvs, nil)
	kvs = set(kvs, "phi3.rope.scaling.original_context_length", gguf.ValueOf(uint32(longOrig)))
	kvs = set(kvs, "phi3.rope.scaling.attn_factor", gguf.ValueOf(longAttn))
	table := func(name string, v []float32) gguf.WriterTensor {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return gguf.WriterTensor{Name: name, DType: poot.F32, Shape: poot.Shape{len(v)}, Data: b}
	}
	return tiny, familytest.EditGGUF(t, f, kvs, func(ts []gguf.WriterTensor) []gguf.WriterTensor {
		return append(ts, table(phi3.LongFactors, longTable), table(phi3.ShortFactors, shortTable))
	})
}

// TestFixtures checks that testdata's GGUF files are what fixtures makes,
// and writes them when POOT_WRITE_FIXTURES is set.
func TestFixtures(t *testing.T) {
	write := os.Getenv("POOT_WRITE_FIXTURES") != ""
	for _, typ := range []poot.DType{poot.F32, poot.F16} {
		tiny, longrope := fixtures(t, typ)
		for name, data := range map[string][]byte{"tiny-" + typ.String() + ".gguf": tiny, "longrope-" + typ.String() + ".gguf": longrope} {
			path := filepath.Join("testdata", name)
			if write {
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, data) {
				t.Errorf("%s is not what fixtures makes (%v); rerun with POOT_WRITE_FIXTURES=1 and remake its reference", path, err)
			}
		}
	}
}

func open(t *testing.T, name string) (*load.Checkpoint, families.Model) {
	t.Helper()
	c := familytest.OpenTestdata(t, name)
	m, err := registry.FromGGUF(c.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	if m.Family() != "phi3" {
		t.Fatalf("family %q", m.Family())
	}
	return c, m
}

func ref(t *testing.T, name string) *familytest.Ref {
	return familytest.ReadRef(t, filepath.Join("testdata", name))
}

// TestReference compares with llama.cpp's logits at every position and its
// greedy tokens on the oracle and the CPU backend: the tiny preset, and
// the same weights with LongRoPE tables, run (as llama.cpp runs them, with
// its context of 256) beyond the original context of 128, so with the long
// table. See halfTolerance for the F16 files.
func TestReference(t *testing.T) {
	for _, c := range []struct {
		name     string
		capacity int
		f16      bool
	}{
		{"tiny-f32", 32, false}, {"tiny-f16", 32, true},
		{"longrope-f32", longCapacity, false}, {"longrope-f16", longCapacity, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ck, m := open(t, c.name+".gguf")
			checkReference(t, m, familytest.LoadBinder(ck, m.Weights()), ref(t, c.name+".ref.json"), c.capacity, c.f16)
		})
	}
}

// halfTolerance bounds poot's logits on an F16 file against llama.cpp's.
// ggml rounds a contraction's activations to F16 when the weight is F16;
// poot keeps them F32. With weights of scale 0.25 (logits of a few units)
// that rounding moves llama.cpp's logits by up to a few thousandths of
// their range: 9.3e-3 to 2.4e-2 here. That is more than the 5e-3 an F16 file
// is held to elsewhere. So an F16 file is checked twice on the
// oracle: with ggml's rounding reproduced (familytest.HalfActivations),
// which agrees to about 1e-6 except where an activation lies near a
// rounding tie (3.3e-3 here), within 5e-3; and as poot runs it, within
// halfTolerance, with the same greedy tokens, on the oracle and the CPU
// backend.
const halfTolerance = 3e-2

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
// the oracle and the CPU backend: what a user of poot gets. (The driver
// test's capacity, 48, is within the longrope files' original context, so
// it would run them with the short table; TestReference runs them on the
// CPU backend at capacity 256.)
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

// TestSafetensors writes the F32 fixtures as Hugging Face directories
// (fused qkv_proj and gate_up_proj, LongRoPE factors in config.json's
// rope_scaling), reads them back through the registry and checks them
// against llama.cpp like the GGUF files.
func TestSafetensors(t *testing.T) {
	for _, c := range []struct {
		name     string
		capacity int
	}{{"tiny-f32", 32}, {"longrope-f32", longCapacity}} {
		t.Run(c.name, func(t *testing.T) {
			ck, gm := open(t, c.name+".gguf")
			// The Hugging Face form is the model its config.json describes:
			// a LongRoPE model's tables are configuration there, not tensors.
			cfg, err := gm.(families.HFWriter).HFConfig()
			if err != nil {
				t.Fatal(err)
			}
			cm, err := phi3.FromHF(cfg)
			if err != nil {
				t.Fatal(err)
			}
			d, err := load.Open(familytest.WriteHF(t, cm, familytest.GGUFValues(ck.GGUF())))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			hm, err := registry.FromCheckpoint(d)
			if err != nil {
				t.Fatal(err)
			}
			if hm.Family() != "phi3" {
				t.Fatalf("family %q", hm.Family())
			}
			hp, gp := hm.(*phi3.Model), gm.(*phi3.Model)
			if hp.OrigContext != gp.OrigContext || math.Abs(hp.AttnFactor-gp.AttnFactor) > 1e-6 || (hp.LongRoPE == nil) != (gp.LongRoPE == nil) {
				t.Errorf("config.json gives original context %d, attention factor %v, LongRoPE %v; the GGUF %d, %v, %v",
					hp.OrigContext, hp.AttnFactor, hp.LongRoPE != nil, gp.OrigContext, gp.AttnFactor, gp.LongRoPE != nil)
			}
			familytest.CheckReference(t, hm, familytest.LoadBinder(d, hm.Weights()), ref(t, c.name+".ref.json"), c.capacity, 1e-3, true)
		})
	}
}

// TestLongRoPETables checks which table a step reads: with the capacity
// within the original context the short one (the logits equal those of
// the model whose long table is replaced by the short one, run beyond
// it), beyond it the long one (which differs).
func TestLongRoPETables(t *testing.T) {
	ck, m := open(t, "longrope-f32.gguf")
	values := map[string][]float32{}
	get := familytest.GGUFValues(ck.GGUF())
	for _, s := range familytest.Tensors(t, m) {
		v, err := get(s.Name)
		if err != nil {
			t.Fatal(err)
		}
		values[s.Name] = v
	}
	run := func(capacity int, w map[string][]float32) []float32 {
		shape := families.StepShape{Rows: 1, New: len(toks), Capacity: capacity, Logits: families.AllTokens}
		got, err := familytest.NewRunner(m, familytest.MapBinder(w)).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	short := run(longOrig, values)
	swapped := maps.Clone(values)
	swapped[phi3.LongFactors] = values[phi3.ShortFactors]
	if d := familytest.MaxDiff32(short, run(longCapacity, swapped)); d > 1e-6 {
		t.Errorf("capacity %d vs the short table beyond it: max |Δlogit| %.3g", longOrig, d)
	}
	if d := familytest.MaxDiff32(short, run(longOrig+1, values)); d < 1e-2 {
		t.Errorf("capacity %d and %d give the same logits (max |Δ| %.3g): the long table is not used", longOrig, longOrig+1, d)
	}
}

func TestLayouts(t *testing.T) {
	ck, m := open(t, "longrope-f32.gguf")
	familytest.CheckLayouts(t, m, familytest.LoadBinder(ck, m.Weights()), toks, 16)
}

// TestSlidingWindow runs the step laws with a window of 4, shorter than
// the sequence, and checks that the window changes the logits beyond it.
func TestSlidingWindow(t *testing.T) {
	cfg := tinyConfig(t)
	cfg["sliding_window"] = 4
	m, err := phi3.FromHF(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if k := m.(families.Layered).LayerKinds(); k[0] != "attention(window 4)+dense" {
		t.Errorf("layer kinds %v", k)
	}
	w := familytest.Synth(t, m, 3)
	familytest.CheckLayouts(t, m, familytest.MapBinder(w), toks, 16)
	delete(cfg, "sliding_window")
	global, err := phi3.FromHF(cfg)
	if err != nil {
		t.Fatal(err)
	}
	shape := families.StepShape{Rows: 1, New: len(toks), Capacity: 16, Logits: families.AllTokens}
	a, err := familytest.NewRunner(m, familytest.MapBinder(w)).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := familytest.NewRunner(global, familytest.MapBinder(w)).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	vocab := m.Schema().Vocab
	if d := familytest.MaxDiff32(a[:4*vocab], b[:4*vocab]); d > 1e-6 {
		t.Errorf("within the window: max |Δlogit| %.3g", d)
	}
	if d := familytest.MaxDiff32(a[4*vocab:], b[4*vocab:]); d < 1e-4 {
		t.Errorf("beyond the window the logits are unchanged (max |Δ| %.3g)", d)
	}
}

// TestSynthContainers writes the tiny preset as GGUF and safetensors from
// one seed: both must give the same logits.
func TestSynthContainers(t *testing.T) {
	m, err := synth.Model("phi3", tinyConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	var logits [][]float32
	for _, format := range []string{"gguf", "safetensors"} {
		path := filepath.Join(t.TempDir(), "model."+format)
		if err := synth.Write(m, path, synth.Options{Format: format, Seed: 5, Scale: 0.25}); err != nil {
			t.Fatal(err)
		}
		c, err := load.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cm, err := registry.FromCheckpoint(c)
		if err != nil {
			t.Fatal(err)
		}
		shape := families.StepShape{Rows: 1, New: len(toks), Capacity: 16, Logits: families.AllTokens}
		got, err := familytest.NewRunner(cm, familytest.LoadBinder(c, cm.Weights())).Step(shape, toks, familytest.Seq(0, len(toks)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		logits = append(logits, got)
	}
	if d := familytest.MaxDiff32(logits[0], logits[1]); d > 1e-6 {
		t.Errorf("GGUF vs safetensors: max |Δlogit| %.3g", d)
	}
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
		_, err := phi3.FromHF(cfg)
		checkErr(t, "without "+key, err, families.ErrMissing, key)
	}
	longrope := map[string]any{"type": "longrope", "long_factor": []any{1.0, 2.0, 3.0, 4.0}, "short_factor": []any{1.0, 1.0, 1.0, 1.0}}
	for _, c := range []struct {
		key  string
		v    any
		want error
		at   string
	}{
		{"num_key_value_heads", 3, families.ErrInconsistent, "num_key_value_heads"},
		{"rope_scaling", map[string]any{"type": "yarn", "factor": 2.0}, families.ErrUnsupported, "rope_scaling.type"},
		{"rope_scaling", map[string]any{"type": "longrope", "long_factor": []any{1.0}, "short_factor": []any{1.0, 1.0, 1.0, 1.0}}, families.ErrInconsistent, "rope_scaling.long_factor"},
		{"rope_scaling", map[string]any{"type": "longrope", "long_factor": []any{1.0, 2.0, -3.0, 4.0}, "short_factor": []any{1.0, 1.0, 1.0, 1.0}}, families.ErrWrongType, "rope_scaling.long_factor"},
		{"original_max_position_embeddings", 0, families.ErrWrongType, "original_max_position_embeddings"},
	} {
		cfg := tinyConfig(t)
		cfg[c.key] = c.v
		_, err := phi3.FromHF(cfg)
		checkErr(t, c.key, err, c.want, c.at)
	}
	// A LongRoPE model read from config.json reads its tables from the
	// configuration and cannot be written as GGUF.
	cfg := tinyConfig(t)
	cfg["rope_scaling"], cfg["original_max_position_embeddings"] = longrope, 128
	m, err := phi3.FromHF(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Sqrt(1 + math.Log(2)/math.Log(128)); math.Abs(m.(*phi3.Model).AttnFactor-want) > 1e-12 {
		t.Errorf("attention factor %v, want %v", m.(*phi3.Model).AttnFactor, want)
	}
	_, err = m.(families.GGUFWriter).GGUFMetadata()
	checkErr(t, "GGUF metadata of a config.json LongRoPE model", err, families.ErrUnsupported, phi3.LongFactors)

	f := familytest.OpenTestdata(t, "longrope-f32.gguf").GGUF()
	// edit returns f with key set to v (removed when v is nil) and without
	// the tensor drop.
	edit := func(key string, v *gguf.Value, drop string) *gguf.File {
		kvs := slices.DeleteFunc(f.KVs(), func(kv gguf.KV) bool { return kv.Key == key })
		if v != nil {
			kvs = append(kvs, gguf.KV{Key: key, Value: *v})
		}
		return familytest.ParseGGUF(t, familytest.EditGGUF(t, f, kvs, func(ts []gguf.WriterTensor) []gguf.WriterTensor {
			return slices.DeleteFunc(ts, func(w gguf.WriterTensor) bool { return w.Name == drop })
		}))
	}
	for _, key := range []string{"phi3.embedding_length", "phi3.feed_forward_length", "phi3.block_count"} {
		_, err := phi3.FromGGUF(edit(key, nil, ""))
		checkErr(t, "without "+key, err, families.ErrMissing, key)
	}
	zero := gguf.ValueOf(float32(0))
	_, err = phi3.FromGGUF(edit("phi3.rope.scaling.attn_factor", &zero, ""))
	checkErr(t, "attention factor 0", err, families.ErrWrongType, "phi3.rope.scaling.attn_factor")
	_, err = registry.FromGGUF(edit("", nil, phi3.LongFactors))
	var te *families.TensorError
	if !errors.As(err, &te) || te.Tensor != phi3.LongFactors || !errors.Is(err, families.ErrMissing) {
		t.Errorf("a short table without a long one: got %v", err)
	}
}

// TestMalformedConfigs sets every key of the tiny config (with LongRoPE)
// to values of the wrong type or range: configuring and tracing must
// return errors, never panic.
func TestMalformedConfigs(t *testing.T) {
	bad := []any{nil, "x", -1.0, 0.0, 0.5, 1e12, true, []any{1.0}, map[string]any{}, math.NaN()}
	spec := families.StepSpec{Program: families.Prefill, Shape: families.StepShape{Rows: 2, New: 2, Capacity: 8}}
	base := tinyConfig(t)
	base["rope_scaling"] = map[string]any{"type": "longrope", "long_factor": []any{1.0, 2.0, 3.0, 4.0}, "short_factor": []any{1.0, 1.0, 1.0, 1.0}}
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
				if m, err := phi3.FromHF(c); err == nil {
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
		if p.Family != "phi3" {
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
