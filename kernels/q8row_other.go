//go:build !amd64

package kernels

func q8RowVec(dst []float32, src []byte) bool { return false }
