package rdu

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
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

// TestMixersTPRefused: a tensor-parallel deployment of a recurrent model
// or of a latent attention model is a *TPError naming the mixer, never a
// bundle.
func TestMixersTPRefused(t *testing.T) {
	for family, mixer := range map[string]string{"qwen35": "recurrent mixer", "deepseek2": "latent attention"} {
		r := synthRef(t, family, poot.F32)
		g, consts := r.step(t, 1, 16, families.LastToken)
		_, err := Lower(g, Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Consts: consts, TP: 2})
		var tpe *TPError
		if !errors.As(err, &tpe) || !strings.Contains(err.Error(), mixer) {
			t.Errorf("%s over 2 chips: got %v, want a *TPError naming the %s", family, err, mixer)
		}
	}
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
