package load

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/quant"
)

func TestScanData(t *testing.T) {
	f32 := func(vs ...float32) []byte {
		b := make([]byte, 4*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	// A Q4_K block whose dmin is +Inf (f16 0x7c00), after a good block.
	q4k := make([]byte, 2*poot.Q4_K.BlockBytes())
	quant.QuantizeRow(poot.Q4_K, q4k[:144], make([]float32, 256))
	binary.LittleEndian.PutUint16(q4k[144+2:], 0x7c00)
	// A Q6_K block with its scale (the last two bytes) NaN.
	q6k := make([]byte, poot.Q6_K.BlockBytes())
	binary.LittleEndian.PutUint16(q6k[208:], 0x7e00)
	// MXFP4 blocks with the exponents 254 (2^127, finite) and 255 (NaN).
	mx := make([]byte, 3*poot.MXFP4.BlockBytes())
	mx[17], mx[34] = 254, 255
	mx[35] = 0xff // codes do not matter
	q80 := make([]byte, 3*poot.Q8_0.BlockBytes())
	binary.LittleEndian.PutUint16(q80[2*34:], 0xfc00) // -Inf in block 2
	cases := []struct {
		name    string
		dt      poot.DType
		data    []byte
		checked int64
		bad     int64
		first   int64
	}{
		{"f32 clean", poot.F32, f32(1, 2, 3), 3, 0, -1},
		{"f32 nan and inf", poot.F32, f32(1, nan, 3, inf), 4, 2, 1},
		{"f16 inf", poot.F16, []byte{0, 0x3c, 0, 0x7c}, 2, 1, 1},
		{"bf16 nan", poot.BF16, []byte{0xc0, 0x7f, 0x80, 0x3f}, 2, 1, 0},
		{"q4_K dmin", poot.Q4_K, q4k, 2, 1, 1},
		{"q6_K d", poot.Q6_K, q6k, 1, 1, 0},
		{"q8_0 d", poot.Q8_0, q80, 3, 1, 2},
		{"mxfp4 e", poot.MXFP4, mx, 3, 1, 2},
		{"i32", poot.I32, []byte{0xff, 0xff, 0x80, 0x7f}, 0, 0, -1},
	}
	for _, c := range cases {
		r := ScanData(c.dt, c.data)
		if r.Checked != c.checked || r.Bad != c.bad || r.First != c.first {
			t.Errorf("%s: checked %d, bad %d, first %d; want %d, %d, %d", c.name, r.Checked, r.Bad, r.First, c.checked, c.bad, c.first)
		}
	}
}

// The scale table agrees with the dtypes' block geometry: every field lies
// inside a block.
func TestScaleFieldsInsideBlocks(t *testing.T) {
	for dt, f := range scaleFields {
		for _, off := range f.f16 {
			if off+2 > dt.BlockBytes() {
				t.Errorf("%v: f16 field at %d outside the %d-byte block", dt, off, dt.BlockBytes())
			}
		}
		for _, off := range f.f32 {
			if off+4 > dt.BlockBytes() {
				t.Errorf("%v: f32 field at %d outside the %d-byte block", dt, off, dt.BlockBytes())
			}
		}
		for _, off := range f.e8m0 {
			if off+1 > dt.BlockBytes() {
				t.Errorf("%v: e8m0 field at %d outside the %d-byte block", dt, off, dt.BlockBytes())
			}
		}
	}
	for dt := poot.Q8_0; dt <= poot.MXFP4; dt++ {
		if _, ok := scaleFields[dt]; !ok {
			t.Errorf("%v: no scale fields listed", dt)
		}
	}
}
