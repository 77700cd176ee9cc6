//go:build !amd64

package kernels

import "github.com/pootlabs/poot"

// gemmRowsZ is the avx512 level's tiled product, which only amd64 has.
func gemmRowsZ(wt poot.DType, y []float32, w []byte, a *Acts, N, n0, n1 int) bool { return false }

// zGrain is the rows of the avx512 level's tiles, which only amd64 has.
func zGrain(wt poot.DType, T, K int) int { return 0 }

// transposeRows writes element k of the sixteen rows of K elements at src
// to dst[k*w:k*w+16] (without amd64 transposedRows is 0 and Prepare does
// not call it).
func transposeRows(dst []float32, w int, src []float32, K int) {
	for i := range 16 {
		for k, v := range src[i*K : i*K+K] {
			dst[k*w+i] = v
		}
	}
}

// transposedRows is the rows Prepare transposes for the avx512 level's
// products, which only amd64 has.
func transposedRows(wt poot.DType, T, K int) (n, width int) { return 0, 0 }
