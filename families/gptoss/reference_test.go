package gptoss_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/gptoss"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
)

// TestReference checks the tiny preset, written by poot synth with strong
// weights (N(0, 0.25)), against llama.cpp: every position's logits of one
// prefill and of a prefill then token-by-token decode on the oracle, and
// through the driver on the oracle and the cpu backend, with every greedy
// token. Layer 0 slides a window of 4 over the 24 positions; both layers
// have sinks, biases, YaRN-scaled rope and routed experts with biases.
//
// llama.cpp rounds the activations to F16 inside its dot products with F16
// weights, which poot does not (it keeps them in F32); with these weights
// that moves logits by up to 1.5e-2. So the F16 file is held to 1e-3 with
// that rounding emulated (familytest.HalfActivations), and to 2e-2 as poot runs it.
//
// With MXFP4 weights (every matrix of the file, the router and the head
// included) llama.cpp quantizes the activations of every product to Q8_0
// blocks: int8, rounded to nearest even, with a binary16 scale. With that
// rounding emulated on the oracle (q8Activations) poot agrees with
// llama.cpp to 5e-9, the precision of the reference's printed logits: the
// int8 × FP4 block sums are exact on both sides, so only float32 sums of a
// block or two remain. It is held to 1e-5. As poot runs the file, the
// oracle keeps activations exact and the cpu backend quantizes them to
// int8 with a float32 scale, rounding halves away from zero: on these
// strong weights (logits within ±7.2) that moves the oracle's logits by
// 0.1 to 0.4, and by 1.01 at one position, and the cpu backend's (closer,
// as its rounding is nearly llama.cpp's) by at most 0.2. Through the
// driver the cpu backend is held to 0.5 and the oracle to 1.5, every
// greedy token matching; the tight check of the decoded weights is the
// emulated one.
func TestReference(t *testing.T) {
	for _, c := range []struct {
		name        string
		tol, driver float64
		oracle      float64 // the driver's tolerance on the oracle, when not driver
		round       func(familytest.Binder) familytest.Binder
	}{{"tiny-f32", 1e-3, 1e-3, 0, nil}, {"tiny-f16", 1e-3, 2e-2, 0, familytest.HalfActivations}, {"tiny-mxfp4", 1e-5, 0.5, 1.5, q8Activations}} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join("testdata", c.name+".gguf")
			ref := familytest.ReadRef(t, filepath.Join("testdata", c.name+".ref.json"))
			ck, err := load.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer ck.Close()
			m, err := registry.FromCheckpoint(ck)
			if err != nil {
				t.Fatal(err)
			}
			bind := familytest.LoadBinder(ck, m.Weights())
			if c.round != nil {
				bind = c.round(bind)
			}
			familytest.CheckReference(t, m, bind, ref, 32, c.tol, true)
			if c.oracle == 0 {
				drivertest.CheckReference(t, path, ref, c.driver)
				return
			}
			drivertest.CheckReference(t, path, ref, c.oracle, "oracle")
			drivertest.CheckReference(t, path, ref, c.driver, "cpu")
		})
	}
}

// q8Activations wraps bind so that the activation operand of every
// contraction with an MXFP4 weight is rounded as llama.cpp's CPU quantizes
// it to Q8_0 (quantize_row_q8_0): per block of 32, q = x·(127/amax)
// rounded to nearest, ties to even, and the value q·f16(amax/127).
func q8Activations(bind familytest.Binder) familytest.Binder {
	return func(g *poot.Graph) (*poot.Graph, interp.Consts, error) {
		g, consts, err := bind(g)
		for i := g.NumEqns() - 1; i >= 0 && err == nil; i-- {
			e := g.Eqn(i)
			if (e.Op != poot.MatMul && e.Op != poot.IndexedMatMul) || g.Type(e.Inputs[1]).DType != poot.MXFP4 {
				continue
			}
			g, err = g.Replace(i, i+1, func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
				in[0] = roundQ8_0(b, in[0])
				if e.Op == poot.MatMul {
					return []poot.Traced[poot.Rewrite]{b.MatMul(in[0], in[1])}
				}
				return []poot.Traced[poot.Rewrite]{b.IndexedMatMul(in[0], in[1], in[2])}
			})
		}
		return g, consts, err
	}
}

// roundQ8_0 records x (F32, last axis a multiple of 32) quantized to Q8_0
// blocks and decoded again. Rounding to nearest even is (v + 1.5·2^23) −
// 1.5·2^23 in float32, exact for |v| ≤ 127.
func roundQ8_0(b *poot.Builder[poot.Rewrite], x poot.Traced[poot.Rewrite]) poot.Traced[poot.Rewrite] {
	shape := b.Aval(x).Shape
	k := shape[len(shape)-1]
	rows := int(shape.Size()) / k
	blocks := b.Reshape(x, rows, k/32, 32)
	full := func(v poot.Traced[poot.Rewrite]) poot.Traced[poot.Rewrite] { return b.Broadcast(v, rows, k/32, 32) }
	c := func(v float64) poot.Traced[poot.Rewrite] { return b.Full(poot.T(poot.F32, rows, k/32, 1), v) }
	amax := b.ReduceMax(b.Abs(blocks), 2)
	d := b.Cast(b.Cast(b.Div(amax, c(127)), poot.F16), poot.F32)
	id := b.Select(b.Gt(amax, c(0)), b.Div(c(127), amax), c(0))
	magic := b.Full(poot.T(poot.F32, rows, k/32, 32), 0x1.8p23)
	q := b.Sub(b.Add(b.Mul(blocks, full(id)), magic), magic)
	return b.Reshape(b.Mul(q, full(d)), shape...)
}

// TestSynthSafetensors writes the tiny preset the way the fixtures were
// made, as a GGUF file and as a safetensors directory (one tensor per
// expert), and runs both: the same seed gives the same weights, so the
// logits must agree, and the GGUF's must be the committed fixture's.
func TestSynthSafetensors(t *testing.T) {
	p, err := synth.FindPreset(gptoss.Family, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	ref := familytest.ReadRef(t, filepath.Join("testdata", "tiny-f32.ref.json"))
	n := len(ref.Logits)
	var logits [][]float32
	for _, format := range []string{"gguf", "safetensors"} {
		path := filepath.Join(t.TempDir(), "tiny."+format)
		if err := synth.Write(m, path, synth.Options{Format: format, Seed: 1, Scale: 0.25}); err != nil {
			t.Fatal(err)
		}
		ck, err := load.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer ck.Close()
		cm, err := registry.FromCheckpoint(ck)
		if err != nil {
			t.Fatal(err)
		}
		out, err := familytest.NewRunner(cm, familytest.LoadBinder(ck, cm.Weights())).Step(
			families.StepShape{Rows: 1, New: n, Capacity: 32, Logits: families.AllTokens}, ref.Tokens()[:n], familytest.Seq(0, n), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		logits = append(logits, out)
	}
	if d := familytest.MaxDiff32(logits[1], logits[0]); d > 1e-6 {
		t.Errorf("safetensors vs GGUF: max |Δlogit| %.3g", d)
	}
	vocab := m.Schema().Vocab
	for i := range n {
		if d := familytest.MaxDiff(logits[0][i*vocab:(i+1)*vocab], ref.Logits[i]); d > 1e-3 {
			t.Fatalf("position %d: the synthesised GGUF is not the fixture (max |Δlogit| %.3g vs llama.cpp)", i, d)
		}
	}
}

// TestSynthMXFP4 writes the MXFP4 fixture again as its README says: the
// bytes must be the committed file's, so the reference was taken on what
// poot synth --type mxfp4 writes (and the quantizer has not drifted).
func TestSynthMXFP4(t *testing.T) {
	p, err := synth.FindPreset(gptoss.Family, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny-mxfp4.gguf")
	if err := synth.Write(m, path, synth.Options{Type: poot.MXFP4, Seed: 1, Scale: 0.25}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "tiny-mxfp4.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("synth writes %d bytes that differ from the committed %d", len(got), len(want))
	}
}

// TestRealSizePreset configures the gpt-oss-20b preset: 24 layers
// alternating a window of 128 and full attention, and the published
// parameter count (20.9 billion, by OpenAI's model card).
func TestRealSizePreset(t *testing.T) {
	p, err := synth.FindPreset(gptoss.Family, "gpt-oss-20b")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	kinds := m.(families.Layered).LayerKinds()
	if len(kinds) != 24 || kinds[0] != "attention(window 128)+moe" || kinds[1] != "attention+moe" || kinds[23] != "attention+moe" {
		t.Errorf("layers %v", kinds)
	}
	var params int64
	for _, s := range familytest.Tensors(t, m) {
		params += s.Shape.Size()
	}
	if params < 20.8e9 || params > 21.0e9 {
		t.Errorf("%d parameters, want about 20.9 billion", params)
	}
	t.Logf("%d parameters", params)
}
