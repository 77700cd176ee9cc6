package kernels_test

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/x448/float16"
	"pgregory.net/rapid"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
	"github.com/pootlabs/poot/quant"
)

func close32(got float32, want, tol float64) bool {
	return math.Abs(float64(got)-want) <= tol
}

func TestExpf(t *testing.T) {
	for x := float32(-87); x < 88.5; x += 0.0137 {
		want := math.Exp(float64(x))
		if got := kernels.Expf(x); math.Abs(float64(got)-want) > 1e-6*want {
			t.Fatalf("expf(%g) = %g, want %g", x, got, want)
		}
	}
	for x, want := range map[float32]float64{-200: 0, 200: math.Inf(1), 0: 1, -100: 0} {
		if got := kernels.Expf(x); float64(got) != want {
			t.Errorf("expf(%g) = %g, want %g", x, got, want)
		}
	}
}

func TestExpVec(t *testing.T) {
	modes(t, func(t *testing.T) {
		var x []float32
		for v := float32(-100); v < 88.5; v += 0.37 {
			x = append(x, v)
		}
		x = append(x, float32(math.Inf(-1)), -87.3, 0, 1e-30, -1e-30)
		want := make([]float64, len(x))
		var sum float64
		for i, v := range x {
			d := float64(v - 1.5) // the kernel's argument, rounded to float32
			want[i] = math.Exp(d)
			if d < -87.33654 {
				want[i] = 0 // flushed, as documented
			}
			sum += want[i]
		}
		got := kernels.ExpSubSumVec(x, 1.5)
		for i := range x {
			if math.Abs(float64(x[i])-want[i]) > 1e-6*want[i] {
				t.Fatalf("exp(x[%d]-1.5) = %g, want %g", i, x[i], want[i])
			}
		}
		if math.Abs(float64(got)-sum) > 1e-6*sum {
			t.Errorf("sum = %g, want %g", got, sum)
		}
	})
}

func TestRMSNorm(t *testing.T) { modes(t, testRMSNorm) }

func testRMSNorm(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 300).Draw(rt, "n")
		r := rand.New(rand.NewPCG(uint64(n), 1))
		x, w := randActs(r, n), randActs(r, n)
		y := make([]float32, n)
		if err := kernels.RMSNorm(y, x, w, 1e-5); err != nil {
			rt.Fatal(err)
		}
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(n)+1e-5)
		for i := range y {
			want := float64(x[i]) * inv * float64(w[i])
			if !close32(y[i], want, 1e-5*math.Abs(want)+1e-30) {
				rt.Fatalf("y[%d] = %g, want %g", i, y[i], want)
			}
		}
		orig := append([]float32(nil), x...)
		if err := kernels.RMSNorm(x, x, nil, 1e-5); err != nil { // in place, no weight
			rt.Fatal(err)
		}
		for i := range x {
			want := float64(orig[i]) * inv
			if !close32(x[i], want, 1e-5*math.Abs(want)+1e-30) {
				rt.Fatalf("unweighted y[%d] = %g, want %g", i, x[i], want)
			}
		}
	})
	if kernels.RMSNorm(make([]float32, 2), make([]float32, 3), nil, 0) == nil {
		t.Error("short dst accepted")
	}
	if kernels.RMSNorm(make([]float32, 3), make([]float32, 3), make([]float32, 2), 0) == nil {
		t.Error("short weight accepted")
	}
}

func TestSoftmax(t *testing.T) { modes(t, testSoftmax) }

func testSoftmax(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 200).Draw(rt, "n")
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rapid.Float64Range(-50, 50).Draw(rt, "x"))
		}
		if rapid.Bool().Draw(rt, "masked") {
			x[rapid.IntRange(0, n-1).Draw(rt, "i")] = float32(math.Inf(-1))
		}
		m := math.Inf(-1)
		for _, v := range x {
			m = max(m, float64(v))
		}
		var s float64
		for _, v := range x {
			s += math.Exp(float64(v) - m)
		}
		want := make([]float64, n)
		for i, v := range x {
			want[i] = math.NaN() // a row of -inf only
			if !math.IsInf(m, -1) {
				want[i] = math.Exp(float64(v)-m) / s
			}
		}
		kernels.Softmax(x)
		for i := range x {
			if math.IsNaN(want[i]) != (x[i] != x[i]) || (x[i] == x[i] && !close32(x[i], want[i], 2e-6*want[i]+1e-12)) {
				rt.Fatalf("p[%d] = %g, want %g", i, x[i], want[i])
			}
		}
	})
	// As ops.Softmax: a NaN or +inf anywhere, or -inf everywhere, makes
	// the whole row NaN (this row once became zeros, and a NaN was
	// dropped by the maximum).
	inf := float32(math.Inf(1))
	rows := [][]float32{{-inf, -inf}, {1, 2, nan32(), 3, 4, 5, 6, 7, 8, 9}, {1, inf, 2}, {nan32(), -inf}}
	for _, at := range []int{0, 31, 33, 69} { // long rows: the vector NaN scan
		row := make([]float32, 70)
		row[at] = nan32()
		rows = append(rows, row)
	}
	for _, row := range rows {
		x := append([]float32(nil), row...)
		kernels.Softmax(x)
		for i, v := range x {
			if v == v {
				t.Errorf("Softmax(%v)[%d] = %g, want NaN", row, i, v)
			}
		}
	}
}

func nan32() float32 { return float32(math.NaN()) }

func TestSiLUMulAdd(t *testing.T) { modes(t, testSiLUMulAdd) }

func testSiLUMulAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 5, 8, 64, 131} {
		g, u := randActs(r, n), randActs(r, n)
		y := make([]float32, n)
		if err := kernels.SiLUMul(y, g, u); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			gv := float64(g[i])
			want := gv / (1 + math.Exp(-gv)) * float64(u[i])
			if !close32(y[i], want, 2e-6*math.Abs(want)+1e-6) {
				t.Fatalf("silu*up[%d] = %g, want %g", i, y[i], want)
			}
		}
		if err := kernels.Add(y, g, u); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			if y[i] != g[i]+u[i] {
				t.Fatalf("add[%d] = %g, want %g", i, y[i], g[i]+u[i])
			}
		}
	}
	if kernels.SiLUMul(make([]float32, 3), make([]float32, 2), make([]float32, 3)) == nil {
		t.Error("short gate accepted")
	}
	if kernels.Add(make([]float32, 3), make([]float32, 3), nil) == nil {
		t.Error("short b accepted")
	}
}

func TestRoPE(t *testing.T) {
	const headDim, heads, pos = 16, 3, 7
	const base = 10000.0
	for _, neox := range []bool{false, true} {
		for _, dims := range []int{headDim, 8} { // full and partial rotation
			r := rand.New(rand.NewPCG(1, 2))
			x := randActs(r, heads*headDim)
			orig := append([]float32(nil), x...)
			cos, sin := make([]float32, dims/2), make([]float32, dims/2)
			if err := kernels.RoPETable(cos, sin, pos, base, dims); err != nil {
				t.Fatal(err)
			}
			if err := kernels.RoPE(x, headDim, cos, sin, neox); err != nil {
				t.Fatal(err)
			}
			for h := range heads {
				o := orig[h*headDim : (h+1)*headDim]
				got := x[h*headDim : (h+1)*headDim]
				for i := range dims / 2 {
					theta := pos * math.Pow(base, -2*float64(i)/float64(dims))
					a, b := 2*i, 2*i+1
					if neox {
						a, b = i, i+dims/2
					}
					wa := float64(o[a])*math.Cos(theta) - float64(o[b])*math.Sin(theta)
					wb := float64(o[a])*math.Sin(theta) + float64(o[b])*math.Cos(theta)
					if !close32(got[a], wa, 1e-5) || !close32(got[b], wb, 1e-5) {
						t.Fatalf("neox=%v dims=%d head %d pair %d: (%g,%g), want (%g,%g)", neox, dims, h, i, got[a], got[b], wa, wb)
					}
				}
				for i := dims; i < headDim; i++ {
					if got[i] != o[i] {
						t.Fatalf("unrotated dim %d changed", i)
					}
				}
			}
		}
	}
	if kernels.RoPE(make([]float32, 10), 4, make([]float32, 2), make([]float32, 2), false) == nil {
		t.Error("ragged heads accepted")
	}
}

func TestF16(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		want := float16.Frombits(h).Float32()
		got := kernels.F16ToF32(h)
		if math.IsNaN(float64(want)) {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("%#04x: got %g, want NaN", h, got)
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("%#04x: got %g, want %g", h, got, want)
		}
		if back := kernels.F32ToF16(got); back != h {
			t.Fatalf("%#04x round trip gave %#04x", h, back)
		}
	}
	r := rand.New(rand.NewPCG(9, 9))
	for range 1 << 20 {
		f := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(f)) {
			continue
		}
		want := float16.Fromfloat32(f).Bits()
		if got := kernels.F32ToF16(f); got != want {
			t.Fatalf("F32ToF16(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	if got := kernels.F32ToF16(float32(math.NaN())); got&0x7fff != 0x7e00 {
		t.Errorf("NaN gave %#04x", got)
	}
	src := []float32{1, -2.5, 65504, 1e-7}
	h := make([]uint16, 4)
	back := make([]float32, 4)
	kernels.F32RowToF16(h, src)
	kernels.F16RowToF32(back, h)
	for i := range src {
		if back[i] != float16.Fromfloat32(src[i]).Float32() {
			t.Errorf("row %d: %g", i, back[i])
		}
	}
}

// TestF16Rows checks the row conversions (assembly where present) against
// the scalar ones on random bit patterns, NaNs included.
func TestF16Rows(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 3))
		for _, n := range []int{0, 1, 15, 16, 17, 100, 1000} {
			src := make([]float32, n)
			for i := range src {
				src[i] = math.Float32frombits(r.Uint32())
				if i%7 == 0 {
					src[i] = float32(r.NormFloat64())
				}
			}
			h := make([]uint16, n)
			kernels.F32RowToF16(h, src)
			back := make([]float32, n)
			kernels.F16RowToF32(back, h)
			for i := range src {
				if want := kernels.F32ToF16(src[i]); h[i] != want {
					t.Fatalf("n=%d [%d]: %#08x gave %#04x, want %#04x", n, i, math.Float32bits(src[i]), h[i], want)
				}
				if want := kernels.F16ToF32(h[i]); math.Float32bits(back[i]) != math.Float32bits(want) {
					t.Fatalf("n=%d [%d]: %#04x widened to %g, want %g", n, i, h[i], back[i], want)
				}
			}
		}
	})
}

func TestBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 1 << 20 {
		u := r.Uint32()
		f := math.Float32frombits(u)
		got := kernels.F32ToBF16(f)
		if math.IsNaN(float64(f)) {
			if got != uint16(u>>16)|0x40 {
				t.Fatalf("NaN %#08x gave %#04x", u, got)
			}
			continue
		}
		// Nearest with ties to even on the magnitude's bit pattern (the
		// next pattern up is the next larger value, or inf).
		rem := u & 0xffff
		want := uint16(u >> 16)
		if rem > 0x8000 || (rem == 0x8000 && want&1 == 1) {
			want++
		}
		if got != want {
			t.Fatalf("F32ToBF16(%#08x) = %#04x, want %#04x", u, got, want)
		}
		if kernels.BF16ToF32(got) != math.Float32frombits(uint32(got)<<16) {
			t.Fatal("BF16ToF32")
		}
	}
	h := make([]uint16, 3)
	f := make([]float32, 3)
	kernels.F32RowToBF16(h, []float32{1, 3, -0.5})
	kernels.BF16RowToF32(f, h)
	if f[0] != 1 || f[1] != 3 || f[2] != -0.5 {
		t.Errorf("bf16 rows: %v", f)
	}
}

func TestAttention(t *testing.T) { modes(t, testAttention) }

func testAttention(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		kvh := rapid.IntRange(1, 3).Draw(rt, "kvheads")
		rep := rapid.IntRange(1, 20).Draw(rt, "rep")
		cache := rapid.SampledFrom([]string{"f32", "f16", "q8_0"}).Draw(rt, "cache")
		d := rapid.IntRange(1, 40).Draw(rt, "headdim")
		if rapid.Bool().Draw(rt, "wide") {
			// Whole vectors, past one 64-column pass of the avx512 kernels.
			d = rapid.SampledFrom([]int{48, 64, 80, 128, 144, 256}).Draw(rt, "wideHeaddim")
		}
		if rapid.Bool().Draw(rt, "fours") {
			// Heads of whole 64s in fours sharing a kv head: the avx512
			// level's four-head score kernel (attnScores4), its calls
			// adding a later 64 and its tails.
			d, rep = 64*rapid.IntRange(1, 3).Draw(rt, "fourDim"), 4*rapid.IntRange(1, 5).Draw(rt, "fourRep")
		}
		S := rapid.IntRange(0, 150).Draw(rt, "S")
		// Short caches cut into segments of positions (the avx512 path
		// cuts caches of 1024 positions or more).
		defer kernels.SetAttnSegMin(rapid.SampledFrom([]int{512, 16, 40}).Draw(rt, "segMin"))()
		pad := rapid.IntRange(0, 5).Draw(rt, "pad")
		if cache == "q8_0" {
			// Q8_0 rows are whole blocks: head dims and strides of 32s.
			d, pad = 32*(1+d%3), 32*(pad%2)
		}
		stride, hstride, size := kvh*d+pad, d, S*(kvh*d+pad)
		if rapid.Bool().Draw(rt, "headMajor") {
			stride, hstride, size = d, (S+pad)*d, kvh*(S+pad)*d
		}
		off := func(s, g int) int { return s*stride + g*hstride }
		r := rand.New(rand.NewPCG(uint64(S*1000+d), uint64(rep)))
		H := kvh * rep
		at := kernels.Attention{
			Q: randActs(r, H*d), K: randActs(r, size), V: randActs(r, size),
			Out: make([]float32, H*d), S: S, Heads: H, KVHeads: kvh, HeadDim: d, KVStride: stride, HeadStride: hstride,
			Scale: float32(1 / math.Sqrt(float64(d))),
		}
		if rapid.Bool().Draw(rt, "mask") && S > 0 {
			at.Mask = make([]float32, S)
			for s := range S {
				switch r.IntN(3) {
				case 0:
					at.Mask[s] = float32(math.Inf(-1))
				case 1:
					at.Mask[s] = float32(r.NormFloat64())
				}
			}
		}
		switch cache {
		case "q8_0":
			// Quantize the caches and hand them over as such; the reference
			// below reads the values they decode to.
			at.K8, at.V8 = make([]byte, len(at.K)/32*34), make([]byte, len(at.V)/32*34)
			if err := quant.QuantizeRow(poot.Q8_0, at.K8, at.K); err != nil {
				rt.Fatal(err)
			}
			if err := quant.QuantizeRow(poot.Q8_0, at.V8, at.V); err != nil {
				rt.Fatal(err)
			}
			at.K, at.V = nil, nil
		case "f16":
			// Round the caches to binary16 and hand them over as such; the
			// reference below reads the rounded values.
			at.K16, at.V16 = make([]uint16, len(at.K)), make([]uint16, len(at.V))
			kernels.F32RowToF16(at.K16, at.K)
			kernels.F32RowToF16(at.V16, at.V)
			kernels.F16RowToF32(at.K, at.K16)
			kernels.F16RowToF32(at.V, at.V16)
			at.K, at.V = nil, nil
		}
		split := rapid.IntRange(0, H).Draw(rt, "split")
		if err := kernels.AttendHeads(&at, 0, split); err != nil {
			rt.Fatal(err)
		}
		if err := kernels.AttendHeads(&at, split, H); err != nil {
			rt.Fatal(err)
		}
		K, V := at.K, at.V
		if at.K8 != nil {
			n := len(at.K8) / 34 * 32
			K, V = make([]float32, n), make([]float32, n)
			for i, v := range refDequant(poot.Q8_0, at.K8, n) {
				K[i] = float32(v)
			}
			for i, v := range refDequant(poot.Q8_0, at.V8, n) {
				V[i] = float32(v)
			}
		} else if K == nil {
			K, V = make([]float32, len(at.K16)), make([]float32, len(at.V16))
			kernels.F16RowToF32(K, at.K16)
			kernels.F16RowToF32(V, at.V16)
		}
		for h := range H {
			g := h / rep
			scores := make([]float64, S)
			m := math.Inf(-1)
			// A float32 score may be off by about d ulps of sum|q*k|*scale;
			// that error moves the softmax weights relatively by as much.
			var scoreErr float64
			for s := range S {
				var dot, dotAbs float64
				for i := range d {
					dot += float64(at.Q[h*d+i]) * float64(K[off(s, g)+i])
					dotAbs += math.Abs(float64(at.Q[h*d+i]) * float64(K[off(s, g)+i]))
				}
				scoreErr = max(scoreErr, float64(d+2)*6e-8*dotAbs*float64(at.Scale))
				scores[s] = dot * float64(at.Scale)
				if at.Mask != nil {
					scores[s] += float64(at.Mask[s])
				}
				m = max(m, scores[s])
			}
			for i := range d {
				var num, den, mag float64
				for s := range S {
					if math.IsInf(scores[s], -1) {
						continue
					}
					p := math.Exp(scores[s] - m)
					num += p * float64(V[off(s, g)+i])
					mag += p * math.Abs(float64(V[off(s, g)+i]))
					den += p
				}
				if den == 0 { // no position to attend to: NaN, as softmax of -inf
					if got := at.Out[h*d+i]; got == got {
						rt.Fatalf("out[%d][%d] = %g with every position masked, want NaN", h, i, got)
					}
					continue
				}
				want := num / den
				mag /= den
				if got := at.Out[h*d+i]; !close32(got, want, (2*scoreErr+1e-5)*(mag+1)) {
					rt.Fatalf("out[%d][%d] = %g, want %g", h, i, got, want)
				}
			}
		}
	})
	// Attend over a pool agrees with AttendHeads on one goroutine, and with
	// AttendHeads a kv head at a time, bit for bit: the avx512 kernels
	// (head dims of whole vectors) take the heads of several kv heads
	// through each block of positions together (and widen Q8_0 rows of
	// adjacent kv heads together), and how they are batched must not
	// change a head's arithmetic; where they cut the positions into
	// segments (here of at least 16 positions: two of 77, five of 300),
	// the workers take runs of segments, or of a segment's kv heads, and
	// the outputs must not depend on that either.
	p := kernels.NewPool(3)
	defer p.Close()
	r := rand.New(rand.NewPCG(8, 8))
	var at kernels.Attention
	for _, c := range []struct {
		D, S, segMin int
		cache        string
	}{{24, 77, 512, "f32"}, {64, 77, 512, "f32"}, {64, 77, 512, "f16"}, {32, 77, 512, "f16"}, {64, 77, 512, "q8_0"}, {96, 77, 512, "q8_0"},
		{64, 77, 16, "f32"}, {32, 300, 16, "f16"}, {64, 300, 16, "q8_0"}, {16, 300, 100, "f16"}} {
		const H, KVH = 12, 3
		D, S := c.D, c.S
		restore := kernels.SetAttnSegMin(c.segMin)
		at = kernels.Attention{
			Q: randActs(r, H*D), K: randActs(r, S*KVH*D), V: randActs(r, S*KVH*D),
			Out: make([]float32, H*D), S: S, Heads: H, KVHeads: KVH, HeadDim: D, KVStride: KVH * D, Scale: 0.2,
		}
		switch c.cache {
		case "f16":
			at.K16, at.V16 = make([]uint16, len(at.K)), make([]uint16, len(at.V))
			kernels.F32RowToF16(at.K16, at.K)
			kernels.F32RowToF16(at.V16, at.V)
			at.K, at.V = nil, nil
		case "q8_0":
			at.K8, at.V8 = make([]byte, len(at.K)/32*34), make([]byte, len(at.V)/32*34)
			if err := quant.QuantizeRow(poot.Q8_0, at.K8, at.K); err != nil {
				t.Fatal(err)
			}
			if err := quant.QuantizeRow(poot.Q8_0, at.V8, at.V); err != nil {
				t.Fatal(err)
			}
			at.K, at.V = nil, nil
		}
		if err := kernels.Attend(p, &at); err != nil {
			t.Fatal(err)
		}
		pooled := append([]float32(nil), at.Out...)
		if err := kernels.AttendHeads(&at, 0, H); err != nil {
			t.Fatal(err)
		}
		whole := append([]float32(nil), at.Out...)
		for h := 0; h < H; h += H / KVH {
			if err := kernels.AttendHeads(&at, h, h+H/KVH); err != nil {
				t.Fatal(err)
			}
		}
		for i := range pooled {
			if pooled[i] != whole[i] || at.Out[i] != whole[i] {
				t.Fatalf("D %d, S %d, segments of %d, %s caches: out[%d]: Attend %g, AttendHeads %g, a kv head at a time %g", D, S, c.segMin, c.cache, i, pooled[i], whole[i], at.Out[i])
			}
		}
		restore()
	}
	if a := testing.AllocsPerRun(10, func() { _ = kernels.Attend(p, &at) }); a != 0 {
		t.Errorf("Attend allocates %v times", a)
	}

	bad := kernels.Attention{Heads: 3, KVHeads: 2, HeadDim: 4, KVStride: 8}
	if kernels.AttendHeads(&bad, 0, 3) == nil {
		t.Error("heads not a multiple of kv heads accepted")
	}
	short := kernels.Attention{Q: make([]float32, 4), Out: make([]float32, 4), K: make([]float32, 4), V: make([]float32, 4), S: 2, Heads: 1, KVHeads: 1, HeadDim: 4, KVStride: 4}
	if kernels.AttendHeads(&short, 0, 1) == nil {
		t.Error("short cache accepted")
	}
}

func TestPool(t *testing.T) {
	for _, workers := range []int{1, 2, 5} {
		p := kernels.NewPool(workers)
		if p.Workers() != workers {
			t.Fatalf("Workers() = %d", p.Workers())
		}
		for _, n := range []int{0, 1, 3, 17, 1000} {
			for _, grain := range []int{0, 1, 4, 16} {
				hits := make([]atomic.Int32, n)
				p.RunGrain(n, grain, func(lo, hi int) {
					if g := max(grain, 1); lo%g != 0 || (hi != n && hi%g != 0) {
						t.Errorf("range [%d,%d) not aligned to %d", lo, hi, grain)
					}
					for i := lo; i < hi; i++ {
						hits[i].Add(1)
					}
				})
				for i := range hits {
					if hits[i].Load() != 1 {
						t.Fatalf("workers=%d n=%d: index %d ran %d times", workers, n, i, hits[i].Load())
					}
				}
			}
		}
		var sum atomic.Int64
		fn := func(lo, hi int) { sum.Add(int64(hi - lo)) }
		if a := testing.AllocsPerRun(100, func() { p.Run(100, fn) }); a != 0 {
			t.Errorf("Run allocates %v times", a)
		}
		p.Close()
		p.Close()
		p.Run(10, fn) // after Close it runs on the caller
	}
}

// TestQuantizeAsmMatchesGo checks that each assembly level's activation
// quantizer gives the same bytes (and sums of each 16) as the Go one, ties
// and zero blocks included.
func TestQuantizeAsmMatchesGo(t *testing.T) {
	for _, l := range kernels.Levels()[1:] {
		t.Run(l.String(), func(t *testing.T) { quantizeMatchesGo(t, l) })
	}
}

func quantizeMatchesGo(t *testing.T, l kernels.Level) {
	atLevel(t, l)
	r := rand.New(rand.NewPCG(5, 5))
	for trial := range 200 {
		n := 32 * (1 + r.IntN(8))
		x := randActs(r, n)
		switch trial % 4 {
		case 1: // exact halves: ties
			for i := range x {
				x[i] = float32(r.IntN(255)-127) / 2
			}
			x[0] = 63.5
		case 2:
			clear(x)
		case 3:
			x[r.IntN(n)] = -1e30
		}
		qa, da, sa := kernels.QuantizeQ8(x)
		restore, _ := kernels.SetLevel(kernels.LevelGo)
		qg, dg, sg := kernels.QuantizeQ8(x)
		restore()
		if da != dg {
			t.Fatalf("scale %g vs %g", da, dg)
		}
		for g := range sg {
			var want int16
			for _, v := range qg[16*g : 16*g+16] {
				want += int16(v)
			}
			if sa[g] != sg[g] || sg[g] != want {
				t.Fatalf("trial %d: sum of quants %d-%d = %d (%v), %d (go), want %d", trial, 16*g, 16*g+15, sa[g], l, sg[g], want)
			}
		}
		for i := range qa {
			if qa[i] != qg[i] {
				t.Fatalf("trial %d: q[%d] = %d (%v) vs %d (go), x = %g", trial, i, qa[i], l, qg[i], x[i])
			}
			if qa[i] == -128 {
				t.Fatal("-128 produced")
			}
		}
	}
}

// TestXorWords: the xor of every word, at every length (the assembly's
// blocks of 16 and the tail) and at every level, is the naive xor.
func TestXorWords(t *testing.T) { modes(t, testXorWords) }

func testXorWords(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	x := make([]uint64, 300)
	for i := range x {
		x[i] = r.Uint64()
	}
	for n := range len(x) {
		var want uint64
		for _, v := range x[:n] {
			want ^= v
		}
		if got := kernels.XorWords(x[:n]); got != want {
			t.Fatalf("%d words: %#x, want %#x", n, got, want)
		}
		for _, h := range []int{n / 2, n / 3} {
			if got := kernels.XorWordsPair(x[:h], x[h:n]); got != want {
				t.Fatalf("%d and %d words side by side: %#x, want %#x", h, n-h, got, want)
			}
			if got := kernels.XorWordsPairAhead(x[:h], x[h:n], 512); got != want {
				t.Fatalf("%d and %d words side by side, prefetched: %#x, want %#x", h, n-h, got, want)
			}
		}
	}
}

// TestExpInRange: e^x within 1e-6 relative at every level for x in
// (-87, 88), odd lengths included; a NaN, an infinity or a value outside
// the range anywhere in the row leaves dst untouched and reports false.
func TestExpInRange(t *testing.T) {
	modes(t, func(t *testing.T) {
		var x []float32
		for v := float32(-86.9); v < 88; v += 0.291 {
			x = append(x, v)
		}
		for _, n := range []int{0, 1, 7, 8, 9, len(x)} {
			dst := make([]float32, n)
			if !kernels.ExpInRange(dst, x[:n]) {
				t.Fatalf("n=%d: refused", n)
			}
			for i, v := range dst {
				want := math.Exp(float64(x[i]))
				if math.Abs(float64(v)-want) > 1e-6*want {
					t.Fatalf("exp(%g) = %g, want %g", x[i], v, want)
				}
			}
		}
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -87, 88, -200} {
			for _, at := range []int{0, 1, 7, 8, 15, 16, 18} { // vector lanes and the tail
				y, dst := make([]float32, 19), make([]float32, 19)
				for i := range y {
					y[i], dst[i] = 0.5, -1
				}
				y[at] = bad
				if kernels.ExpInRange(dst, y) || dst[0] != -1 {
					t.Errorf("%g at %d of the row: accepted or wrote %v", bad, at, dst)
				}
			}
		}
	})
}

// TestArith: each operator gives, element by element and bit for bit
// (NaN for NaN), what Go's float32 operator gives, at every length and
// with dst aliasing an operand, over values that include zeros of both
// signs, subnormals, infinities and NaN.
func TestArith(t *testing.T) { modes(t, testArith) }

func testArith(t *testing.T) {
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -3e-39, float32(math.Inf(1)), float32(math.Inf(-1)), nan32(), math.MaxFloat32}
	ops := []struct {
		op kernels.ArithOp
		f  func(x, y float32) float32
	}{
		{kernels.ArithAdd, func(x, y float32) float32 { return x + y }},
		{kernels.ArithSub, func(x, y float32) float32 { return x - y }},
		{kernels.ArithMul, func(x, y float32) float32 { return x * y }},
		{kernels.ArithDiv, func(x, y float32) float32 { return x / y }},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for n := range 70 {
		a, b := make([]float32, n), make([]float32, n)
		for i := range n {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			if r.IntN(4) == 0 {
				a[i] = specials[r.IntN(len(specials))]
			}
			if r.IntN(4) == 0 {
				b[i] = specials[r.IntN(len(specials))]
			}
		}
		for _, o := range ops {
			for _, alias := range []bool{false, true} {
				dst := make([]float32, n)
				if alias {
					copy(dst, a)
					if err := kernels.Arith(o.op, dst, dst, b); err != nil {
						t.Fatal(err)
					}
				} else if err := kernels.Arith(o.op, dst, a, b); err != nil {
					t.Fatal(err)
				}
				for i := range n {
					want := o.f(a[i], b[i])
					if got := dst[i]; math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
						t.Fatalf("n=%d op %d alias %v: %v op %v = %v, want %v", n, o.op, alias, a[i], b[i], got, want)
					}
				}
			}
		}
	}
	if err := kernels.Arith(kernels.ArithAdd, make([]float32, 3), make([]float32, 2), make([]float32, 3)); err == nil {
		t.Error("a short operand was accepted")
	}
}

// TestSum: the float64 sum of float32 values at every level and length
// (vector body and tail), within float64 rounding of the sequential sum;
// a NaN, or infinities of both signs, give NaN, and one infinity itself.
func TestSum(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(8, 9))
		for n := range 70 {
			x := make([]float32, n)
			var want, mag float64
			for i := range x {
				x[i] = float32(r.NormFloat64() * 1e3)
				want += float64(x[i])
				mag += math.Abs(float64(x[i]))
			}
			if got := kernels.Sum(x); math.Abs(got-want) > 1e-15*mag*float64(n) {
				t.Fatalf("n=%d: sum %v, want %v", n, got, want)
			}
		}
		inf := float32(math.Inf(1))
		for _, c := range []struct {
			specials []float32
			want     float64
		}{{[]float32{nan32()}, math.NaN()}, {[]float32{inf}, math.Inf(1)}, {[]float32{-inf}, math.Inf(-1)}, {[]float32{inf, -inf}, math.NaN()}} {
			for _, at := range []int{0, 3, 8, 15, 17} {
				x := make([]float32, 19)
				for i := range x {
					x[i] = 1
				}
				for j, v := range c.specials {
					x[(at+5*j)%len(x)] = v
				}
				got := kernels.Sum(x)
				if math.IsNaN(c.want) != math.IsNaN(got) || !math.IsNaN(got) && got != c.want {
					t.Errorf("%v at %d: sum %v, want %v", c.specials, at, got, c.want)
				}
			}
		}
	})
}

// TestSiLUMulInRange: at every level and length, gates in (-88, 87) give
// bit for bit what the definition's steps give with ExpInRange's exp
// (negate, exp, add one, divide, multiply, each rounded to float32); a
// NaN, an infinity or a gate outside anywhere leaves dst untouched.
func TestSiLUMulInRange(t *testing.T) {
	modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 1))
		for n := range 40 {
			g, u, neg, e, y := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range n {
				g[i], u[i] = float32(r.Float64()*174.9-87.9), float32(r.NormFloat64())
				neg[i] = -g[i]
			}
			if !kernels.ExpInRange(e, neg) || !kernels.SiLUMulInRange(y, g, u) {
				t.Fatalf("n=%d: refused", n)
			}
			for i := range n {
				if want := g[i] / (1 + e[i]) * u[i]; math.Float32bits(y[i]) != math.Float32bits(want) {
					t.Fatalf("n=%d: silu(%g)·%g = %g, want %g", n, g[i], u[i], y[i], want)
				}
			}
		}
		for _, bad := range []float32{nan32(), float32(math.Inf(1)), float32(math.Inf(-1)), -88, 87, 100} {
			for _, at := range []int{0, 7, 8, 16, 18} {
				g, u, y := make([]float32, 19), make([]float32, 19), make([]float32, 19)
				for i := range y {
					g[i], u[i], y[i] = 0.5, 1, -1
				}
				g[at] = bad
				if kernels.SiLUMulInRange(y, g, u) || y[0] != -1 {
					t.Errorf("gate %g at %d: accepted or wrote %v", bad, at, y)
				}
			}
		}
	})
}

// TestArgMax: the first index of the largest value, NaNs never winning,
// against a plain loop, over lengths around the vector widths with ties,
// signed zeros, infinities and NaNs drawn in.
func TestArgMax(t *testing.T) { modes(t, testArgMax) }

func testArgMax(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(rt, "n")
		pool := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 3.5, -7, float32(math.Inf(1)), float32(math.Inf(-1)), nan32(), math.MaxFloat32}
		odd := rapid.Bool().Draw(rt, "odd")
		r := rand.New(rand.NewPCG(uint64(n), 7))
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.IntN(9) - 4) // ties are common
			if odd && r.IntN(8) == 0 {
				x[i] = pool[r.IntN(len(pool))]
			}
		}
		want := 0
		for i, v := range x {
			if v > x[want] || x[want] != x[want] && v == v {
				want = i
			}
		}
		if got := kernels.ArgMax(x); got != want {
			rt.Fatalf("ArgMax(%v) = %d, want %d", x, got, want)
		}
	})
}
