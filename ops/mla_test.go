package ops_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/tensor"
	"pgregory.net/rapid"
)

// mlaSpec sizes a latent attention test: rows sequences of len(pos)/rows
// new tokens each (pos is sequence-major), over caches of capacity
// positions per sequence.
type mlaSpec struct {
	d, h, nope, rope, vd, lora, qlora, capacity, rows int
	pos                                               []int32
	layout                                            ops.RopeLayout
	mscale                                            float64
	absorb                                            bool
	fused                                             bool // kv_b as one tensor, not k_b_t and v_b
	stored                                            bool // weights as stored: half precision and packed blocks
	paged                                             bool // the cache a pool of pages in scrambled order
}

func (s mlaSpec) kw() int { return s.lora + s.rope }

// mlaInputs are the random inputs, in float64 and as handles. kb [H, nope,
// lora] and vb [H, vd, lora] are W_UK and W_UV whatever the layout the
// graph reads them in.
type mlaInputs struct {
	x, q, qa, qaNorm, qb, kva, kvaNorm, kb, vb, o, invFreq, cache0 []float64
	hx, ho                                                         mixH
	w                                                              ops.MLAWeights[mixBrand]
}

// fuseKV lays W_UK and W_UV out as kv_b [H·(nope+vd), lora], and splitKV
// reads them back.
func fuseKV(s mlaSpec, kb, vb []float64) []float64 {
	out := make([]float64, 0, len(kb)+len(vb))
	for h := range s.h {
		out = append(out, kb[h*s.nope*s.lora:(h+1)*s.nope*s.lora]...)
		out = append(out, vb[h*s.vd*s.lora:(h+1)*s.vd*s.lora]...)
	}
	return out
}

func splitKV(s mlaSpec, kvb []float64) (kb, vb []float64) {
	per := (s.nope + s.vd) * s.lora
	for h := range s.h {
		kb = append(kb, kvb[h*per:h*per+s.nope*s.lora]...)
		vb = append(vb, kvb[h*per+s.nope*s.lora:(h+1)*per]...)
	}
	return kb, vb
}

// transposeHeads turns [H, a, b] into [H, b, a].
func transposeHeads(v []float64, h, a, b int) []float64 {
	out := make([]float64, len(v))
	for k := range h {
		for i := range a {
			for j := range b {
				out[(k*b+j)*a+i] = v[(k*a+i)*b+j]
			}
		}
	}
	return out
}

func newMLAInputs(c *mixCase, s mlaSpec) *mlaInputs {
	in := &mlaInputs{}
	qk, n := s.nope+s.rope, len(s.pos)
	in.hx, in.x = c.randConst("x", 1, n, s.d)
	store := func(name string, d poot.DType, scale float64, dims ...int) (mixH, []float64) {
		if s.stored {
			return c.storedConst(name, d, scale, dims...)
		}
		return c.randConst(name, scale, dims...)
	}
	if s.qlora > 0 {
		in.w.QA, in.qa = store("q_a", poot.F16, 0.5, s.qlora, s.d)
		in.w.QANorm, in.qaNorm = store("q_a_norm", poot.BF16, 1, s.qlora)
		in.w.QB, in.qb = store("q_b", poot.BF16, 0.5, s.h*qk, s.qlora)
	} else {
		in.w.Q, in.q = store("q", poot.BF16, 0.5, s.h*qk, s.d)
	}
	in.w.KVA, in.kva = store("kv_a", poot.Q8_0, 0.5, s.kw(), s.d)
	in.w.KVANorm, in.kvaNorm = store("kv_a_norm", poot.BF16, 1, s.lora)
	switch {
	case s.fused:
		// The naive form reads a packed kv_b as stored; the absorbed one
		// slices it in the graph, which half precision allows.
		d := poot.Q8_0
		if s.absorb {
			d = poot.F16
		}
		var kvb []float64
		in.w.KVB, kvb = store("kv_b", d, 0.5, s.h*(s.nope+s.vd), s.lora)
		in.kb, in.vb = splitKV(s, kvb)
	default:
		var kbt []float64
		in.w.KBT, kbt = store("k_b_t", poot.F16, 0.5, s.h, s.lora, s.nope)
		in.kb = transposeHeads(kbt, s.h, s.lora, s.nope)
		in.w.VB, in.vb = store("v_b", poot.Q8_0, 0.5, s.h, s.vd, s.lora)
	}
	in.ho, in.o = store("o", poot.F16, 0.5, s.d, s.h*s.vd)
	in.invFreq = make([]float64, s.rope/2)
	for i := range in.invFreq {
		in.invFreq[i] = float64(float32(math.Pow(100, -2*float64(i)/float64(s.rope))))
	}
	in.cache0 = c.random(s.rows*s.capacity*s.kw(), 1)
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
// papers write it, sequence by sequence, and returns the output and the
// caches afterwards ([rows·capacity, kw], sequence r's position p at row
// r·capacity+p).
func refLatentAttention(in *mlaInputs, s mlaSpec) (out, cache []float64) {
	qk, kw, t := s.nope+s.rope, s.kw(), len(s.pos)/s.rows
	cache = append([]float64(nil), in.cache0...)
	qs := make([][]float64, len(s.pos))
	row := func(i int) int { return (i/t)*s.capacity + int(s.pos[i]) }
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
		copy(cache[row(i)*kw:], refRMS(kv[:s.lora], in.kvaNorm))
		copy(cache[row(i)*kw+s.lora:], refRotate(kv[s.lora:], in.invFreq, float64(p), s.layout))
	}
	scale := 1 / math.Sqrt(float64(qk))
	if s.mscale != 0 {
		scale *= s.mscale * s.mscale
	}
	out = make([]float64, len(s.pos)*s.d)
	for i, p := range s.pos {
		base := (i / t) * s.capacity
		ctx := make([]float64, s.h*s.vd)
		for h := range s.h {
			q := qs[i][h*qk : (h+1)*qk]
			n := int(p) + 1
			scores := make([]float64, n)
			mx := math.Inf(-1)
			for j := range n {
				c := cache[(base+j)*kw : (base+j+1)*kw]
				kNope := mixMatVec(in.kb, h*s.nope*s.lora, s.nope, s.lora, c[:s.lora])
				var sc float64
				for k := range s.nope {
					sc += q[k] * kNope[k]
				}
				for k := range s.rope {
					sc += q[s.nope+k] * c[s.lora+k]
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
				v := mixMatVec(in.vb, h*s.vd*s.lora, s.vd, s.lora, cache[(base+j)*kw:(base+j)*kw+s.lora])
				for k := range s.vd {
					ctx[h*s.vd+k] += scores[j] / sum * v[k]
				}
			}
		}
		copy(out[i*s.d:], mixMatVec(in.o, 0, s.d, s.h*s.vd, ctx))
	}
	return out, cache
}

// mlaGraph records one layer as a family step does: queries and the rows
// to cache, written into the state (at row r·capacity+pos, or through a
// page table of pages in reverse order inside a pool with a spare page) and
// read back per sequence, attention under the causal mask, the output
// projection. It returns the output, the cache as the sequences see it, and
// the primitives the three calls recorded.
func mlaGraph(c *mixCase, in *mlaInputs, s mlaSpec) (out, view mixH, count int) {
	b, kw, t := c.b, s.kw(), len(s.pos)/s.rows
	pos := c.positions(s.pos, s.capacity)
	rot := ops.RopeTables(b, pos, c.constant("inv_freq", in.invFreq, s.rope/2), 1, s.layout)
	cfg := ops.MLAConfig{Heads: s.h, NopeDim: s.nope, RopeDim: s.rope, ValueDim: s.vd, KVLoraRank: s.lora,
		Rows: s.rows, MScale: s.mscale, Absorb: s.absorb}
	var q, fresh mixH
	count = c.counted(func() {
		q = ops.LatentQuery(b, in.hx, rot, in.w, cfg)
		fresh = ops.LatentKV(b, in.hx, rot, in.w, cfg)
	})
	if !s.paged {
		state := c.state("cache", in.cache0, s.rows*s.capacity, kw)
		view = b.WriteRows(state, ops.CacheIndex(b, pos, s.rows, s.capacity), fresh)
		c.carry = append(c.carry, poot.Carry[mixBrand]{In: state, Out: view})
	} else {
		const page = 2
		pages := (s.capacity + page - 1) / page
		pool := s.rows*pages + 1
		slot := make([]int32, s.rows*s.capacity)
		for r := range s.rows {
			for p := range s.capacity {
				slot[r*s.capacity+p] = int32((pool-1-r*pages-p/page)*page + p%page)
			}
		}
		write := make([]int32, len(s.pos))
		for i, p := range s.pos {
			write[i] = slot[(i/t)*s.capacity+int(p)]
		}
		// The pool starts as the contiguous caches moved to their pages.
		init := c.random(pool*page*kw, 1)
		for i, phys := range slot {
			copy(init[int(phys)*kw:(int(phys)+1)*kw], in.cache0[i*kw:(i+1)*kw])
		}
		state := c.state("cache", init, pool*page, kw)
		next := b.WriteRows(state, c.indices("write_map", write), fresh)
		c.carry = append(c.carry, poot.Carry[mixBrand]{In: state, Out: next})
		view = b.Gather(next, c.indices("slot_map", slot))
	}
	count += c.counted(func() {
		out = ops.Linear(b, ops.LatentAttention(b, q, view, ops.CausalMask(b, pos, s.capacity, 0, 0), in.w, cfg), in.ho, mixH{})
	})
	return out, view, count
}

// indices declares an I32 constant.
func (c *mixCase) indices(name string, v []int32) mixH {
	tt, err := tensor.FromI32(poot.Shape{len(v)}, v)
	if err != nil {
		c.t.Fatalf("%s: %v", name, err)
	}
	c.consts[name] = tt
	return c.b.Constant(name, poot.T(poot.I32, len(v)))
}

func TestLatentAttentionMatchesReference(t *testing.T) {
	base := mlaSpec{d: 10, h: 3, nope: 4, rope: 4, vd: 3, lora: 5, capacity: 9, rows: 1, pos: []int32{3, 4, 5}}
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
		{"kv_b_fused", func(s *mlaSpec) { s.fused = true }},
		{"two_rows", func(s *mlaSpec) { s.rows, s.pos = 2, []int32{3, 4, 0, 1} }},
		{"paged", func(s *mlaSpec) { s.rows, s.pos, s.paged = 2, []int32{5, 6, 2, 3}, true }},
		{"stored_weights", func(s *mlaSpec) { s.stored, s.d, s.lora, s.qlora = true, 32, 32, 32 }},
		{"stored_weights_fused", func(s *mlaSpec) { s.stored, s.fused, s.d, s.lora, s.qlora = true, true, 32, 32, 32 }},
	}
	for _, v := range variants {
		for _, absorb := range []bool{false, true} {
			s := base
			v.edit(&s)
			s.absorb = absorb
			name := fmt.Sprintf("%s/absorb=%v", v.name, absorb)
			t.Run(name, func(t *testing.T) {
				c := newMixCase(t, 11)
				in := newMLAInputs(c, s)
				out, view, count := mlaGraph(c, in, s)
				c.outs = []mixH{out, view}
				got, _ := c.run()
				wantOut, wantCache := refLatentAttention(in, s)
				mixClose(t, "output", got[0], wantOut, 1e-5)
				mixClose(t, "cache", got[1], wantCache, 1e-6)
				t.Logf("latent attention %s (T=%d, capacity %d): %d primitives", name, len(s.pos)/s.rows, s.capacity, count)
			})
		}
	}
}

// TestLatentAttentionLaws: against the naive reference, for random shapes,
// positions, rows, layouts and weight forms: the absorbed form equals the
// naive one, R sequences in one step equal each alone (the reference runs
// them one by one), and a paged cache equals a contiguous one.
func TestLatentAttentionLaws(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := mlaSpec{
			d: rapid.IntRange(1, 8).Draw(rt, "width"), h: rapid.IntRange(1, 3).Draw(rt, "heads"),
			nope: rapid.IntRange(1, 5).Draw(rt, "nope"), rope: 2 * rapid.IntRange(1, 3).Draw(rt, "rope/2"),
			vd: rapid.IntRange(1, 4).Draw(rt, "value dim"), lora: rapid.IntRange(1, 6).Draw(rt, "latent"),
			capacity: rapid.IntRange(1, 8).Draw(rt, "capacity"), rows: rapid.IntRange(1, 3).Draw(rt, "rows"),
			layout: ops.RopeLayout(rapid.IntRange(0, 1).Draw(rt, "layout")), fused: rapid.Bool().Draw(rt, "fused"),
			absorb: rapid.Bool().Draw(rt, "absorb"), paged: rapid.Bool().Draw(rt, "paged"),
		}
		if rapid.Bool().Draw(rt, "low-rank q") {
			s.qlora = rapid.IntRange(1, 5).Draw(rt, "q rank")
		}
		tok := rapid.IntRange(1, s.capacity).Draw(rt, "tokens")
		for range s.rows {
			start := rapid.IntRange(0, s.capacity-tok).Draw(rt, "start")
			for i := range tok {
				s.pos = append(s.pos, int32(start+i))
			}
		}
		c := newMixCase(rt, rapid.Uint64().Draw(rt, "seed"))
		in := newMLAInputs(c, s)
		out, view, _ := mlaGraph(c, in, s)
		c.outs = []mixH{out, view}
		got, _ := c.run()
		wantOut, wantCache := refLatentAttention(in, s)
		mixClose(rt, "output", got[0], wantOut, 1e-5)
		mixClose(rt, "cache", got[1], wantCache, 1e-6)
	})
}

func TestLatentAttentionShapeErrors(t *testing.T) {
	s := mlaSpec{d: 4, h: 2, nope: 2, rope: 2, vd: 2, lora: 3, capacity: 4, rows: 1, pos: []int32{0}}
	cfg := ops.MLAConfig{Heads: 2, NopeDim: 2, RopeDim: 2, ValueDim: 2, KVLoraRank: 3}
	cases := map[string]func(c *mixCase, in *mlaInputs, q, mask mixH){
		"cache of the wrong width": func(c *mixCase, in *mlaInputs, q, mask mixH) {
			ops.LatentAttention(c.b, q, c.constant("cache", make([]float64, 16), 4, 4), mask, in.w, cfg)
		},
		"both kv_b and k_b": func(c *mixCase, in *mlaInputs, q, mask mixH) {
			w := in.w
			w.KVB = c.constant("kv_b", make([]float64, 2*4*3), 8, 3)
			ops.LatentAttention(c.b, q, c.constant("cache", make([]float64, 20), 4, 5), mask, w, cfg)
		},
		"rows that do not divide": func(c *mixCase, in *mlaInputs, q, mask mixH) {
			two := cfg
			two.Rows = 2
			ops.LatentAttention(c.b, q, c.constant("cache", make([]float64, 20), 4, 5), mask, in.w, two)
		},
	}
	for name, fn := range cases {
		c := newMixCase(t, 1)
		in := newMLAInputs(c, s)
		pos := c.positions(s.pos, s.capacity)
		rot := ops.RopeTables(c.b, pos, c.constant("inv", []float64{1}, 1), 1, ops.RopeNeoX)
		q := ops.LatentQuery(c.b, in.hx, rot, in.w, cfg)
		if err := c.b.Err(); err != nil {
			t.Fatalf("%s: queries: %v", name, err)
		}
		fn(c, in, q, ops.CausalMask(c.b, pos, 4, 0, 0))
		if c.b.Err() == nil {
			t.Errorf("%s: no error recorded", name)
		}
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
	// DeepSeek-V3's latent attention, one decode token over 4096 positions,
	// with GGUF's split k_b/v_b and with Hugging Face's fused kv_b.
	mw := ops.MLAWeights[mixBrand]{QA: w(1536, 7168), QANorm: w(1536), QB: w(128*192, 1536), KVA: w(576, 7168), KVANorm: w(512),
		KBT: w(128, 512, 128), VB: w(128, 128, 512)}
	fw := mw
	fw.KBT, fw.VB, fw.KVB = mixH{}, mixH{}, w(128*256, 512)
	rot := ops.RopeTables(b, pos, w(32), 1, ops.RopeInterleaved)
	mx, cache, mask := w(1, 7168), w(4096, 576), ops.CausalMask(b, pos, 4096, 0, 0)
	for _, absorb := range []bool{false, true} {
		for name, weights := range map[string]ops.MLAWeights[mixBrand]{"split": mw, "fused": fw} {
			cfg := ops.MLAConfig{Heads: 128, NopeDim: 128, RopeDim: 64, ValueDim: 128, KVLoraRank: 512, Absorb: absorb, MScale: ops.YaRNMScale(40, 1)}
			logCount(fmt.Sprintf("LatentAttention deepseek-v3 %s T=1 absorb=%v", name, absorb), func() {
				q := ops.LatentQuery(b, mx, rot, weights, cfg)
				ops.LatentKV(b, mx, rot, weights, cfg)
				ops.LatentAttention(b, q, cache, mask, weights, cfg)
			})
		}
	}
}
