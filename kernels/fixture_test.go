package kernels_test

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// The fixtures are ggml's own quantizations and dequantizations (see the
// README next to them); they tie this package's reading of the block layouts
// to ggml's rather than to the test's.
const fixtureDir = "../../shared/refmodels/quant"

// readGGUFTensors returns the data of each tensor of a small GGUF v3 file by
// name. It reads just enough of the format for the fixtures.
func readGGUFTensors(b []byte) (map[string][]byte, error) {
	p := 0
	errShort := errors.New("truncated gguf")
	u32 := func() (uint32, error) {
		if p+4 > len(b) {
			return 0, errShort
		}
		v := binary.LittleEndian.Uint32(b[p:])
		p += 4
		return v, nil
	}
	u64 := func() (uint64, error) {
		if p+8 > len(b) {
			return 0, errShort
		}
		v := binary.LittleEndian.Uint64(b[p:])
		p += 8
		return v, nil
	}
	str := func() (string, error) {
		n, err := u64()
		if err != nil || uint64(len(b)-p) < n {
			return "", errShort
		}
		s := string(b[p : p+int(n)])
		p += int(n)
		return s, nil
	}
	sizes := map[uint32]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	var skip func(typ uint32) error
	skip = func(typ uint32) error {
		switch typ {
		case 8:
			_, err := str()
			return err
		case 9:
			et, err := u32()
			if err != nil {
				return err
			}
			n, err := u64()
			if err != nil {
				return err
			}
			for range n {
				if err := skip(et); err != nil {
					return err
				}
			}
			return nil
		}
		sz, ok := sizes[typ]
		if !ok || p+sz > len(b) {
			return errors.New("bad gguf value")
		}
		p += sz
		return nil
	}
	if len(b) < 4 || string(b[:4]) != "GGUF" {
		return nil, errors.New("not gguf")
	}
	p = 4
	if _, err := u32(); err != nil {
		return nil, err
	}
	nt, err := u64()
	if err != nil {
		return nil, err
	}
	nkv, err := u64()
	if err != nil {
		return nil, err
	}
	for range nkv {
		if _, err := str(); err != nil {
			return nil, err
		}
		typ, err := u32()
		if err != nil {
			return nil, err
		}
		if err := skip(typ); err != nil {
			return nil, err
		}
	}
	type info struct {
		name       string
		ggml       uint32
		elems, off uint64
	}
	var infos []info
	for range nt {
		name, err := str()
		if err != nil {
			return nil, err
		}
		nd, err := u32()
		if err != nil {
			return nil, err
		}
		elems := uint64(1)
		for range nd {
			d, err := u64()
			if err != nil {
				return nil, err
			}
			elems *= d
		}
		typ, err := u32()
		if err != nil {
			return nil, err
		}
		off, err := u64()
		if err != nil {
			return nil, err
		}
		infos = append(infos, info{name, typ, elems, off})
	}
	base := (p + 31) &^ 31
	out := map[string][]byte{}
	for i, in := range infos {
		end := len(b)
		if i+1 < len(infos) {
			end = base + int(infos[i+1].off)
		}
		if base+int(in.off) > end || end > len(b) {
			return nil, errShort
		}
		out[in.name] = b[base+int(in.off) : end]
	}
	return out, nil
}

func TestFixtures(t *testing.T) {
	files := map[poot.DType]string{
		poot.Q8_0: "quant-q8_0.gguf", poot.Q4_0: "quant-q4_0.gguf", poot.Q4_1: "quant-q4_1.gguf",
		poot.Q5_0: "quant-q5_0.gguf", poot.Q5_1: "quant-q5_1.gguf", poot.Q4_K: "quant-q4_K.gguf",
		poot.Q5_K: "quant-q5_K.gguf", poot.Q6_K: "quant-q6_K.gguf", poot.F16: "quant-f16.gguf",
		poot.BF16: "quant-bf16.gguf", poot.MXFP4: "quant-mxfp4.gguf",
	}
	const rows, cols = 16, 512
	for _, dt := range matDTypes {
		file, ok := files[dt]
		if !ok {
			continue
		}
		t.Run(dt.String(), func(t *testing.T) {
			dir := fixtureDir
			if dt == poot.MXFP4 {
				dir = filepath.Join("..", "quant", "testdata") // ggml's MXFP4 output lives with package quant
			}
			data, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Skipf("fixture not present: %v", err)
			}
			ts, err := readGGUFTensors(data)
			if err != nil {
				t.Fatal(err)
			}
			rb := int(dt.RowBytes(cols))
			w, deq := ts["quantized"], ts["dequantized"]
			if len(w) < rows*rb || len(deq) < rows*cols*4 {
				t.Fatalf("fixture tensors have %d and %d bytes", len(w), len(deq))
			}
			ggml := make([]float64, rows*cols)
			for i := range ggml {
				ggml[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(deq[4*i:])))
			}
			// The test's own dequantizer agrees with ggml's (to f32 rounding:
			// ggml rounds intermediate products).
			for r := range rows {
				mine := refDequant(dt, w[r*rb:(r+1)*rb], cols)
				for c := range cols {
					g := ggml[r*cols+c]
					if math.IsInf(g, 0) {
						continue
					}
					if math.Abs(mine[c]-g) > 1e-6*math.Abs(g)+1e-30 {
						t.Fatalf("row %d col %d: reference dequantizes to %g, ggml to %g", r, c, mine[c], g)
					}
				}
			}
			// The kernels, both ways, against ggml's dequantized values.
			const T = 5
			x := randActs(rand.New(rand.NewPCG(1, 2)), T*cols)
			modes(t, func(t *testing.T) {
				var a kernels.Acts
				if err := a.Prepare(dt, x, T, cols); err != nil {
					t.Fatal(err)
				}
				y := make([]float32, T*rows)
				if err := kernels.MatMulRows(dt, y, rows, w, &a, 0, rows); err != nil {
					t.Fatal(err)
				}
				want, bound := refProduct(dt, w, x, T, rows, cols)
				for r := range rows {
					finite := true
					var exact float64
					for c := range cols {
						finite = finite && !math.IsInf(ggml[r*cols+c], 0)
					}
					if !finite {
						continue // rows 13 of F16, Q4_1 and Q5_1 are meant to hold infinities
					}
					for tt := range T {
						exact = 0
						for c := range cols {
							exact += ggml[r*cols+c] * float64(x[tt*cols+c])
						}
						i := tt*rows + r
						if d := math.Abs(float64(y[i]) - exact); !(d <= bound[i]+1e-6*math.Abs(want[i])) {
							t.Fatalf("row %d act %d: %g, ggml's weights give %g (bound %g)", r, tt, y[i], exact, bound[i])
						}
					}
				}
			})
		})
	}
}
