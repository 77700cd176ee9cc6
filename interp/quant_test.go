package interp_test

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/tensor"
)

const fixtureDir = "../../shared/refmodels/quant"

// matmulGraph is x[M,K] · w[N,K]ᵀ with w of type wt.
func matmulGraph(t testing.TB, m int, wt poot.TensorType) *poot.Graph {
	t.Helper()
	b := poot.NewBuilder[unit](poot.Limits{})
	x := b.Constant("x", poot.T(poot.F32, m, wt.Shape[1]))
	w := b.Constant("w", wt)
	g, err := b.Finish(poot.Out(b.MatMul(x, w)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestPackedContractionMatchesGGML contracts random activations with each
// packed (and half) matrix of the llama.cpp fixtures and compares with the
// same contraction over ggml's dequantized matrix, summed in float64: they
// must agree to float64 rounding; since both sum the same exact products
// in element order, they agree bit for bit.
func TestPackedContractionMatchesGGML(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "quant-*.gguf"))
	if len(files) == 0 {
		t.Skipf("no fixtures in %s", fixtureDir)
	}
	// ggml's MXFP4 output is kept with package quant (see its testdata/README.md).
	files = append(files, filepath.Join("..", "quant", "testdata", "quant-mxfp4.gguf"))
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			info, _ := f.Tensor("quantized")
			wt, err := info.TensorType()
			if err != nil {
				t.Fatal(err)
			}
			qb, err := f.TensorData("quantized")
			if err != nil {
				t.Fatal(err)
			}
			db, err := f.TensorData("dequantized")
			if err != nil {
				t.Fatal(err)
			}
			w, err := tensor.View(wt, qb)
			if err != nil {
				t.Fatal(err)
			}
			deq, err := tensor.View(poot.T(poot.F32, wt.Shape...), db)
			if err != nil {
				t.Fatal(err)
			}
			n, k := wt.Shape[0], wt.Shape[1]
			const m = 3
			rng := rand.New(rand.NewPCG(3, 4))
			xs := make([]float32, m*k)
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
			x := f32(poot.Shape{m, k}, xs...)
			out, err := interp.Eval(matmulGraph(t, m, wt), interp.ConstMap{"x": x, "w": w}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := out[0].F32()
			dw := deq.F32()
			for i := range m {
				for j := range n {
					var s, mag float64
					for c := range k {
						p := float64(xs[i*k+c]) * float64(dw[j*k+c])
						s += p
						mag += math.Abs(p)
					}
					// The same exact products summed in the same order: the
					// results must be identical.
					want, g := float32(s), got[i*n+j]
					if math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
						t.Fatalf("row %d col %d: got %v, want %v (Σ|x·w| %g)", i, j, g, want, mag)
					}
				}
			}
		})
	}
}

// BenchmarkOracleMatVec is one 4096×4096 matrix-vector product, reporting
// the weight bytes read per second.
func BenchmarkOracleMatVec(b *testing.B) {
	const n = 4096
	for _, d := range []poot.DType{poot.F32, poot.Q8_0} {
		b.Run(d.String(), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			ws := make([]float32, n*n)
			for i := range ws {
				ws[i] = float32(rng.NormFloat64())
			}
			wt := poot.T(d, n, n)
			w, err := tensor.Quantize(wt, ws)
			if err != nil {
				b.Fatal(err)
			}
			x := f32(poot.Shape{1, n}, ws[:n]...)
			prog, err := interp.Compile(matmulGraph(b, 1, wt), interp.ConstMap{"x": x, "w": w})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(wt.Bytes())
			b.ResetTimer()
			for b.Loop() {
				if _, err := prog.Run(nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(wt.Bytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
