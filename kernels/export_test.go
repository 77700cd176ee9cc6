package kernels

var Expf = expf

var ExpSubSumVec = expSubSumVec

// LevelFromEnv exposes the POOT_KERNELS parser.
var LevelFromEnv = levelFromEnv

// QuantizeQ8 exposes the activation quantizer: quants and scale of x.
func QuantizeQ8(x []float32) ([]int8, float32) {
	q := make([]int8, len(x))
	d, _ := quantizeBlockVec(q, x)
	return q, d
}

// NewPoolFinishing is NewPool with a function that each worker finishing a
// loop last calls between counting itself done and signalling the caller.
func NewPoolFinishing(n int, finished func()) *Pool { return newPool(n, finished) }
