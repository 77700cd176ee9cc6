package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
)

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// allDTypes writes one tensor of every known dtype, plus a scalar, an empty
// tensor and a streamed one.
func allDTypes(r *rand.Rand) []WriterTensor {
	var dts []DType
	for d := range dtypeSizes {
		dts = append(dts, d)
	}
	slices.Sort(dts)
	var ts []WriterTensor
	for _, d := range dts {
		shape := poot.Shape{3, 5}
		ts = append(ts, WriterTensor{Name: "t." + string(d), DType: d, Shape: shape, Data: randomBytes(r, 15*d.Size())})
	}
	return append(ts,
		WriterTensor{Name: "scalar", DType: F32, Shape: poot.Shape{}, Data: []byte{0, 0, 128, 63}},
		WriterTensor{Name: "empty", DType: BF16, Shape: poot.Shape{0, 4}, Data: nil},
		WriterTensor{Name: "weird \"name\"\n✓", DType: I32, Shape: poot.Shape{2}, Data: randomBytes(r, 8)},
		WriterTensor{Name: "streamed", DType: F16, Shape: poot.Shape{7}, Reader: bytes.NewReader(randomBytes(r, 14))},
	)
}

func wantData(t *testing.T, wt WriterTensor) []byte {
	if rd, ok := wt.Reader.(*bytes.Reader); ok {
		b := make([]byte, rd.Size())
		rd.ReadAt(b, 0)
		return b
	}
	return wt.Data
}

func TestRoundTrip(t *testing.T) {
	ts := allDTypes(rand.New(rand.NewPCG(3, 4)))
	md := map[string]string{"format": "pt", "note": "ünïcode"}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := WriteFile(path, ts, md); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !reflect.DeepEqual(f.Metadata(), md) {
		t.Errorf("metadata = %v", f.Metadata())
	}
	if f.DataOffset()%8 != 0 {
		t.Errorf("data offset %d not 8-aligned", f.DataOffset())
	}
	infos := f.Tensors()
	if len(infos) != len(ts) {
		t.Fatalf("%d tensors, want %d", len(infos), len(ts))
	}
	for i, wt := range ts {
		ti := infos[i]
		if ti.Name != wt.Name || ti.DType != wt.DType || !ti.Shape.Equal(wt.Shape) {
			t.Errorf("tensor %d: %q %s %v, want %q %s %v", i, ti.Name, ti.DType, ti.Shape, wt.Name, wt.DType, wt.Shape)
		}
		raw, err := f.RawTensorData(wt.Name)
		if err != nil || !bytes.Equal(raw, wantData(t, wt)) {
			t.Errorf("%q: data differs (%v)", wt.Name, err)
		}
		data, err := f.TensorData(wt.Name)
		if pd, ok := wt.DType.Poot(); ok {
			tt, terr := ti.TensorType()
			if err != nil || terr != nil || tt.DType != pd || tt.Bytes() != int64(len(data)) {
				t.Errorf("%q: TensorData err %v, TensorType %v %v", wt.Name, err, tt, terr)
			}
		} else {
			var ue *UnsupportedDTypeError
			if !errors.As(err, &ue) || ue.Tensor != wt.Name || !strings.Contains(err.Error(), wt.Name) {
				t.Errorf("%q: err = %v, want UnsupportedDTypeError", wt.Name, err)
			}
		}
	}
	if _, err := f.TensorData("nope"); !errors.Is(err, ErrTensorNotFound) {
		t.Errorf("missing: %v", err)
	}
}

func TestDTypeMapping(t *testing.T) {
	for _, d := range []poot.DType{poot.F32, poot.F16, poot.BF16, poot.I32, poot.Bool} {
		s, ok := DTypeOf(d)
		if back, ok2 := s.Poot(); !ok || !ok2 || back != d || s.Size() != d.BlockBytes() {
			t.Errorf("%v -> %q -> %v", d, s, back)
		}
	}
	if _, ok := DTypeOf(poot.Q4_K); ok {
		t.Error("Q4_K has a safetensors dtype")
	}
}

// file assembles a safetensors file from a header string and data length.
func file(header string, dataLen int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, dataLen)...)
}

func TestMalformed(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "shorter than"},
		{"huge header", binary.LittleEndian.AppendUint64(nil, 1<<62), "header length"},
		{"header past end", append(binary.LittleEndian.AppendUint64(nil, 10), "{}"...), "header length"},
		{"not object", file(`[]`, 0), "not a JSON object"},
		{"bad json", file(`{"a":`, 0), "ends early"},
		{"syntax", file(`{"a" 1}`, 0), "colon"},
		{"trailing", file(`{}x`, 0), "after the header"},
		{"metadata type", file(`{"__metadata__":{"a":1}}`, 0), "map of strings"},
		{"dup", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "duplicate tensor name"},
		{"no dtype", file(`{"a":{"shape":[1],"data_offsets":[0,4]}}`, 4), "no dtype"},
		{"no shape", file(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, 4), "no shape"},
		{"neg shape", file(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), "not a valid extent"},
		{"float shape", file(`{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, 4), "not a valid extent"},
		{"overflow", file(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, 4), "2^62"},
		{"offsets len", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, 4), "want 2"},
		{"begin>end", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, 4), "do not lie inside"},
		{"past end", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4), "do not lie inside"},
		{"huge offset", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,99999999999999999999]}}`, 4), "not a valid offset"},
		{"size", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 8), "needs 8"},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "overlaps"},
		{"wrong kind", file(`{"a":[1,2]}`, 0), "tensor \"a\""},
	}
	for _, c := range cases {
		f, err := Parse(c.data)
		if err == nil {
			t.Errorf("%s: accepted, %d tensors", c.name, len(f.Tensors()))
			continue
		}
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want a FormatError mentioning %q", c.name, err, c.want)
		}
		if fe != nil && (fe.Offset < 0 || fe.Offset > int64(len(c.data))) {
			t.Errorf("%s: offset %d outside the file", c.name, fe.Offset)
		}
	}
	// An unknown dtype is accepted, and fails only when requested.
	f, err := Parse(file(`{"a":{"dtype":"F4","shape":[8],"data_offsets":[0,4]}}`, 4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.TensorData("a"); err == nil || !strings.Contains(err.Error(), `unknown dtype "F4"`) {
		t.Errorf("unknown dtype: %v", err)
	}
}

func sampleFile(t testing.TB) []byte {
	var buf bytes.Buffer
	ts := []WriterTensor{
		{Name: "w", DType: F32, Shape: poot.Shape{2, 2}, Data: make([]byte, 16)},
		{Name: "ids", DType: I64, Shape: poot.Shape{1}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
	}
	if err := Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestTruncations(t *testing.T) {
	full := sampleFile(t)
	for n := range len(full) {
		_, err := Parse(full[:n])
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("prefix %d of %d: err = %v, want a FormatError", n, len(full), err)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	cases := []struct {
		name string
		ts   []WriterTensor
		want string
	}{
		{"dup", []WriterTensor{{Name: "a", DType: U8, Shape: poot.Shape{1}, Data: []byte{1}}, {Name: "a", DType: U8, Shape: poot.Shape{1}, Data: []byte{1}}}, "duplicate"},
		{"metadata name", []WriterTensor{{Name: MetadataKey, DType: U8, Shape: poot.Shape{1}, Data: []byte{1}}}, "invalid tensor name"},
		{"dtype", []WriterTensor{{Name: "a", DType: "F4", Shape: poot.Shape{1}, Data: []byte{1}}}, "unknown dtype"},
		{"size", []WriterTensor{{Name: "a", DType: F32, Shape: poot.Shape{1}, Data: []byte{1}}}, "needs 4"},
		{"shape", []WriterTensor{{Name: "a", DType: F32, Shape: poot.Shape{-1}}}, "invalid shape"},
		{"short", []WriterTensor{{Name: "a", DType: F32, Shape: poot.Shape{2}, Reader: bytes.NewReader([]byte{1})}}, "1 of 8"},
	}
	for _, c := range cases {
		err := Write(&bytes.Buffer{}, c.ts, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestDir(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var ts []WriterTensor
	for i := range 10 {
		ts = append(ts, WriterTensor{Name: "layer." + string(rune('a'+i)), DType: BF16, Shape: poot.Shape{10, 10}, Data: randomBytes(r, 200)})
	}
	config := []byte(`{"model_type":"llama","hidden_size":64}`)
	for _, shardSize := range []int64{0, 450, 1} {
		dir := t.TempDir()
		if err := WriteDir(dir, config, ts, shardSize); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, TokenizerFile), []byte(`{"model":{}}`), 0o644)
		d, err := OpenDir(dir)
		if err != nil {
			t.Fatalf("shard size %d: %v", shardSize, err)
		}
		wantShards := map[int64]int{0: 1, 450: 5, 1: 10}[shardSize]
		if len(d.Shards()) != wantShards {
			t.Errorf("shard size %d: shards %v, want %d", shardSize, d.Shards(), wantShards)
		}
		if d.Config()["model_type"] != "llama" || !bytes.Equal(d.ConfigJSON(), config) {
			t.Errorf("config = %v", d.Config())
		}
		if string(d.TokenizerJSON()) != `{"model":{}}` || d.GenerationConfigJSON() != nil {
			t.Errorf("tokenizer %q, generation config %q", d.TokenizerJSON(), d.GenerationConfigJSON())
		}
		if len(d.Tensors()) != len(ts) {
			t.Errorf("%d tensors", len(d.Tensors()))
		}
		for _, wt := range ts {
			data, err := d.TensorData(wt.Name)
			if err != nil || !bytes.Equal(data, wt.Data) {
				t.Errorf("%s: data differs (%v)", wt.Name, err)
			}
			if ti, ok := d.Tensor(wt.Name); !ok || ti.DType != BF16 {
				t.Errorf("%s: info %v", wt.Name, ti)
			}
		}
		if _, err := d.TensorData("nope"); !errors.Is(err, ErrTensorNotFound) {
			t.Errorf("missing: %v", err)
		}
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestDirErrors(t *testing.T) {
	write := func(dir, name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shard := func(dir, name string, tensors ...string) {
		var ts []WriterTensor
		for _, n := range tensors {
			ts = append(ts, WriterTensor{Name: n, DType: U8, Shape: poot.Shape{1}, Data: []byte{1}})
		}
		if err := WriteFile(filepath.Join(dir, name), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		setup func(dir string)
		want  string
	}{
		{"no config", func(dir string) { shard(dir, SingleFile, "a") }, "config.json"},
		{"bad config", func(dir string) { write(dir, ConfigFile, "[1]"); shard(dir, SingleFile, "a") }, "not a JSON object"},
		{"no weights", func(dir string) { write(dir, ConfigFile, "{}") }, "neither"},
		{"dup across shards", func(dir string) {
			write(dir, ConfigFile, "{}")
			shard(dir, "s1.safetensors", "a", "b")
			shard(dir, "s2.safetensors", "b")
			write(dir, IndexFile, `{"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}}`)
		}, "in both"},
		{"missing in shard", func(dir string) {
			write(dir, ConfigFile, "{}")
			shard(dir, "s1.safetensors", "a")
			write(dir, IndexFile, `{"weight_map":{"a":"s1.safetensors","c":"s1.safetensors"}}`)
		}, "does not hold it"},
		{"path escape", func(dir string) {
			write(dir, ConfigFile, "{}")
			write(dir, IndexFile, `{"weight_map":{"a":"../x.safetensors"}}`)
		}, "plain file name"},
		{"bad shard", func(dir string) {
			write(dir, ConfigFile, "{}")
			write(dir, SingleFile, "garbage")
		}, "malformed"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		c.setup(dir)
		d, err := OpenDir(dir)
		if err == nil {
			d.Close()
			t.Errorf("%s: opened", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}
