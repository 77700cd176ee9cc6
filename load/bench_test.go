package load_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
)

// randomReader yields pseudo-random bytes cheaply: the data must be written
// pages, or the benchmark would measure the zero page.
type randomReader struct{ r *rand.PCG }

func (r randomReader) Read(p []byte) (int, error) {
	for i := 0; i+8 <= len(p); i += 8 {
		v := r.r.Uint64()
		for j := range 8 {
			p[i+j] = byte(v >> (8 * j))
		}
	}
	return len(p) - len(p)%8, nil
}

func residentMB(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(data))
	pages, _ := strconv.ParseFloat(f[1], 64)
	return pages * float64(os.Getpagesize()) / (1 << 20)
}

// BenchmarkOpenBind2GB opens a 2 GB Q8_0 GGUF and binds a graph reading every
// tensor: the time and the resident memory it adds should be those of a
// memory map, not of a copy.
func BenchmarkOpenBind2GB(b *testing.B) {
	if testing.Short() {
		b.Skip("writes a 2 GB file")
	}
	const rows, cols, n = 8192, 4096, 56 // 56 × 8192×4096 q8_0 ≈ 2.0 GB
	path := filepath.Join(b.TempDir(), "big.gguf")
	var ts []gguf.WriterTensor
	for i := range n {
		ts = append(ts, gguf.WriterTensor{
			Name: fmt.Sprintf("w%d", i), DType: poot.Q8_0, Shape: poot.Shape{rows, cols},
			Reader: io.LimitReader(randomReader{rand.NewPCG(uint64(i), 1)}, poot.T(poot.Q8_0, rows, cols).Bytes()),
		})
	}
	if err := gguf.WriteFile(path, nil, ts, 32); err != nil {
		b.Fatal(err)
	}
	bld := poot.NewBuilder[brand](poot.Limits{})
	x := bld.SlotNamed("x", poot.T(poot.F32, 1, cols))
	var outs []poot.Traced[brand]
	for i := range n {
		outs = append(outs, bld.MatMul(x, bld.Constant(fmt.Sprintf("w%d", i), poot.T(poot.F32, rows, cols))))
	}
	g, err := bld.Finish(poot.Out(outs...))
	if err != nil {
		b.Fatal(err)
	}
	before := residentMB(b)
	var grown float64
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		c, err := load.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := load.Bind(g, c, nil); err != nil {
			b.Fatal(err)
		}
		grown = residentMB(b) - before
		c.Close()
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "ms/open+bind")
	b.ReportMetric(grown, "MB-resident-growth")
}
