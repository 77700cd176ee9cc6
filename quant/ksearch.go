package quant

import "math"

// This file holds the scale searches shared by ggml's K-quant reference
// quantizers. They are ported for their exact behaviour: every operation
// is a float32 operation in the order ggml evaluates it, and every product
// that feeds an addition is wrapped in float32(...) so it is rounded on its
// own rather than fused.

// groupMaxEps is the magnitude below which ggml treats a group as all zero.
const groupMaxEps float32 = 1e-15

// nearestInt rounds to the nearest integer, ties to even, the way ggml does
// it: adding 1.5·2^23 pushes the integer part into the low mantissa bits,
// where it is read back. This differs from roundf on ties (2.5 → 2), and it
// is defined only for |f| ≤ 2^22; beyond that it returns ggml's garbage,
// bit for bit, which only non-finite or absurd inputs reach.
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// sqrt32 is sqrtf: float64 square root is correctly rounded, and rounding
// it again to float32 cannot double-round wrongly for a square root.
func sqrt32(f float32) float32 { return float32(math.Sqrt(float64(f))) }

func clampInt(v, lo, hi int32) int32 { return max(lo, min(hi, v)) }

// makeQKX2Quants fits x ≈ scale·L + min with L in 0…nmax and min ≤ 0,
// minimising the weighted squared (or absolute, with useMAD) error. It
// starts from the plain min/max fit and then tries nstep+1 slightly
// different inverse scales, (rmin + rdelta·is + nmax)/(max − min), solving
// the weighted least-squares problem for scale and min at each; the best
// fit wins. It returns the scale and the negated min (so both are ≥ 0),
// and leaves the levels in L. Laux is scratch of length n.
//
// This is ggml's make_qkx2_quants, used by Q4_K and Q5_K.
func makeQKX2Quants(nmax int32, x, weights []float32, L, Laux []uint8,
	rmin, rdelta float32, nstep int, useMAD bool) (scale, negMin float32) {
	n := len(x)
	weights, L, Laux = weights[:n], L[:n], Laux[:n]
	lo, hi := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(L)
		return 0, -lo
	}
	fmax := float32(nmax)
	iscale := fmax / (hi - lo)
	scale = 1 / iscale
	var bestErr float32
	for i, v := range x {
		l := nearestInt(float32(iscale * (v - lo)))
		L[i] = uint8(clampInt(l, 0, nmax))
		diff := float32(float32(scale*float32(L[i]))+lo) - v
		if useMAD {
			diff = abs32(diff)
		} else {
			diff = float32(diff * diff)
		}
		bestErr += float32(weights[i] * diff)
	}
	if nstep < 1 {
		return scale, -lo
	}
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + fmax) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := clampInt(nearestInt(float32(iscale*(v-lo))), 0, nmax)
			Laux[i] = uint8(l)
			fl := float32(l)
			w := weights[i]
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if !(D > 0) {
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var curErr float32
		for i, v := range x {
			diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - v
			if useMAD {
				diff = abs32(diff)
			} else {
				diff = float32(diff * diff)
			}
			curErr += float32(weights[i] * diff)
		}
		if curErr < bestErr {
			copy(L, Laux)
			bestErr = curErr
			scale = thisScale
			lo = thisMin
		}
	}
	return scale, -lo
}

// makeQXQuants fits x ≈ scale·(L − nmax) with L − nmax in −nmax…nmax−1,
// weighting each element by x², and returns the scale (negative when the
// largest-magnitude element is positive, so that it maps onto −nmax, the
// end with one more level). Besides the direct fit it tries inverse scales
// −(nmax + 0.1·is)/max for is = −9…9 and keeps the one whose least-squares
// scale explains the most weighted energy.
//
// This is ggml's make_qx_quants with rmse_type 1 and no importance
// weights, the only form Q6_K's reference quantizer uses.
func makeQXQuants(nmax int32, x []float32, L []int8) float32 {
	L = L[:len(x)]
	var amax, max float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, max = a, v
		}
	}
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	fmax := float32(nmax)
	iscale := float32(-nmax) / max
	var sumLX, sumL2 float32
	for i, v := range x {
		l := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		L[i] = int8(l + nmax)
		fl := float32(l)
		w := float32(v * v)
		sumLX += float32(float32(w*v) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := float32(scale * sumLX)
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fmax + float32(0.1*float32(is))) / max
		sumLX, sumL2 = 0, 0
		for _, v := range x {
			fl := float32(clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1))
			w := float32(v * v)
			sumLX += float32(float32(w*v) * fl)
			sumL2 += float32(float32(w*fl) * fl)
		}
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			for i, v := range x {
				L[i] = int8(clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1) + nmax)
			}
			scale = sumLX / sumL2
			best = float32(scale * sumLX)
		}
	}
	return scale
}
