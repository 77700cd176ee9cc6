package safetensors

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
)

// FuzzSafetensors feeds arbitrary bytes to Parse. Accepted inputs must give
// in-range views of the declared sizes, and rewriting an accepted file must
// be stable.
func FuzzSafetensors(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
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
		var ts []WriterTensor
		for _, ti := range file.Tensors() {
			b, err := file.RawTensorData(ti.Name)
			if err != nil || int64(len(b)) != ti.End-ti.Begin {
				t.Fatalf("%q: %d bytes, %v", ti.Name, len(b), err)
			}
			if tt, err := ti.TensorType(); err == nil && tt.Bytes() != int64(len(b)) {
				t.Fatalf("%q: poot says %d bytes, file %d", ti.Name, tt.Bytes(), len(b))
			}
			ts = append(ts, WriterTensor{Name: ti.Name, DType: ti.DType, Shape: ti.Shape, Data: b})
		}
		var once bytes.Buffer
		if err := Write(&once, ts, file.Metadata()); err != nil {
			return // unknown dtypes cannot be written back
		}
		again, err := Parse(once.Bytes())
		if err != nil {
			t.Fatalf("rewritten file does not parse: %v", err)
		}
		if len(again.Tensors()) != len(ts) {
			t.Fatalf("rewritten file has %d tensors, want %d", len(again.Tensors()), len(ts))
		}
	})
}

func fuzzSeeds(t testing.TB) [][]byte {
	full := sampleFile(t)
	seeds := [][]byte{full, full[:20], full[:len(full)-3]}
	var buf bytes.Buffer
	ts := []WriterTensor{
		{Name: "a", DType: BF16, Shape: poot.Shape{2, 3}, Data: make([]byte, 12)},
		{Name: "b", DType: BOOL, Shape: poot.Shape{}, Data: []byte{1}},
		{Name: "c", DType: F8_E4M3, Shape: poot.Shape{0}},
	}
	if err := Write(&buf, ts, nil); err != nil {
		t.Fatal(err)
	}
	seeds = append(seeds, buf.Bytes(),
		file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8),
		file(`{"__metadata__":{"k":"v"},"x":{"dtype":"F4","shape":[8],"data_offsets":[0,4]}}  `, 4),
		file(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, 4),
	)
	return seeds
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzSafetensors when
// POOT_WRITE_CORPUS=1; otherwise it checks that the corpus is committed.
func TestWriteFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzSafetensors")
	if os.Getenv("POOT_WRITE_CORPUS") != "1" {
		if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
			t.Errorf("no committed seed corpus in %s (regenerate with POOT_WRITE_CORPUS=1)", dir)
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range fuzzSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
