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
// than one block of K (floatKBlock) with a tail past the last whole step
// of the float tile, for the 8-row panels more than one panel of K (p8KB
// blocks) with a short last one and weight rows past the last panel, for
// the transposed activations' tiles (floatRowsTY) more than one block of
// K (yBcastKB) with a short last one, a last tile of fewer than six
// weight rows and activation rows past the panels of sixteen, with
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
		{poot.BF16, 37, 50, 4112}, {poot.F16, 261, 13, 2064}, {poot.F32, 21, 14, 2080},
		{poot.Q8_0, 9, 100, 4256}, {poot.Q8_0, 5, 8, 16416}, {poot.Q4_0, 5, 180, 4096}, {poot.Q5_1, 6, 140, 4096},
		{poot.Q4_K, 7, 180, 4096}, {poot.Q6_K, 5, 130, 4096},
	} {
		checkProduct(t, c.dt, c.T, c.N, c.K, uint64(100+i))
	}
}

// TestPromptAhead: the avx2 prompt products' prefetch of the next block of
// weight rows asks for every row of it by the block's last call, whether
// a call's piece is smaller or larger than a row, for whole rows and
// slices of them, up to the matrix's last row.
func TestPromptAhead(t *testing.T) {
	for _, c := range []struct{ ld, off, size, r0, r1, rows, calls int }{
		{4096, 0, 4096, 63, 126, 126, 336},      // pieces smaller than a row
		{4096, 0, 4096, 3, 6, 6, 1},             // one call for the block
		{16384, 4096, 4096, 60, 120, 120, 2560}, // a slice of each row (a block of K)
		{16384, 12288, 4096, 0, 7, 9, 5},        // the last slice; pieces larger than a row
		{2176, 0, 2176, 5, 5, 5, 16},            // no next block
		{100, 0, 100, 0, 3, 3, 1000},            // more calls than bytes
	} {
		if left := kernels.AheadLeft(c.ld, c.off, c.size, c.r0, c.r1, c.rows, c.calls); left != 0 {
			t.Errorf("%+v: %d rows left unasked", c, left)
		}
	}
}
