package rdu

import (
	"errors"
	"maps"
	"math"
	"path/filepath"
	"reflect"
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

// deepseekKinds checks a DeepSeek bundle's kinds: the dense first layer,
// then the expert layers.
func deepseekKinds(t *testing.T, b *bundle.Bundle) {
	t.Helper()
	var got [][]int
	for _, k := range b.Manifest.Kinds {
		got = append(got, k.Layers)
	}
	if !reflect.DeepEqual(got, [][]int{{0}, {1, 2}}) {
		t.Errorf("kinds %v, want [[0] [1 2]]", got)
	}
}

// TestLatentAttentionLowers: DeepSeek's tiny preset (random weights, F32)
// lowers to two kinds, the dense first layer and the expert layers, whose
// programs attend in the absorbed form over one cache of latent rows a
// layer, with the per-head products' weights cut from kv_b, and certify
// within 1e-5 of the oracle. (The tiny families' tests cover Q8_0, the
// renaming and the batched rows of this preset too.)
func TestLatentAttentionLowers(t *testing.T) {
	for _, dt := range []poot.DType{poot.F32} {
		t.Run(dt.String(), func(t *testing.T) {
			r := synthRef(t, "deepseek2", dt)
			g, consts := r.step(t, 1, 24, families.LastToken)
			b := r.lower(t, g, consts)
			deepseekKinds(t, b)
			text := lang.Format(b.Programs["kind0"])
			for _, want := range []string{"Set row pos of Kc0 to kc0.", "matmul Wkb0 across 4 heads.", "joined with qp0 across 4 heads.",
				"Let Vl0 be the first 16 of every 24 of Kc0.", "over Kc0 and Vl0 with 4 heads 1 groups up to pos scaled by", "matmul Wvb0 across 4 heads."} {
				if !strings.Contains(text, want) {
					t.Errorf("the latent attention program lacks %q:\n%s", want, text)
				}
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
			for _, bd := range b.Manifest.Layers[2].Bindings {
				if c := bd.Heads; c != nil && (bd.Tensor != "blk.2.attn_kv_b.weight" || bd.Storage != bundle.StorageDense || c.Heads != 4) {
					t.Errorf("%s cut from %s: %+v", bd.Name, bd.Tensor, bd)
				}
			}
			cert, err := Certify(b, g, consts, sim.Files{}, 6, DefaultTolerance)
			if err != nil {
				t.Fatal(err)
			}
			if cert.MaxDiff > 1e-5 || math.IsNaN(cert.MaxDiff) {
				t.Errorf("max |Δlogit| %g, want ≤ 1e-5", cert.MaxDiff)
			}
			t.Logf("max |Δlogit| %.3g of %.3g over %d runs", cert.MaxDiff, cert.MaxLogit, cert.Steps)
		})
	}
}

// TestLatentAttentionDeployments: a batched step (each sequence attending
// over its own block of the latent cache) and a prefill chunk of DeepSeek's
// tiny preset lower and certify against the oracle, kind by kind and whole.
func TestLatentAttentionDeployments(t *testing.T) {
	r := synthRef(t, "deepseek2", poot.F32)
	for _, c := range []struct {
		name       string
		dep        string
		rows, toks int
		logits     families.LogitsMode
	}{{"batched", Batched, 3, 1, families.AllTokens}, {"prefill", Prefill, 1, 5, families.LastToken}} {
		t.Run(c.name, func(t *testing.T) {
			var g *poot.Graph
			var consts interp.ConstMap
			if c.rows > 1 {
				g, consts = r.stepRows(t, c.rows, c.toks, 16, c.logits)
			} else {
				g, consts = r.step(t, c.toks, 16, c.logits)
			}
			b, err := Lower(g, Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Consts: consts, Deployment: c.dep})
			if err != nil {
				t.Fatal(err)
			}
			deepseekKinds(t, b)
			_, cert := certifyAll(t, b, g, consts, 2, 3)
			if cert.MaxDiff > 1e-5 || math.IsNaN(cert.MaxDiff) {
				t.Errorf("max |Δlogit| %g, want ≤ 1e-5", cert.MaxDiff)
			}
			t.Logf("%s: max |Δlogit| %.3g of %.3g", c.name, cert.MaxDiff, cert.MaxLogit)
		})
	}
}

// TestLatentAttentionSafetensors: a Hugging Face checkpoint of DeepSeek's
// tiny preset (kv_b_proj whole) lowers with every weight bound to a byte
// range of its safetensors file (the experts' stacks to the ranges of
// their experts' tensors) and certifies within 1e-5 of the oracle,
// relative to the largest logit.
func TestLatentAttentionSafetensors(t *testing.T) {
	r := hfModel(t, "deepseek2", poot.F32, 3)
	g, consts := r.step(t, 1, 16, families.LastToken)
	b := r.lower(t, g, consts)
	deepseekKinds(t, b)
	stacked := 0
	for _, bd := range b.Manifest.Layers[1].Bindings {
		if len(bd.Parts) > 0 {
			stacked++
			if len(bd.Parts) != 8 || filepath.Ext(bd.Parts[0].File) != ".safetensors" || bd.Parts[0].Bytes == 0 {
				t.Errorf("%s bound to the parts %+v", bd.Name, bd.Parts)
			}
		}
	}
	if stacked != 3 {
		t.Errorf("%d weights of layer 1 stacked from their experts' tensors, want 3 (gate, up, down)", stacked)
	}
	cert, err := Certify(b, g, consts, sim.Files{}, 4, DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	if cert.MaxDiff > 1e-5*math.Max(1, cert.MaxLogit) || math.IsNaN(cert.MaxDiff) {
		t.Errorf("max |Δlogit| %g of %g, want ≤ 1e-5 relative", cert.MaxDiff, cert.MaxLogit)
	}
	t.Logf("max |Δlogit| %.3g of %.3g", cert.MaxDiff, cert.MaxLogit)
}

// TestMixersNotLoweredYet: a mixer this lowering does not lift (Mamba2's
// scan) is refused naming the mixer, not a primitive around it.
func TestMixersNotLoweredYet(t *testing.T) {
	g := build(t, 1, func(m *toy, l int, x toyT) toyT {
		return m.b.Composite("mamba2_ssm", nil, []toyT{x}, func() []toyT { return []toyT{m.b.Mul(x, x)} })[0]
	}, nil)
	_, err := Lower(g, Options{})
	if !errors.Is(err, ErrUnliftable) || !strings.Contains(err.Error(), "the mamba2_ssm mixer") {
		t.Errorf("got %v, want an ErrUnliftable naming the mamba2_ssm mixer", err)
	}
}

// TestHalfCachesRefused: a step with F16 or Q8_0 caches (which the
// language's Reals cannot hold) is refused naming the cast to the cache's
// dtype, never lowered.
func TestHalfCachesRefused(t *testing.T) {
	r := synthRef(t, "llama", poot.F32)
	for _, kv := range []poot.DType{poot.F16, poot.Q8_0} {
		g, err := r.m.Trace(families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: 1, New: 1, Capacity: 16, KV: kv}}, poot.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Lower(g, Options{})
		if !errors.Is(err, ErrUnliftable) || !strings.Contains(err.Error(), "a cast to "+kv.String()) {
			t.Errorf("%v caches: got %v, want an ErrUnliftable naming the cast to %v", kv, err, kv)
		}
	}
}

// TestLatentAttentionPlainQueries: DeepSeek-V2-Lite's shape (queries
// projected whole, no q_lora_rank; softmax gating without groups; no YaRN)
// lowers and certifies within 1e-5 of the oracle too.
func TestLatentAttentionPlainQueries(t *testing.T) {
	p, err := synth.FindPreset("deepseek2", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := maps.Clone(p.Config)
	delete(cfg, "q_lora_rank")
	delete(cfg, "rope_scaling")
	cfg["architectures"], cfg["model_type"] = []any{"DeepseekV2ForCausalLM"}, "deepseek_v2"
	cfg["scoring_func"], cfg["topk_method"], cfg["n_group"], cfg["topk_group"] = "softmax", "greedy", 1, 1
	m, err := synth.Model("deepseek2", cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "lite.gguf")
	if err := synth.Write(m, path, synth.Options{Seed: 11}); err != nil {
		t.Fatal(err)
	}
	r := openModel(t, path)
	g, consts := r.step(t, 1, 16, families.LastToken)
	b := r.lower(t, g, consts)
	deepseekKinds(t, b)
	if text := lang.Format(b.Programs["kind0"]); strings.Contains(text, "Wqa0") || !strings.Contains(text, "matmul Wq0.") {
		t.Errorf("the program does not project the queries whole:\n%s", text)
	}
	cert, err := Certify(b, g, consts, sim.Files{}, 4, DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	if cert.MaxDiff > 1e-5 || math.IsNaN(cert.MaxDiff) {
		t.Errorf("max |Δlogit| %g, want ≤ 1e-5", cert.MaxDiff)
	}
	t.Logf("max |Δlogit| %.3g of %.3g", cert.MaxDiff, cert.MaxLogit)
}
