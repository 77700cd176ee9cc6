//go:build !amd64

package kernels

// The block kernels exist only on amd64; blocked is false elsewhere,
// so the others are never called.

func (at *Attention) blocked() bool { return false }

type qrows struct{}

func (at *Attention) blockScores(b headBatch, s0, nb int, scores []float32, w *qrows) {
}

func (at *Attention) blockValues(b headBatch, s0, nb int, scores []float32, w *qrows, out []float32) {
}

func scaleScoresZ(x *float32, n int, s float32) (bad bool) { return false }
