package tensor_test

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/mmap"
	"github.com/pootlabs/poot/tensor"
)

func TestViewValidatesSize(t *testing.T) {
	cases := []struct {
		typ  poot.TensorType
		n    int
		want error
	}{
		{poot.T(poot.F32, 2, 3), 24, nil},
		{poot.T(poot.F32, 2, 3), 23, tensor.ErrSize},
		{poot.T(poot.Q8_0, 2, 64), 2 * 2 * 34, nil},
		{poot.T(poot.Q8_0, 2, 64), 2*2*34 + 1, tensor.ErrSize},
		{poot.T(poot.Q8_0, 2, 40), 160, tensor.ErrType}, // not whole blocks
		{poot.T(poot.Invalid, 2), 2, tensor.ErrType},
		{poot.T(poot.F16), 2, nil}, // a scalar
	}
	for _, c := range cases {
		_, err := tensor.View(c.typ, make([]byte, c.n))
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("View(%v, %d bytes): %v, want %v", c.typ, c.n, err, c.want)
		}
	}
}

func TestViewIsZeroCopy(t *testing.T) {
	b := make([]byte, 8)
	v, err := tensor.View(poot.T(poot.F32, 2), b)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b[4:], math.Float32bits(2.5))
	if got := v.F32(); got[1] != 2.5 {
		t.Fatalf("view does not see writes: %v", got)
	}
	if &v.Data[0] != &b[0] {
		t.Fatal("view copied its bytes")
	}
}

// TestViewOverMemoryMap views an F32 tensor in a memory-mapped file.
func TestViewOverMemoryMap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.bin")
	src, _ := tensor.FromF32(poot.Shape{2, 2}, []float32{1, -2, 3.5, 4})
	if err := os.WriteFile(path, append([]byte("pad!"), src.Data...), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := mmap.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	v, err := tensor.View(poot.T(poot.F32, 2, 2), m.Bytes()[4:])
	if err != nil {
		t.Fatal(err)
	}
	got := v.F32()
	if got[0] != 1 || got[1] != -2 || got[2] != 3.5 || got[3] != 4 {
		t.Fatalf("got %v", got)
	}
}

func TestF32AliasesWhenAligned(t *testing.T) {
	x, _ := tensor.FromF32(poot.Shape{3}, []float32{1, 2, 3})
	f := x.F32()
	f[0] = 9
	if x.F32()[0] != 9 {
		t.Fatal("F32 of an aligned tensor should alias its data")
	}
	// At an odd address it must copy, and still read correctly.
	raw := make([]byte, 13)
	copy(raw[1:], x.Data)
	v, _ := tensor.View(poot.T(poot.F32, 3), raw[1:])
	if uintptr(unsafe.Pointer(&v.Data[0]))%4 == 0 {
		t.Skip("allocator gave an aligned address")
	}
	g := v.F32()
	if g[0] != 9 || g[1] != 2 || g[2] != 3 {
		t.Fatalf("unaligned read %v", g)
	}
	g[1] = 7
	if v.F32()[1] != 2 {
		t.Fatal("F32 of an unaligned tensor should copy")
	}
}

func TestConstructors(t *testing.T) {
	if _, err := tensor.FromF32(poot.Shape{2, 2}, []float32{1}); !errors.Is(err, tensor.ErrSize) {
		t.Fatalf("short data: %v", err)
	}
	i, err := tensor.FromI32(poot.Shape{2}, []int32{-1, math.MaxInt32})
	if err != nil || i.I32()[0] != -1 || i.I32()[1] != math.MaxInt32 {
		t.Fatalf("FromI32: %v %v", i.I32(), err)
	}
	b, err := tensor.FromBool(poot.Shape{3}, []bool{true, false, true})
	if err != nil || string(b.Data) != "\x01\x00\x01" {
		t.Fatalf("FromBool: %v %v", b.Data, err)
	}
	if b.F32() != nil || b.I32() != nil || i.Bool() != nil {
		t.Fatal("accessors of the wrong dtype must return nil")
	}
	s, err := tensor.FromF32(poot.Shape{}, []float32{5})
	if err != nil || s.Len() != 1 || s.F32()[0] != 5 {
		t.Fatalf("scalar: %v %v", s, err)
	}
	c := s.Clone()
	c.Data[0] ^= 1
	if s.Data[0] == c.Data[0] {
		t.Fatal("Clone shares memory")
	}
}

// TestHalfConversions round-trips F32 through F16 and BF16 with
// hand-computed bit patterns: ties to even, overflow to infinity,
// subnormals, NaN and infinities.
func TestHalfConversions(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		d     poot.DType
		in    float32
		bits  uint16
		back  float32
		isNaN bool
	}{
		{poot.F16, 1, 0x3C00, 1, false},
		{poot.F16, 1 + 1.0/2048, 0x3C00, 1, false},                  // tie to even (down)
		{poot.F16, 1 + 3.0/2048, 0x3C02, 1 + 1.0/512, false},        // tie to even (up)
		{poot.F16, 65504, 0x7BFF, 65504, false},                     // largest finite
		{poot.F16, 65519, 0x7BFF, 65504, false},                     // below the tie
		{poot.F16, 65520, 0x7C00, inf, false},                       // the tie rounds to inf
		{poot.F16, -inf, 0xFC00, -inf, false},                       //
		{poot.F16, 1.0 / 16777216, 0x0001, 1.0 / 16777216, false},   // smallest subnormal
		{poot.F16, 1.0 / 33554432, 0x0000, 0, false},                // half of it: tie to zero
		{poot.F16, float32(math.Copysign(0, -1)), 0x8000, 0, false}, // -0
		{poot.F16, nan, 0x7E00, nan, true},
		{poot.BF16, 1 + 1.0/256, 0x3F80, 1, false},
		{poot.BF16, 1 + 3.0/256, 0x3F82, 1 + 1.0/64, false},
		{poot.BF16, math.MaxFloat32, 0x7F80, inf, false}, // overflows on rounding
		{poot.BF16, inf, 0x7F80, inf, false},
		{poot.BF16, nan, 0x7FC0, nan, true},
	}
	for _, c := range cases {
		x, err := tensor.Quantize(poot.T(c.d, 1), []float32{c.in})
		if err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint16(x.Data); got != c.bits {
			t.Errorf("%v(%v) = %#04x, want %#04x", c.d, c.in, got, c.bits)
		}
		back, err := x.ToF32()
		if err != nil {
			t.Fatal(err)
		}
		if c.isNaN != (back[0] != back[0]) || (!c.isNaN && back[0] != c.back) {
			t.Errorf("%v(%v) decodes to %v, want %v", c.d, c.in, back[0], c.back)
		}
	}
}

func TestToF32AllDTypes(t *testing.T) {
	vals := make([]float32, 256)
	for i := range vals {
		vals[i] = float32(i%17) - 8
	}
	for _, d := range []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_K, poot.Q6_K, poot.Q8_K} {
		x, err := tensor.Quantize(poot.T(d, 1, 256), vals)
		if err != nil {
			t.Fatalf("%v: %v", d, err)
		}
		got, err := x.ToF32()
		if err != nil {
			t.Fatalf("%v: %v", d, err)
		}
		var worst float64
		for i := range got {
			worst = max(worst, math.Abs(float64(got[i]-vals[i])))
		}
		if worst > 1.2 { // 4-bit types step by about 8/7
			t.Errorf("%v: worst error %v", d, worst)
		}
	}
	i, _ := tensor.FromI32(poot.Shape{2}, []int32{16777217, -3})
	f, _ := i.ToF32()
	if f[0] != 16777216 || f[1] != -3 {
		t.Errorf("I32 ToF32 %v", f)
	}
	b, _ := tensor.FromBool(poot.Shape{2}, []bool{true, false})
	f, _ = b.ToF32()
	if f[0] != 1 || f[1] != 0 {
		t.Errorf("Bool ToF32 %v", f)
	}
	if _, err := tensor.Quantize(poot.T(poot.I32, 1), []float32{1}); !errors.Is(err, tensor.ErrType) {
		t.Errorf("Quantize to I32: %v", err)
	}
	bad := tensor.Tensor{Type: poot.T(poot.F32, 2), Data: make([]byte, 3)}
	if _, err := bad.ToF32(); !errors.Is(err, tensor.ErrSize) {
		t.Errorf("ToF32 of a short tensor: %v", err)
	}
}
