package quant

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
)

// fixtureDir holds ggml's own outputs (see its README): one file per
// format, each with the F32 source, ggml's quantization of it and ggml's
// dequantization of that.
const fixtureDir = "../../shared/refmodels/quant"

var fixtureFiles = []struct {
	file string
	t    poot.DType
}{
	{"quant-q8_0.gguf", poot.Q8_0},
	{"quant-q4_0.gguf", poot.Q4_0},
	{"quant-q4_1.gguf", poot.Q4_1},
	{"quant-q5_0.gguf", poot.Q5_0},
	{"quant-q5_1.gguf", poot.Q5_1},
	{"quant-q4_K.gguf", poot.Q4_K},
	{"quant-q5_K.gguf", poot.Q5_K},
	{"quant-q6_K.gguf", poot.Q6_K},
	{"quant-q8_K.gguf", poot.Q8_K},
	{"quant-f16.gguf", poot.F16},
	{"quant-bf16.gguf", poot.BF16},
}

const fixtureRows, fixtureCols = 16, 512

type fixture struct {
	source, dequantized []float32
	quantized           []byte
}

func loadFixture(t *testing.T, file string, dt poot.DType) fixture {
	t.Helper()
	path := filepath.Join(fixtureDir, file)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("fixture %s not present (%v); it comes from shared/refmodels/quant", path, err)
	}
	ts, err := readFixture(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 || ts[0].name != "source" || ts[1].name != "quantized" || ts[2].name != "dequantized" {
		t.Fatalf("%s: unexpected tensors %v", file, ts)
	}
	if got := ggmlTypes[ts[1].ggml]; got != dt {
		t.Fatalf("%s: quantized tensor is %v, want %v", file, got, dt)
	}
	return fixture{source: f32s(ts[0].bytes), quantized: ts[1].bytes, dequantized: f32s(ts[2].bytes)}
}

// TestFixtureDequantize checks DequantizeRow against ggml's to_float bit for
// bit, row by row, including the infinities that rows 13 of F16, Q4_1 and
// Q5_1 are meant to produce.
func TestFixtureDequantize(t *testing.T) {
	for _, f := range fixtureFiles {
		t.Run(f.t.String(), func(t *testing.T) {
			fx := loadFixture(t, f.file, f.t)
			rb := int(f.t.RowBytes(fixtureCols))
			got := make([]float32, fixtureCols)
			for r := range fixtureRows {
				if err := DequantizeRow(f.t, got, fx.quantized[r*rb:(r+1)*rb]); err != nil {
					t.Fatal(err)
				}
				want := fx.dequantized[r*fixtureCols : (r+1)*fixtureCols]
				bad := 0
				for c := range got {
					if math.Float32bits(got[c]) != math.Float32bits(want[c]) {
						if bad < 3 {
							t.Errorf("row %d col %d: got %g (%#08x), want %g (%#08x)", r, c,
								got[c], math.Float32bits(got[c]), want[c], math.Float32bits(want[c]))
						}
						bad++
					}
				}
				if bad > 3 {
					t.Errorf("row %d: %d mismatches in all", r, bad)
				}
			}
		})
	}
}

// TestFixtureQuantize checks QuantizeRow against ggml's reference quantizer
// byte for byte, row by row.
func TestFixtureQuantize(t *testing.T) {
	for _, f := range fixtureFiles {
		t.Run(f.t.String(), func(t *testing.T) {
			fx := loadFixture(t, f.file, f.t)
			rb := int(f.t.RowBytes(fixtureCols))
			be, bb := f.t.BlockElems(), f.t.BlockBytes()
			got := make([]byte, rb)
			for r := range fixtureRows {
				if err := QuantizeRow(f.t, got, fx.source[r*fixtureCols:(r+1)*fixtureCols]); err != nil {
					t.Fatal(err)
				}
				want := fx.quantized[r*rb : (r+1)*rb]
				if bytes.Equal(got, want) {
					continue
				}
				bad := 0
				for b := 0; b < rb/bb; b++ {
					g, w := got[b*bb:(b+1)*bb], want[b*bb:(b+1)*bb]
					if !bytes.Equal(g, w) {
						if bad < 2 {
							t.Errorf("row %d block %d (cols %d…): got\n% x\nwant\n% x", r, b, b*be, g, w)
						}
						bad++
					}
				}
				t.Errorf("row %d: %d of %d blocks differ", r, bad, rb/bb)
			}
			// Blocks are independent, so the whole matrix as one long row
			// must give the same bytes (ggml's whole-matrix route does).
			all := make([]byte, len(fx.quantized))
			if err := QuantizeRow(f.t, all, fx.source); err != nil || !bytes.Equal(all, fx.quantized) {
				t.Errorf("whole-matrix QuantizeRow differs from ggml (err %v)", err)
			}
		})
	}
}

// TestFixtureDotRow checks that DotRow on ggml's quantized rows equals the
// float64 dot of ggml's dequantized rows exactly.
func TestFixtureDotRow(t *testing.T) {
	for _, f := range fixtureFiles {
		t.Run(f.t.String(), func(t *testing.T) {
			fx := loadFixture(t, f.file, f.t)
			rb := int(f.t.RowBytes(fixtureCols))
			x := fx.source[:fixtureCols] // any finite activations will do
			for r := range fixtureRows {
				got, err := DotRow(f.t, fx.quantized[r*rb:(r+1)*rb], x)
				if err != nil {
					t.Fatal(err)
				}
				var want float64
				for c, w := range fx.dequantized[r*fixtureCols : (r+1)*fixtureCols] {
					want += float64(w) * float64(x[c])
				}
				if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Errorf("row %d: DotRow = %g, want %g", r, got, want)
				}
			}
		})
	}
}
