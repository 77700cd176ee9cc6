package kernels

var Expf = expf

var ExpSubSumVec = expSubSumVec

// LevelFromEnv exposes the POOT_KERNELS parser.
var LevelFromEnv = levelFromEnv

// QuantizeQ8 exposes the activation quantizer: quants, scale and sums of
// each 16 quants of x.
func QuantizeQ8(x []float32) ([]int8, float32, []int16) {
	q, bs := make([]int8, len(x)), make([]int16, len(x)/16)
	d := quantizeBlockVec(q, x, bs)
	return q, d, bs
}

// NewPoolFinishing is NewPool with a function that each worker finishing a
// loop last calls between counting itself done and signalling the caller.
func NewPoolFinishing(n int, finished func()) *Pool { return newPool(n, finished) }

// SetAttnSegMin sets the fewest positions the avx512 decode attention puts
// in a segment (attnSegMin), so that short caches are cut into segments,
// and returns a function that restores it.
func SetAttnSegMin(n int) (restore func()) {
	old := attnSegMin
	attnSegMin = n
	return func() { attnSegMin = old }
}
