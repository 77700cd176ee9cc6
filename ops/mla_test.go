package ops_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
	"pgregory.net/rapid"
)

// mlaSpec sizes a latent attention test.
type mlaSpec struct {
	d, h, nope, rope, vd, lora, qlora, capacity int
	pos                                         []int32
	layout                                      ops.RopeLayout
	mscale                                      float64
	absorb, kbt                                 bool
	stored                                      bool // weights as stored: half precision and packed blocks
}

// mlaInputs are the random inputs, in float64 and as handles.
type mlaInputs struct {
	x, q, qa, qaNorm, qb, kva, kvaNorm, kb, vb, o, invFreq, cache0 []float64
	hx                                                             mixH
	w                                                              ops.MLAWeights[mixBrand]
}

func newMLAInputs(c *mixCase, s mlaSpec) *mlaInputs {
	in := &mlaInputs{}
	qk := s.nope + s.rope
	in.hx, in.x = c.randConst("x", 1, len(s.pos), s.d)
	switch {
	case s.stored:
		// Declared with the other stored weights below.
	case s.qlora > 0:
		in.w.QA, in.qa = c.randConst("q_a", 0.5, s.qlora, s.d)
		in.w.QANorm, in.qaNorm = c.randConst("q_a_norm", 1, s.qlora)
		in.w.QB, in.qb = c.randConst("q_b", 0.5, s.h*qk, s.qlora)
	default:
		in.w.Q, in.q = c.randConst("q", 0.5, s.h*qk, s.d)
	}
	if s.stored {
		in.w.Q, in.q = c.storedConst("q", poot.BF16, 0.5, s.h*qk, s.d)
		in.w.KVA, in.kva = c.storedConst("kv_a", poot.Q8_0, 0.5, s.lora+s.rope, s.d)
		in.w.KVANorm, in.kvaNorm = c.storedConst("kv_a_norm", poot.BF16, 1, s.lora)
		in.w.KB, in.kb = c.storedConst("k_b", poot.F16, 0.5, s.h, s.nope, s.lora)
		in.w.VB, in.vb = c.storedConst("v_b", poot.Q8_0, 0.5, s.h, s.vd, s.lora)
		in.w.O, in.o = c.storedConst("o", poot.F16, 0.5, s.d, s.h*s.vd)
	} else {
		in.w.KVA, in.kva = c.randConst("kv_a", 0.5, s.lora+s.rope, s.d)
		in.w.KVANorm, in.kvaNorm = c.randConst("kv_a_norm", 1, s.lora)
		in.w.KB, in.kb = c.randConst("k_b", 0.5, s.h, s.nope, s.lora)
	}
	if s.kbt {
		t := make([]float64, len(in.kb))
		for h := range s.h {
			for n := range s.nope {
				for l := range s.lora {
					t[(h*s.lora+l)*s.nope+n] = in.kb[(h*s.nope+n)*s.lora+l]
				}
			}
		}
		in.w.KBT = c.constant("k_b_t", t, s.h, s.lora, s.nope)
	}
	if !s.stored {
		in.w.VB, in.vb = c.randConst("v_b", 0.5, s.h, s.vd, s.lora)
		in.w.O, in.o = c.randConst("o", 0.5, s.d, s.h*s.vd)
	}
	in.invFreq = make([]float64, s.rope/2)
	for i := range in.invFreq {
		in.invFreq[i] = float64(float32(math.Pow(100, -2*float64(i)/float64(s.rope))))
	}
	in.cache0 = c.random(s.capacity*(s.lora+s.rope), 1)
	return in
}

func refRMS(x, w []float64) []float64 {
	var ms float64
	for _, v := range x {
		ms += v * v
	}
	r := 1 / math.Sqrt(ms/float64(len(x))+1e-6)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * r * w[i]
	}
	return out
}

func refRotate(x, inv []float64, pos float64, layout ops.RopeLayout) []float64 {
	out := append([]float64(nil), x...)
	half := len(inv)
	for i := range half {
		// The graph's angles are f32 products of f32 operands.
		ang := float64(float32(pos) * float32(inv[i]))
		cs, sn := math.Cos(ang), math.Sin(ang)
		a, b := i, i+half
		if layout == ops.RopeInterleaved {
			a, b = 2*i, 2*i+1
		}
		out[a] = x[a]*cs - x[b]*sn
		out[b] = x[b]*cs + x[a]*sn
	}
	return out
}

// refLatentAttention decompresses every cached latent per head, as the
// papers write it, and returns the output and the cache afterwards.
func refLatentAttention(in *mlaInputs, s mlaSpec) (out, cache []float64) {
	qk, kw, t := s.nope+s.rope, s.lora+s.rope, len(s.pos)
	cache = append([]float64(nil), in.cache0...)
	qs := make([][]float64, t)
	for i, p := range s.pos {
		x := in.x[i*s.d : (i+1)*s.d]
		if s.qlora > 0 {
			qs[i] = mixMatVec(in.qb, 0, s.h*qk, s.qlora, refRMS(mixMatVec(in.qa, 0, s.qlora, s.d, x), in.qaNorm))
		} else {
			qs[i] = mixMatVec(in.q, 0, s.h*qk, s.d, x)
		}
		for h := range s.h {
			copy(qs[i][h*qk+s.nope:(h+1)*qk], refRotate(qs[i][h*qk+s.nope:(h+1)*qk], in.invFreq, float64(p), s.layout))
		}
		kv := mixMatVec(in.kva, 0, kw, s.d, x)
		copy(cache[int(p)*kw:], refRMS(kv[:s.lora], in.kvaNorm))
		copy(cache[int(p)*kw+s.lora:], refRotate(kv[s.lora:], in.invFreq, float64(p), s.layout))
	}
	scale := 1 / math.Sqrt(float64(qk))
	if s.mscale != 0 {
		scale *= s.mscale * s.mscale
	}
	out = make([]float64, t*s.d)
	for i, p := range s.pos {
		ctx := make([]float64, s.h*s.vd)
		for h := range s.h {
			q := qs[i][h*qk : (h+1)*qk]
			n := int(p) + 1
			scores := make([]float64, n)
			mx := math.Inf(-1)
			for j := range n {
				lat := cache[j*kw : j*kw+s.lora]
				kNope := mixMatVec(in.kb, h*s.nope*s.lora, s.nope, s.lora, lat)
				var sc float64
				for c := range s.nope {
					sc += q[c] * kNope[c]
				}
				for c := range s.rope {
					sc += q[s.nope+c] * cache[j*kw+s.lora+c]
				}
				scores[j] = sc * scale
				mx = math.Max(mx, scores[j])
			}
			var sum float64
			for j := range scores {
				scores[j] = math.Exp(scores[j] - mx)
				sum += scores[j]
			}
			for j := range n {
				v := mixMatVec(in.vb, h*s.vd*s.lora, s.vd, s.lora, cache[j*kw:j*kw+s.lora])
				for c := range s.vd {
					ctx[h*s.vd+c] += scores[j] / sum * v[c]
				}
			}
		}
		copy(out[i*s.d:], mixMatVec(in.o, 0, s.d, s.h*s.vd, ctx))
	}
	return out, cache
}

func mlaGraph(c *mixCase, in *mlaInputs, s mlaSpec, forms ...bool) ([]mixH, []int) {
	pos := c.positions(s.pos, s.capacity)
	inv := c.constant("inv_freq", in.invFreq, s.rope/2)
	rot := ops.RopeTables(c.b, pos, inv, 1, s.layout)
	cfg := ops.MLAConfig{Heads: s.h, NopeDim: s.nope, RopeDim: s.rope, ValueDim: s.vd, KVLoraRank: s.lora, MScale: s.mscale}
	var outs []mixH
	var counts []int
	for i, absorb := range forms {
		cfg.Absorb = absorb
		name := fmt.Sprintf("cache_%d", i)
		cache := c.state(name, in.cache0, s.capacity, s.lora+s.rope)
		var out, cache2 mixH
		counts = append(counts, c.counted(func() { out, cache2 = ops.LatentAttention(c.b, in.hx, pos, cache, rot, in.w, cfg) }))
		outs = append(outs, out)
		c.carry = append(c.carry, poot.Carry[mixBrand]{In: cache, Out: cache2})
	}
	return outs, counts
}

func TestLatentAttentionMatchesReference(t *testing.T) {
	base := mlaSpec{d: 10, h: 3, nope: 4, rope: 4, vd: 3, lora: 5, capacity: 9, pos: []int32{3, 4, 5}}
	variants := []struct {
		name string
		edit func(*mlaSpec)
	}{
		{"prefill", func(s *mlaSpec) {}},
		{"decode", func(s *mlaSpec) { s.pos = []int32{7} }},
		{"from_zero", func(s *mlaSpec) { s.pos = []int32{0, 1, 2, 3} }},
		{"low_rank_q", func(s *mlaSpec) { s.qlora = 6 }},
		{"interleaved_rope", func(s *mlaSpec) { s.layout = ops.RopeInterleaved }},
		{"yarn_mscale", func(s *mlaSpec) { s.mscale = ops.YaRNMScale(40, 0.707) }},
		{"k_b_transposed", func(s *mlaSpec) { s.kbt = true }},
		{"stored_weights", func(s *mlaSpec) { s.stored, s.d, s.lora = true, 32, 32 }},
	}
	for _, v := range variants {
		for _, absorb := range []bool{false, true} {
			s := base
			v.edit(&s)
			name := fmt.Sprintf("%s/absorb=%v", v.name, absorb)
			t.Run(name, func(t *testing.T) {
				c := newMixCase(t, 11)
				in := newMLAInputs(c, s)
				outs, counts := mlaGraph(c, in, s, absorb)
				c.outs = outs
				got, states := c.run()
				wantOut, wantCache := refLatentAttention(in, s)
				mixClose(t, "output", got[0], wantOut, 1e-5)
				mixClose(t, "cache", states["cache_0"], wantCache, 1e-6)
				t.Logf("latent_attention %s (T=%d, capacity %d): %d primitives", name, len(s.pos), s.capacity, counts[0])
			})
		}
	}
}

// TestLatentAttentionAbsorbedLaw: the absorbed form equals the naive one.
func TestLatentAttentionAbsorbedLaw(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := mlaSpec{
			d: rapid.IntRange(1, 8).Draw(rt, "width"), h: rapid.IntRange(1, 3).Draw(rt, "heads"),
			nope: rapid.IntRange(1, 5).Draw(rt, "nope"), rope: 2 * rapid.IntRange(1, 3).Draw(rt, "rope/2"),
			vd: rapid.IntRange(1, 4).Draw(rt, "value dim"), lora: rapid.IntRange(1, 6).Draw(rt, "latent"),
			capacity: rapid.IntRange(1, 8).Draw(rt, "capacity"), kbt: rapid.Bool().Draw(rt, "k_b transposed"),
			layout: ops.RopeLayout(rapid.IntRange(0, 1).Draw(rt, "layout")),
		}
		if rapid.Bool().Draw(rt, "low-rank q") {
			s.qlora = rapid.IntRange(1, 5).Draw(rt, "q rank")
		}
		start := rapid.IntRange(0, s.capacity-1).Draw(rt, "start")
		t := rapid.IntRange(1, s.capacity-start).Draw(rt, "tokens")
		for i := range t {
			s.pos = append(s.pos, int32(start+i))
		}
		c := newMixCase(rt, rapid.Uint64().Draw(rt, "seed"))
		in := newMLAInputs(c, s)
		outs, _ := mlaGraph(c, in, s, false, true)
		c.outs = outs
		got, states := c.run()
		mixClose(rt, "absorbed vs naive", got[1], got[0], 1e-5)
		mixClose(rt, "caches", states["cache_1"], states["cache_0"], 0)
	})
}

func TestLatentAttentionShapeErrors(t *testing.T) {
	c := newMixCase(t, 1)
	s := mlaSpec{d: 4, h: 2, nope: 2, rope: 2, vd: 2, lora: 3, capacity: 4, pos: []int32{0}}
	in := newMLAInputs(c, s)
	pos := c.positions(s.pos, s.capacity)
	cache := c.state("cache", make([]float64, 4*4), 4, 4) // lora+rope is 5
	rot := ops.RopeTables(c.b, pos, c.constant("inv", []float64{1}, 1), 1, ops.RopeNeoX)
	ops.LatentAttention(c.b, in.hx, pos, cache, rot, in.w, ops.MLAConfig{Heads: 2, NopeDim: 2, RopeDim: 2, ValueDim: 2, KVLoraRank: 3})
	if c.b.Err() == nil {
		t.Errorf("a cache of the wrong width: no error recorded")
	}
}

// TestMixerCountsAtModelShapes records each composite at the shapes of a
// real checkpoint (no data: the graphs are only built) and logs its
// primitive count, so that growth shows up in review.
func TestMixerCountsAtModelShapes(t *testing.T) {
	b := poot.NewBuilder[mixBrand](poot.Limits{})
	n := 0
	w := func(dims ...int) mixH {
		n++
		return b.Constant(fmt.Sprintf("w%d", n), poot.T(poot.F32, dims...))
	}
	logCount := func(name string, fn func()) {
		before := b.NumEqns()
		fn()
		if err := b.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%-44s %5d primitives", name, b.NumEqns()-before)
	}
	pos := b.Slot(poot.SlotPos, poot.Shape{1}, 0, 4095)
	for _, tok := range []int{1, 128} {
		// Qwen3-30B-A3B: 128 experts, 8 chosen, width 2048, hidden 768.
		q3 := ops.MoEWeights[mixBrand]{Router: w(128, 2048), Gate: w(128, 768, 2048), Up: w(128, 768, 2048), Down: w(128, 2048, 768)}
		x := w(tok, 2048)
		cfg := ops.MoEConfig{TopK: 8, Renormalize: true}
		logCount(fmt.Sprintf("Route qwen3-moe T=%d", tok), func() { ops.Route(b, x, q3, cfg) })
		for _, form := range moeForms {
			logCount(fmt.Sprintf("MoE%s qwen3-moe T=%d", form.name, tok), func() { form.fn(b, x, q3, cfg) })
		}
		// DeepSeek-V3: 256 experts in 8 groups, 4 groups kept, 8 chosen,
		// sigmoid with a selection bias, one shared expert.
		dsx := w(tok, 7168)
		ds := ops.MoEWeights[mixBrand]{Router: w(256, 7168), SelectionBias: w(256), Gate: w(256, 2048, 7168), Up: w(256, 2048, 7168),
			Down: w(256, 7168, 2048), SharedGate: w(2048, 7168), SharedUp: w(2048, 7168), SharedDown: w(7168, 2048)}
		dcfg := ops.MoEConfig{TopK: 8, Gating: ops.SigmoidTopK, Groups: 8, TopGroups: 4, Renormalize: true, Scale: 2.5}
		logCount(fmt.Sprintf("MoEsparse deepseek-v3 T=%d", tok), func() { ops.MoESparse(b, dsx, ds, dcfg) })

		// Qwen3-Next's gated delta rule mixer: 16 key heads, 32 value heads
		// of 128, width 2048, 4 taps.
		gx := w(tok, 2048)
		gw := ops.GatedDeltaNetWeights[mixBrand]{Q: w(2048, 2048), K: w(2048, 2048), V: w(4096, 2048), Z: w(4096, 2048),
			Conv: w(4, 8192), Beta: w(32, 2048), Alpha: w(32, 2048), DtBias: w(32), ALog: w(32), Norm: w(128), Out: w(2048, 4096)}
		gs := ops.GatedDeltaNetState[mixBrand]{Conv: w(3, 8192), Delta: w(32, 128, 128)}
		for _, chunk := range []int{0, 64} {
			if tok == 1 && chunk != 0 {
				continue
			}
			gcfg := ops.GatedDeltaConfig{KeyHeads: 16, ValueHeads: 32, ChunkSize: chunk}
			logCount(fmt.Sprintf("GatedDeltaNet qwen3-next T=%d chunk=%d", tok, chunk), func() { ops.GatedDeltaNet(b, gx, gw, gs, gcfg) })
		}
		logCount(fmt.Sprintf("CausalConv1D 8192 channels T=%d", tok), func() { ops.CausalConv1D(b, w(tok, 8192), w(3, 8192), w(4, 8192), mixH{}) })

		// Mamba2-2.7B: 80 heads of 64, one group, state 128.
		for _, chunk := range []int{0, 64} {
			if tok == 1 && chunk != 0 {
				continue
			}
			mcfg := ops.Mamba2Config{Heads: 80, Groups: 1, ChunkSize: chunk}
			logCount(fmt.Sprintf("Mamba2SSM mamba2-2.7b T=%d chunk=%d", tok, chunk), func() {
				ops.Mamba2SSM(b, w(tok, 5120), w(tok, 80), w(tok, 128), w(tok, 128), w(80), w(80), w(80), w(80, 64, 128), mcfg)
			})
		}
	}
	// DeepSeek-V3's latent attention, one decode token over 4096 positions.
	mw := ops.MLAWeights[mixBrand]{QA: w(1536, 7168), QANorm: w(1536), QB: w(128*192, 1536), KVA: w(576, 7168), KVANorm: w(512),
		KB: w(128, 128, 512), VB: w(128, 128, 512), O: w(7168, 128*128)}
	rot := ops.RopeTables(b, pos, w(32), 1, ops.RopeInterleaved)
	mx, cache := w(1, 7168), b.StateInput("mla_cache", poot.T(poot.F32, 4096, 576))
	for _, absorb := range []bool{false, true} {
		cfg := ops.MLAConfig{Heads: 128, NopeDim: 128, RopeDim: 64, ValueDim: 128, KVLoraRank: 512, Absorb: absorb, MScale: ops.YaRNMScale(40, 1)}
		logCount(fmt.Sprintf("LatentAttention deepseek-v3 T=1 absorb=%v", absorb), func() { ops.LatentAttention(b, mx, pos, cache, rot, mw, cfg) })
	}
}

// TestLatentAttentionBatchLaw: R sequences in one call (rows [R·T, D],
// cache [R, capacity, ·]) equal R separate calls, in both forms.
func TestLatentAttentionBatchLaw(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := rapid.IntRange(1, 3).Draw(rt, "sequences")
		s := mlaSpec{d: 6, h: 2, nope: 3, rope: 2, vd: 2, lora: 4, capacity: rapid.IntRange(1, 6).Draw(rt, "capacity")}
		tok := rapid.IntRange(1, s.capacity).Draw(rt, "tokens")
		for range r {
			start := rapid.IntRange(0, s.capacity-tok).Draw(rt, "start")
			for i := range tok {
				s.pos = append(s.pos, int32(start+i))
			}
		}
		absorb := rapid.Bool().Draw(rt, "absorb")
		c := newMixCase(rt, rapid.Uint64().Draw(rt, "seed"))
		in := newMLAInputs(c, s) // x has R·T rows
		in.cache0 = c.random(r*s.capacity*(s.lora+s.rope), 1)
		pos := c.positions(s.pos, s.capacity)
		inv := c.constant("inv_freq", []float64{1}, 1)
		cfg := ops.MLAConfig{Heads: s.h, NopeDim: s.nope, RopeDim: s.rope, ValueDim: s.vd, KVLoraRank: s.lora, Absorb: absorb}
		kw := s.lora + s.rope
		cache := c.constant("cache", in.cache0, r, s.capacity, kw)
		out, cache2 := ops.LatentAttention(c.b, in.hx, pos, cache, ops.RopeTables(c.b, pos, inv, 1, s.layout), in.w, cfg)
		var outs, caches []mixH
		for i := range r {
			rows := func(v mixH) mixH { return c.b.SliceAxis(v, 0, i*tok, (i+1)*tok) }
			p := rows(pos)
			ci := c.constant(fmt.Sprintf("cache_%d", i), in.cache0[i*s.capacity*kw:(i+1)*s.capacity*kw], s.capacity, kw)
			oi, ci2 := ops.LatentAttention(c.b, rows(in.hx), p, ci, ops.RopeTables(c.b, p, inv, 1, s.layout), in.w, cfg)
			outs, caches = append(outs, oi), append(caches, c.b.Reshape(ci2, 1, s.capacity, kw))
		}
		c.outs = []mixH{out, cache2, c.b.Concat(0, outs...), c.b.Concat(0, caches...)}
		got, _ := c.run()
		mixClose(rt, "batched output", got[0], got[2], 1e-6)
		mixClose(rt, "batched caches", got[1], got[3], 0)
	})
}
