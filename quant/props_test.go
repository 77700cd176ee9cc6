package quant

import (
	"errors"
	"math"
	"testing"

	"github.com/pootlabs/poot"
	"pgregory.net/rapid"
)

var allTypes = []poot.DType{
	poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0,
	poot.Q5_1, poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.Q8_K, poot.MXFP4,
}

// errorBound is the largest |x − dequantize(quantize(x))| allowed, as a
// fraction of the largest |x| in the element's block (for F16, BF16, F32:
// of |x| itself). Each is the format's half-step at full scale, widened for
// the binary16 rounding of scales and minimums and, for the K-quants, for
// the 6- or 8-bit sub-block scales (the K-quant bounds are two to four times the
// worst seen in thousands of rapid runs); they are loose enough for every input
// and tight enough to catch a misplaced nibble or a wrong scale. MXFP4's
// scale puts the block maximum in [4, 8) element steps, where the levels 4
// and 6 are 2 apart and 6 is the clamp: a quarter of the maximum at worst.
var errorBound = map[poot.DType]float64{
	poot.F32:   0,
	poot.F16:   1.0 / 2048,
	poot.BF16:  1.0 / 256,
	poot.Q8_0:  0.5/127 + 1.0/2048,
	poot.Q4_0:  1.0/8 + 1.0/2048,
	poot.Q5_0:  1.0/16 + 1.0/2048,
	poot.Q4_1:  1.0/15 + 4.0/2048,
	poot.Q5_1:  1.0/31 + 4.0/2048,
	poot.Q4_K:  0.25,
	poot.Q5_K:  0.125,
	poot.Q6_K:  0.0625,
	poot.Q8_K:  0.5/127 + 1e-6,
	poot.MXFP4: 0.25,
}

// errorSlack is an absolute error allowed on top of errorBound: a binary16
// scale is only good to 2^-25 in absolute terms (it may even underflow to
// zero), and that error is multiplied by the largest level it scales.
var errorSlack = map[poot.DType]float64{
	poot.F16:  0x1p-25,
	poot.Q8_0: 128 * 0x1p-25,
	poot.Q4_0: 16 * 0x1p-25,
	poot.Q5_0: 32 * 0x1p-25,
	poot.Q4_1: 32 * 0x1p-25,
	poot.Q5_1: 64 * 0x1p-25,
	poot.Q4_K: 2 * 64 * 32 * 0x1p-25,
	poot.Q5_K: 2 * 64 * 32 * 0x1p-25,
	poot.Q6_K: 128 * 32 * 0x1p-25,
}

// genRow draws a row of whole blocks of t with values inside the binary16
// range, at a random magnitude, with some exact zeros. Magnitudes below
// 1e-20 are flushed to zero: ggml's scale arithmetic overflows to inf on
// float32 subnormals, which TestQuantizeArbitraryFloats covers for panics.
func genRow(t *rapid.T, dt poot.DType) []float32 {
	be := dt.BlockElems()
	n := be * rapid.IntRange(1, 3).Draw(t, "blocks")
	if be == 1 {
		n = rapid.IntRange(1, 64).Draw(t, "elems")
	}
	mag := math.Pow(10, rapid.Float64Range(-1, 4).Draw(t, "log10mag"))
	scaled := func(v float64) float32 {
		if math.Abs(v*mag) < 1e-20 {
			return 0
		}
		return float32(v * mag)
	}
	elem := rapid.OneOf(
		rapid.Map(rapid.Float64Range(-1, 1), scaled),
		rapid.Map(rapid.Float64Range(0, 1), scaled),
		rapid.Just(float32(0)),
	)
	return rapid.SliceOfN(elem, n, n).Draw(t, "x")
}

// TestQuantizeErrorBound: quantizing then dequantizing stays within the
// format's error bound of every element.
func TestQuantizeErrorBound(t *testing.T) {
	for _, dt := range allTypes {
		t.Run(dt.String(), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				x := genRow(t, dt)
				q := make([]byte, dt.RowBytes(int64(len(x))))
				if err := QuantizeRow(dt, q, x); err != nil {
					t.Fatal(err)
				}
				y := make([]float32, len(x))
				if err := DequantizeRow(dt, y, q); err != nil {
					t.Fatal(err)
				}
				be := dt.BlockElems()
				for b := 0; b < len(x); b += be {
					var amax float64
					for _, v := range x[b : b+be] {
						amax = math.Max(amax, math.Abs(float64(v)))
					}
					for i := b; i < b+be; i++ {
						e := math.Abs(float64(x[i]) - float64(y[i]))
						if e > errorBound[dt]*amax+errorSlack[dt] || math.IsNaN(e) {
							t.Fatalf("element %d: %g became %g, error %.3g of block max %g (bound %.3g)",
								i, x[i], y[i], e/amax, amax, errorBound[dt])
						}
					}
				}
			})
		})
	}
}

// TestQuantizeWritesEveryByte: the output does not depend on what dst held
// before, so quantized files are reproducible.
func TestQuantizeWritesEveryByte(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dt := rapid.SampledFrom(allTypes).Draw(t, "dtype")
		x := genRow(t, dt)
		if rapid.Bool().Draw(t, "zeroBlock") {
			clear(x[:dt.BlockElems()])
		}
		size := dt.RowBytes(int64(len(x)))
		a := make([]byte, size)
		b := rapid.SliceOfN(rapid.Byte(), int(size), int(size)).Draw(t, "garbage")
		if QuantizeRow(dt, a, x) != nil || QuantizeRow(dt, b, x) != nil {
			t.Fatal("QuantizeRow failed")
		}
		if string(a) != string(b) {
			t.Fatalf("output depends on dst's previous contents")
		}
	})
}

// TestDequantizeArbitraryBytes: any bytes of the right size decode without
// panicking, and DotRow agrees with the float64 dot of DequantizeRow.
func TestDequantizeArbitraryBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dt := rapid.SampledFrom(allTypes).Draw(t, "dtype")
		n := dt.BlockElems() * rapid.IntRange(0, 5).Draw(t, "blocks")
		size := int(dt.RowBytes(int64(n)))
		src := rapid.SliceOfN(rapid.Byte(), size, size).Draw(t, "src")
		y := make([]float32, n)
		if err := DequantizeRow(dt, y, src); err != nil {
			t.Fatal(err)
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = rapid.Float32Range(-10, 10).Draw(t, "x")
		}
		got, err := DotRow(dt, src, x)
		if err != nil {
			t.Fatal(err)
		}
		var want float64
		for i := range y {
			want += float64(y[i]) * float64(x[i])
		}
		if !(got == want || math.IsNaN(got) && math.IsNaN(want) ||
			math.Abs(got-want) <= 1e-9*math.Abs(want)) {
			t.Fatalf("DotRow = %g, dot of DequantizeRow = %g", got, want)
		}
	})
}

// TestQuantizeArbitraryFloats: quantizing any float32s, NaN and ±inf
// included, does not panic and decodes without panicking.
func TestQuantizeArbitraryFloats(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dt := rapid.SampledFrom(allTypes).Draw(t, "dtype")
		n := dt.BlockElems() * rapid.IntRange(1, 2).Draw(t, "blocks")
		bits := rapid.SliceOfN(rapid.Uint32(), n, n).Draw(t, "bits")
		x := make([]float32, n)
		for i, u := range bits {
			x[i] = math.Float32frombits(u)
		}
		q := make([]byte, dt.RowBytes(int64(n)))
		if err := QuantizeRow(dt, q, x); err != nil {
			t.Fatal(err)
		}
		if err := DequantizeRow(dt, x, q); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSizeErrors: wrong sizes and unsupported types are reported as typed
// errors that name the dtype, never as panics.
func TestSizeErrors(t *testing.T) {
	cases := []struct {
		name     string
		dt       poot.DType
		elems    int
		stored   int
		sentinel error
	}{
		{"ragged q4_0", poot.Q4_0, 33, 18, ErrSize},
		{"ragged q6_K", poot.Q6_K, 255, 210, ErrSize},
		{"short src", poot.Q8_0, 64, 67, ErrSize},
		{"long src", poot.Q5_K, 256, 177, ErrSize},
		{"f16 odd bytes", poot.F16, 3, 5, ErrSize},
		{"i32", poot.I32, 4, 16, ErrUnsupported},
		{"bool", poot.Bool, 4, 4, ErrUnsupported},
		{"invalid", poot.Invalid, 0, 0, ErrUnsupported},
		{"out of range", poot.DType(200), 1, 1, ErrUnsupported},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := make([]float32, c.elems)
			b := make([]byte, c.stored)
			errs := []error{DequantizeRow(c.dt, f, b), QuantizeRow(c.dt, b, f)}
			_, err := DotRow(c.dt, b, f)
			errs = append(errs, err)
			for _, err := range errs {
				var qe *Error
				if !errors.Is(err, c.sentinel) || !errors.As(err, &qe) || qe.DType != c.dt {
					t.Fatalf("got %v, want an *Error for %v wrapping %v", err, c.dt, c.sentinel)
				}
			}
			t.Log(errs[0])
		})
	}
	for _, dt := range allTypes {
		if !Supported(dt) || DequantizeRow(dt, nil, nil) != nil {
			t.Errorf("%v: empty row should be fine", dt)
		}
	}
}

// TestNoAllocs: the row functions allocate nothing, so the oracle can call
// DotRow once per output element.
func TestNoAllocs(t *testing.T) {
	for _, dt := range allTypes {
		x := make([]float32, 512)
		for i := range x {
			x[i] = float32(i%17) - 8
		}
		w := make([]byte, dt.RowBytes(512))
		y := make([]float32, 512)
		n := testing.AllocsPerRun(20, func() {
			_ = QuantizeRow(dt, w, x)
			_ = DequantizeRow(dt, y, w)
			_, _ = DotRow(dt, w, x)
		})
		if n != 0 {
			t.Errorf("%v: %v allocations per run", dt, n)
		}
	}
}
