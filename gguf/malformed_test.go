package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// raw assembles GGUF bytes by hand, for inputs the Writer refuses to make.
type raw struct{ b []byte }

func (r *raw) u8(v uint8) *raw   { r.b = append(r.b, v); return r }
func (r *raw) u32(v uint32) *raw { r.b = binary.LittleEndian.AppendUint32(r.b, v); return r }
func (r *raw) u64(v uint64) *raw { r.b = binary.LittleEndian.AppendUint64(r.b, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.b = append(r.b, s...); return r }
func (r *raw) pad(n int) *raw    { r.b = append(r.b, make([]byte, n)...); return r }

// header starts a v3 file with the given counts.
func header(tensors, kvs uint64) *raw {
	r := &raw{b: []byte(Magic)}
	return r.u32(3).u64(tensors).u64(kvs)
}

// tensor appends a tensor info.
func (r *raw) tensor(name string, typ uint32, offset uint64, dims ...uint64) *raw {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(typ).u64(offset)
}

// alignTo pads to a multiple of a, as the data section requires.
func (r *raw) alignTo(a int) *raw {
	for len(r.b)%a != 0 {
		r.b = append(r.b, 0)
	}
	return r
}

func TestMalformed(t *testing.T) {
	deep := header(0, 1).str("k").u32(uint32(TypeArray))
	for range maxArrayDepth + 1 {
		deep.u32(uint32(TypeArray)).u64(1)
	}
	cases := []struct {
		name string
		data []byte
		want string // substring of the error
		off  int64  // expected FormatError offset, -1 to skip the check
	}{
		{"empty", nil, "magic needs 4 bytes", 0},
		{"magic", []byte("GGML\x03\x00\x00\x00"), "magic", 0},
		{"v1", (&raw{b: []byte(Magic)}).u32(1).b, "version 1", 4},
		{"big endian", (&raw{b: []byte(Magic)}).u32(3 << 24).b, "big-endian", 4},
		{"v4", (&raw{b: []byte(Magic)}).u32(4).u64(0).u64(0).b, "unknown GGUF version 4", 4},
		{"huge tensor count", header(1<<60, 0).b, "tensor count", 8},
		{"huge kv count", header(0, 1<<60).b, "metadata count", 16},
		{"huge key", header(0, 1).u64(1 << 62).pad(16).b, "key length", 24},
		{"huge array", header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint8)).u64(1 << 60).pad(60).b, "array length", 41},
		{"huge string array", header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(20).pad(100).b, "array length", 41},
		{"huge string", header(0, 1).str("k").u32(uint32(TypeString)).u64(1 << 63).b, "string value length", 37},
		{"deep", deep.b, "nested deeper", -1},
		{"bool", header(0, 1).str("k").u32(uint32(TypeBool)).u8(2).b, "bool value is 2", 37},
		{"bool array", header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeBool)).u64(2).u8(1).u8(7).b, "bool element 1", 50},
		{"value type", header(0, 1).str("k").u32(13).b, "unknown value type 13", 33},
		{"elem type", header(0, 1).str("k").u32(uint32(TypeArray)).u32(99).b, "unknown value type 99", 37},
		{"dup key", header(0, 2).str("k").u32(uint32(TypeUint8)).u8(1).str("k").u32(uint32(TypeUint8)).u8(1).b, "duplicate key", 38},
		{"align 0", header(0, 1).str(KeyAlignment).u32(uint32(TypeUint32)).u32(0).b, "power of two", 24},
		{"align 48", header(0, 1).str(KeyAlignment).u32(uint32(TypeUint32)).u32(48).b, "power of two", 24},
		{"align string", header(0, 1).str(KeyAlignment).u32(uint32(TypeString)).str("32").b, "power of two", 24},
		{"rank 5", header(1, 0).tensor("t", 0, 0, 1, 1, 1, 1, 1).b, "5 dimensions", 33},
		{"dims overflow", header(1, 0).tensor("t", 0, 0, 1<<32, 1<<32).alignTo(32).b, "2^62 elements", -1},
		{"dim too large", header(1, 0).tensor("t", 0, 0, 1<<63).alignTo(32).b, "too large", -1},
		{"block", header(1, 0).tensor("t", uint32(GGMLTypeQ8_0), 0, 16).alignTo(32).pad(64).b, "not a multiple of the q8_0 block size", 24},
		{"misaligned", header(1, 0).tensor("t", 0, 4, 1).alignTo(32).pad(64).b, "not a multiple of the alignment", 24},
		{"past end", header(1, 0).tensor("t", 0, 0, 17).alignTo(32).pad(64).b, "past the end", 24},
		{"offset past end", header(1, 0).tensor("t", 0, 1<<62, 1).alignTo(32).pad(64).b, "past the end", 24},
		{"overlap", header(2, 0).tensor("a", 0, 0, 16).tensor("b", 0, 32, 16).alignTo(32).pad(128).b, "overlaps", -1},
		{"dup tensor", header(2, 0).tensor("a", 0, 0, 1).tensor("a", 0, 32, 1).alignTo(32).pad(64).b, "duplicate tensor name", 57},
		{"truncated info", header(1, 0).str("t").u32(2).u64(4).b, "dimension of t", -1},
	}
	for _, c := range cases {
		f, err := Parse(c.data)
		if err == nil {
			t.Errorf("%s: parsed without error: %d tensors", c.name, len(f.Tensors()))
			continue
		}
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: error %T %v is not a *FormatError", c.name, err, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		}
		if c.off >= 0 && fe.Offset != c.off {
			t.Errorf("%s: offset %d, want %d (%v)", c.name, fe.Offset, c.off, err)
		}
	}
}

// TestUnknownTensorType checks that an exotic tensor does not stop a file
// from opening, and that asking for it names it.
func TestUnknownTensorType(t *testing.T) {
	data := header(3, 0).
		tensor("ok", uint32(GGMLTypeF32), 0, 8).
		tensor("q2k", uint32(GGMLTypeQ2_K), 32, 256).
		tensor("future", 77, 128, 4).
		alignTo(32).pad(128 + 84).b
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.TensorData("ok"); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"q2k", "future"} {
		ti, _ := f.Tensor(name)
		var ute *UnsupportedTypeError
		if _, err := ti.DType(); !errors.As(err, &ute) || ute.Tensor != name || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: DType error = %v", name, err)
		}
		if _, err := f.TensorData(name); !errors.As(err, &ute) {
			t.Errorf("%s: TensorData error = %v", name, err)
		}
	}
	if b, err := f.RawTensorData("q2k"); err != nil || len(b) != 84 {
		t.Errorf("RawTensorData(q2k) = %d bytes, %v", len(b), err)
	}
	if _, err := f.RawTensorData("future"); err == nil || !strings.Contains(err.Error(), "unknown ggml type id 77") {
		t.Errorf("RawTensorData(future) error = %v", err)
	}
	if _, err := f.TensorData("nope"); !errors.Is(err, ErrTensorNotFound) {
		t.Errorf("missing tensor: %v", err)
	}
}

// TestTruncations cuts a valid file at every byte: each prefix must fail
// with a FormatError, and never panic.
func TestTruncations(t *testing.T) {
	full := sampleFile(t)
	if _, err := Parse(full); err != nil {
		t.Fatal(err)
	}
	for n := range len(full) {
		_, err := Parse(full[:n])
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("prefix %d of %d: err = %v, want a *FormatError", n, len(full), err)
		}
	}
}

// TestBitFlips flips each byte of a valid file; Parse may accept or reject
// the result but must not panic, and anything accepted must give in-range
// tensor views.
func TestBitFlips(t *testing.T) {
	full := sampleFile(t)
	for i := range full {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			data := bytes.Clone(full)
			data[i] ^= x
			checkParsed(t, data)
		}
	}
}

// checkParsed parses data and, when it is accepted, exercises every
// accessor; the fuzzer shares it.
func checkParsed(t testing.TB, data []byte) {
	f, err := Parse(data)
	if err != nil {
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("error %T is not a *FormatError: %v", err, err)
		}
		if fe.Offset < 0 || fe.Offset > int64(len(data)) {
			t.Fatalf("error offset %d outside the %d-byte input", fe.Offset, len(data))
		}
		return
	}
	for _, kv := range f.KVs() {
		_ = kv.Value.String()
		f.Strings(kv.Key)
		f.Ints(kv.Key)
		f.Floats(kv.Key)
		f.Uint(kv.Key)
	}
	for _, ti := range f.Tensors() {
		ti.Shape()
		ti.TensorType()
		b, err := f.RawTensorData(ti.Name)
		if err == nil && int64(len(b)) != ti.Size {
			t.Fatalf("%s: %d bytes, size %d", ti.Name, len(b), ti.Size)
		}
		if tt, err := ti.TensorType(); err == nil && tt.Bytes() != ti.Size {
			t.Fatalf("%s: poot says %d bytes, file %d", ti.Name, tt.Bytes(), ti.Size)
		}
	}
}

// TestNoAmplification checks that a count which fits the file but is false
// does not make Parse reserve memory in proportion to it: 16 MiB of 0xff
// after a string array header claiming two million elements fails on the
// first element, having allocated little.
func TestNoAmplification(t *testing.T) {
	const size = 16 << 20
	for _, elem := range []ValueType{TypeString, TypeArray} {
		r := header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(elem)).u64(size / 16)
		r.b = append(r.b, bytes.Repeat([]byte{0xff}, size)...)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Parse(r.b)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("%v: parsed", elem)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%v: Parse allocated %d bytes for a bogus count", elem, grew)
		}
	}
}
