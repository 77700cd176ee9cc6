//go:build !amd64

package kernels

func detectAVX2() bool { return false }

func detectAVX512() bool { return false }
