package gguf

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
)

// sampleKVs holds one entry of every value type, including empty and nested
// arrays.
func sampleKVs() []KV {
	return []KV{
		{"general.architecture", ValueOf("llama")},
		{"u8", ValueOf(uint8(200))},
		{"i8", ValueOf(int8(-100))},
		{"u16", ValueOf(uint16(60000))},
		{"i16", ValueOf(int16(-30000))},
		{"u32", ValueOf(uint32(4000000000))},
		{"i32", ValueOf(int32(-2000000000))},
		{"f32", ValueOf(float32(1e-5))},
		{"bool", ValueOf(true)},
		{"string", ValueOf("héllo ▁world")},
		{"u64", ValueOf(uint64(1) << 63)},
		{"i64", ValueOf(int64(-1) << 62)},
		{"f64", ValueOf(3.141592653589793)},
		{"a.u8", ArrayOf([]uint8{1, 2, 255})},
		{"a.i8", ArrayOf([]int8{-1, 2})},
		{"a.u16", ArrayOf([]uint16{1, 65535})},
		{"a.i16", ArrayOf([]int16{-1, 32767})},
		{"a.u32", ArrayOf([]uint32{7})},
		{"a.i32", ArrayOf([]int32{2, 3, 6, 1})},
		{"a.f32", ArrayOf([]float32{0, -1, 0.5})},
		{"a.bool", ArrayOf([]bool{true, false, true})},
		{"a.string", ArrayOf([]string{"<s>", "", "▁a"})},
		{"a.u64", ArrayOf([]uint64{1 << 40})},
		{"a.i64", ArrayOf([]int64{-1 << 40})},
		{"a.f64", ArrayOf([]float64{1.5, -2})},
		{"a.empty", ArrayOf([]string{})},
		{"a.nested", ArrayOfArrays(ArrayOf([]int32{1, 2}), ArrayOf([]string{"x"}), ArrayOfArrays(ArrayOf([]bool{})))},
	}
}

// sampleFile is a small valid file used by the malformed-input tests and as
// a fuzzing seed.
func sampleFile(t testing.TB) []byte {
	kvs := []KV{
		{"general.architecture", ValueOf("llama")},
		{"llama.embedding_length", ValueOf(uint32(4))},
		{"tokenizer.ggml.tokens", ArrayOf([]string{"a", "b"})},
		{"tokenizer.ggml.scores", ArrayOf([]float32{0, -1})},
		{"nested", ArrayOfArrays(ArrayOf([]int32{1}))},
	}
	tensors := []WriterTensor{
		{Name: "w", DType: poot.F32, Shape: poot.Shape{2, 4}, Data: make([]byte, 32)},
		{Name: "q", DType: poot.Q8_0, Shape: poot.Shape{1, 32}, Data: bytes.Repeat([]byte{1}, 34)},
	}
	var buf bytes.Buffer
	if err := Write(&buf, kvs, tensors, 0); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func randomBytes(r *rand.Rand, n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestRoundTrip writes every ggml type with a known layout (through poot
// dtypes where poot has one, raw ids otherwise) and every value type, and
// reads the file back.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var ids []int
	for id := range ggmlInfos {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	var tensors []WriterTensor
	for _, id := range ids {
		typ := GGMLType(id)
		be := typ.BlockElems()
		shape := poot.Shape{3, 2 * be}
		wt := WriterTensor{Name: "t." + typ.String(), Shape: shape}
		if d, ok := typ.DType(); ok {
			wt.DType = d
		} else {
			wt.GGMLType = typ
		}
		size := int64(3 * 2 * typ.BlockBytes())
		wt.Data = randomBytes(r, size)
		tensors = append(tensors, wt)
	}
	// Ranks 0 to 4, an empty tensor and a streamed one.
	tensors = append(tensors,
		WriterTensor{Name: "scalar", DType: poot.F32, Shape: poot.Shape{}, Data: []byte{1, 2, 3, 4}},
		WriterTensor{Name: "rank4", DType: poot.I32, Shape: poot.Shape{2, 1, 3, 1}, Data: randomBytes(r, 24)},
		WriterTensor{Name: "empty", DType: poot.F16, Shape: poot.Shape{0, 8}},
		WriterTensor{Name: "streamed", DType: poot.BF16, Shape: poot.Shape{5, 7}, Reader: bytes.NewReader(randomBytes(r, 70))},
	)
	streamed := tensors[len(tensors)-1].Reader.(*bytes.Reader)
	streamedData := make([]byte, 70)
	streamed.ReadAt(streamedData, 0)

	for _, align := range []int{0, 1, 64, 4096} {
		path := filepath.Join(t.TempDir(), "rt.gguf")
		streamed.Seek(0, 0)
		if err := WriteFile(path, sampleKVs(), tensors, align); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatalf("align %d: %v", align, err)
		}
		wantAlign := align
		if align == 0 {
			wantAlign = DefaultAlignment
		}
		if f.Alignment() != wantAlign || f.Version() != 3 || f.DataOffset()%int64(wantAlign) != 0 {
			t.Errorf("align %d: got alignment %d, version %d, data offset %d", align, f.Alignment(), f.Version(), f.DataOffset())
		}
		kvs := f.KVs()
		want := sampleKVs()
		if align != 0 && align != DefaultAlignment {
			want = append(want, KV{KeyAlignment, ValueOf(uint32(align))})
		}
		if !reflect.DeepEqual(kvs, want) {
			t.Errorf("align %d: metadata differs:\n got %v\nwant %v", align, kvs, want)
		}
		infos := f.Tensors()
		if len(infos) != len(tensors) {
			t.Fatalf("%d tensors, want %d", len(infos), len(tensors))
		}
		for i, wt := range tensors {
			ti := infos[i]
			if ti.Name != wt.Name || !ti.Shape().Equal(wt.Shape) || ti.Offset%uint64(wantAlign) != 0 {
				t.Errorf("tensor %d: got %s %v at %d, want %s %v", i, ti.Name, ti.Shape(), ti.Offset, wt.Name, wt.Shape)
			}
			wantData := wt.Data
			if wt.Reader != nil {
				wantData = streamedData
			}
			got, err := f.RawTensorData(wt.Name)
			if err != nil || !bytes.Equal(got, wantData) {
				t.Errorf("%s: data differs (err %v)", wt.Name, err)
			}
			d, err := ti.DType()
			if wt.DType != poot.Invalid {
				if err != nil || d != wt.DType {
					t.Errorf("%s: dtype %v, %v; want %v", wt.Name, d, err, wt.DType)
				}
				if _, err := f.TensorData(wt.Name); err != nil {
					t.Errorf("%s: TensorData: %v", wt.Name, err)
				}
			} else {
				var ute *UnsupportedTypeError
				if !errors.As(err, &ute) || ute.Tensor != wt.Name || ute.Type != wt.GGMLType {
					t.Errorf("%s: DType error = %v, want UnsupportedTypeError", wt.Name, err)
				}
				if _, err := f.TensorData(wt.Name); !errors.As(err, &ute) {
					t.Errorf("%s: TensorData error = %v, want UnsupportedTypeError", wt.Name, err)
				}
			}
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
		if _, err := f.RawTensorData("scalar"); !errors.Is(err, ErrClosed) {
			t.Errorf("after Close: err = %v, want ErrClosed", err)
		}
	}
}

func TestLookups(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sampleKVs(), nil, 0); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got, want any, err error, wantErr error) {
		t.Helper()
		if wantErr != nil {
			if !errors.Is(err, wantErr) {
				t.Errorf("%s: err = %v, want %v", name, err, wantErr)
			} else if !strings.Contains(err.Error(), name) {
				t.Errorf("%s: error %q does not name the key", name, err)
			}
			return
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, %v; want %v", name, got, err, want)
		}
	}
	u, err := f.Uint("u8")
	check("u8", u, uint64(200), err, nil)
	u, err = f.Uint("u64")
	check("u64", u, uint64(1)<<63, err, nil)
	_, err = f.Uint("i8")
	check("i8", nil, nil, err, ErrOutOfRange)
	_, err = f.Uint("f32")
	check("f32", nil, nil, err, ErrWrongType)
	i, err := f.Int("i16")
	check("i16", i, int64(-30000), err, nil)
	i, err = f.Int("u32")
	check("u32", i, int64(4000000000), err, nil)
	_, err = f.Int("u64")
	check("u64", nil, nil, err, ErrOutOfRange)
	x, err := f.Float("f32")
	check("f32", float32(x), float32(1e-5), err, nil)
	x, err = f.Float("u16")
	check("u16", x, 60000.0, err, nil)
	_, err = f.Float("string")
	check("string", nil, nil, err, ErrWrongType)
	b, err := f.Bool("bool")
	check("bool", b, true, err, nil)
	_, err = f.Bool("u8")
	check("u8", nil, nil, err, ErrWrongType)
	s, err := f.String("string")
	check("string", s, "héllo ▁world", err, nil)
	ss, err := f.Strings("a.string")
	check("a.string", ss, []string{"<s>", "", "▁a"}, err, nil)
	_, err = f.Strings("a.i32")
	check("a.i32", nil, nil, err, ErrWrongType)
	_, err = f.Strings("string")
	check("string", nil, nil, err, ErrWrongType)
	fs, err := f.Floats("a.f64")
	check("a.f64", fs, []float32{1.5, -2}, err, nil)
	is, err := f.Ints("a.u16")
	check("a.u16", is, []int32{1, 65535}, err, nil)
	_, err = f.Ints("a.u64")
	check("a.u64", nil, nil, err, ErrOutOfRange)
	_, err = f.Ints("a.f32")
	check("a.f32", nil, nil, err, ErrWrongType)
	_, err = f.String("missing.key")
	check("missing.key", nil, nil, err, ErrKeyNotFound)
	if !f.Has("a.nested") || f.Has("missing.key") {
		t.Error("Has is wrong")
	}
	v, ok := f.Get("a.nested")
	if !ok || v.Type() != TypeArray || v.ElemType() != TypeArray || v.Len() != 3 {
		t.Errorf("nested array: %v", v)
	}
	inner, _ := v.Index(1)
	if s, _ := inner.Index(0); s.String() != `"x"` {
		t.Errorf("nested element = %v", s)
	}
	if got := v.String(); got != `[[1 2] ["x"] [[]]]` {
		t.Errorf("String() = %s", got)
	}
}

func TestWriteErrors(t *testing.T) {
	f32 := func(name string, shape poot.Shape, n int) WriterTensor {
		return WriterTensor{Name: name, DType: poot.F32, Shape: shape, Data: make([]byte, n)}
	}
	cases := []struct {
		name    string
		kvs     []KV
		tensors []WriterTensor
		align   int
		want    string
	}{
		{"dup key", []KV{{"a", ValueOf(1.0)}, {"a", ValueOf(2.0)}}, nil, 0, "duplicate key"},
		{"zero value", []KV{{"a", Value{}}}, nil, 0, "invalid"},
		{"bad nested", []KV{{"a", ArrayOfArrays(ValueOf(int32(1)))}}, nil, 0, "not an array"},
		{"dup tensor", nil, []WriterTensor{f32("x", poot.Shape{1}, 4), f32("x", poot.Shape{1}, 4)}, 0, "duplicate name"},
		{"size", nil, []WriterTensor{f32("x", poot.Shape{2}, 4)}, 0, "needs 8"},
		{"rank", nil, []WriterTensor{f32("x", poot.Shape{1, 1, 1, 1, 1}, 4)}, 0, "rank 5"},
		{"bool", nil, []WriterTensor{{Name: "x", DType: poot.Bool, Shape: poot.Shape{1}, Data: []byte{1}}}, 0, "no GGUF encoding"},
		{"raw unknown", nil, []WriterTensor{{Name: "x", GGMLType: 200, Shape: poot.Shape{1}, Data: []byte{1}}}, 0, "unknown ggml type"},
		{"block", nil, []WriterTensor{{Name: "x", DType: poot.Q4_0, Shape: poot.Shape{1, 16}, Data: make([]byte, 9)}}, 0, "block size"},
		{"no data", nil, []WriterTensor{{Name: "x", DType: poot.F32, Shape: poot.Shape{1}}}, 0, "neither"},
		{"short reader", nil, []WriterTensor{{Name: "x", DType: poot.F32, Shape: poot.Shape{4}, Reader: bytes.NewReader(make([]byte, 10))}}, 0, "10 of 16"},
		{"align", nil, nil, 48, "power of two"},
		{"align conflict", []KV{{KeyAlignment, ValueOf(uint32(64))}}, nil, 128, "contradicts"},
		{"align type", []KV{{KeyAlignment, ValueOf(uint64(64))}}, nil, 0, "uint32"},
	}
	for _, c := range cases {
		err := Write(&bytes.Buffer{}, c.kvs, c.tensors, c.align)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestVersion2 reads a version 2 file, whose layout is the same as version 3.
func TestVersion2(t *testing.T) {
	data := sampleFile(t)
	data[4] = 2
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version() != 2 || len(f.Tensors()) != 2 {
		t.Errorf("version %d, %d tensors", f.Version(), len(f.Tensors()))
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.gguf")
	if err := WriteFile(empty, nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	if f, err := Open(empty); err != nil || len(f.KVs()) != 0 || len(f.Tensors()) != 0 {
		t.Errorf("minimal file: %v", err)
	} else {
		f.Close()
	}
	zero := filepath.Join(dir, "zero.gguf")
	os.WriteFile(zero, nil, 0o644)
	var fe *FormatError
	if _, err := Open(zero); !errors.As(err, &fe) || !strings.Contains(err.Error(), zero) {
		t.Errorf("zero-length file: err = %v, want a FormatError naming the path", err)
	}
	if _, err := Open(filepath.Join(dir, "missing.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
}

// TestDTypeGeometryAgrees: every ggml type that maps to a poot dtype has
// that dtype's block geometry, and the mapping goes both ways. MXFP4 (ggml
// type 39, gpt-oss's expert matrices) is named because it was the last to
// be mapped.
func TestDTypeGeometryAgrees(t *testing.T) {
	for typ, info := range ggmlInfos {
		d, ok := typ.DType()
		if !ok {
			continue
		}
		if d.BlockElems() != typ.BlockElems() || d.BlockBytes() != typ.BlockBytes() {
			t.Errorf("%v: ggml blocks %d/%d bytes, poot %v %d/%d", typ, typ.BlockElems(), typ.BlockBytes(), d, d.BlockElems(), d.BlockBytes())
		}
		if back, ok := GGMLTypeOf(d); !ok || back != typ {
			t.Errorf("GGMLTypeOf(%v) = %v, %v; want %v", d, back, ok, typ)
		}
		if info.name != d.String() {
			t.Errorf("%v: ggml name %q, poot name %q", typ, info.name, d.String())
		}
	}
	if d, ok := GGMLTypeMXFP4.DType(); !ok || d != poot.MXFP4 {
		t.Errorf("GGMLTypeMXFP4.DType() = %v, %v", d, ok)
	}
}
