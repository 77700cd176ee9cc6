package kernels

// hasAVX2 is true when the AVX2+FMA+F16C assembly may run; useAsm is the
// switch the kernels read, which tests turn off to exercise the Go code.
var (
	hasAVX2 = detectAVX2()
	useAsm  = hasAVX2
)

// Features names the instruction set the kernels use on this machine:
// "avx2" (AVX2, FMA and F16C assembly) or "go" (portable Go).
func Features() string {
	if useAsm {
		return "avx2"
	}
	return "go"
}
