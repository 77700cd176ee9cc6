package cpu

import (
	"math"
	"testing"
)

var sinkF float32

func BenchmarkExpf(b *testing.B) {
	x := make([]float32, 1024)
	for i := range x {
		x[i] = -float32(i) / 100
	}
	b.Run("expf", func(b *testing.B) {
		var s float32
		for range b.N {
			for _, v := range x {
				s += expf(v)
			}
		}
		sinkF = s
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/exp")
	})
	b.Run("math", func(b *testing.B) {
		var s float32
		for range b.N {
			for _, v := range x {
				s += float32(math.Exp(float64(v)))
			}
		}
		sinkF = s
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/exp")
	})
}
