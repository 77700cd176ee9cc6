package kernels

// Q8_0RowToF32 decodes the Q8_0 blocks of src (34 bytes each: a binary16
// scale d, then 32 int8 quants q, each value d·q) into dst, as many whole
// blocks as both hold: min(len(dst)/32, len(src)/34). The quantized KV
// caches are read through it.
func Q8_0RowToF32(dst []float32, src []byte) {
	n := min(len(dst)/32, len(src)/34)
	if n == 0 {
		return
	}
	if q8RowVec(dst[:32*n], src[:34*n]) {
		return
	}
	q8RowGo(dst[:32*n], src[:34*n])
}

func q8RowGo(dst []float32, src []byte) {
	t := f16Table
	for b := 0; 32*b < len(dst); b++ {
		blk := src[34*b : 34*b+34]
		d := t[uint16(blk[0])|uint16(blk[1])<<8]
		out := dst[32*b : 32*b+32]
		for j, q := range blk[2:34] {
			out[j] = d * float32(int8(q))
		}
	}
}
