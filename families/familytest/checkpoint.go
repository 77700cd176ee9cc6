package familytest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/safetensors"
	"github.com/pootlabs/poot/tensor"
)

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func f32bytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

// WriteHF writes model m as a Hugging Face safetensors directory under a
// temporary folder, reading each canonical tensor's F32 values from get,
// and returns the folder.
func WriteHF(t testing.TB, m families.Model, get func(name string) ([]float32, error)) string {
	t.Helper()
	hw, ok := m.(families.HFWriter)
	if !ok {
		t.Fatalf("%s models cannot write Hugging Face checkpoints", m.Family())
	}
	cfg, err := hw.HFConfig()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := m.Weights().In(families.Safetensors)
	var ts []safetensors.WriterTensor
	var views []families.TensorSpec
	hfValue := func(name string) ([]float32, error) {
		v, err := get(name)
		if err != nil {
			return nil, err
		}
		return hw.HFTensor(name, append([]float32(nil), v...)), nil
	}
	for _, spec := range Tensors(t, m) {
		if _, ok := w.View(spec.Name); ok {
			views = append(views, spec)
			continue
		}
		v, err := hfValue(spec.Name)
		if err != nil {
			t.Fatal(err)
		}
		if parts := w.Parts(spec.Name); parts != nil {
			per := len(v) / len(parts)
			for e, p := range parts {
				ts = append(ts, safetensors.WriterTensor{Name: p, DType: "F32", Shape: spec.Shape[1:].Clone(), Data: f32bytes(v[e*per : (e+1)*per])})
			}
			continue
		}
		stored, ok := w.Stored(spec.Name)
		if !ok {
			t.Fatalf("no Hugging Face name for %q", spec.Name)
		}
		ts = append(ts, safetensors.WriterTensor{Name: stored, DType: "F32", Shape: spec.Shape.Clone(), Data: f32bytes(v)})
	}
	fused, err := w.Fuse(views, hfValue)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fused {
		ts = append(ts, safetensors.WriterTensor{Name: f.Name, DType: "F32", Shape: f.Shape, Data: f32bytes(f.Data)})
	}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := safetensors.WriteDir(dir, js, ts, 0); err != nil {
		t.Fatal(err)
	}
	return dir
}

// GGUFValues reads canonical F32 tensors of a GGUF file.
func GGUFValues(f *gguf.File) func(name string) ([]float32, error) {
	return func(name string) ([]float32, error) {
		info, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("tensor %q not in the file", name)
		}
		if info.Type != gguf.GGMLTypeF32 {
			return nil, fmt.Errorf("tensor %q is %v, not f32", name, info.Type)
		}
		b, err := f.TensorData(name)
		if err != nil {
			return nil, err
		}
		return f32s(b), nil
	}
}

// Synth returns random weights for m's tensors: N(0, 0.02) matrices and
// biases, norms 1 + N(0, 0.1), from a fixed seed.
func Synth(t testing.TB, m families.Model, seed uint64) map[string][]float32 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	out := map[string][]float32{}
	for _, s := range Tensors(t, m) {
		v := make([]float32, s.Shape.Size())
		for i := range v {
			switch s.Role {
			case "norm":
				v[i] = float32(1 + 0.1*rng.NormFloat64())
			case "rope_freqs":
				v[i] = 1
			default:
				v[i] = float32(0.02 * rng.NormFloat64())
			}
		}
		out[s.Name] = v
	}
	return out
}

// Tensors returns families.Tensors(m), failing the test on an error.
func Tensors(t testing.TB, m families.Model) []families.TensorSpec {
	t.Helper()
	ts, err := families.Tensors(m)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// MapValues serves the tensors of a map.
func MapValues(m map[string][]float32) func(name string) ([]float32, error) {
	return func(name string) ([]float32, error) {
		v, ok := m[name]
		if !ok {
			return nil, fmt.Errorf("no tensor %q", name)
		}
		return v, nil
	}
}

// MapBinder binds a graph's constants to F32 values by canonical name.
func MapBinder(m map[string][]float32) Binder {
	return func(g *poot.Graph) (*poot.Graph, interp.Consts, error) {
		consts := interp.ConstMap{}
		for _, id := range g.Inputs(poot.Const) {
			v := g.Value(id)
			data, ok := m[v.Name]
			if !ok {
				return nil, nil, fmt.Errorf("no tensor %q", v.Name)
			}
			t, err := tensor.FromF32(v.Type.Shape, data)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", v.Name, err)
			}
			consts[v.Name] = t
		}
		return g, consts, nil
	}
}

// WriteGGUF writes an F32 GGUF file with the given metadata and m's tensors
// from values, returning its path.
func WriteGGUF(t testing.TB, m families.Model, kvs []gguf.KV, values map[string][]float32) string {
	t.Helper()
	var ts []gguf.WriterTensor
	for _, s := range Tensors(t, m) {
		ts = append(ts, gguf.WriterTensor{Name: s.Name, DType: poot.F32, Shape: s.Shape.Clone(), Data: f32bytes(values[s.Name])})
	}
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := gguf.WriteFile(path, kvs, ts, 0); err != nil {
		t.Fatal(err)
	}
	return path
}

// LoadBinder binds through load.Bind: constants retyped to their stored
// dtypes (F16, packed), per-expert tensors stacked.
func LoadBinder(c *load.Checkpoint, w families.WeightMap) Binder {
	return func(g *poot.Graph) (*poot.Graph, interp.Consts, error) {
		bg, consts, err := load.Bind(g, c, w.Resolver())
		if err != nil {
			return nil, nil, err
		}
		return bg, interp.ConstMap(consts), nil
	}
}

// Open opens a checkpoint with the loader, closing it with the test: name
// is a reference model's file name in Dir, or any path to a GGUF file or
// safetensors directory.
func Open(t testing.TB, name string) *load.Checkpoint {
	t.Helper()
	path := name
	if _, err := os.Stat(name); err != nil || !strings.ContainsRune(name, filepath.Separator) {
		path = filepath.Join(Dir(t), name)
	}
	c, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
