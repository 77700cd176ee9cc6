package rdu

import (
	"errors"
	"maps"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
	"github.com/pootlabs/poot/rdu/sim"
)

// TestRecurrentMixersLower: Qwen3-Next and Qwen3.5 (their tiny presets,
// random weights, F32) lower to two kinds, the gated delta net layers and
// the attention layer; their programs survive printing; and the decode
// bundle certifies over several runs with logits within 1e-5 of the
// oracle's.
func TestRecurrentMixersLower(t *testing.T) {
	for _, family := range []string{"qwen3next", "qwen35"} {
		t.Run(family, func(t *testing.T) {
			r := synthRef(t, family, poot.F32)
			g, consts := r.step(t, 1, 24, families.LastToken)
			b := r.lower(t, g, consts)
			var got [][]int
			for _, k := range b.Manifest.Kinds {
				got = append(got, k.Layers)
			}
			if !reflect.DeepEqual(got, [][]int{{0, 2}, {1}}) {
				t.Errorf("kinds %v, want [[0 2] [1]]", got)
			}
			for _, name := range b.Names() {
				p := b.Programs[name]
				q, err := lang.Parse(lang.Format(p))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !reflect.DeepEqual(p, q) {
					t.Errorf("%s does not survive printing", name)
				}
			}
			cert, err := Certify(b, g, consts, sim.Files{}, 6, DefaultTolerance)
			if err != nil {
				t.Fatal(err)
			}
			if cert.MaxDiff > 1e-5 || math.IsNaN(cert.MaxDiff) {
				t.Errorf("max |Δlogit| %g, want ≤ 1e-5", cert.MaxDiff)
			}
			t.Logf("%d kinds; max |Δlogit| %.3g of %.3g over %d runs", len(b.Manifest.Kinds), cert.MaxDiff, cert.MaxLogit, cert.Steps)
		})
	}
}

// TestRecurrentRenaming: each delta-rule layer's program is its kind's
// program renamed, its states bound to the layer's own.
func TestRecurrentRenaming(t *testing.T) {
	for _, f := range []string{"qwen3next", "qwen35"} {
		t.Run(f, func(t *testing.T) { checkRenaming(t, f, 1) })
	}
}

// TestRecurrentQ8_0: with Q8_0 matrices the decode bundle still certifies
// (the conv filters and the per-head rows stay F32).
func TestRecurrentQ8_0(t *testing.T) {
	for _, family := range []string{"qwen3next", "qwen35"} {
		r := synthRef(t, family, poot.Q8_0)
		g, consts := r.step(t, 1, 24, families.LastToken)
		cert, err := Certify(r.lower(t, g, consts), g, consts, sim.Files{}, 4, DefaultTolerance)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s Q8_0: max |Δlogit| %.3g of %.3g", family, cert.MaxDiff, cert.MaxLogit)
	}
}

// TestRecurrentBatched: a batched step of a recurrent model lowers to the
// batched deployment, each sequence's convolution and delta rule over its
// own block of the states, and certifies against the oracle, each kind and
// the whole bundle (within DefaultTolerance: the oracle's batched expert
// mixture sums in another order); and each row's logits are exactly the
// decode bundle's for that sequence run alone, at different positions in
// one run.
func TestRecurrentBatched(t *testing.T) {
	for _, family := range []string{"qwen3next", "qwen35"} {
		t.Run(family, func(t *testing.T) {
			r := synthRef(t, family, poot.F32)
			g, consts := r.stepRows(t, 3, 1, 16, families.AllTokens)
			b, err := Lower(g, Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Consts: consts, Deployment: Batched})
			if err != nil {
				t.Fatal(err)
			}
			text := lang.Format(b.Programs["kind0"])
			for _, want := range []string{"from position pos_s2", "_s2 from position pos_s2 norm"} {
				if !strings.Contains(text, want) {
					t.Errorf("the batched delta-rule program lacks %q:\n%s", want, text)
				}
			}
			_, cert := certifyAll(t, b, g, consts, 2, 3)
			t.Logf("%s batched (3 sequences): max |Δlogit| %.3g of %.3g", family, cert.MaxDiff, cert.MaxLogit)
			checkRowsAlone(t, r, 3, 16)
		})
	}
}

// TestMixersTPRefused: a tensor-parallel deployment of a latent attention
// model, of an expert mixture, or of a recurrent model over more chips
// than its delta rule has key heads is a *TPError naming why, never a
// bundle.
func TestMixersTPRefused(t *testing.T) {
	for _, c := range []struct {
		family string
		tp     int
		why    string
	}{
		{"deepseek2", 2, "latent attention"},
		{"qwen3next", 2, "expert mixture"},
		{"qwen35", 3, "2 key heads do not split over 3 chips"},
		{"qwen35", 4, "2 key heads do not split over 4 chips"},
	} {
		r := synthRef(t, c.family, poot.F32)
		g, consts := r.step(t, 1, 16, families.LastToken)
		_, err := Lower(g, Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Consts: consts, TP: c.tp})
		var tpe *TPError
		if !errors.As(err, &tpe) || !strings.Contains(err.Error(), c.why) || tpe.Binder == "" || tpe.Kind == "" {
			t.Errorf("%s over %d chips: got %v, want a *TPError naming %q", c.family, c.tp, err, c.why)
		}
	}
}

// synthShaped writes family's tiny preset changed by change (config.json
// keys) as a random-weight checkpoint, a GGUF of matrices stored dt or,
// with hf, a Hugging Face safetensors directory, and opens it.
func synthShaped(t *testing.T, family string, change map[string]any, hf bool, dt poot.DType) *refModel {
	t.Helper()
	p, err := synth.FindPreset(family, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := maps.Clone(p.Config)
	maps.Copy(cfg, change)
	m, err := synth.Model(p.Family, cfg)
	if err != nil {
		t.Fatal(err)
	}
	path, opts := filepath.Join(t.TempDir(), family+".gguf"), synth.Options{Type: dt, Seed: 11, Scale: 0.25}
	if hf {
		path, opts.Format = filepath.Join(t.TempDir(), "hf"), "safetensors"
	}
	if err := synth.Write(m, path, opts); err != nil {
		t.Fatal(err)
	}
	return openModel(t, path)
}

// wideQwen35 is the tiny Qwen3.5 with delta nets of 4 key and 8 value
// heads, attention of 8 query and 4 key-value heads, and a feed-forward of
// 64: every width from 1 to 4 chips splits (3 unevenly).
var wideQwen35 = map[string]any{"linear_num_key_heads": 4, "linear_num_value_heads": 8, "num_attention_heads": 8, "num_key_value_heads": 4, "intermediate_size": 64}

// TestRecurrentTensorParallel: Qwen3.5's decode and batched bundles over
// 1 to 4 chips (the reference checkpoint of the family's tests, whose
// delta rule has 2 key heads, and wider random ones, GGUF with llama.cpp's
// tiled value heads and Hugging Face safetensors, F32 and Q8_0), each
// chip its key heads with their value heads, their columns of the fused
// q, k, v projection and of the convolution, their decay, beta and gate
// columns, their rows of the state and of the output projection: where
// the model splits the bundle certifies against the oracle, kind by kind
// and whole, within 1e-5 of the largest logit, and a width that does not
// split is refused with its reason.
func TestRecurrentTensorParallel(t *testing.T) {
	for _, c := range []struct {
		name     string
		open     func(t *testing.T) *refModel
		admitted []int
		refusal  string
	}{
		{"qwen35-f32.gguf", func(t *testing.T) *refModel {
			return openModel(t, filepath.Join("..", "families", "qwen3next", "testdata", "qwen35-f32.gguf"))
		}, []int{1, 2}, "key heads do not split"},
		{"wide/gguf/f32", func(t *testing.T) *refModel { return synthShaped(t, "qwen35", wideQwen35, false, poot.F32) }, []int{1, 2, 3, 4}, ""},
		{"wide/safetensors/f32", func(t *testing.T) *refModel { return synthShaped(t, "qwen35", wideQwen35, true, poot.F32) }, []int{1, 2, 3, 4}, ""},
		{"wide/gguf/q8_0", func(t *testing.T) *refModel { return synthShaped(t, "qwen35", wideQwen35, false, poot.Q8_0) }, []int{1, 2}, "inside its blocks of 32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.open(t)
			g, consts := r.step(t, 1, 16, families.LastToken)
			gb, cb := r.stepRows(t, 2, 1, 16, families.AllTokens)
			var got []int
			worst := 0.0
			for tp := 1; tp <= 4; tp++ {
				_, cert, err := certifyTPCert(t, r, g, consts, Decode, tp)
				var tpe *TPError
				switch {
				case errors.As(err, &tpe):
					if c.refusal == "" || !strings.Contains(err.Error(), c.refusal) {
						t.Errorf("tp %d: %v, want a refusal naming %q", tp, err, c.refusal)
					}
					t.Logf("tp %d refused: %v", tp, err)
					continue
				case err != nil:
					t.Fatalf("tp %d: %v", tp, err)
				}
				got = append(got, tp)
				_, bcert, err := certifyTPCert(t, r, gb, cb, Batched, tp)
				if err != nil {
					t.Fatalf("tp %d batched: %v", tp, err)
				}
				for _, ct := range []Certificate{cert, bcert} {
					rel := ct.MaxDiff / math.Max(1, ct.MaxLogit)
					if !(rel <= 1e-5) {
						t.Errorf("tp %d: max |Δlogit| %g of %g", tp, ct.MaxDiff, ct.MaxLogit)
					}
					worst = math.Max(worst, rel)
				}
			}
			if !slices.Equal(got, c.admitted) {
				t.Errorf("admitted %v, want %v", got, c.admitted)
			}
			t.Logf("admitted %v; max relative |Δlogit| %.3g (decode and batched)", got, worst)
		})
	}
}

// TestRecurrentTPProgram: the reference Qwen3.5's delta-rule kind over two
// chips: each chip's fused projection is its runs of the stored q, k and v
// rows, its column views and heads counted over them, its tiled value
// heads' rows of the state and of the output projection, and the output
// projection's partials summed by an all-reduce.
func TestRecurrentTPProgram(t *testing.T) {
	r := openModel(t, filepath.Join("..", "families", "qwen3next", "testdata", "qwen35-f32.gguf"))
	g, consts := r.step(t, 1, 16, families.LastToken)
	b, err := certifyTP(t, r, g, consts, Decode, 2)
	if err != nil {
		t.Fatal(err)
	}
	text := lang.Format(b.Programs["kind0"])
	for _, want := range []string{
		"Let Wqkv0_c1 be a 64 by 64 tensor of Real.",
		"Let qkv0_c1 be xn0 matmul Wqkv0_c1.",
		"Let cv0_c0 be causal conv of qkv0_c0 with weight Wc0_c0 state Cs0_c0 from position pos over 4 taps.",
		"Let slc0_c0 be the first 16 of every 64 of sl0_c0.",
		"Let slcb0_c0 be the 16 after the first 16 of every 64 of sl0_c0.",
		"Let slcc0_c0 be the last 32 of every 64 of sl0_c0.",
		"Let dc0_c1 be decay of ar0_c1 with bias Dt0_c1 rate Al0_c1.",
		"state St0_c1 from position pos norm Gn0 with 2 heads 1 groups with epsilon",
		"Let ao0 be ao0_c0 plus ao0_c1.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the program lacks %q:\n%s", want, text)
		}
	}
	// Chip 1 holds key head 1 and, tiled, value heads 1 and 3.
	bd := b.Manifest.Layers[0].Bindings
	for name, want := range map[string][][2]int{
		"Wqkv0_c1": {{16, 16}, {48, 16}, {80, 16}, {112, 16}},
		"Wz0_c1":   {{16, 16}, {48, 16}},
		"Wb0_c1":   {{1, 1}, {3, 1}},
		"Wc0_c1":   {{16, 16}, {48, 16}, {80, 16}, {112, 16}},
		"Cs0_c1":   {{16, 16}, {48, 16}, {80, 16}, {112, 16}},
		"St0_c1":   {{16, 16}, {48, 16}},
		"Wo0_c1":   {{16, 16}, {48, 16}},
	} {
		var got [][2]int
		for _, s := range bd[name].Slices {
			got = append(got, [2]int{s.From, s.N})
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s holds %v, want %v", name, got, want)
		}
	}
	if s := bd["St0_c1"].Slices; len(s) == 0 || s[0].Axis != "rows" || !bd["St0_c1"].Recurrent {
		t.Errorf("the delta rule's state is cut as %+v", bd["St0_c1"])
	}
}

// TestRecurrentTPFusedQKVZ: Qwen3-Next's delta rule, whose q, k, v and z
// are one projection stored key head by key head (synth's GGUF and the
// Hugging Face in_proj_qkvz, with in_proj_ba) or cut into attn_qkv and
// attn_gate (llama.cpp's current layout), over 1 and 2 chips. The tiny
// model's feed-forward is an expert mixture, which does not split, so its
// kinds' expert mixtures are removed from the one-chip bundle (each read
// as zeros); the split bundle, decode and batched, then gives the one-chip
// bundle's logits within 1e-5 of the largest.
func TestRecurrentTPFusedQKVZ(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(t *testing.T) *refModel
	}{
		{"tiny-f32.gguf", func(t *testing.T) *refModel {
			return openModel(t, filepath.Join("..", "families", "qwen3next", "testdata", "tiny-f32.gguf"))
		}},
		{"tiny-split-f32.gguf", func(t *testing.T) *refModel {
			return openModel(t, filepath.Join("..", "families", "qwen3next", "testdata", "tiny-split-f32.gguf"))
		}},
		{"safetensors", func(t *testing.T) *refModel { return hfModel(t, "qwen3next", poot.F32, 3) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.open(t)
			for _, dep := range []string{Decode, Batched} {
				var g *poot.Graph
				var consts interp.ConstMap
				if dep == Decode {
					g, consts = r.step(t, 1, 16, families.LastToken)
				} else {
					g, consts = r.stepRows(t, 2, 1, 16, families.AllTokens)
				}
				one, err := Lower(g, Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Consts: consts, Deployment: dep})
				if err != nil {
					t.Fatal(err)
				}
				removed := 0
				for _, k := range one.Manifest.Kinds {
					for i, s := range one.Programs[k.Name].Stmts {
						if l, ok := s.(lang.Let); ok {
							if e, ok := l.Expr.(lang.MoE); ok {
								one.Programs[k.Name].Stmts[i] = lang.Let{Name: l.Name, Expr: lang.Scaled{X: e.X, By: 0}}
								removed++
							}
						}
					}
				}
				if removed != len(one.Manifest.Kinds) {
					t.Fatalf("%d expert mixtures removed from %d kinds", removed, len(one.Manifest.Kinds))
				}
				want := simLogits(t, one, 5)
				for tp := 1; tp <= 2; tp++ {
					b, err := TensorParallel(one, tp)
					if err != nil {
						t.Fatalf("%s over %d chips: %v", dep, tp, err)
					}
					checkTPManifest(t, b)
					got := simLogits(t, b, 5)
					worst, top := 0.0, 1.0
					for i := range want {
						top = math.Max(top, math.Abs(float64(want[i])))
						worst = math.Max(worst, math.Abs(float64(want[i]-got[i])))
					}
					if !(worst <= 1e-5*top) {
						t.Errorf("%s over %d chips: logits differ by %g (largest %g)", dep, tp, worst, top)
					}
					t.Logf("%s over %d chips: max |Δlogit| %.3g of %.3g against one chip", dep, tp, worst, top)
				}
				if _, err := TensorParallel(one, 3); !errors.Is(err, ErrTensorParallel) || !strings.Contains(err.Error(), "key heads") {
					t.Errorf("over 3 chips: %v, want a refusal naming the key heads", err)
				}
			}
		})
	}
}

// simLogits runs a decode or batched bundle over runs runs from empty
// caches (each sequence its own tokens and positions) and returns every
// run's logits one after another.
func simLogits(t *testing.T, b *bundle.Bundle, runs int) []float32 {
	t.Helper()
	m, err := sim.New(b, sim.Files{})
	if err != nil {
		t.Fatal(err)
	}
	rows := b.Manifest.Rows()
	var out []float32
	for s := range runs {
		toks, pos := make([]int, rows), make([]int, rows)
		for i := range rows {
			toks[i], pos[i] = (s*37+i*101+5)%512, s+i
		}
		res, err := m.Run(toks, pos)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Logits...)
	}
	return out
}

// TestRecurrentPrefill: a chunk of a recurrent model lowers as the prefill
// deployment (the chunk's rows through the convolution and the delta rule
// in order) and certifies against the oracle, each kind and the whole
// bundle.
func TestRecurrentPrefill(t *testing.T) {
	for _, family := range []string{"qwen3next", "qwen35"} {
		r := synthRef(t, family, poot.F32)
		g, consts := r.step(t, 5, 32, families.LastToken)
		b, err := Lower(g, Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Consts: consts, Deployment: Prefill})
		if err != nil {
			t.Fatal(err)
		}
		m, err := sim.New(b, sim.Files{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := CertifyKinds(m, g, consts, 3, DefaultTolerance); err != nil {
			t.Fatal(err)
		}
		cert, err := Certify(b, g, consts, sim.Files{}, 3, DefaultTolerance)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s prefill: max |Δlogit| %.3g of %.3g", family, cert.MaxDiff, cert.MaxLogit)
	}
}

// TestRecurrentStateResets: a run at position 0 reads the recurrent states
// as zeros whatever earlier runs left in them, so a second sequence's first
// token gives the first sequence's logits exactly, and a later position
// carries the state (its logits differ from a fresh start's).
func TestRecurrentStateResets(t *testing.T) {
	r := synthRef(t, "qwen3next", poot.F32)
	g, consts := r.step(t, 1, 16, families.LastToken)
	b := r.lower(t, g, consts)
	m, err := sim.New(b, sim.Files{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := m.Step(7, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), first.Logits...)
	for p, tok := range []int{3, 9, 11} {
		if _, err := m.Step(tok, p+1); err != nil {
			t.Fatal(err)
		}
	}
	carried, err := m.Step(7, 4)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(carried.Logits, want) {
		t.Errorf("token 7 at position 4 gives the logits of a fresh start: the state is not carried")
	}
	again, err := m.Step(7, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Logits, want) {
		t.Errorf("a new sequence's first token does not reproduce the first run's logits")
	}
}

// TestRecurrentSafetensors: a Hugging Face checkpoint of Qwen3-Next and
// of Qwen3.5 (F32, whose decay stores A_log: the "log rate" form; Qwen3-Next's
// experts one tensor an expert, bound as the parts of their stacks) lowers
// to the two kinds and certifies within 1e-5 of the oracle, relative to
// the largest logit.
func TestRecurrentSafetensors(t *testing.T) {
	for _, family := range []string{"qwen3next", "qwen35"} {
		t.Run(family, func(t *testing.T) {
			r := hfModel(t, family, poot.F32, 3)
			g, consts := r.step(t, 1, 16, families.LastToken)
			b := r.lower(t, g, consts)
			if len(b.Manifest.Kinds) != 2 {
				t.Errorf("%d kinds, want 2", len(b.Manifest.Kinds))
			}
			if text := lang.Format(b.Programs["kind0"]); !strings.Contains(text, " log rate ") {
				t.Errorf("the delta-rule program has no log rate:\n%s", text)
			}
			cert, err := Certify(b, g, consts, sim.Files{}, 4, DefaultTolerance)
			if err != nil {
				t.Fatal(err)
			}
			if cert.MaxDiff > 1e-5*math.Max(1, cert.MaxLogit) || math.IsNaN(cert.MaxDiff) {
				t.Errorf("max |Δlogit| %g of %g, want ≤ 1e-5 relative", cert.MaxDiff, cert.MaxLogit)
			}
			t.Logf("%s safetensors: max |Δlogit| %.3g of %.3g", family, cert.MaxDiff, cert.MaxLogit)
		})
	}
}
