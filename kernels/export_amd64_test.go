package kernels

// SetGFNI sets whether the avx512 Q4_K and Q5_K decode kernels use GFNI
// (useGFNI; only where the CPU has it) and returns a function that
// restores the setting.
func SetGFNI(on bool) (restore func()) {
	old := useGFNI
	useGFNI = on && detectGFNI()
	return func() { useGFNI = old }
}

// HasGFNI reports whether the CPU has GFNI.
func HasGFNI() bool { return detectGFNI() }

// SetFourStreamsK sets the shortest row the avx512 float decode kernels
// read as four streams (fourStreamsK) and returns a function that
// restores the setting.
func SetFourStreamsK(k int) (restore func()) {
	old := fourStreamsK
	fourStreamsK = k
	return func() { fourStreamsK = old }
}

// SetDecodeNTA sets the distance of the avx512 float decode kernels' NTA
// prefetches (decodeNTAFloat) and returns a function that restores it.
func SetDecodeNTA(d int) (restore func()) {
	old := decodeNTAFloat
	decodeNTAFloat = d
	return func() { decodeNTAFloat = old }
}

// SetDecodeAheadQ8 sets how far ahead the avx512 Q8_0 decode kernels
// prefetch their weights (decodeAheadQ8) and returns a function that
// restores it.
func SetDecodeAheadQ8(d int) (restore func()) {
	old := decodeAheadQ8
	decodeAheadQ8 = d
	return func() { decodeAheadQ8 = old }
}

// SetSixStreamsK sets the shortest row the avx512 float decode kernels
// read as six streams (sixStreamsK) and returns a function that restores
// the setting.
func SetSixStreamsK(k int) (restore func()) {
	old := sixStreamsK
	sixStreamsK = k
	return func() { sixStreamsK = old }
}

// SetAVX2FourRowsK sets the shortest row the avx2 float decode products
// read four rows at a time (avx2FourRowsK) and returns a function that
// restores the setting.
func SetAVX2FourRowsK(k int) (restore func()) {
	old := avx2FourRowsK
	avx2FourRowsK = k
	return func() { avx2FourRowsK = old }
}

// SetAVX2Ahead sets how far ahead the avx2 decode kernels prefetch their
// weights (avx2Ahead) and returns a function that restores it.
func SetAVX2Ahead(d int) (restore func()) {
	old := avx2Ahead
	avx2Ahead = d
	return func() { avx2Ahead = old }
}

// AheadLeft makes calls calls of the avx2 prompt products' next-block
// prefetch over rows [r0, r1) of a weight matrix of rows rows, ld bytes
// apart (bytes [off, off+size) of each asked for), and returns how many
// rows it left unasked.
func AheadLeft(ld, off, size, r0, r1, rows, calls int) int {
	h := newAhead(make([]byte, rows*ld), ld, off, size, r0, r1, calls)
	for range calls {
		h.next()
	}
	return h.end - h.row
}

// SetQ8FourStreamsK sets the shortest row the avx512 Q8_0 decode kernel
// reads as four streams (q8FourStreamsK) and returns a function that
// restores the setting.
func SetQ8FourStreamsK(k int) (restore func()) {
	old := q8FourStreamsK
	q8FourStreamsK = k
	return func() { q8FourStreamsK = old }
}
