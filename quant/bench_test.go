package quant

import (
	"math"
	"testing"
)

// benchCols is a realistic row: the hidden size of a 7–8B model.
const benchCols = 4096

func benchRow() []float32 {
	x := make([]float32, benchCols)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.37)) * 0.05
	}
	return x
}

// BenchmarkDequantizeRow reports decoding speed in GB/s of stored bytes.
func BenchmarkDequantizeRow(b *testing.B) {
	x := benchRow()
	for _, dt := range allTypes {
		b.Run(dt.String(), func(b *testing.B) {
			w := make([]byte, dt.RowBytes(benchCols))
			if err := QuantizeRow(dt, w, x); err != nil {
				b.Fatal(err)
			}
			y := make([]float32, benchCols)
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				_ = DequantizeRow(dt, y, w)
			}
		})
	}
}

// BenchmarkQuantizeRow reports encoding speed in GB/s of float32 input.
func BenchmarkQuantizeRow(b *testing.B) {
	x := benchRow()
	for _, dt := range allTypes {
		b.Run(dt.String(), func(b *testing.B) {
			w := make([]byte, dt.RowBytes(benchCols))
			b.SetBytes(4 * benchCols)
			for b.Loop() {
				_ = QuantizeRow(dt, w, x)
			}
		})
	}
}

// BenchmarkDotRow reports the reference dot product's speed in GB/s of
// stored weight bytes.
func BenchmarkDotRow(b *testing.B) {
	x := benchRow()
	for _, dt := range allTypes {
		b.Run(dt.String(), func(b *testing.B) {
			w := make([]byte, dt.RowBytes(benchCols))
			_ = QuantizeRow(dt, w, x)
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				_, _ = DotRow(dt, w, x)
			}
		})
	}
}
