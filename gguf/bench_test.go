package gguf

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
)

// pcgReader is an endless stream of cheap pseudo-random bytes.
type pcgReader struct{ r *rand.PCG }

func (p pcgReader) Read(b []byte) (int, error) {
	n := len(b) &^ 7
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], p.r.Uint64())
	}
	for i := n; i < len(b); i++ {
		b[i] = byte(p.r.Uint64())
	}
	return len(b), nil
}

// residentBytes reads the resident set size from /proc/self/statm, or -1
// where there is no procfs.
func residentBytes() int64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1
	}
	fields := strings.Fields(string(raw))
	if len(fields) < 2 {
		return -1
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return -1
	}
	return pages * int64(os.Getpagesize())
}

// BenchmarkOpenLarge opens a 2 GiB GGUF (32 F32 matrices of 4096x4096 and a
// 32k-token vocabulary) and reports the open time and the growth of the
// resident set: opening touches only the header, so the growth stays near
// the size of the parsed metadata, while touching every tensor page brings
// the whole map in (rss-touched-MB).
func BenchmarkOpenLarge(b *testing.B) {
	if testing.Short() {
		b.Skip("writes a 2 GiB file; skipped in -short mode")
	}
	const nTensors, rows, cols = 32, 4096, 4096
	path := filepath.Join(b.TempDir(), "large.gguf")
	vocab := make([]string, 32000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("▁token%d", i)
	}
	kvs := []KV{
		{"general.architecture", ValueOf("llama")},
		{"tokenizer.ggml.tokens", ArrayOf(vocab)},
		{"tokenizer.ggml.scores", ArrayOf(make([]float32, len(vocab)))},
	}
	src := pcgReader{rand.NewPCG(1, 2)}
	var tensors []WriterTensor
	for i := range nTensors {
		tensors = append(tensors, WriterTensor{
			Name: fmt.Sprintf("blk.%d.weight", i), DType: poot.F32, Shape: poot.Shape{rows, cols}, Reader: src,
		})
	}
	if err := WriteFile(path, kvs, tensors, 0); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}

	before := residentBytes()
	var f *File
	for b.Loop() {
		if f != nil {
			f.Close()
		}
		if f, err = Open(path); err != nil {
			b.Fatal(err)
		}
	}
	afterOpen := residentBytes()
	var sum byte
	for _, ti := range f.Tensors() {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(data); i += 4096 {
			sum += data[i]
		}
	}
	afterTouch := residentBytes()
	f.Close()
	const mb = 1 << 20
	b.ReportMetric(float64(st.Size())/mb, "file-MB")
	if before >= 0 {
		b.ReportMetric(float64(afterOpen-before)/mb, "rss-open-MB")
		b.ReportMetric(float64(afterTouch-before)/mb, "rss-touched-MB")
	}
	benchSink = sum
}

// benchSink keeps the page-touching loop from being optimised away.
var benchSink byte
