package kernels

import "unsafe"

// prefetchBytes asks for the cache lines of [p, p+n) ahead of their use;
// it reads nothing the program sees and never faults.
//
//go:noescape
func prefetchBytes(p unsafe.Pointer, n int)
