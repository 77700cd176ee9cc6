//go:build !amd64

package kernels

import "github.com/pootlabs/poot"

// decodeRows512 is never called without amd64 (useAVX512 is false); it
// exists so fastRows compiles everywhere.
func decodeRows512(wt poot.DType, y []float32, w []byte, a *Acts, N, n0, n1 int) (head int, ok, noHuge bool) {
	return 0, false, false
}
