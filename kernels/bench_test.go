package kernels_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/mmap"
	"github.com/pootlabs/poot/kernels"
	"github.com/pootlabs/poot/quant"
)

var benchDTypes = []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.MXFP4}

// benchWeights returns written (not zero-page) random weights.
func benchWeights(dt poot.DType, N, K int) []byte {
	return randWeights(rand.New(rand.NewPCG(1, 2)), dt, N, K)
}

// BenchmarkMatVec measures one 4096x4096 matrix-vector product (decode), in
// GB/s of weight bytes, on one thread and on a pool of two.
func BenchmarkMatVec(b *testing.B) {
	const N, K = 4096, 4096
	x := randActs(rand.New(rand.NewPCG(3, 4)), K)
	y := make([]float32, N)
	for _, dt := range benchDTypes {
		w := benchWeights(dt, N, K)
		var a kernels.Acts
		if err := a.Prepare(dt, x, 1, K); err != nil {
			b.Fatal(err)
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%v/%dt", dt, threads), func(b *testing.B) {
				p := kernels.NewPool(threads)
				defer p.Close()
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					if err := kernels.MatMul(p, dt, y, w, &a, N); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMatVecCold is BenchmarkMatVec cycling through enough matrices
// (at least 192 MB) that the weights come from DRAM, not from L3, as they
// do in a real model.
func BenchmarkMatVecCold(b *testing.B) {
	const N, K = 4096, 4096
	x := randActs(rand.New(rand.NewPCG(3, 4)), K)
	y := make([]float32, N)
	for _, dt := range []poot.DType{poot.F32, poot.F16, poot.Q8_0, poot.Q4_0, poot.Q4_K, poot.Q6_K, poot.MXFP4} {
		one := benchWeights(dt, N, K)
		ws := [][]byte{one}
		for len(ws)*len(one) < 192<<20 {
			ws = append(ws, append([]byte(nil), one...))
		}
		var a kernels.Acts
		if err := a.Prepare(dt, x, 1, K); err != nil {
			b.Fatal(err)
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%v/%dt", dt, threads), func(b *testing.B) {
				p := kernels.NewPool(threads)
				defer p.Close()
				b.SetBytes(int64(len(one)))
				i := 0
				for b.Loop() {
					if err := kernels.MatMul(p, dt, y, ws[i%len(ws)], &a, N); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkMatMul measures a 64-row by 2048x2048 product (prompt
// processing), reporting GFLOP/s (2·T·N·K per product), single-threaded.
func BenchmarkMatMul(b *testing.B) {
	const T, N, K = 64, 2048, 2048
	x := randActs(rand.New(rand.NewPCG(3, 4)), T*K)
	y := make([]float32, T*N)
	for _, dt := range benchDTypes {
		w := benchWeights(dt, N, K)
		var a kernels.Acts
		if err := a.Prepare(dt, x, T, K); err != nil {
			b.Fatal(err)
		}
		b.Run(dt.String(), func(b *testing.B) {
			for b.Loop() {
				if err := kernels.MatMul(nil, dt, y, w, &a, N); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*T*N*K*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkPrefill measures the products of a prompt through a 1B
// Llama-shaped layer (hidden 2048, 512-wide keys and values, feed-forward
// 8192), T activation rows, on one thread and on a pool of two, reporting
// GFLOP/s (2·T·N·K per product). Only the prompt-tile dtypes are run.
func BenchmarkPrefill(b *testing.B) {
	shapes := []struct{ N, K int }{{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}}
	for _, dt := range []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.MXFP4, poot.Q4_K, poot.Q5_K, poot.Q6_K} {
		for _, T := range []int{64, 512} {
			for _, sh := range shapes {
				N, K := sh.N, sh.K
				b.Run(fmt.Sprintf("%v/T%d/%dx%d", dt, T, N, K), func(b *testing.B) {
					w := benchWeights(dt, N, K)
					x := randActs(rand.New(rand.NewPCG(3, 4)), T*K)
					y := make([]float32, T*N)
					var a kernels.Acts
					if err := a.Prepare(dt, x, T, K); err != nil {
						b.Fatal(err)
					}
					for _, threads := range []int{1, 2} {
						b.Run(fmt.Sprintf("%dt", threads), func(b *testing.B) {
							p := kernels.NewPool(threads)
							defer p.Close()
							for b.Loop() {
								if err := kernels.MatMul(p, dt, y, w, &a, N); err != nil {
									b.Fatal(err)
								}
							}
							b.ReportMetric(2*float64(T*N*K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						})
					}
				})
			}
		}
	}
}

// BenchmarkPrepare measures quantizing one 4096-element activation row.
func BenchmarkPrepare(b *testing.B) {
	x := randActs(rand.New(rand.NewPCG(3, 4)), 4096)
	for _, dt := range []poot.DType{poot.F32, poot.Q8_0, poot.Q4_K} {
		b.Run(dt.String(), func(b *testing.B) {
			var a kernels.Acts
			b.SetBytes(4 * 4096)
			for b.Loop() {
				_ = a.Prepare(dt, x, 1, 4096)
			}
		})
	}
}

// BenchmarkPoolRun measures the fixed cost of one parallel-for over two
// workers with trivial work.
func BenchmarkPoolRun(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("%dw", workers), func(b *testing.B) {
			p := kernels.NewPool(workers)
			defer p.Close()
			var sink atomic.Int64
			fn := func(lo, hi int) { sink.Add(int64(hi - lo)) }
			b.ReportAllocs()
			for b.Loop() {
				p.Run(64, fn)
			}
		})
	}
}

// BenchmarkAttention measures one decode step of 32 query heads over 8
// key/value heads of 128 at 2048 cached positions, in cache bytes read, for
// head-major and position-major f32 caches and a head-major f16 cache.
func BenchmarkAttention(b *testing.B) {
	const S, H, KVH, D = 2048, 32, 8, 128
	r := rand.New(rand.NewPCG(1, 1))
	k, v := randActs(r, S*KVH*D), randActs(r, S*KVH*D)
	at := kernels.Attention{
		Q: randActs(r, H*D), K: k, V: v,
		Out: make([]float32, H*D), S: S, Heads: H, KVHeads: KVH, HeadDim: D, Scale: 0.088,
	}
	run := func(name string, bytes int) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(bytes))
			for b.Loop() {
				if err := kernels.AttendHeads(&at, 0, H); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	at.KVStride, at.HeadStride = D, S*D
	run("f32/headmajor", 2*4*S*KVH*D)
	at.KVStride, at.HeadStride = KVH*D, D
	run("f32/posmajor", 2*4*S*KVH*D)
	at.K16, at.V16 = make([]uint16, len(k)), make([]uint16, len(v))
	kernels.F32RowToF16(at.K16, k)
	kernels.F32RowToF16(at.V16, v)
	at.K, at.V = nil, nil
	at.KVStride, at.HeadStride = D, S*D
	run("f16/headmajor", 2*2*S*KVH*D)
}

func BenchmarkRowOps(b *testing.B) {
	const n = 4096
	r := rand.New(rand.NewPCG(1, 1))
	x, w, y := randActs(r, n), randActs(r, n), make([]float32, n)
	b.Run("RMSNorm", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			_ = kernels.RMSNorm(y, x, w, 1e-6)
		}
	})
	b.Run("SiLUMul", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			_ = kernels.SiLUMul(y, x, w)
		}
	})
	b.Run("Softmax", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			copy(y, x)
			kernels.Softmax(y)
		}
	})
	b.Run("F16RowToF32", func(b *testing.B) {
		h := make([]uint16, n)
		kernels.F32RowToF16(h, x)
		b.SetBytes(2 * n)
		for b.Loop() {
			kernels.F16RowToF32(y, h)
		}
	})
}

// BenchmarkAttentionDepth is one decode step's attention over the
// position-major caches of a Llama-3.2-1B-shaped model at 4096 positions
// (32 query heads, 8 KV heads of 64), cycling through 16 layers' caches
// so that they come from memory as in a real step, not from the last
// level cache; f32, f16 and q8_0 caches.
func BenchmarkAttentionDepth(b *testing.B) {
	const S, H, KVH, D, L = 4096, 32, 8, 64, 16
	r := rand.New(rand.NewPCG(1, 2))
	q := randActs(r, H*D)
	base := randActs(r, S*KVH*D)
	for _, kv := range []string{"f32", "f16", "q8_0"} {
		ats := make([]kernels.Attention, L)
		bytes := 0
		for l := range ats {
			at := kernels.Attention{Q: q, Out: make([]float32, H*D), S: S, Heads: H, KVHeads: KVH, HeadDim: D,
				KVStride: KVH * D, HeadStride: D, Scale: 0.125}
			switch kv {
			case "f32":
				at.K, at.V = slices.Clone(base), slices.Clone(base)
				bytes = 2 * 4 * len(base)
			case "f16":
				at.K16, at.V16 = make([]uint16, len(base)), make([]uint16, len(base))
				kernels.F32RowToF16(at.K16, base)
				copy(at.V16, at.K16)
				bytes = 2 * 2 * len(base)
			case "q8_0":
				at.K8 = make([]byte, len(base)/32*34)
				if err := quant.QuantizeRow(poot.Q8_0, at.K8, base); err != nil {
					b.Fatal(err)
				}
				at.V8 = slices.Clone(at.K8)
				bytes = 2 * len(at.K8)
			}
			ats[l] = at
		}
		b.Run(kv, func(b *testing.B) {
			b.SetBytes(int64(bytes))
			l := 0
			for b.Loop() {
				if err := kernels.AttendHeads(&ats[l], 0, H); err != nil {
					b.Fatal(err)
				}
				l = (l + 1) % L
			}
		})
	}
}

// BenchmarkDecodeLayers measures decode's products as a 1B Llama-shaped
// model reads them: each layer's seven projections (q, k, v, o; gate, up,
// down) in order, over enough layers that the weights come from DRAM (in
// huge pages where the system gives them, as the model's weights are), on
// a pool of two, in GB/s of weight bytes. Against BenchmarkMatVecCold's
// one large matrix it shows what the smaller products lose to starting
// their streams and to the pool's barriers.
func BenchmarkDecodeLayers(b *testing.B) {
	shapes := []struct{ N, K int }{{2048, 2048}, {512, 2048}, {512, 2048}, {2048, 2048}, {8192, 2048}, {8192, 2048}, {2048, 8192}}
	for _, dt := range []poot.DType{poot.F32, poot.F16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.Q4_K, poot.Q6_K} {
		b.Run(dt.String(), func(b *testing.B) {
			var layer [][]byte
			size := 0
			for _, sh := range shapes {
				layer = append(layer, benchWeights(dt, sh.N, sh.K))
				size += len(layer[len(layer)-1])
			}
			copies := (256<<20 + size - 1) / size
			buf, err := mmap.Anonymous(copies * size)
			if err != nil {
				b.Fatal(err)
			}
			defer mmap.Free(buf)
			var ws [][][]byte
			for range copies {
				c := make([][]byte, len(layer))
				for i, w := range layer {
					c[i], buf = buf[:len(w):len(w)], buf[len(w):]
					copy(c[i], w)
				}
				ws = append(ws, c)
			}
			acts := map[int]*kernels.Acts{}
			for _, K := range []int{2048, 8192} {
				acts[K] = new(kernels.Acts)
				if err := acts[K].Prepare(dt, randActs(rand.New(rand.NewPCG(3, 4)), K), 1, K); err != nil {
					b.Fatal(err)
				}
			}
			y := make([]float32, 8192)
			p := kernels.NewPool(2)
			defer p.Close()
			b.SetBytes(int64(size))
			i := 0
			for b.Loop() {
				for j, w := range ws[i%len(ws)] {
					sh := shapes[j]
					if err := kernels.MatMul(p, dt, y[:sh.N], w, acts[sh.K], sh.N); err != nil {
						b.Fatal(err)
					}
				}
				i++
			}
		})
	}
}
