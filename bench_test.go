package poot_test

import (
	"testing"

	"github.com/pootlabs/poot"
)

// BenchmarkTraceDecoder24 records a 24-layer decoder-shaped decode step
// (Llama-3.2-1B-like widths) with primitives and finishes (which validates)
// it.
func BenchmarkTraceDecoder24(b *testing.B) {
	var g *poot.Graph
	for b.Loop() {
		var err error
		g, err = traceDecoder(24, 2048, 32, 8, 8192, 128256, 4096)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(g.NumEqns()), "eqns")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(g.NumEqns()), "ns/eqn")
}
