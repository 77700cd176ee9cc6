package cpu

import (
	"math"
	"testing"
)

// TestExpf: within 2 ulps of the correctly rounded e^x over the range
// softmax and SiLU use, and exact at the special values.
func TestExpf(t *testing.T) {
	ulp := func(f float32) float64 {
		return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
	}
	for x := float32(-100); x < 100; x += 0.00137 {
		want := float32(math.Exp(float64(x)))
		got := expf(x)
		if d := math.Abs(float64(got) - float64(want)); d > 2*ulp(want) {
			t.Fatalf("expf(%v) = %v, want %v (%.2f ulps)", x, got, want, d/ulp(want))
		}
	}
	for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 0, -0} {
		if got, want := expf(x), float32(math.Exp(float64(x))); got != want {
			t.Errorf("expf(%v) = %v, want %v", x, got, want)
		}
	}
	if got := expf(float32(math.NaN())); got == got {
		t.Errorf("expf(NaN) = %v", got)
	}
}
