package ops_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
	"pgregory.net/rapid"
)

// coreAttnCase is one attention step: R sequences of T new tokens each,
// caches of capacity S per sequence.
type coreAttnCase struct {
	name                string
	rows, t, s          int
	heads, kvHeads      int
	d, dv               int
	window, chunk       int
	scale, softCap      float64
	sinks               bool
	pos                 []int // [R*T]
	q, k, v             []float64
	kCache, vCache      []float64
	sinkV               []float64
	wantK, wantV, wantO []float64
}

func coreVisible(p, j, window, chunk int) bool {
	if j > p {
		return false
	}
	if window > 0 && p-j >= window {
		return false
	}
	if chunk > 0 && p/chunk != j/chunk {
		return false
	}
	return true
}

// reference fills wantK, wantV (the caches after the writes) and wantO by
// plain loops.
func (c *coreAttnCase) reference() {
	kw, vw := c.kvHeads*c.d, c.kvHeads*c.dv
	c.wantK = append([]float64(nil), c.kCache...)
	c.wantV = append([]float64(nil), c.vCache...)
	for i, p := range c.pos {
		row := (i/c.t)*c.s + p
		copy(c.wantK[row*kw:(row+1)*kw], c.k[i*kw:(i+1)*kw])
		copy(c.wantV[row*vw:(row+1)*vw], c.v[i*vw:(i+1)*vw])
	}
	scale := c.scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(c.d))
	}
	rep := c.heads / c.kvHeads
	// seen[seq·S+j]: some query of sequence seq sees position j. A V row
	// that none sees contributes nothing; one that some query sees enters
	// every query's sum of that sequence, at weight 0 where hidden.
	seen := make([]bool, c.rows*c.s)
	for i, p := range c.pos {
		for j := range c.s {
			if coreVisible(p, j, c.window, c.chunk) {
				seen[(i/c.t)*c.s+j] = true
			}
		}
	}
	c.wantO = make([]float64, len(c.pos)*c.heads*c.dv)
	for i, p := range c.pos {
		seq := i / c.t
		for h := range c.heads {
			kh := h / rep
			logits := make([]float64, c.s)
			m := math.Inf(-1)
			for j := range c.s {
				logits[j] = math.Inf(-1)
				if !coreVisible(p, j, c.window, c.chunk) {
					continue
				}
				dot := 0.0
				krow := (seq*c.s + j) * kw
				for e := range c.d {
					dot += c.q[i*c.heads*c.d+h*c.d+e] * c.wantK[krow+kh*c.d+e]
				}
				sc := dot * scale
				if c.softCap != 0 {
					sc = c.softCap * math.Tanh(sc/c.softCap)
				}
				logits[j] = sc
				m = math.Max(m, sc)
			}
			if c.sinks {
				m = math.Max(m, c.sinkV[h])
			}
			den := 0.0
			for _, l := range logits {
				den += math.Exp(l - m)
			}
			if c.sinks {
				den += math.Exp(c.sinkV[h] - m)
			}
			for e := range c.dv {
				acc := 0.0
				for j, l := range logits {
					if seen[seq*c.s+j] {
						acc += math.Exp(l-m) / den * c.wantV[(seq*c.s+j)*vw+kh*c.dv+e]
					}
				}
				c.wantO[i*c.heads*c.dv+h*c.dv+e] = acc
			}
		}
	}
}

func (c *coreAttnCase) fill(r *rand.Rand) {
	if c.dv == 0 {
		c.dv = c.d
	}
	n := c.rows * c.t
	c.q = coreRand(r, n*c.heads*c.d, 1)
	c.k = coreRand(r, n*c.kvHeads*c.d, 1)
	c.v = coreRand(r, n*c.kvHeads*c.dv, 1)
	c.kCache = coreRand(r, c.rows*c.s*c.kvHeads*c.d, 1)
	c.vCache = coreRand(r, c.rows*c.s*c.kvHeads*c.dv, 1)
	c.sinkV = coreRand(r, c.heads, 2)
}

// graph records CachedAttention for the case and returns the output.
func (c *coreAttnCase) graph(tb coreTB, g *coreGraph) coreT {
	n := c.rows * c.t
	q := g.constant(tb, "q", c.q, n, c.heads*c.d)
	k := g.constant(tb, "k", c.k, n, c.kvHeads*c.d)
	v := g.constant(tb, "v", c.v, n, c.kvHeads*c.dv)
	kc := g.cache(tb, "cache.k", c.kCache, c.rows*c.s, c.kvHeads*c.d)
	vc := g.cache(tb, "cache.v", c.vCache, c.rows*c.s, c.kvHeads*c.dv)
	pos := g.positions(tb, c.pos, c.s-1)
	cfg := ops.AttentionConfig[coreBrand]{
		Heads: c.heads, KVHeads: c.kvHeads, HeadDim: c.d, ValueDim: c.dv, Rows: c.rows,
		Scale: c.scale, SoftCap: c.softCap,
	}
	if c.sinks {
		cfg.Sinks = g.constant(tb, "sinks", c.sinkV, c.heads)
	}
	mask := ops.CausalMask(g.b, pos, c.s, c.window, c.chunk)
	out, kn, vn := ops.CachedAttention(g.b, q, k, v, kc, vc, pos, mask, cfg)
	g.carry = append(g.carry, poot.Carry[coreBrand]{In: kc, Out: kn}, poot.Carry[coreBrand]{In: vc, Out: vn})
	return out
}

func coreSpan(from, n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = from + i
	}
	return p
}

func TestAttentionAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	cases := []coreAttnCase{
		{name: "MHA prefill", rows: 1, t: 5, s: 8, heads: 2, kvHeads: 2, d: 4, pos: coreSpan(0, 5)},
		{name: "MHA decode", rows: 1, t: 1, s: 8, heads: 2, kvHeads: 2, d: 4, pos: []int{6}},
		{name: "GQA continued prefill", rows: 1, t: 3, s: 10, heads: 4, kvHeads: 2, d: 4, pos: coreSpan(4, 3)},
		{name: "MQA", rows: 1, t: 2, s: 6, heads: 3, kvHeads: 1, d: 5, pos: coreSpan(2, 2)},
		{name: "sliding window", rows: 1, t: 6, s: 12, heads: 2, kvHeads: 1, d: 4, window: 3, pos: coreSpan(3, 6)},
		{name: "chunked", rows: 1, t: 6, s: 12, heads: 2, kvHeads: 2, d: 4, chunk: 4, pos: coreSpan(1, 6)},
		{name: "soft cap", rows: 1, t: 4, s: 6, heads: 2, kvHeads: 1, d: 4, softCap: 0.5, scale: 3, pos: coreSpan(0, 4)},
		{name: "sinks", rows: 1, t: 3, s: 5, heads: 4, kvHeads: 2, d: 4, sinks: true, pos: coreSpan(1, 3)},
		{name: "value dim", rows: 1, t: 2, s: 4, heads: 2, kvHeads: 1, d: 6, dv: 3, pos: coreSpan(1, 2)},
		{name: "batched decode", rows: 3, t: 1, s: 6, heads: 4, kvHeads: 2, d: 4, pos: []int{0, 5, 2}},
		{name: "batched prefill, window, sinks", rows: 2, t: 3, s: 7, heads: 2, kvHeads: 1, d: 4, window: 2, sinks: true, pos: []int{0, 1, 2, 3, 4, 5}},
	}
	for _, c := range cases {
		c.fill(r)
		c.reference()
		g := newCore()
		out := g.run(t, "CachedAttention("+c.name+") with mask", c.graph(t, g))
		coreCheck(t, c.name+": output", out[0], c.wantO)
		coreCheck(t, c.name+": k cache", g.stateOf(t, "cache.k"), c.wantK)
		coreCheck(t, c.name+": v cache", g.stateOf(t, "cache.v"), c.wantV)
	}
}

// TestAttentionMaskedRows plants NaN and infinities in cache rows and new
// rows and checks the output against the reference's definition of what a
// masked position contributes: a K row of a masked position never matters,
// a V row hidden from every query of its sequence contributes nothing, a V
// row seen by some query of the chunk reaches all of them (0·NaN).
func TestAttentionMaskedRows(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	base := coreAttnCase{rows: 2, t: 3, s: 8, heads: 2, kvHeads: 1, d: 2, pos: []int{2, 3, 4, 0, 1, 2}}
	cases := []struct {
		name   string
		window int
		plant  func(c *coreAttnCase)
		finite bool // every output finite
	}{
		{"unseen cache rows", 0, func(c *coreAttnCase) {
			kw := c.kvHeads * c.d
			for _, row := range []int{6, 7, 8 + 5} {
				c.kCache[row*kw] = nan
				c.vCache[row*kw] = nan
				c.vCache[row*kw+1] = -inf
			}
		}, true},
		{"a new row one query sees", 0, func(c *coreAttnCase) {
			c.v[2*c.kvHeads*c.dv] = nan // position 4 of sequence 0, seen only by its last query
		}, false},
		{"a row out of the window of later queries", 2, func(c *coreAttnCase) {
			kw := c.kvHeads * c.d
			c.vCache[8*kw+6*kw] = inf // never seen: sequence 1 stops at position 2
			c.kCache[0] = nan         // position 0 of sequence 0: out of every query's window of 2
			c.vCache[0] = -inf
		}, true},
		{"a row the first query sees and later ones do not", 2, func(c *coreAttnCase) {
			c.vCache[1*c.kvHeads*c.dv] = inf // position 1: seen from position 2 only
		}, false},
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, tc := range cases {
		c := base
		c.name, c.window = tc.name, tc.window
		c.fill(r)
		tc.plant(&c)
		c.reference()
		g := newCore()
		out := g.run(t, "", c.graph(t, g))[0]
		coreCheck(t, c.name, out, c.wantO)
		finite := true
		for _, x := range out {
			finite = finite && !math.IsNaN(x) && !math.IsInf(x, 0)
		}
		if finite != tc.finite {
			t.Errorf("%s: every output finite = %v, want %v", c.name, finite, tc.finite)
		}
	}
}

// TestAttentionScope checks that the core sequence sits in one scope named
// "attention", in the documented order.
func TestAttentionScope(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	c := coreAttnCase{rows: 1, t: 2, s: 4, heads: 4, kvHeads: 2, d: 4, softCap: 30, sinks: true, pos: []int{1, 2}}
	c.fill(r)
	g := newCore()
	out := c.graph(t, g)
	g.carry = nil
	gr, err := g.b.Finish(poot.Out(out))
	if err == nil {
		t.Fatal("finishing without carrying the caches succeeded")
	}
	g = newCore()
	out = c.graph(t, g)
	o := poot.Out(out)
	for _, cr := range g.carry {
		o = o.WithState(cr.In, cr.Out)
	}
	gr, err = g.b.Finish(o)
	if err != nil {
		t.Fatal(err)
	}
	var ops_ []poot.Op
	for _, i := range gr.ScopeEqns("cached_attention/attention") {
		e := gr.Eqn(i)
		if gr.Scope(e.Scope) == "cached_attention/attention" {
			ops_ = append(ops_, e.Op)
		}
	}
	want := []poot.Op{
		poot.Reshape, poot.Cast, poot.ReduceMax, poot.Cast, // positions some query sees
		poot.Reshape, poot.Broadcast, poot.Reshape, poot.Literal, poot.Select, // zero V elsewhere
		poot.Reshape, poot.Transpose, // q
		poot.Reshape, poot.Transpose, // k (then repeat_kv in its own scope)
		poot.Reshape, poot.Transpose, // v
		poot.MatMul, poot.Literal, poot.Mul,
		poot.Literal, poot.Mul, poot.Tanh, poot.Literal, poot.Mul, // soft cap
		poot.Reshape, poot.Broadcast, poot.Literal, poot.Select, // mask
		poot.Reshape, poot.Broadcast, poot.Concat, // sinks
		poot.ReduceMax, poot.Broadcast, poot.Sub, poot.Exp, poot.ReduceSum, poot.Broadcast, poot.Div,
		poot.Slice,
		poot.MatMul, poot.Transpose, poot.Reshape,
	}
	if len(ops_) != len(want) {
		t.Fatalf("attention scope records %v, want %v", ops_, want)
	}
	for i := range want {
		if ops_[i] != want[i] {
			t.Fatalf("attention scope records %v, want %v", ops_, want)
		}
	}
	t.Logf("Attention core (GQA, soft cap, sinks): %d equations in scope, %d with repeat_kv", len(ops_), len(gr.ScopeEqns("cached_attention/attention")))
}

// TestAttentionLaws: a window at least as long as the sequence is plain
// causal attention, and grouped-query attention over Hkv heads equals
// multi-head attention (n_rep = 1) over the heads repeated on the host.
func TestAttentionLaws(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1))
		kv := rapid.IntRange(1, 3).Draw(rt, "kvHeads")
		rep := rapid.IntRange(1, 3).Draw(rt, "rep")
		s := rapid.IntRange(1, 8).Draw(rt, "capacity")
		tn := rapid.IntRange(1, s).Draw(rt, "tokens")
		start := rapid.IntRange(0, s-tn).Draw(rt, "start")
		c := coreAttnCase{rows: 1, t: tn, s: s, heads: kv * rep, kvHeads: kv, d: rapid.IntRange(1, 5).Draw(rt, "d"), pos: coreSpan(start, tn)}
		c.fill(r)

		full := newCore()
		want := full.run(rt, "", c.graph(rt, full))[0]

		w := c
		w.window = rapid.IntRange(s, 3*s).Draw(rt, "window")
		gw := newCore()
		got := gw.run(rt, "", w.graph(rt, gw))[0]
		if e := coreRelErr(got, want); e > 1e-6 {
			rt.Fatalf("window %d ≥ capacity %d changed the output by %g", w.window, s, e)
		}

		// Repeat each KV head rep times on the host: MHA over H heads.
		m := c
		m.kvHeads = c.heads
		expand := func(x []float64, rows, d int) []float64 {
			var out []float64
			for i := range rows {
				for h := range c.heads {
					kh := h / rep
					out = append(out, x[(i*kv+kh)*d:(i*kv+kh+1)*d]...)
				}
			}
			return out
		}
		m.k, m.v = expand(c.k, tn, c.d), expand(c.v, tn, c.dv)
		m.kCache, m.vCache = expand(c.kCache, s, c.d), expand(c.vCache, s, c.dv)
		gm := newCore()
		got = gm.run(rt, "", m.graph(rt, gm))[0]
		if e := coreRelErr(got, want); e > 1e-6 {
			rt.Fatalf("GQA with %d kv heads ×%d differs from MHA by %g", kv, rep, e)
		}
	})
}

func TestCausalMask(t *testing.T) {
	pos := []int{0, 3, 4, 9}
	const keys = 10
	for _, c := range []struct{ window, chunk int }{{0, 0}, {3, 0}, {0, 4}, {2, 4}} {
		g := newCore()
		out := g.run(t, "CausalMask", ops.CausalMask(g.b, g.positions(t, pos, keys-1), keys, c.window, c.chunk))
		for i, p := range pos {
			for j := range keys {
				want := 0.0
				if coreVisible(p, j, c.window, c.chunk) {
					want = 1
				}
				if got := out[0][i*keys+j]; got != want {
					t.Errorf("window %d chunk %d: query at %d, key %d: %v, want %v", c.window, c.chunk, p, j, got, want)
				}
			}
		}
	}
}

func TestRepeatKVAndGate(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	const hkv, rep, s, d = 2, 3, 2, 2
	xv := coreRand(r, hkv*s*d, 1)
	g := newCore()
	out := g.run(t, "RepeatKV", ops.RepeatKV(g.b, g.constant(t, "x", xv, hkv, s, d), rep))
	var want []float64
	for h := range hkv * rep {
		want = append(want, xv[(h/rep)*s*d:(h/rep+1)*s*d]...)
	}
	coreCheck(t, "RepeatKV", out[0], want)

	cv, gv := coreRand(r, 12, 2), coreRand(r, 12, 4)
	g = newCore()
	out = g.run(t, "OutputGate", ops.OutputGate(g.b, g.constant(t, "ctx", cv, 3, 4), g.constant(t, "gate", gv, 3, 4)))
	want = make([]float64, len(cv))
	for i := range cv {
		want[i] = cv[i] * coreSigmoid(gv[i])
	}
	coreCheck(t, "OutputGate", out[0], want)

	g = newCore()
	out = g.run(t, "CacheIndex", ops.CacheIndex(g.b, g.positions(t, []int{0, 1, 4, 5, 2, 3}, 7), 3, 8))
	coreCheck(t, "CacheIndex", out[0], []float64{0, 1, 12, 13, 18, 19})
}

// TestAttentionStepsCarryTheCache: a prefill split into two steps that carry
// the caches gives the same outputs as one step, and a decode step reads
// what earlier steps wrote.
func TestAttentionStepsCarryTheCache(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 2))
		s := rapid.IntRange(2, 8).Draw(rt, "capacity")
		n := rapid.IntRange(2, s).Draw(rt, "tokens")
		split := rapid.IntRange(1, n-1).Draw(rt, "split")
		window := rapid.IntRange(0, 3).Draw(rt, "window")
		whole := coreAttnCase{rows: 1, t: n, s: s, heads: 2, kvHeads: 1, d: 3, window: window, pos: coreSpan(0, n)}
		whole.fill(r)
		g := newCore()
		want := g.run(rt, "", whole.graph(rt, g))[0]

		// Step one: tokens [0, split) over the same initial caches.
		first := whole
		first.t, first.pos = split, coreSpan(0, split)
		first.q, first.k, first.v = whole.q[:split*2*3], whole.k[:split*3], whole.v[:split*3]
		g1 := newCore()
		out1 := g1.run(rt, "", first.graph(rt, g1))[0]
		// Step two: the rest, over the carried caches.
		second := whole
		second.t, second.pos = n-split, coreSpan(split, n-split)
		second.q, second.k, second.v = whole.q[split*2*3:], whole.k[split*3:], whole.v[split*3:]
		second.kCache, second.vCache = g1.stateOf(rt, "cache.k"), g1.stateOf(rt, "cache.v")
		g2 := newCore()
		out2 := g2.run(rt, "", second.graph(rt, g2))[0]
		if e := coreRelErr(append(out1, out2...), want); e > 1e-6 {
			rt.Fatalf("two steps differ from one by %g", e)
		}
	})
}
