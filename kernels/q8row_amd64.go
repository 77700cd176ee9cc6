package kernels

//go:noescape
func q8ToF32Row(dst *float32, src *byte, blocks int)

// q8RowVec decodes whole Q8_0 blocks with AVX2 and F16C (the avx2 level
// and above) and reports whether it did.
func q8RowVec(dst []float32, src []byte) bool {
	if !useAsm {
		return false
	}
	q8ToF32Row(&dst[0], &src[0], len(dst)/32)
	return true
}
