//go:build !amd64

package kernels

import "github.com/pootlabs/poot"

// Without assembly the dispatch never selects these (useAsm is false); they
// exist so matmulRows compiles everywhere.

func f32RowsAsm(y []float32, N int, w []byte, a *Acts, n0, n1 int) {
	f32RowsGo(y, N, asF32(w), a, n0, n1)
}

func half16RowsAsm(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) {
	half16RowsGo(wt == poot.BF16, y, N, asU16(w), a, n0, n1)
}

func q8famRowsAsm(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) (noHuge bool) {
	q8famRowsGo(wt, y, N, w, a, n0, n1)
	return false
}

func kfamRowsAsm(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) {
	kfamRowsGo(wt, y, N, w, a, n0, n1)
}
