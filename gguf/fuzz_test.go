package gguf

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
)

// FuzzGGUF feeds arbitrary bytes to Parse. Accepted inputs must give
// consistent tensor views, and writing an accepted file back out must be
// stable: parse(write(f)) writes the same bytes again.
func FuzzGGUF(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParsed(t, data)
		file, err := Parse(data)
		if err != nil {
			return
		}
		once, ok := rewrite(file)
		if !ok {
			return
		}
		again, err := Parse(once)
		if err != nil {
			t.Fatalf("rewritten file does not parse: %v", err)
		}
		twice, ok := rewrite(again)
		if !ok || !bytes.Equal(once, twice) {
			t.Fatalf("rewriting is not stable (ok %v)", ok)
		}
	})
}

// rewrite writes f back out through Write; false when Write refuses it
// (tensors of unknown layout, a general.alignment that is not uint32).
func rewrite(f *File) ([]byte, bool) {
	var tensors []WriterTensor
	for _, ti := range f.Tensors() {
		data, err := f.RawTensorData(ti.Name)
		if err != nil {
			return nil, false
		}
		tensors = append(tensors, WriterTensor{Name: ti.Name, GGMLType: ti.Type, Shape: ti.Shape(), Data: data})
	}
	var buf bytes.Buffer
	if err := Write(&buf, f.KVs(), tensors, f.Alignment()); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// fuzzSeeds are small valid files and a few near-misses.
func fuzzSeeds(t testing.TB) [][]byte {
	full := sampleFile(t)
	var seeds [][]byte
	seeds = append(seeds, full, full[:len(full)/2], full[:40])
	flipped := bytes.Clone(full)
	flipped[30] ^= 0xff // inside the first key's length
	seeds = append(seeds, flipped)

	var buf bytes.Buffer
	if err := Write(&buf, sampleKVs(), nil, 64); err != nil {
		t.Fatal(err)
	}
	seeds = append(seeds, buf.Bytes())

	buf.Reset()
	tensors := []WriterTensor{
		{Name: "raw.q2k", GGMLType: GGMLTypeQ2_K, Shape: poot.Shape{256}, Data: make([]byte, 84)},
		{Name: "k4", DType: poot.Q4_K, Shape: poot.Shape{1, 256}, Data: bytes.Repeat([]byte{7}, 144)},
		{Name: "s", DType: poot.I32, Shape: poot.Shape{}, Data: []byte{1, 0, 0, 0}},
	}
	if err := Write(&buf, []KV{{"general.architecture", ValueOf("x")}}, tensors, 0); err != nil {
		t.Fatal(err)
	}
	seeds = append(seeds, buf.Bytes())

	seeds = append(seeds,
		header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint8)).u64(1<<60).pad(60).b,
		header(2, 0).tensor("a", 0, 0, 16).tensor("b", 0, 32, 16).alignTo(32).pad(128).b,
		header(1, 0).tensor("t", 0, 0, 1<<32, 1<<32).alignTo(32).b,
	)
	return seeds
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzGGUF from fuzzSeeds when
// POOT_WRITE_CORPUS=1; otherwise it checks that the committed corpus exists.
func TestWriteFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzGGUF")
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
