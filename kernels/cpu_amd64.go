package kernels

func cpuidex(leaf, sub uint32) (a, b, c, d uint32)
func xcr0() uint32

// detectAVX2 reports whether the CPU and the OS support AVX2, FMA and F16C,
// the instruction sets the assembly kernels use.
func detectAVX2() bool {
	maxLeaf, _, _, _ := cpuidex(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, c1, _ := cpuidex(1, 0)
	const (
		fma     = 1 << 12
		osxsave = 1 << 27
		avx     = 1 << 28
		f16c    = 1 << 29
	)
	if c1&(fma|osxsave|avx|f16c) != fma|osxsave|avx|f16c {
		return false
	}
	if xcr0()&6 != 6 { // XMM and YMM state enabled by the OS
		return false
	}
	_, b7, _, _ := cpuidex(7, 0)
	return b7&(1<<5) != 0
}
