//go:build !amd64

package kernels

import "github.com/pootlabs/poot"

// gemmRowsZ is the avx512 level's tiled product, which only amd64 has.
func gemmRowsZ(wt poot.DType, y []float32, w []byte, a *Acts, N, n0, n1 int) bool { return false }

// zGrain is the rows of the avx512 level's tiles, which only amd64 has.
func zGrain(wt poot.DType, T, K int) int { return 0 }
