package rdu

import (
	"errors"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
	"github.com/pootlabs/poot/rdu/sim"
)

// certifyTP lowers g over tp chips and certifies it, kind by kind and
// whole, against the oracle; a refusal is returned.
func certifyTP(t *testing.T, r *refModel, g *poot.Graph, consts interp.ConstMap, deployment string, tp int) (*bundle.Bundle, error) {
	t.Helper()
	b, _, err := certifyTPCert(t, r, g, consts, deployment, tp)
	return b, err
}

// certifyTPCert is certifyTP with the whole bundle's certificate.
func certifyTPCert(t *testing.T, r *refModel, g *poot.Graph, consts interp.ConstMap, deployment string, tp int) (*bundle.Bundle, Certificate, error) {
	t.Helper()
	b, err := Lower(g, Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Consts: consts, Deployment: deployment, TP: tp})
	if err != nil {
		return nil, Certificate{}, err
	}
	checkTPManifest(t, b)
	m, err := sim.New(b, sim.Files{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CertifyKinds(m, g, consts, 2, DefaultTolerance); err != nil {
		t.Fatal(err)
	}
	cert, err := CertifyMachine(m, g, consts, 4, DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	w, kv := ChipBytes(b)
	t.Logf("tp %d: max |Δlogit| %.3g of %.3g; weights per chip %v, KV per chip %v", tp, cert.MaxDiff, cert.MaxLogit, w, kv)
	return b, cert, nil
}

// checkTPManifest: every chip's slices of a tensor together are the whole
// tensor, each chip's once, and every all-reduce sums a partial a chip.
func checkTPManifest(t *testing.T, b *bundle.Bundle) {
	t.Helper()
	tp := b.Manifest.Deployment.TP
	for _, l := range b.Manifest.Layers {
		got := map[string]int64{}
		full := map[string]int64{}
		for name, bd := range l.Bindings {
			if len(bd.Slices) == 0 || bd.Source != bundle.SourceWeight {
				continue
			}
			k := b.Manifest.Kinds[0]
			for _, kk := range b.Manifest.Kinds {
				if kk.Name == l.Kind {
					k = kk
				}
			}
			if _, ok := k.Placement[name]; !ok {
				t.Errorf("layer %d: the slice %s is on no chip", l.Layer, name)
			}
			for _, sl := range bd.Slices {
				got[bd.Tensor] += sl.Bytes * sl.Count
			}
			full[bd.Tensor] = bd.Bytes
		}
		for tn, n := range got {
			if n != full[tn] {
				t.Errorf("layer %d: the chips load %d bytes of %s, which holds %d", l.Layer, n, tn, full[tn])
			}
		}
	}
	for _, k := range b.Manifest.Kinds {
		if len(k.AllReduce) == 0 {
			t.Errorf("kind %s has no all-reduce", k.Name)
		}
		for _, ar := range k.AllReduce {
			if len(ar.Partials) != tp {
				t.Errorf("kind %s: all-reduce into %s of %d partials over %d chips", k.Name, ar.Out, len(ar.Partials), tp)
			}
		}
	}
}

// TestTensorParallelReferenceModels: the reference models' decode bundles
// over 1 to 4 chips, where the model splits, agree with the oracle within
// 1e-5; a width that does not split is refused with its reason.
func TestTensorParallelReferenceModels(t *testing.T) {
	for _, f := range []string{"tiny-llama-f32.gguf", "tiny-qwen3-f32.gguf", "tiny-gemma3-f32.gguf"} {
		t.Run(f, func(t *testing.T) {
			r := openRef(t, f)
			g, consts := r.step(t, 1, 16, families.LastToken)
			admitted := 0
			for tp := 1; tp <= 4; tp++ {
				_, err := certifyTP(t, r, g, consts, Decode, tp)
				switch {
				case err == nil:
					admitted++
				case errors.Is(err, ErrTensorParallel):
					t.Logf("tp %d refused: %v", tp, err)
				default:
					t.Fatalf("tp %d: %v", tp, err)
				}
			}
			if admitted < 1 {
				t.Errorf("%d widths admitted", admitted)
			}
		})
	}
}

// TestTensorParallelTinyPresets: the tiny presets over 1 to 4 chips, F32
// and Q8_0, decode and batched: dense models split (or refuse a width
// with its reason), expert mixtures are refused.
func TestTensorParallelTinyPresets(t *testing.T) {
	experts := map[string]bool{"mixtral": true, "qwen3moe": true, "gpt-oss": true, "llama4": true}
	for _, f := range tinyFamilies {
		for _, dt := range []poot.DType{poot.F32, poot.Q8_0} {
			t.Run(f+"/"+dt.String(), func(t *testing.T) {
				r := synthRef(t, f, dt)
				g, consts := r.step(t, 1, 12, families.LastToken)
				gb, cb := r.stepRows(t, 2, 1, 12, families.AllTokens)
				expertRefusals := 0
				for tp := 1; tp <= 4; tp++ {
					_, err := certifyTP(t, r, g, consts, Decode, tp)
					if err != nil && strings.Contains(err.Error(), "expert mixture") {
						expertRefusals++
					}
					if err == nil && tp == 2 {
						if _, err := certifyTP(t, r, gb, cb, Batched, tp); err != nil {
							t.Fatalf("batched: %v", err)
						}
					}
					switch {
					case err == nil && experts[f]:
						t.Fatalf("tp %d: an expert mixture split", tp)
					case err == nil:
					case errors.Is(err, ErrTensorParallel):
						t.Logf("tp %d refused: %v", tp, err)
					default:
						t.Fatalf("tp %d: %v", tp, err)
					}
				}
				if experts[f] && expertRefusals == 0 {
					t.Errorf("an expert mixture refused for no reason of its experts")
				}
			})
		}
	}
}

// TestTensorParallelProgram: the llama kind over two chips holds each
// chip's heads and columns, two all-reduces, and the spine's residuals.
func TestTensorParallelProgram(t *testing.T) {
	r := synthRef(t, "llama", poot.F32)
	g, consts := r.step(t, 1, 12, families.LastToken)
	b, err := certifyTP(t, r, g, consts, Decode, 2)
	if err != nil {
		t.Fatal(err)
	}
	text := lang.Format(b.Programs["kind0"])
	for _, want := range []string{"Let qr0_c1 be xn0 matmul Wq0_c1.", "Set row pos of Kc0_c0 to ", "Let ao0 be ao0_c0 plus ao0_c1.", "Let dn0 be dn0_c0 plus dn0_c1.", "Let xr0 be x plus ao0."} {
		if !strings.Contains(text, want) {
			t.Errorf("the program lacks %q:\n%s", want, text)
		}
	}
	if k := b.Manifest.Kinds[0]; len(k.AllReduce) != 2 {
		t.Errorf("%d all-reduces a layer, want 2", len(k.AllReduce))
	}
	// A chip reading another chip's value outside an all-reduce does not
	// compose.
	p := b.Programs["kind0"]
	for i, s := range p.Stmts {
		if l, ok := s.(lang.Let); ok && l.Name == "ao0_c1" {
			bin := l.Expr.(lang.Binary)
			bin.A = strings.Replace(bin.A, "_c1", "_c0", 1)
			l.Expr = bin
			p.Stmts[i] = l
		}
	}
	if err := sim.Check(b); err == nil || !strings.Contains(err.Error(), "outside an all-reduce") {
		t.Errorf("a cross-chip read composes: %v", err)
	}
}
