package qwen3next_test

import (
	"encoding/binary"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/qwen3next"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/quant"
	"github.com/pootlabs/poot/tensor"
)

var writeFixtures = flag.Bool("write-fixtures", false, "rewrite testdata from the synthesised files (see testdata/README.md)")

// open opens a GGUF file and configures its model through the registry.
func open(t *testing.T, path string) (*load.Checkpoint, *qwen3next.Model) {
	t.Helper()
	c, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m, err := registry.FromGGUF(c.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	qm, ok := m.(*qwen3next.Model)
	if !ok {
		t.Fatalf("%s configures a %T", path, m)
	}
	return c, qm
}

// rewrite copies the GGUF file src to dst (metadata as it is), each tensor
// replaced by what edit returns for it.
func rewrite(t *testing.T, src, dst string, edit func(info gguf.TensorInfo, data []byte) []gguf.WriterTensor) {
	t.Helper()
	rewriteKV(t, src, dst, func(kvs []gguf.KV) []gguf.KV { return kvs }, edit, nil)
}

// rewriteKV is rewrite with the metadata replaced by what kvs returns for
// it, and the tensors extra returns (when it is not nil) appended after the
// edited ones.
func rewriteKV(t *testing.T, src, dst string, kvs func([]gguf.KV) []gguf.KV, edit func(info gguf.TensorInfo, data []byte) []gguf.WriterTensor, extra func() []gguf.WriterTensor) {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []gguf.WriterTensor
	for _, info := range f.Tensors() {
		data, err := f.RawTensorData(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, edit(info, append([]byte(nil), data...))...)
	}
	if extra != nil {
		ts = append(ts, extra()...)
	}
	if err := gguf.WriteFile(dst+".tmp", kvs(slices.Clone(f.KVs())), ts, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		t.Fatal(err)
	}
}

func asIs(info gguf.TensorInfo, data []byte) gguf.WriterTensor {
	return gguf.WriterTensor{Name: info.Name, GGMLType: info.Type, Shape: info.Shape(), Data: data}
}

// splitLayout turns m's fused ssm_in (rows grouped by key head: q, k, then
// the head's values and gates) into llama.cpp's attn_qkv (every q row, then
// every k row, then every v row) and attn_gate, moving whole stored rows.
func splitLayout(m *qwen3next.Model) func(gguf.TensorInfo, []byte) []gguf.WriterTensor {
	ds, hk, per := m.StateSize, m.KeyHeads, m.ValueHeads/m.KeyHeads
	kd, vd := hk*ds, hk*per*ds
	return func(info gguf.TensorInfo, data []byte) []gguf.WriterTensor {
		name, ok := strings.CutSuffix(info.Name, ".ssm_in.weight")
		if !ok {
			return []gguf.WriterTensor{asIs(info, data)}
		}
		shape := info.Shape()
		rb := len(data) / shape[0]
		qkv, gate := make([]byte, (2*kd+vd)*rb), make([]byte, vd*rb)
		move := func(dst []byte, to, from, n int) { copy(dst[to*rb:(to+n)*rb], data[from*rb:(from+n)*rb]) }
		for g := range hk {
			base := g * (2*ds + 2*per*ds)
			move(qkv, g*ds, base, ds)
			move(qkv, kd+g*ds, base+ds, ds)
			move(qkv, 2*kd+g*per*ds, base+2*ds, per*ds)
			move(gate, g*per*ds, base+2*ds+per*ds, per*ds)
		}
		return []gguf.WriterTensor{
			{Name: name + ".attn_qkv.weight", GGMLType: info.Type, Shape: poot.Shape{2*kd + vd, shape[1]}, Data: qkv},
			{Name: name + ".attn_gate.weight", GGMLType: info.Type, Shape: poot.Shape{vd, shape[1]}, Data: gate},
		}
	}
}

// widen stores the F16 tensors that keep say so as F32 (the same values).
func widen(keep func(name string) bool) func(gguf.TensorInfo, []byte) []gguf.WriterTensor {
	return func(info gguf.TensorInfo, data []byte) []gguf.WriterTensor {
		if info.Type != gguf.GGMLTypeF16 || !keep(info.Name) {
			return []gguf.WriterTensor{asIs(info, data)}
		}
		v := make([]float32, len(data)/2)
		quant.F16RowToF32(v, data)
		out := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
		}
		return []gguf.WriterTensor{{Name: info.Name, DType: poot.F32, Shape: info.Shape(), Data: out}}
	}
}

// TestWriteFixtures rewrites the fixtures that are not synth's output as it
// is; it runs only with -write-fixtures (testdata/README.md). It keeps the
// F16 file's convolution filters F32, as llama.cpp's converter does (its
// CPU convolution reads only F32 filters); writes the split layout of the
// F32 file; and writes the F16 file with every tensor widened to F32, for
// a reference on exactly the F16 weights without llama.cpp's rounding of
// activations to F16.
func TestWriteFixtures(t *testing.T) {
	if !*writeFixtures {
		t.Skip("run with -write-fixtures to rewrite testdata")
	}
	rewrite(t, "testdata/tiny-f16.gguf", "testdata/tiny-f16.gguf", widen(func(name string) bool { return strings.HasSuffix(name, ".ssm_conv1d.weight") }))
	rewrite(t, "testdata/tiny-f16.gguf", "testdata/tiny-f16-widened.gguf", widen(func(string) bool { return true }))
	_, m := open(t, "testdata/tiny-f32.gguf")
	rewrite(t, "testdata/tiny-f32.gguf", "testdata/tiny-split-f32.gguf", splitLayout(m))
}

// TestSplitLayout: the fused and the split layouts of the same weights give
// the same logits, and the reader tells them apart.
func TestSplitLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "split.gguf")
	fc, fused := open(t, "testdata/tiny-f32.gguf")
	rewrite(t, "testdata/tiny-f32.gguf", path, splitLayout(fused))
	sc, split := open(t, path)
	if !fused.Fused || split.Fused {
		t.Fatalf("fused reads as Fused=%v, split as Fused=%v", fused.Fused, split.Fused)
	}
	n := len(toks)
	shape := families.StepShape{Rows: 1, New: n, Capacity: 16, Logits: families.AllTokens}
	want, err := familytest.NewRunner(fused, familytest.LoadBinder(fc, fused.Weights())).Step(shape, toks, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := familytest.NewRunner(split, familytest.LoadBinder(sc, split.Weights())).Step(shape, toks, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := familytest.MaxDiff32(got, want); d > 1e-5 {
		t.Errorf("split vs fused: max |Δlogit| %.3g", d)
	}
}

// fixtures are the llama.cpp references: Qwen3-Next's synthesised fused
// layout in F32 and F16 and the split layout of the F32 weights, and
// Qwen3.5 (dense and MoE) in F32 and F16. llama.cpp rounds
// the activations to F16 inside every product with an F16 weight, which
// with these weights (standard deviation 0.25) moves logits by up to 0.08;
// poot decodes the weight and keeps activations in F32. So the F16 file is
// held to llama.cpp's F16 run loosely, and to its run on the same weights
// widened to F32 (tiny-f16-widened.ref.json) as tightly as F32 files.
var fixtures = []struct {
	model, ref string
	fused      bool
	tol        float64
	cpu        bool // also run on the CPU backend
}{
	{"tiny-f32.gguf", "tiny-f32.ref.json", true, 1e-3, true},
	{"tiny-f16.gguf", "tiny-f16.ref.json", true, 0.1, false},
	{"tiny-f16.gguf", "tiny-f16-widened.ref.json", true, 1e-3, true},
	{"tiny-split-f32.gguf", "tiny-split-f32.ref.json", false, 1e-3, true},
	{"qwen35-f32.gguf", "qwen35-f32.ref.json", false, 1e-3, true},
	{"qwen35-f16.gguf", "qwen35-f16.ref.json", false, 0.1, false},
	{"qwen35-f16.gguf", "qwen35-f16-widened.ref.json", false, 1e-3, true},
	{"qwen35moe-f32.gguf", "qwen35moe-f32.ref.json", false, 1e-3, true},
	{"qwen35moe-f16.gguf", "qwen35moe-f16.ref.json", false, 0.1, false},
	{"qwen35moe-f16.gguf", "qwen35moe-f16-widened.ref.json", false, 1e-3, true},
}

// TestReference compares with llama.cpp's logits at every position and its
// greedy tokens, on the oracle and on the CPU backend, stepping the model
// directly and through the driver.
func TestReference(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.ref, func(t *testing.T) {
			c, m := open(t, filepath.Join("testdata", f.model))
			if m.Fused != f.fused {
				t.Fatalf("Fused = %v, want %v", m.Fused, f.fused)
			}
			ref := familytest.ReadRef(t, filepath.Join("testdata", f.ref))
			bind := familytest.LoadBinder(c, m.Weights())
			familytest.CheckReference(t, m, bind, ref, 32, f.tol, true)
			if f.cpu {
				checkCPU(t, m, bind, ref, f.tol)
				drivertest.CheckReference(t, filepath.Join("testdata", f.model), ref, f.tol)
			}
		})
	}
}

// checkCPU runs the reference tokens on the CPU backend, as one prefill
// and as a prompt prefill followed by one decode step a token, and
// compares every position's logits with llama.cpp's.
func checkCPU(t *testing.T, m families.Model, bind familytest.Binder, ref *familytest.Ref, tol float64) {
	t.Helper()
	vocab, toks, n := m.Schema().Vocab, ref.Tokens(), len(ref.Logits)
	var state *interp.State
	run := func(shape families.StepShape, tokens []int32, start int) []float32 {
		t.Helper()
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
		if state == nil {
			if state, err = interp.NewState(bg); err != nil {
				t.Fatal(err)
			}
		}
		tt, err1 := tensor.FromI32(poot.Shape{len(tokens)}, tokens)
		pt, err2 := tensor.FromI32(poot.Shape{len(tokens)}, familytest.Seq(start, len(tokens)))
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		out, err := x.Run(interp.Slots{"token": tt, "pos": pt}, state)
		if err != nil {
			t.Fatal(err)
		}
		return out[0].F32()
	}
	worst := 0.0
	compare := func(what string, got []float32, from int) {
		for i := range len(got) / vocab {
			d := familytest.MaxDiff(got[i*vocab:(i+1)*vocab], ref.Logits[from+i])
			worst = max(worst, d)
			if d > tol {
				t.Errorf("cpu %s, position %d: max |Δlogit| %.3g > %.3g", what, from+i, d, tol)
				return
			}
		}
	}
	compare("prefill", run(families.StepShape{Rows: 1, New: n, Capacity: 32, Logits: families.AllTokens}, toks[:n], 0), 0)
	state = nil
	np := len(ref.Prompt)
	compare("prompt", run(families.StepShape{Rows: 1, New: np, Capacity: 32, Logits: families.AllTokens}, toks[:np], 0), 0)
	for i := np; i < n; i++ {
		compare("decode", run(families.StepShape{Rows: 1, New: 1, Capacity: 32}, toks[i:i+1], i), i)
	}
	t.Logf("cpu: max |Δlogit| %.3g over %d positions", worst, n)
}

// TestSafetensors writes the F32 fixture as a Hugging Face checkpoint
// (norms without the folded one, A_log for A) and reads it back through
// config.json: the logits must be the GGUF file's.
func TestSafetensors(t *testing.T) {
	c, gm := open(t, "testdata/tiny-f32.gguf")
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
	if hm.Family() != "qwen3next" {
		t.Fatalf("family %q", hm.Family())
	}
	n := len(toks)
	shape := families.StepShape{Rows: 1, New: n, Capacity: 16, Logits: families.AllTokens}
	want, err := familytest.NewRunner(gm, familytest.LoadBinder(c, gm.Weights())).Step(shape, toks, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := familytest.NewRunner(hm, familytest.LoadBinder(hc, hm.Weights())).Step(shape, toks, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := familytest.MaxDiff32(got, want); d > 1e-4 {
		t.Errorf("safetensors vs GGUF: max |Δlogit| %.3g", d)
	}
	// Hugging Face stores the filters [channels, 1, taps], as poot writes
	// them too; [channels, taps] is accepted as well.
	if s, _ := hc.TensorShape("model.layers.0.linear_attn.conv1d.weight"); len(s) != 3 || s[1] != 1 {
		t.Errorf("the filters are written %v, want [channels 1 taps]", s)
	}
	if err := families.CheckTensors(hm, convAs2D{hc}); err != nil {
		t.Errorf("[channels, taps] filters: %v", err)
	}
	_, split := open(t, filepath.Join("testdata", "tiny-split-f32.gguf"))
	if _, err := split.HFConfig(); !errors.Is(err, families.ErrUnsupported) {
		t.Errorf("the split layout as config.json: got %v", err)
	}
}

// TestSynthSafetensors: synth's safetensors form of the tiny preset holds
// the weights its GGUF form holds, under the Hugging Face names (the fused
// in_proj_qkvz, one tensor per expert), so the model read from config.json
// gives the same logits bound to either.
func TestSynthSafetensors(t *testing.T) { checkSynthSafetensors(t, "qwen3next") }

// checkSynthSafetensors writes family's tiny preset in both formats and
// checks that the model read from config.json gives the same logits bound
// to the safetensors directory and to the GGUF file's values.
func checkSynthSafetensors(t *testing.T, family string) {
	t.Helper()
	p, err := synth.FindPreset(family, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, gg := filepath.Join(dir, "hf"), filepath.Join(dir, "model.gguf")
	for path, format := range map[string]string{st: "safetensors", gg: "gguf"} {
		if err := synth.Write(m, path, synth.Options{Format: format, Seed: 5, Scale: 0.25}); err != nil {
			t.Fatal(err)
		}
	}
	hc, err := load.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	hm, err := registry.FromHF(hc.HFConfig())
	if err != nil {
		t.Fatal(err)
	}
	if hm.Family() != family {
		t.Fatalf("synth's %s safetensors read as %s", family, hm.Family())
	}
	gc, err := load.Open(gg)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	values := map[string][]float32{}
	for _, s := range familytest.Tensors(t, hm) {
		if values[s.Name], err = familytest.GGUFValues(gc.GGUF())(s.Name); err != nil {
			t.Fatal(err)
		}
	}
	n := len(toks)
	shape := families.StepShape{Rows: 1, New: n, Capacity: 16, Logits: families.AllTokens}
	want, err := familytest.NewRunner(hm, familytest.MapBinder(values)).Step(shape, toks, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := familytest.NewRunner(hm, familytest.LoadBinder(hc, hm.Weights())).Step(shape, toks, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := familytest.MaxDiff32(got, want); d != 0 {
		t.Errorf("synth safetensors vs synth GGUF values: max |Δlogit| %.3g", d)
	}
}

// convAs2D is a checkpoint's tensor table with the convolution filters
// shaped as GGUF stores them.
type convAs2D struct{ *load.Checkpoint }

func (c convAs2D) TensorShape(name string) (poot.Shape, bool) {
	s, ok := c.Checkpoint.TensorShape(name)
	if strings.HasSuffix(name, "conv1d.weight") && len(s) == 3 {
		s = poot.Shape{s[0], s[2]}
	}
	return s, ok
}
