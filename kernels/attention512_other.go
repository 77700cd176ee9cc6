//go:build !amd64

package kernels

// The avx512 block kernels exist only on amd64; blocksZ is false elsewhere,
// so the others are never called.

func (at *Attention) blocksZ() bool { return false }

func (at *Attention) blockScoresZ(q []float32, nh, g, hs, s0, nb int, scores *[maxRep][attnBlock]float32) {
}

func (at *Attention) blockValuesZ(out []float32, nh, g, hs, s0, nb int, scores *[maxRep][attnBlock]float32) {
}
