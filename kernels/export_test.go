package kernels

// SetAsm switches the assembly kernels on or off (off runs the portable Go
// code) and returns the previous setting; on is ignored where the CPU lacks
// the features.
func SetAsm(on bool) bool {
	prev := useAsm
	useAsm = on && hasAVX2
	return prev
}

// HasAsm reports whether this machine can run the assembly kernels.
func HasAsm() bool { return hasAVX2 }

var Expf = expf

var ExpSubSumVec = expSubSumVec

// QuantizeQ8 exposes the activation quantizer: quants and scale of x.
func QuantizeQ8(x []float32) ([]int8, float32) {
	q := make([]int8, len(x))
	d, _ := quantizeBlockVec(q, x)
	return q, d
}

// NewPoolFinishing is NewPool with a function that each worker finishing a
// loop last calls between counting itself done and signalling the caller.
func NewPoolFinishing(n int, finished func()) *Pool { return newPool(n, finished) }
