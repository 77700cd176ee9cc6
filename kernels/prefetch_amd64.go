package kernels

import "unsafe"

// prefetchBytes asks for the cache lines of [p, p+n) ahead of their use;
// it reads nothing the program sees and never faults.
//
//go:noescape
func prefetchBytes(p unsafe.Pointer, n int)

// prefetchL2 asks for the cache lines of [p, p+n) into L2 (PREFETCHT1);
// it reads nothing the program sees and never faults.
//
//go:noescape
func prefetchL2(p unsafe.Pointer, n int)
