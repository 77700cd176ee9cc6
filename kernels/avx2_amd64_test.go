package kernels_test

import (
	"slices"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// TestAVX2FloatRows: the avx2 float products for one activation row give
// the same bits reading four weight rows at a time as one (the two tiles
// add the same products in the same order), for row counts with a
// remainder past the fours and K with a tail past the 16-element steps,
// and agree with the reference.
func TestAVX2FloatRows(t *testing.T) {
	if !slices.Contains(kernels.Levels(), kernels.LevelAVX2) {
		t.Skip("no avx2 level on this CPU")
	}
	atLevel(t, kernels.LevelAVX2)
	for _, dt := range []poot.DType{poot.F32, poot.F16, poot.BF16} {
		for i, s := range [][2]int{{4, 16}, {5, 17}, {7, 64}, {9, 130}, {13, 2048}, {6, 4100}} {
			N, K := s[0], s[1]
			checkProduct(t, dt, 1, N, K, uint64(80+i))
			sameBits(t, dt, 1, N, K, uint64(80+i), "four rows at a time", "one", func(on bool) func() {
				return kernels.SetAVX2FourRowsK(map[bool]int{true: 0, false: 1 << 30}[on])
			})
		}
	}
}

// TestAVX2Ahead: the avx2 decode kernels give the same bits whatever
// their prefetch distance (avx2Ahead; the prefetch must not disturb a
// register the kernel reads), and agree with the reference.
func TestAVX2Ahead(t *testing.T) {
	if !slices.Contains(kernels.Levels(), kernels.LevelAVX2) {
		t.Skip("no avx2 level on this CPU")
	}
	atLevel(t, kernels.LevelAVX2)
	for _, dt := range []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q5_0, poot.Q4_1, poot.Q5_1, poot.Q4_K, poot.Q5_K, poot.Q6_K} {
		for i, s := range [][3]int{{1, 7, 512}, {3, 5, 1024}, {5, 6, 768}} {
			T, N, K := s[0], s[1], s[2]
			checkProduct(t, dt, T, N, K, uint64(90+i))
			sameBits(t, dt, T, N, K, uint64(90+i), "prefetch 4096 ahead", "at 0", func(on bool) func() {
				return kernels.SetAVX2Ahead(map[bool]int{true: 4096, false: 0}[on])
			})
		}
	}
}

// TestAVX2PromptBlocks runs the avx2 prompt products over more than one
// block of weight rows (avx2WeightBlock) and, for the float tiles, more
// than one block of K (floatKBlock, q8hKBlocks) with a tail past the last
// whole step of the float tile or a short last block of Q8_0's, with
// activation rows past the fours, against the reference
// (checkProduct's second range of rows spans two or more blocks).
func TestAVX2PromptBlocks(t *testing.T) {
	if !slices.Contains(kernels.Levels(), kernels.LevelAVX2) {
		t.Skip("no avx2 level on this CPU")
	}
	atLevel(t, kernels.LevelAVX2)
	for i, c := range []struct {
		dt      poot.DType
		T, N, K int
	}{
		{poot.F32, 9, 70, 4109}, {poot.F16, 6, 131, 4109}, {poot.BF16, 5, 110, 2053},
		{poot.Q8_0, 9, 100, 4256}, {poot.Q8_0, 5, 8, 16416}, {poot.Q4_0, 5, 180, 4096}, {poot.Q5_1, 6, 140, 4096},
		{poot.Q4_K, 7, 180, 4096}, {poot.Q6_K, 5, 130, 4096},
	} {
		checkProduct(t, c.dt, c.T, c.N, c.K, uint64(100+i))
	}
}
