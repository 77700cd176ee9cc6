package quant

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"pgregory.net/rapid"
)

// The tests of this file check MXFP4 against the format's definition (the
// OCP Microscaling spec v1.0: E8M0 scales, E2M1 elements), written here
// from scratch in float64 without the package's tables, against blocks
// worked out by hand, and against ggml's own output (testdata/quant-mxfp4.gguf,
// see testdata/README.md).

// naiveE2M1 is an FP4 code's value from its bits: sign, two exponent bits
// with bias 1, one mantissa bit; exponent 0 is subnormal (m·0.5). The one
// departure from the spec is ggml's: its table holds 0 for code 8, so −0
// decodes to +0.
func naiveE2M1(code byte) float64 {
	sign := 1.0
	if code&8 != 0 {
		sign = -1
	}
	exp, man := int(code>>1&3), float64(code&1)
	if exp == 0 {
		if man == 0 {
			return 0
		}
		return sign * man * 0.5
	}
	return sign * math.Ldexp(1+man/2, exp-1)
}

// naiveDecodeMXFP4 decodes whole blocks: element i of a block is
// E2M1(code i)·2^(e−127), the codes of elements i and i+16 sharing byte i.
func naiveDecodeMXFP4(src []byte) []float32 {
	var out []float32
	for ; len(src) >= 17; src = src[17:] {
		var blk [32]float32
		for i := range 16 {
			b := src[1+i]
			blk[i] = float32(math.Ldexp(naiveE2M1(b&15), int(src[0])-127))
			blk[i+16] = float32(math.Ldexp(naiveE2M1(b>>4), int(src[0])-127))
		}
		out = append(out, blk[:]...)
	}
	return out
}

// naiveNearestCode picks the code whose value times scale is nearest to x
// (exact float64 distances); of two equally near, the one of smaller
// magnitude; zero is code 0, never −0 (code 8).
func naiveNearestCode(x float32, scale float64) byte {
	best, bestErr := byte(0), math.Inf(1)
	for c := byte(0); c < 16; c++ {
		if c == 8 {
			continue
		}
		v := naiveE2M1(c) * scale
		err := math.Abs(v - float64(x))
		if err < bestErr || err == bestErr && math.Abs(v) < math.Abs(naiveE2M1(best)*scale) {
			best, bestErr = c, err
		}
	}
	return best
}

// naiveEncodeBlock quantizes one block by the definition with the exact
// exponent floor(log2(amax)) − 2, the largest element exponent of E2M1.
// ggml rounds log2 to float32 first, which differs just below a power of
// two; callers keep away from there (see TestMXFP4ScaleBoundary).
func naiveEncodeBlock(x []float32) []byte {
	var amax float64
	for _, v := range x {
		amax = math.Max(amax, math.Abs(float64(v)))
	}
	out := make([]byte, 17)
	if amax == 0 {
		return out
	}
	_, exp := math.Frexp(amax) // amax = f·2^exp, f in [0.5, 1)
	out[0] = byte(exp - 1 - 2 + 127)
	scale := math.Ldexp(1, exp-1-2)
	for i := range 16 {
		out[1+i] = naiveNearestCode(x[i], scale) | naiveNearestCode(x[i+16], scale)<<4
	}
	return out
}

// TestMXFP4DecodeExhaustive decodes every scale byte with every code byte
// and compares with the definition bit for bit.
func TestMXFP4DecodeExhaustive(t *testing.T) {
	blk := make([]byte, 17*256*16)
	for e := range 256 {
		for k := range 16 {
			b := blk[(e*16+k)*17:]
			b[0] = byte(e)
			for i := range 16 {
				b[1+i] = byte(16*k + i)
			}
		}
	}
	got := make([]float32, 32*256*16)
	if err := DequantizeRow(poot.MXFP4, got, blk); err != nil {
		t.Fatal(err)
	}
	want := naiveDecodeMXFP4(blk)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("element %d (scale %d): got %g, want %g", i, blk[i/32*17], got[i], want[i])
		}
	}
	for e := range 256 {
		want := math.Ldexp(0.5, e-127)
		if got := E8M0Half(uint8(e)); float64(got) != want {
			t.Errorf("E8M0Half(%d) = %g, want %g", e, got, want)
		}
	}
}

// TestMXFP4HandBlocks checks blocks whose bytes were worked out by hand.
func TestMXFP4HandBlocks(t *testing.T) {
	block := func(fill func(x []float32)) []float32 {
		x := make([]float32, 32)
		fill(x)
		return x
	}
	cases := []struct {
		name string
		x    []float32
		want []byte
	}{{
		// amax 7.75: floor(log2) = 2, e = 127, element scale 1, levels
		// 0 .5 1 1.5 2 3 4 6. Quarters tie between levels and go down;
		// 6.25 and above clamp to 6 (code 7).
		"quarters", block(func(x []float32) {
			for j := range x {
				x[j] = float32(j) / 4
			}
		}),
		[]byte{0x7f, 0x60, 0x60, 0x61, 0x61, 0x62, 0x72, 0x73, 0x73, 0x74, 0x74, 0x74, 0x75, 0x75, 0x75, 0x75, 0x76},
	}, {
		"zeros", make([]float32, 32), make([]byte, 17),
	}, {
		// amax 6·2^-10 = 1.5·2^-8: e = -8-2+127 = 117, element scale
		// 2^-10; -6 is code 15 (sign 8 | 7), 2^-11 = 0.5 is code 1.
		"negative max", block(func(x []float32) {
			x[0], x[17] = -6.0/1024, 1.0/2048
		}),
		[]byte{117, 0x0f, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	}, {
		// amax just below 16: log2 = 4 - 8.6e-8 rounds to 4 in float32,
		// so e = 4-2+127 = 129 (not 128) and the scale is 4: the value
		// goes to 16 (code 6) rather than clamping.
		"below 16", block(func(x []float32) {
			x[0] = math.Float32frombits(0x417fffff)
		}),
		[]byte{129, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	}, {
		// amax just below 2: log2 = 1 - 8.6e-8 stays below 1 in float32,
		// e = 0-2+127 = 125, scale 0.25: the value clamps to 1.5 (code 7).
		"below 2", block(func(x []float32) {
			x[16] = math.Float32frombits(0x3fffffff)
		}),
		[]byte{125, 0x70, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	}, {
		// A NaN neither sets amax nor finds a nearest code (code 0);
		// -0 is code 0 too.
		"nan", block(func(x []float32) {
			x[1], x[2], x[3] = float32(math.NaN()), 3, float32(math.Copysign(0, -1))
		}),
		[]byte{126, 0, 0, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := make([]byte, 17)
			if err := QuantizeRow(poot.MXFP4, got, c.x); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.want) {
				t.Fatalf("got  % x\nwant % x", got, c.want)
			}
		})
	}
	// Decoding the quarters block gives the levels chosen above.
	y := make([]float32, 32)
	if err := DequantizeRow(poot.MXFP4, y, cases[0].want); err != nil {
		t.Fatal(err)
	}
	want := []float32{0, 0, .5, .5, 1, 1, 1.5, 1.5, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6}
	for j := range y {
		if y[j] != want[j] {
			t.Errorf("element %d decodes to %g, want %g", j, y[j], want[j])
		}
	}
}

// nearPowerOfTwo reports whether v lies within a relative 2^-20 below a
// power of two, where ggml's float32 log2 may round up to the next
// exponent.
func nearPowerOfTwo(v float64) bool {
	f, _ := math.Frexp(v)
	return f > 1-0x1p-20
}

// TestMXFP4EncodeMatchesDefinition: away from the log2 rounding boundary,
// QuantizeRow gives the definition's bytes for random blocks at every
// magnitude of the float32 normal range.
func TestMXFP4EncodeMatchesDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := genMXFP4Block(t)
		var amax float64
		for _, v := range x {
			amax = math.Max(amax, math.Abs(float64(v)))
		}
		if nearPowerOfTwo(amax) {
			t.Skip("amax at the log2 rounding boundary")
		}
		if amax != 0 && amax < 0x1p-120 {
			t.Skip("amax too small for the exponent byte")
		}
		got := make([]byte, 17)
		if err := QuantizeRow(poot.MXFP4, got, x); err != nil {
			t.Fatal(err)
		}
		if want := naiveEncodeBlock(x); !bytes.Equal(got, want) {
			t.Fatalf("x = %v\ngot  % x\nwant % x", x, got, want)
		}
	})
}

// genMXFP4Block draws a block at a magnitude from 2^-120 to 2^120 (where
// the exponent fits a byte and no product overflows), with some zeros,
// some exact multiples of the levels and some ties.
func genMXFP4Block(t *rapid.T) []float32 {
	k := rapid.IntRange(-120, 120).Draw(t, "log2mag")
	elem := rapid.OneOf(
		rapid.Map(rapid.Float64Range(-8, 8), func(v float64) float32 { return float32(math.Ldexp(v, k)) }),
		rapid.Map(rapid.IntRange(-32, 32), func(q int) float32 { return float32(math.Ldexp(float64(q)/4, k)) }),
		rapid.Just(float32(0)),
	)
	return rapid.SliceOfN(elem, 32, 32).Draw(t, "x")
}

// TestMXFP4ScaleBoundary: for every amax just below a power of two the
// exponent is the exact one or one more, and one more exactly when the
// float32 rounding of log2(amax) reaches the next integer.
func TestMXFP4ScaleBoundary(t *testing.T) {
	for k := -124; k <= 127; k++ {
		top := math.Float32bits(float32(math.Ldexp(1, k)))
		for below := uint32(1); below <= 64; below++ {
			amax := math.Float32frombits(top - below)
			got := make([]byte, 17)
			x := make([]float32, 32)
			x[5] = amax
			if err := QuantizeRow(poot.MXFP4, got, x); err != nil {
				t.Fatal(err)
			}
			exact := k - 1 - 2 + 127
			// Where log2 rounds: the float32 nearest to k is k itself
			// when the gap k - log2(amax) is under half a float32 step.
			gap := float64(k) - math.Log2(float64(amax))
			// log2(amax) is below k: the competing float32 is the one
			// next to k towards -inf.
			step := float64(float32(k)) - float64(math.Nextafter32(float32(k), float32(math.Inf(-1))))
			want := exact
			if gap < step/2 {
				want++
			}
			if int(got[0]) != want {
				t.Fatalf("amax %g (2^%d less %d ulps): e = %d, want %d (gap %g, half step %g)", amax, k, below, got[0], want, gap, step/2)
			}
		}
	}
}

// TestMXFP4FixedPoints: a block with a code of magnitude 4 or 6 (so its
// largest element sets the scale back to e), no −0 code and a scale that
// neither overflows nor leaves the byte quantizes back to itself after
// decoding: the quantizer picks every level exactly.
func TestMXFP4FixedPoints(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.Byte(), 17, 17).Draw(t, "block")
		b[0] = rapid.ByteRange(2, 252).Draw(t, "e")
		for i := 1; i < 17; i++ {
			for _, sh := range []int{0, 4} {
				if b[i]>>sh&15 == 8 {
					b[i] ^= 8 << sh // −0 becomes +0
				}
			}
		}
		top := rapid.IntRange(0, 31).Draw(t, "top")
		code := rapid.SampledFrom([]byte{6, 7, 14, 15}).Draw(t, "topcode")
		if top < 16 {
			b[1+top] = b[1+top]&0xf0 | code
		} else {
			b[1+top-16] = b[1+top-16]&0x0f | code<<4
		}
		y := make([]float32, 32)
		if err := DequantizeRow(poot.MXFP4, y, b); err != nil {
			t.Fatal(err)
		}
		again := make([]byte, 17)
		if err := QuantizeRow(poot.MXFP4, again, y); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("block % x decodes to %v and quantizes to % x", b, y, again)
		}
	})
}

// TestNearestFP4Midpoints: the midpoint rule picks the search's code for
// every scale without overflow and every x within 16 times the scale (a
// level, a midpoint, a float32 next to one, anything in between, NaN).
func TestNearestFP4Midpoints(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := rapid.ByteRange(0, 252).Draw(t, "e")
		var x float32
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0:
			// A level or a midpoint at this scale, or a neighbour.
			q := rapid.IntRange(-31, 31).Draw(t, "half steps")
			x = float32(math.Ldexp(float64(q)/2, int(e)-128))
			switch rapid.IntRange(0, 2).Draw(t, "nudge") {
			case 1:
				x = math.Nextafter32(x, float32(math.Inf(1)))
			case 2:
				x = math.Nextafter32(x, float32(math.Inf(-1)))
			}
		case 1:
			x = float32(math.Ldexp(rapid.Float64Range(-16, 16).Draw(t, "doubled"), int(e)-128))
		default:
			x = float32(math.NaN())
		}
		inv := math.Ldexp(1, 128-int(e))
		if !(math.Abs(float64(x))*inv < 16) && x == x {
			t.Skip("outside the midpoint rule's range")
		}
		want := nearestFP4(x, E8M0Half(e))
		if got := nearestFP4Midpoints(x, inv); got != want {
			t.Fatalf("x = %g (%#08x), e = %d: midpoints give code %d, the search %d", x, math.Float32bits(x), e, got, want)
		}
	})
}

// mxfp4FixtureFile is ggml's output for the shared quant source rows and
// four rows aimed at MXFP4 (see testdata/README.md).
const mxfp4FixtureFile = "testdata/quant-mxfp4.gguf"

// TestMXFP4Fixture checks DequantizeRow and QuantizeRow against ggml bit for
// bit and byte for byte, row by row, non-finite rows included.
func TestMXFP4Fixture(t *testing.T) {
	ts, err := readFixture(mxfp4FixtureFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 || ts[0].name != "source" || ts[1].name != "quantized" || ts[2].name != "dequantized" || ggmlTypes[ts[1].ggml] != poot.MXFP4 {
		t.Fatalf("unexpected tensors %v", ts)
	}
	cols, rows := int(ts[0].dims[0]), int(ts[0].dims[1])
	source, quantized, dequantized := f32s(ts[0].bytes), ts[1].bytes, f32s(ts[2].bytes)
	rb := int(poot.MXFP4.RowBytes(int64(cols)))
	got := make([]float32, cols)
	gotq := make([]byte, rb)
	for r := range rows {
		if err := DequantizeRow(poot.MXFP4, got, quantized[r*rb:(r+1)*rb]); err != nil {
			t.Fatal(err)
		}
		for c, w := range dequantized[r*cols : (r+1)*cols] {
			if math.Float32bits(got[c]) != math.Float32bits(w) {
				t.Errorf("row %d col %d: decodes to %g, ggml %g", r, c, got[c], w)
				break
			}
		}
		if err := QuantizeRow(poot.MXFP4, gotq, source[r*cols:(r+1)*cols]); err != nil {
			t.Fatal(err)
		}
		want := quantized[r*rb : (r+1)*rb]
		for b := 0; b < rb/17; b++ {
			if g, w := gotq[b*17:(b+1)*17], want[b*17:(b+1)*17]; !bytes.Equal(g, w) {
				t.Errorf("row %d block %d: got\n% x\nwant\n% x\nsource %v", r, b, g, w, source[r*cols+32*b:r*cols+32*b+32])
			}
		}
	}
	if rows < 20 {
		t.Errorf("fixture has %d rows, want the 16 shared ones and 4 of MXFP4's own", rows)
	}
}

// FuzzMXFP4 decodes arbitrary bytes against the definition, and quantizes
// the same bytes read as float32s: every code must be a nearest level at
// the chosen scale, and the scale the definition's or, just below a power
// of two, one more.
func FuzzMXFP4(f *testing.F) {
	for _, s := range mxfp4FuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		blocks := len(data) / 17
		got := make([]float32, 32*blocks)
		if err := DequantizeRow(poot.MXFP4, got, data[:17*blocks]); err != nil {
			t.Fatal(err)
		}
		want := naiveDecodeMXFP4(data[:17*blocks])
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("element %d: got %g, want %g", i, got[i], want[i])
			}
		}
		x := make([]float32, len(data)/128*32)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		q := make([]byte, len(x)/32*17)
		if err := QuantizeRow(poot.MXFP4, q, x); err != nil {
			t.Fatal(err)
		}
		for b := 0; b < len(x)/32; b++ {
			checkEncodedBlock(t, x[32*b:32*b+32], q[17*b:17*b+17])
		}
	})
}

// checkEncodedBlock checks a block quantized from finite values whose
// exponent fits a byte without overflow (amax in [2^-120, 2^126)).
func checkEncodedBlock(t *testing.T, x []float32, q []byte) {
	var amax float64
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return
		}
		amax = math.Max(amax, math.Abs(float64(v)))
	}
	if amax != 0 && (amax < 0x1p-120 || amax >= 0x1p126) {
		return
	}
	want := naiveEncodeBlock(x)
	if q[0] != want[0] && !(nearPowerOfTwo(amax) && q[0] == want[0]+1) {
		t.Fatalf("amax %g: scale %d, want %d", amax, q[0], want[0])
	}
	scale := math.Ldexp(1, int(q[0])-127)
	for i := range 32 {
		code := q[1+i%16] >> (4 * (i / 16)) & 15
		if n := naiveNearestCode(x[i], scale); n != code {
			t.Fatalf("element %d = %g at scale %g: code %d, nearest %d", i, x[i], scale, code, n)
		}
	}
}

// mxfp4FuzzSeeds are a few blocks of codes and of float32 data: the hand
// blocks' sources and a tie-heavy block.
func mxfp4FuzzSeeds() [][]byte {
	f32 := func(x ...float32) []byte {
		b := make([]byte, 4*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	quarters := make([]float32, 32)
	for j := range quarters {
		quarters[j] = float32(j) / 4
	}
	ties := make([]float32, 64)
	for j := range ties {
		ties[j] = float32(math.Ldexp(float64(j%17)/4-2, j/32*7-3))
	}
	edge := make([]float32, 32)
	edge[0], edge[1], edge[2] = math.Float32frombits(0x417fffff), -3, 1.25
	return [][]byte{
		{0x7f, 0x60, 0x60, 0x61, 0x61, 0x62, 0x72, 0x73, 0x73, 0x74, 0x74, 0x74, 0x75, 0x75, 0x75, 0x75, 0x76},
		bytes.Repeat([]byte{0xff}, 34),
		f32(quarters...),
		f32(ties...),
		f32(edge...),
	}
}

// TestWriteMXFP4FuzzCorpus regenerates testdata/fuzz/FuzzMXFP4 from
// mxfp4FuzzSeeds when POOT_WRITE_CORPUS=1; otherwise it checks that the
// committed corpus exists.
func TestWriteMXFP4FuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzMXFP4")
	if os.Getenv("POOT_WRITE_CORPUS") != "1" {
		if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
			t.Errorf("no committed seed corpus in %s (regenerate with POOT_WRITE_CORPUS=1)", dir)
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range mxfp4FuzzSeeds() {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
