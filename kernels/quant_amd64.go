package kernels

// avx2Ahead is how many bytes ahead of its loads each weight stream of the
// avx2 level's one-activation-row kernels (the float, Q8_0, Q5_0, Q4_1,
// Q5_1 and K-quant ones) asks for its cache lines by PREFETCHT0; the Q4_0
// and MXFP4 ones always ask 1024 ahead. 1024 was chosen on the AVX2-only
// AMD EPYC (Zen 3) from one noisy measurement. On the Zen 4 with the avx2
// level forced, two threads read 4096x4096 products from DRAM
// (BenchmarkMatVecCold, three rounds alternating binaries) faster asking
// for the lines they load: F16 at 31-34 GB/s against 25-30, F32 36-39
// against 29-34, Q8_0 34-42 against 29-34, Q4_K 34-40 against 32-33, Q6_K
// 34-39 against 30-33; Q4_0 27-29 either way. So on AMD (the decode512
// rule, see decodeAhead) it is 0.
var avx2Ahead = 1024

// The assembly in quant_amd64.s: w points at a weight row of nb blocks, aq
// and ad at an activation row's quants and block scales; lda and ldd are the
// byte strides between activation rows.

//go:noescape
func dotQ4_0x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, as *float32, out *[4]float32)

//go:noescape
func dotQ8_0x1(w *byte, nb int, aq *int8, ad *float32) float32

// MXFP4 weights, with the same activation layout as Q8_0.
//
//go:noescape
func dotMXFP4x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, out *[4]float32)

// dotMXFP4x1 also returns the OR of each block's exponent byte plus 3.
//
//go:noescape
func dotMXFP4x1(w *byte, nb int, aq *int8, ad *float32) (v float32, eor int)

//go:noescape
func dotQ4_0x1(w *byte, nb int, aq *int8, ad *float32, as *float32) float32

// The assembly in kquant_amd64.s: one weight row of nb super-blocks against
// one activation row (quants aq, scales ad, 16-element sums bs).

//go:noescape
func dotQ4_Kx1(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32

//go:noescape
func dotQ6_Kx1(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32

//go:noescape
func dotQ5_Kx1(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32

//go:noescape
func dotQ5_0x1(w *byte, nb int, aq *int8, ad *float32) float32

// as points at the activation row's scaled block sums (Acts.s).
//
//go:noescape
func dotQ4_1x1(w *byte, nb int, aq *int8, ad *float32, as *float32) float32

//go:noescape
func dotQ5_1x1(w *byte, nb int, aq *int8, ad *float32, as *float32) float32

// The four-row kernels in kquant4_amd64.s; lda, ldd and ldb are the byte
// strides between the rows' quants, scales and block sums.

//go:noescape
func dotQ4_Kx4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, out *[4]float32)

//go:noescape
func dotQ6_Kx4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, out *[4]float32)

//go:noescape
func dotQ5_Kx4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, out *[4]float32)

//go:noescape
func dotQ5_0x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, out *[4]float32)

//go:noescape
func dotQ4_1x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, as *float32, out *[4]float32)

//go:noescape
func dotQ5_1x4(w *byte, nb int, aq *int8, lda int, ad *float32, ldd int, as *float32, out *[4]float32)
