package quant

import (
	"math"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/x448/float16"
)

// TestF16ToF32Exhaustive checks every binary16 pattern against an
// independent implementation (x448/float16).
func TestF16ToF32Exhaustive(t *testing.T) {
	for h := range 1 << 16 {
		got := F16ToF32(uint16(h))
		want := float16.Frombits(uint16(h)).Float32()
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("F16ToF32(%#04x) = %#08x, want %#08x", h, math.Float32bits(got), math.Float32bits(want))
		}
	}
}

// TestF16RoundTrip: every non-NaN binary16 survives f16 → f32 → f16, and
// every NaN becomes the canonical quiet NaN with its sign.
func TestF16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		got := F32ToF16(f)
		want := uint16(h)
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			want = uint16(h)&0x8000 | 0x7e00
		}
		if got != want {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x, want %#04x", h, got, want)
		}
	}
}

// ggmlF16 is an independent model of ggml's scalar fp32 → fp16 conversion,
// which rounds through float32 arithmetic rather than integer bit work: the
// product by 2^112·2^-110 exposes overflow, and adding a power of two
// chosen from the input's exponent makes the FPU do the rounding.
func ggmlF16(f float32) uint16 {
	base := float32(float32(abs32(f)*0x1p112) * 0x1p-110)
	w := math.Float32bits(f)
	shl1 := w + w
	sign := w & 0x80000000
	bias := shl1 & 0xff000000
	if bias < 0x71000000 {
		bias = 0x71000000
	}
	base = float32(math.Float32frombits(bias>>1+0x07800000) + base)
	bits := math.Float32bits(base)
	nonsign := (bits>>13)&0x7c00 + bits&0x0fff
	if shl1 > 0xff000000 {
		nonsign = 0x7e00
	}
	return uint16(sign>>16 | nonsign)
}

// forAllF32 calls check on every 97th float32 bit pattern, or on all of
// them when QUANT_EXHAUSTIVE is set (minutes of CPU), spread over
// the CPUs. check returns false to report.
func forAllF32(t *testing.T, check func(u uint32) bool) {
	step := uint64(97)
	if os.Getenv("QUANT_EXHAUSTIVE") != "" {
		step = 1
	}
	workers := runtime.GOMAXPROCS(0)
	var mu sync.Mutex
	var bad []uint32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := uint64(w) * step; u < 1<<32; u += uint64(workers) * step {
				if !check(uint32(u)) {
					mu.Lock()
					if len(bad) < 5 {
						bad = append(bad, uint32(u))
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, u := range bad {
		t.Errorf("mismatch at f32 bits %#08x", u)
	}
}

// TestF32ToF16Boundaries compares F32ToF16 with the float-arithmetic model
// of ggml's conversion at every rounding boundary: for each binary16 value,
// the float32 halfway to its successor and its two float32 neighbours.
func TestF32ToF16Boundaries(t *testing.T) {
	for h := range uint32(0x7c00) {
		for _, sign := range []uint32{0, 0x80000000} {
			lo := float64(F16ToF32(uint16(h)))
			hi := float64(F16ToF32(uint16(h + 1)))
			if h == 0x7bff {
				hi = 65536 // the successor of 65504 as far as rounding goes
			}
			mid := math.Float32bits(float32((lo + hi) / 2)) // exact: one more bit
			for _, u := range []uint32{mid - 1, mid, mid + 1} {
				f := math.Float32frombits(u | sign)
				if got, want := F32ToF16(f), ggmlF16(f); got != want {
					t.Fatalf("F32ToF16(%#08x) = %#04x, ggml gives %#04x", u|sign, got, want)
				}
			}
		}
	}
}

// TestF32ToF16AllInputs compares F32ToF16 with the float-arithmetic model
// of ggml's conversion on a sweep of float32 inputs (all of them with
// QUANT_EXHAUSTIVE set), and with x448/float16 on every non-NaN one.
func TestF32ToF16AllInputs(t *testing.T) {
	forAllF32(t, func(u uint32) bool {
		f := math.Float32frombits(u)
		got := F32ToF16(f)
		if got != ggmlF16(f) {
			return false
		}
		return f != f || got == float16.Fromfloat32(f).Bits()
	})
}

// TestF32ToBF16AllInputs checks F32ToBF16 on a sweep of float32 inputs
// (all of them with QUANT_EXHAUSTIVE set) against a nearest-even rounding done in float64, and the
// NaN rule (top bits kept, quiet bit set).
func TestF32ToBF16AllInputs(t *testing.T) {
	forAllF32(t, func(u uint32) bool {
		f := math.Float32frombits(u)
		got := F32ToBF16(f)
		if f != f {
			return got == uint16(u>>16)|0x40
		}
		lo := uint16(u >> 16) // truncation toward zero in magnitude
		if uint32(lo)<<16 == u {
			return got == lo
		}
		hi := lo + 1 // next bf16 away from zero (may be ±inf, which is right)
		dlo := math.Abs(float64(f) - float64(BF16ToF32(lo)))
		var dhi float64
		if hi&0x7fff == 0x7f80 { // the tie point with inf is 2^128 − 2^119
			dhi = math.Abs(math.Ldexp(math.Copysign(1, float64(f)), 128) - float64(f))
		} else {
			dhi = math.Abs(float64(BF16ToF32(hi)) - float64(f))
		}
		switch {
		case dlo < dhi:
			return got == lo
		case dhi < dlo:
			return got == hi
		}
		if lo&1 == 0 {
			return got == lo
		}
		return got == hi
	})
}

// TestHalfCases pins the cases row 13 of the fixtures exercises, by hand.
func TestHalfCases(t *testing.T) {
	f16Cases := []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65519, 0x7bff},  // just below the tie: stays finite
		{65520, 0x7c00},  // the tie rounds to even, which is inf
		{-65520, 0xfc00}, // and to −inf
		{70000, 0x7c00},  // overflow
		{float32(math.Inf(-1)), 0xfc00},
		{0x1p-24, 0x0001},     // smallest subnormal
		{0x1p-25, 0x0000},     // half of it: ties to even (0)
		{0x1.8p-25, 0x0001},   // three quarters: rounds up
		{0x1p-14, 0x0400},     // smallest normal
		{0x1.ffcp-15, 0x0400}, // just below the smallest normal rounds up into it
		{0x1.ff4p-15, 0x03fe}, // the subnormal tie 1022.5·2^-24 goes to even
		{1 + 0x1p-11, 0x3c00}, // tie, even below
		{1 + 0x3p-11, 0x3c02}, // tie, even above
		{1e-7, 0x0002},        // 1e-7 / 2^-24 ≈ 1.68
		{-6.1e-5, 0x83ff},     // 1023.4·2^-24: the largest subnormal
		{math.Float32frombits(1), 0x0000},
		{float32(math.NaN()), 0x7e00},
		{-float32(math.NaN()), 0xfe00},
	}
	for _, c := range f16Cases {
		if got := F32ToF16(c.in); got != c.want {
			t.Errorf("F32ToF16(%g = %#08x) = %#04x, want %#04x", c.in, math.Float32bits(c.in), got, c.want)
		}
	}
	bf16Cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f808000, 0x3f80}, // tie, even below
		{0x3f818000, 0x3f82}, // tie, odd below: up
		{0xbf818000, 0xbf82}, // negative tie
		{0x3f7fffff, 0x3f80}, // carries into the exponent
		{0x00000001, 0x0000}, // smallest subnormal: kept as subnormal arithmetic, rounds to 0
		{0x00008001, 0x0001}, // subnormals are not flushed
		{0x80000000, 0x8000},
		{0x7f7fffff, 0x7f80}, // max float rounds to inf
		{0x7f800000, 0x7f80},
		{0x7f800001, 0x7fc0}, // signalling NaN becomes quiet
		{0xffc00000, 0xffc0},
	}
	for _, c := range bf16Cases {
		if got := F32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	for h := range 1 << 16 {
		if got := math.Float32bits(BF16ToF32(uint16(h))); got != uint32(h)<<16 {
			t.Fatalf("BF16ToF32(%#04x) = %#08x", h, got)
		}
	}
}

// TestHalfRows checks that the row converters agree with the scalar ones
// and convert only what fits in both buffers.
func TestHalfRows(t *testing.T) {
	src := []float32{1, -0.5, 65520, 1e-7, float32(math.NaN()), 3.14159}
	b := make([]byte, 2*len(src))
	back := make([]float32, len(src))
	F32RowToF16(b, src)
	F16RowToF32(back, b)
	for i, v := range src {
		h := F32ToF16(v)
		if uint16(b[2*i])|uint16(b[2*i+1])<<8 != h || math.Float32bits(back[i]) != math.Float32bits(F16ToF32(h)) {
			t.Errorf("f16 row element %d differs from the scalar conversion", i)
		}
	}
	F32RowToBF16(b, src)
	BF16RowToF32(back, b)
	for i, v := range src {
		h := F32ToBF16(v)
		if uint16(b[2*i])|uint16(b[2*i+1])<<8 != h || math.Float32bits(back[i]) != math.Float32bits(BF16ToF32(h)) {
			t.Errorf("bf16 row element %d differs from the scalar conversion", i)
		}
	}
	// Mismatched lengths convert the common prefix and touch nothing else.
	short := []float32{7, 7, 7}
	F16RowToF32(short, b[:3]) // one whole element
	if short[0] != F16ToF32(uint16(b[0])|uint16(b[1])<<8) || short[1] != 7 || short[2] != 7 {
		t.Errorf("F16RowToF32 with a short src wrote %v", short)
	}
	out := []byte{9, 9, 9, 9, 9}
	F32RowToBF16(out, src[:1])
	if out[2] != 9 || out[4] != 9 {
		t.Errorf("F32RowToBF16 with a short src wrote %v", out)
	}
}
