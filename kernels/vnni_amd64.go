package kernels

// dotQ8_0x4z is the AVX-512 VNNI form of dotQ8_0x4 over np block pairs.
//
//go:noescape
func dotQ8_0x4z(w *byte, np int, aq *int8, lda int, ad *float32, ldd int, out *[4]float32)

// dotQ8_0x4v computes dotQ8_0x4 at the avx512 level: block pairs in ZMM
// registers, an odd last block with the AVX2 one-row kernel.
func dotQ8_0x4v(w []byte, nb int, a *Acts, t int, o *[4]float32) {
	K := a.K
	np := nb / 2
	dotQ8_0x4z(&w[0], np, &a.q[t*K], K, &a.d[t*nb], nb*4, o)
	if nb%2 == 1 {
		b := nb - 1
		for i := range 4 {
			o[i] += dotQ8_0x1(&w[b*34], 1, &a.q[(t+i)*K+b*32], &a.d[(t+i)*nb+b])
		}
	}
}
