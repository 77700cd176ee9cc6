package kernels_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// TestFloatPanels runs the avx512 float products on either side of
// zPanelMinT (128 rows): below it F16 and BF16 weights in place, over
// transposed panels of 64 and 48 activation rows and the dot tiles for
// the rows past them (in chunks of 64 rows for K of 2048 or more); packed
// panels of at most 2048 elements of K at and above it; with partial
// chunks, tiles, panels and blocks of K.
func TestFloatPanels(t *testing.T) {
	if !slices.Contains(kernels.Levels(), kernels.LevelAVX512) {
		t.Skip("no avx512 level on this CPU")
	}
	atLevel(t, kernels.LevelAVX512)
	for _, dt := range []poot.DType{poot.F16, poot.BF16, poot.F32} {
		// 70 rows: a panel of 64 (or a whole chunk) and six rows; 127:
		// panels of 64 and 48 and 15 rows (or a chunk and 63); 48 and
		// 112: panels only; 111: a panel of 64 and 47 rows; 133 and 128: packed panels, the last tile
		// of 133 four rows and one; K = 2064: a whole block of K and a
		// short one; 4096: two blocks, 4112 three; N = 50 and 101: a
		// whole panel and part of one, two and part of one; N = 6, 13
		// and 19: whole tiles of six weight rows and part of one.
		checkProduct(t, dt, 48, 6, 2064, 16)
		checkProduct(t, dt, 112, 19, 4112, 17)
		checkProduct(t, dt, 111, 7, 2064, 18)
		checkProduct(t, dt, 70, 13, 2064, 11)
		checkProduct(t, dt, 127, 7, 2064, 12)
		checkProduct(t, dt, 133, 50, 2064, 14)
		checkProduct(t, dt, 128, 101, 4096, 15)
		checkProduct(t, dt, 67, 9, 4096, 13)
	}
}

// TestKQuantGFNI runs the avx512 Q4_K and Q5_K decode kernels with their
// nibbles spread by GFNI and by shifts, on odd row counts (the last row
// runs as both streams) and super-block counts with a tail past the
// groups of four: the two sum the same integers, so their outputs must be
// the same bits (and within the reference's bound).
func TestKQuantGFNI(t *testing.T) {
	if !slices.Contains(kernels.Levels(), kernels.LevelAVX512) || !kernels.HasGFNI() {
		t.Skip("no avx512 level or no GFNI on this CPU")
	}
	atLevel(t, kernels.LevelAVX512)
	for _, dt := range []poot.DType{poot.Q4_K, poot.Q5_K} {
		for i, s := range [][3]int{{1, 13, 1280}, {3, 6, 2048}, {2, 1, 256}} {
			T, N, K := s[0], s[1], s[2]
			checkProduct(t, dt, T, N, K, uint64(20+i))
			sameBits(t, dt, T, N, K, uint64(i), "GFNI", "shifts", func(on bool) func() { return kernels.SetGFNI(on) })
		}
	}
}

// sameBits computes a product of T rows, N weight rows of K with set(true)
// and with set(false) in force (set returns the restore), and fails t
// unless the two give the same bits.
func sameBits(t *testing.T, dt poot.DType, T, N, K int, seed uint64, on, off string, set func(bool) func()) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 9))
	w := randWeights(r, dt, N, K)
	var a kernels.Acts
	if err := a.Prepare(dt, randActs(r, T*K), T, K); err != nil {
		t.Fatal(err)
	}
	var ys [2][]float32
	for j, v := range []bool{true, false} {
		restore := set(v)
		ys[j] = make([]float32, T*N)
		err := kernels.MatMul(nil, dt, ys[j], w, &a, N)
		restore()
		if err != nil {
			t.Fatal(err)
		}
	}
	for k := range ys[0] {
		if math.Float32bits(ys[0][k]) != math.Float32bits(ys[1][k]) {
			t.Fatalf("%v T=%d N=%d K=%d: y[%d] = %g by %s, %g by %s", dt, T, N, K, k, ys[0][k], on, ys[1][k], off)
		}
	}
}

// TestFloatStreams: the avx512 float decode kernels give the same bits
// reading the rows as four streams as reading them as two (which give the
// one-stream kernel's), and as six as four, at every K tail (by 64, by
// 16, masked, and the 64 and 16 steps both) and for row counts with a
// remainder past the quarters or sixths, and agree with the reference.
func TestFloatStreams(t *testing.T) {
	if !slices.Contains(kernels.Levels(), kernels.LevelAVX512) {
		t.Skip("no avx512 level on this CPU")
	}
	atLevel(t, kernels.LevelAVX512)
	never := 1 << 30
	for _, c := range []struct {
		on, off   string
		four, six [2]int // the two settings' shortest rows for four and six streams
	}{
		{"four streams", "two", [2]int{1, never}, [2]int{never, never}},
		{"six streams", "four and fewer", [2]int{1, 1}, [2]int{1, never}},
	} {
		set := func(on bool) func() {
			k := map[bool]int{true: 0, false: 1}[on]
			r4, r6 := kernels.SetFourStreamsK(c.four[k]), kernels.SetSixStreamsK(c.six[k])
			return func() { r6(); r4() }
		}
		for _, dt := range []poot.DType{poot.F32, poot.F16, poot.BF16} {
			for i, s := range [][2]int{{4, 1}, {6, 1}, {5, 17}, {7, 64}, {11, 64}, {8, 79}, {9, 130}, {10, 165}, {13, 165}, {13, 4100}, {23, 4100}, {33, 8192}, {35, 8192}} {
				N, K := s[0], s[1]
				checkProduct(t, dt, 1, N, K, uint64(40+i))
				sameBits(t, dt, 1, N, K, uint64(40+i), c.on, c.off, set)
			}
		}
	}
}

// TestQ8Streams: the avx512 Q8_0 decode kernel gives the same bits
// reading the rows as four streams as reading them as two (or one, for an
// odd last row), for row counts with one to three rows past the quarters
// and block counts with one to three blocks past the groups of four, and
// agrees with the reference.
func TestQ8Streams(t *testing.T) {
	if !slices.Contains(kernels.Levels(), kernels.LevelAVX512) {
		t.Skip("no avx512 level on this CPU")
	}
	atLevel(t, kernels.LevelAVX512)
	set := func(on bool) func() { return kernels.SetQ8FourStreamsK(map[bool]int{true: 32, false: 1 << 30}[on]) }
	for i, s := range [][2]int{{4, 32}, {5, 64}, {6, 96}, {7, 128}, {8, 160}, {9, 224}, {11, 2048}, {13, 2080}, {14, 8192}} {
		N, K := s[0], s[1]
		checkProduct(t, poot.Q8_0, 1, N, K, uint64(80+i))
		sameBits(t, poot.Q8_0, 1, N, K, uint64(80+i), "four streams", "two", set)
	}
}

// TestQ8Ahead: the avx512 Q8_0 decode kernels give the same bits whatever
// their prefetch distance (decodeAheadQ8; the prefetch must not disturb a
// register the kernel reads), through four streams, two and one, and
// agree with the reference.
func TestQ8Ahead(t *testing.T) {
	if !slices.Contains(kernels.Levels(), kernels.LevelAVX512) {
		t.Skip("no avx512 level on this CPU")
	}
	atLevel(t, kernels.LevelAVX512)
	for _, four := range []int{32, 1 << 30} {
		restore := kernels.SetQ8FourStreamsK(four)
		for i, s := range [][2]int{{1, 64}, {7, 2080}, {13, 8192}} {
			N, K := s[0], s[1]
			checkProduct(t, poot.Q8_0, 1, N, K, uint64(70+i))
			sameBits(t, poot.Q8_0, 1, N, K, uint64(70+i), "prefetch 2048 ahead", "at 0", func(on bool) func() {
				return kernels.SetDecodeAheadQ8(map[bool]int{true: 2048, false: 0}[on])
			})
		}
		restore()
	}
}

// TestDecodeNTAPrefetch: the avx512 float decode kernels give the same
// bits whatever their second prefetch's distance (decodeNTAFloat; a
// prefetch must not disturb a register the kernel reads), for one, two
// and four streams and odd row counts, and agree with the reference.
func TestDecodeNTAPrefetch(t *testing.T) {
	if !slices.Contains(kernels.Levels(), kernels.LevelAVX512) {
		t.Skip("no avx512 level on this CPU")
	}
	atLevel(t, kernels.LevelAVX512)
	for _, dt := range []poot.DType{poot.F32, poot.F16, poot.BF16} {
		for i, s := range [][2]int{{1, 256}, {7, 520}, {10, 2304}, {13, 4096}} {
			N, K := s[0], s[1]
			checkProduct(t, dt, 1, N, K, uint64(60+i))
			sameBits(t, dt, 1, N, K, uint64(60+i), "NTA prefetch 4096 ahead", "at 0", func(on bool) func() {
				return kernels.SetDecodeNTA(map[bool]int{true: 4096, false: 0}[on])
			})
		}
	}
}
