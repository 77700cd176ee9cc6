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

// detectAVX512 reports whether the CPU and the OS support AVX-512 F, BW and
// VL with VNNI, which the avx512 level's kernels use (on top of avx2).
func detectAVX512() bool {
	maxLeaf, _, _, _ := cpuidex(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, c1, _ := cpuidex(1, 0)
	if c1&(1<<27) == 0 { // OSXSAVE
		return false
	}
	if xcr0()&0xe6 != 0xe6 { // XMM, YMM, opmask and both ZMM halves enabled
		return false
	}
	_, b7, c7, _ := cpuidex(7, 0)
	const (
		avx512f  = 1 << 16
		avx512bw = 1 << 30
		avx512vl = 1 << 31
		vnni     = 1 << 11 // in ECX
	)
	return b7&(avx512f|avx512bw|avx512vl) == avx512f|avx512bw|avx512vl && c7&vnni != 0
}

// detectGFNI reports whether the CPU has GFNI (the avx512 level's Q4_K
// and Q5_K decode kernels spread nibbles by its affine transform).
func detectGFNI() bool {
	maxLeaf, _, _, _ := cpuidex(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, c7, _ := cpuidex(7, 0)
	return c7&(1<<8) != 0
}

// useGFNI is detectGFNI's answer, taken once.
var useGFNI = detectGFNI()

// amdFamily returns the CPU's family as AMD numbers them (the base family
// plus the extended one where the base is 0xf: 0x19 the Zen 3 and 4, 0x1a
// the Zen 5).
func amdFamily() uint32 {
	a, _, _, _ := cpuidex(1, 0)
	f := a >> 8 & 0xf
	if f == 0xf {
		f += a >> 20 & 0xff
	}
	return f
}

// detectAMD reports whether the CPU's vendor is AMD ("AuthenticAMD").
func detectAMD() bool {
	_, b, c, d := cpuidex(0, 0)
	return b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163
}

// The choices that follow the vendor (see the package doc): on AMD the
// decode kernels of both levels prefetch nothing ahead by PREFETCHT0
// (decodeAhead, avx2Ahead; the Q4_0 and MXFP4 ones keep their distance,
// and so do the avx512 Q8_0 and float ones from the Zen 5 on,
// decodeAheadQ8 and decodeAheadFloat, and the decode attention's block
// kernels, blockAhead),
// the avx512 float ones a few lines ahead by PREFETCHNTA (decodeNTAFloat)
// and read rows of 2048 elements or more as four streams and of 4096 or
// more as six (fourStreamsK, sixStreamsK), the avx512 Q8_0 one every row
// as four (q8FourStreamsK), the avx2 float ones read rows of fewer than
// 4096 elements one at a time (avx2FourRowsK).
func init() {
	if detectAMD() {
		decodeAhead = 0
		if amdFamily() < 0x1a {
			decodeAheadFloat, decodeAheadQ8, blockAhead = 0, 0, 0
		}
		avx2Ahead, avx2FourRowsK = 0, 4096
		decodeNTAFloat = 256
		fourStreamsK, sixStreamsK = 2048, 4096
		q8FourStreamsK = 32
	}
}
