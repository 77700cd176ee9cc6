//go:build !amd64

package kernels

import "unsafe"

// prefetchBytes is a no-op where no prefetch instruction is wired up.
func prefetchBytes(p unsafe.Pointer, n int) {}
