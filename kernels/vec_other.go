//go:build !amd64

package kernels

func dotVec(a, b []float32) float32              { return dotF32(a, b) }
func axpyVec(y, x []float32, a float32)          { axpy(y, x, a) }
func f16RowVec(dst []float32, src []uint16) bool { return false }

func expSubSumVec(x []float32, sub float32) float32 {
	var s float32
	for i, v := range x {
		e := expf(v - sub)
		x[i] = e
		s += e
	}
	return s
}

func siluMulVec(dst, gate, up []float32) { siluMulGo(dst, gate, up) }

func quantizeBlockVec(q []int8, x []float32) (float32, int32) { return quantizeBlock(q, x) }
