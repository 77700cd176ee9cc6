package kernels_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// TestQ8_0IntegerSums checks every level's Q8_0 product bit for bit against
// exact integer dot products: weight scales are 1 and every activation block
// reaches ±127, so its quantization scale is 1 and its quants are x itself;
// then each output is an integer below 2^24, which float32 holds exactly, and
// any level whose integer block sums differ from the Go code's (a wrong
// offset, sign or lane) gives a different number. Weights include -128.
func TestQ8_0IntegerSums(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		for _, T := range []int{1, 4, 5, 8, 11} {
			for _, nb := range []int{1, 2, 3, 8, 31, 32} {
				checkQ8_0Sums(t, r, T, 3+r.IntN(14), 32*nb)
			}
		}
	})
}

func checkQ8_0Sums(t *testing.T, r *rand.Rand, T, N, K int) {
	t.Helper()
	nb := K / 32
	w := make([]byte, N*nb*34)
	wq := make([]int8, N*K)
	for b := range N * nb {
		w[b*34], w[b*34+1] = 0x00, 0x3c // f16 1.0
		for i := range 32 {
			v := int8(r.IntN(256) - 128)
			if r.IntN(8) == 0 {
				v = []int8{-128, 127, -127}[r.IntN(3)]
			}
			w[b*34+2+i] = byte(v)
			wq[b*32+i] = v
		}
	}
	x := make([]float32, T*K)
	for i := range x {
		x[i] = float32(r.IntN(255) - 127)
	}
	for b := range T * nb {
		x[b*32+r.IntN(32)] = float32(127 * (1 - 2*r.IntN(2)))
	}
	var a kernels.Acts
	if err := a.Prepare(poot.Q8_0, x, T, K); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, T*N)
	if err := kernels.MatMulRows(poot.Q8_0, y, N, w, &a, 0, N); err != nil {
		t.Fatal(err)
	}
	for tt := range T {
		for n := range N {
			var s int64
			for k := range K {
				s += int64(x[tt*K+k]) * int64(wq[n*K+k])
			}
			if got := y[tt*N+n]; got != float32(s) {
				t.Fatalf("T=%d N=%d K=%d: y[%d,%d] = %v, want exactly %d", T, N, K, tt, n, got, s)
			}
		}
	}
}

// BenchmarkQ8_0Levels measures the prompt-processing Q8_0 product (64
// activation rows by 2048x2048 weights, one thread) at every level this
// machine supports, to compare the avx512 kernel with the avx2 one.
func BenchmarkQ8_0Levels(b *testing.B) {
	const T, N, K = 64, 2048, 2048
	x := randActs(rand.New(rand.NewPCG(3, 4)), T*K)
	y := make([]float32, T*N)
	w := benchWeights(poot.Q8_0, N, K)
	var a kernels.Acts
	if err := a.Prepare(poot.Q8_0, x, T, K); err != nil {
		b.Fatal(err)
	}
	for _, l := range kernels.Levels() {
		b.Run(l.String(), func(b *testing.B) {
			atLevel(b, l)
			for b.Loop() {
				if err := kernels.MatMul(nil, poot.Q8_0, y, w, &a, N); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*T*N*K*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkQ4_KLevels measures Q4_K products on one thread at every level:
// prompt processing (64 activation rows by 2048x2048 weights, GFLOP/s) and
// decode (one row by 2048x8192 weights, 9.4 MB that stay in L3, and by
// 256x4096, 0.6 MB that stay in L2: GB/s of weight bytes).
func BenchmarkQ4_KLevels(b *testing.B) {
	for _, c := range []struct {
		name    string
		T, N, K int
	}{{"prompt", 64, 2048, 2048}, {"gemv", 1, 2048, 8192}, {"gemvL2", 1, 256, 4096}} {
		x := randActs(rand.New(rand.NewPCG(3, 4)), c.T*c.K)
		y := make([]float32, c.T*c.N)
		w := benchWeights(poot.Q4_K, c.N, c.K)
		var a kernels.Acts
		if err := a.Prepare(poot.Q4_K, x, c.T, c.K); err != nil {
			b.Fatal(err)
		}
		for _, l := range kernels.Levels() {
			b.Run(c.name+"/"+l.String(), func(b *testing.B) {
				atLevel(b, l)
				for b.Loop() {
					if err := kernels.MatMul(nil, poot.Q4_K, y, w, &a, c.N); err != nil {
						b.Fatal(err)
					}
				}
				if c.T == 1 {
					b.ReportMetric(float64(len(w))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				} else {
					b.ReportMetric(2*float64(c.T*c.N*c.K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				}
			})
		}
	}
}

// TestQ4_KIntegerSums checks every level's Q4_K product against the same
// quantized arithmetic done naively: activations are integers in
// [-127,127] with ±127 in every block of 256, so their quantization scale
// is 1 and their quants are x itself. With weight scales d and dmin of 1 (or
// one of them 0) each output is an integer below 2^24, held exactly by
// float32, and must come out bit for bit: a wrong sub-block scale, min,
// nibble, lane or block sum anywhere changes it. With random d and dmin the
// result must match the float64 sum of d*sumi - dmin*summ over super-blocks
// to float rounding.
func TestQ4_KIntegerSums(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 22))
		for _, T := range []int{1, 2, 3, 4, 5, 7, 8, 9, 13} {
			for _, nb := range []int{1, 2, 3, 5} {
				for _, mode := range []int{0, 1, 2, 3} {
					checkQ4_KSums(t, r, T, 1+r.IntN(9), 256*nb, mode)
				}
			}
		}
	})
}

// checkQ4_KSums runs one product; mode 0 has d = dmin = 1, mode 1 dmin = 0,
// mode 2 d = 0, and mode 3 random scales (checked to a float tolerance).
func checkQ4_KSums(t *testing.T, r *rand.Rand, T, N, K, mode int) {
	t.Helper()
	const bb = 144
	nb := K / 256
	w := make([]byte, N*nb*bb)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	ds := make([]float64, 2*N*nb) // d and dmin of every super-block
	for b := range N * nb {
		blk := w[b*bb : b*bb+bb]
		var h [2]uint16
		switch mode {
		case 0:
			h = [2]uint16{0x3c00, 0x3c00}
		case 1:
			h = [2]uint16{0x3c00, 0}
		case 2:
			h = [2]uint16{0, 0x3c00}
		default:
			h = [2]uint16{randScale(r, 0.01), randScale(r, 0.01)}
		}
		for i, v := range h {
			binary.LittleEndian.PutUint16(blk[2*i:], v)
			ds[2*b+i] = float64(halfToFloat(v))
		}
		if r.IntN(4) == 0 { // extreme nibbles and scales
			v := []byte{0x00, 0xff, 0xf0, 0x0f}[r.IntN(4)]
			for i := 16; i < bb; i++ {
				w[b*bb+i] = v
			}
			for i := 4; i < 16; i++ {
				w[b*bb+i] = 0xff
			}
		}
	}
	x := make([]float32, T*K)
	small := mode != 3 // keep exact sums below 2^24
	for i := range x {
		if small {
			x[i] = float32(r.IntN(17) - 8)
		} else {
			x[i] = float32(r.IntN(255) - 127)
		}
		if r.IntN(50) == 0 {
			x[i] = float32(127 * (1 - 2*r.IntN(2)))
		}
	}
	for b := range T * nb {
		x[b*256+r.IntN(256)] = float32(127 * (1 - 2*r.IntN(2)))
	}
	var a kernels.Acts
	if err := a.Prepare(poot.Q4_K, x, T, K); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, T*N)
	for i := range y {
		y[i] = float32(math.NaN())
	}
	n0 := N / 2
	if err := kernels.MatMulRows(poot.Q4_K, y, N, w, &a, n0, N); err != nil {
		t.Fatal(err)
	}
	if err := kernels.MatMulRows(poot.Q4_K, y, N, w, &a, 0, n0); err != nil {
		t.Fatal(err)
	}
	for tt := range T {
		for n := range N {
			var want, mag float64
			for b := range nb {
				blk := w[(n*nb+b)*bb : (n*nb+b+1)*bb]
				xb := x[tt*K+b*256 : tt*K+b*256+256]
				var sumi, summ, absi, absm int64
				for j := range 8 {
					sc, m := q4kScaleMin(blk[4:16], j)
					for l := range 32 {
						e := 32*(j/2) + l // the byte holding element 32j+l
						q := int64(blk[16+e] & 15)
						if j%2 == 1 {
							q = int64(blk[16+e] >> 4)
						}
						xv := int64(xb[32*j+l])
						sumi += sc * q * xv
						summ += m * xv
						absi += abs64(sc * q * xv)
						absm += abs64(m * xv)
					}
				}
				d, dmin := ds[2*(n*nb+b)], ds[2*(n*nb+b)+1]
				want += d*float64(sumi) - dmin*float64(summ)
				mag += math.Abs(d)*float64(absi) + math.Abs(dmin)*float64(absm)
			}
			got := float64(y[tt*N+n])
			if mode != 3 {
				if got != want {
					t.Fatalf("mode %d T=%d N=%d K=%d: y[%d,%d] = %v, want exactly %v", mode, T, N, K, tt, n, got, want)
				}
			} else if math.Abs(got-want) > 1e-6*mag+1e-6 {
				t.Fatalf("T=%d N=%d K=%d: y[%d,%d] = %v, want %v (sum of magnitudes %v)", T, N, K, tt, n, got, want, mag)
			}
		}
	}
}

// q4kScaleMin unpacks the 6-bit scale and min of sub-block j from the 12
// packed bytes of a Q4_K super-block, as GGUF defines them.
func q4kScaleMin(s []byte, j int) (sc, m int64) {
	if j < 4 {
		return int64(s[j] & 63), int64(s[j+4] & 63)
	}
	return int64(s[j+4]&15 | s[j-4]>>6<<4), int64(s[j+4]>>4 | s[j]>>6<<4)
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
