package familytest

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/tensor"
)

// OpenTestdata opens a checkpoint under the package's testdata folder,
// closing it with the test.
func OpenTestdata(t testing.TB, name string) *load.Checkpoint {
	t.Helper()
	c, err := load.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// CheckReferenceOn runs one prefill of ref's tokens (logits at every
// position) on the interpreter in, a backend such as the CPU planner, and
// compares every position with llama.cpp's logits within tol; each greedy
// token llama.cpp chose must be the argmax of the logits before it. It
// returns the largest difference.
func CheckReferenceOn(t *testing.T, in interp.Interpreter, m families.Model, bind Binder, ref *Ref, capacity int, tol float64) float64 {
	t.Helper()
	toks := ref.Tokens()
	n, vocab := len(ref.Logits), m.Schema().Vocab
	g, err := m.Trace(families.StepSpec{Program: "test", Shape: families.StepShape{Rows: 1, New: n, Capacity: capacity, Logits: families.AllTokens}}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bg, consts, err := bind(g)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := in.Compile(bg, consts)
	if err != nil {
		t.Fatal(err)
	}
	state, err := interp.NewState(bg)
	if err != nil {
		t.Fatal(err)
	}
	tt, err1 := tensor.FromI32(poot.Shape{n}, toks[:n])
	pt, err2 := tensor.FromI32(poot.Shape{n}, Seq(0, n))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	out, err := exe.Run(interp.Slots{"token": tt, "pos": pt}, state)
	if err != nil {
		t.Fatal(err)
	}
	logits := out[0].F32()
	worst := 0.0
	for i := range n {
		d := MaxDiff(logits[i*vocab:(i+1)*vocab], ref.Logits[i])
		worst = max(worst, d)
		if d > tol {
			t.Errorf("%s: position %d: max |Δlogit| %.3g > %.3g", in.Name(), i, d, tol)
		}
	}
	np := len(ref.Prompt)
	for i, want := range ref.Generated {
		if p := np - 1 + i; p < n {
			if got := ArgMax(logits[p*vocab : (p+1)*vocab]); got != want {
				t.Errorf("%s: greedy token %d: argmax %d, llama.cpp %d", in.Name(), i, got, want)
			}
		}
	}
	t.Logf("%s: %s: %d positions: max|Δ| %.3g", in.Name(), ref.Model, n, worst)
	return worst
}

// LogitsOn runs one prefill of toks on the interpreter in (the oracle when
// nil) and returns the logits of every position.
func LogitsOn(t testing.TB, in interp.Interpreter, m families.Model, bind Binder, toks []int32, capacity int) [][]float32 {
	t.Helper()
	r := NewRunner(m, bind)
	r.Interp = in
	n := len(toks)
	flat, err := r.Step(families.StepShape{Rows: 1, New: n, Capacity: capacity, Logits: families.AllTokens}, toks, Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = flat[i*len(flat)/n : (i+1)*len(flat)/n]
	}
	return rows
}

// EditGGUF returns the bytes of a GGUF file with the metadata kvs (f.KVs()
// edited, say) and f's tensors, stored as they are, passed through edit
// when it is not nil (to drop or add some).
func EditGGUF(t testing.TB, f *gguf.File, kvs []gguf.KV, edit func([]gguf.WriterTensor) []gguf.WriterTensor) []byte {
	t.Helper()
	var ts []gguf.WriterTensor
	for _, info := range f.Tensors() {
		data, err := f.RawTensorData(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, gguf.WriterTensor{Name: info.Name, GGMLType: info.Type, Shape: info.Shape(), Data: data})
	}
	if edit != nil {
		ts = edit(ts)
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kvs, ts, f.Alignment()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ParseGGUF parses GGUF bytes, failing the test on an error.
func ParseGGUF(t testing.TB, data []byte) *gguf.File {
	t.Helper()
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// HalfActivations wraps bind so that every contraction (MatMul, and the
// experts' IndexedMatMul) whose weight is stored F16 reads its activations rounded to F16 first, as ggml's CPU
// backend computes (it converts the activations to the weight's type
// before its dot products). poot keeps activations in F32, so on F16
// checkpoints it differs from llama.cpp by that rounding, about 1e-3 of
// the logits' range; with the rounding the two agree to float noise again,
// which is what a reference test of an F16 file can then demand. Run the
// result on the oracle: it rewrites the bodies of the linear composites,
// which a backend may replace by its own kernels.
func HalfActivations(bind Binder) Binder {
	return func(g *poot.Graph) (*poot.Graph, interp.Consts, error) {
		bg, consts, err := bind(g)
		if err != nil {
			return nil, nil, err
		}
		eqns := bg.Eqns()
		for i := len(eqns) - 1; i >= 0; i-- {
			e := eqns[i]
			if (e.Op != poot.MatMul && e.Op != poot.IndexedMatMul) || e.Inputs[0] == e.Inputs[1] {
				continue
			}
			if w := bg.Value(e.Inputs[1]); w.Kind != poot.Const || w.Type.DType != poot.F16 {
				continue
			}
			bg, err = bg.Replace(i, i+1, func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
				x := b.Cast(b.Cast(in[0], poot.F16), poot.F32)
				if e.Op == poot.IndexedMatMul {
					return []poot.Traced[poot.Rewrite]{b.IndexedMatMul(x, in[1], in[2])}
				}
				return []poot.Traced[poot.Rewrite]{b.MatMul(x, in[1])}
			})
			if err != nil {
				return nil, nil, err
			}
		}
		return bg, consts, nil
	}
}
