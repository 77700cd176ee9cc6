package cpu

import "math"

// expf is e^x in float32 within 2 ulps, several times faster than
// math.Exp: x = n·ln2 + r with |r| ≤ ln2/2, e^r by a degree-7 polynomial
// and 2^n from the exponent bits. Outside (-87, 88) (where the result is
// subnormal or overflows) and for NaN it defers to math.Exp.
func expf(x float32) float32 {
	if !(x > -87 && x < 88) {
		return float32(math.Exp(float64(x)))
	}
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	t := x*log2e + 0.5
	n := float32(int32(t))
	if t < 0 && n != t {
		n-- // floor for negative t
	}
	r := x - n*ln2hi - n*ln2lo
	p := float32(1.0 / 5040)
	p = p*r + 1.0/720
	p = p*r + 1.0/120
	p = p*r + 1.0/24
	p = p*r + 1.0/6
	p = p*r + 0.5
	p = p*r + 1
	p = p*r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}
