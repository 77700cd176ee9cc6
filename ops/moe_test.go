package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/tensor"
	"pgregory.net/rapid"
)

// --- a small harness shared by the MoE, recurrent and latent attention
// tests: random constants, one oracle step, float64 comparisons ---

type mixBrand struct{}

type mixH = poot.Traced[mixBrand]

// mixFailer is what both *testing.T and *rapid.T provide.
type mixFailer interface {
	Helper()
	Fatalf(format string, args ...any)
}

// mixCase builds one graph over random constants and runs it on the oracle.
type mixCase struct {
	t      mixFailer
	b      *poot.Builder[mixBrand]
	rng    *rand.Rand
	consts interp.ConstMap
	slots  interp.Slots
	states map[string]tensor.Tensor
	outs   []mixH
	carry  []poot.Carry[mixBrand]
}

func newMixCase(t mixFailer, seed uint64) *mixCase {
	return &mixCase{
		t: t, b: poot.NewBuilder[mixBrand](poot.Limits{}), rng: rand.New(rand.NewPCG(seed, 7)),
		consts: interp.ConstMap{}, slots: interp.Slots{}, states: map[string]tensor.Tensor{},
	}
}

// random returns n values uniform in [-scale, scale), rounded to float32.
func (c *mixCase) random(n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(float32((2*c.rng.Float64() - 1) * scale))
	}
	return v
}

func mixTensor(t mixFailer, v []float64, dims ...int) tensor.Tensor {
	t.Helper()
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	tt, err := tensor.FromF32(poot.Shape(dims), f)
	if err != nil {
		t.Fatalf("tensor %v: %v", dims, err)
	}
	return tt
}

// constant declares an F32 constant holding v.
func (c *mixCase) constant(name string, v []float64, dims ...int) mixH {
	c.consts[name] = mixTensor(c.t, v, dims...)
	return c.b.Constant(name, poot.T(poot.F32, dims...))
}

// randConst declares a random F32 constant and returns its values.
func (c *mixCase) randConst(name string, scale float64, dims ...int) (mixH, []float64) {
	n := 1
	for _, d := range dims {
		n *= d
	}
	v := c.random(n, scale)
	return c.constant(name, v, dims...), v
}

// state declares a state input holding v and returns it.
func (c *mixCase) state(name string, v []float64, dims ...int) mixH {
	c.states[name] = mixTensor(c.t, v, dims...)
	return c.b.StateInput(name, poot.T(poot.F32, dims...))
}

// positions declares the SlotPos slot.
func (c *mixCase) positions(pos []int32, capacity int) mixH {
	tt, err := tensor.FromI32(poot.Shape{len(pos)}, pos)
	if err != nil {
		c.t.Fatalf("positions: %v", err)
	}
	c.slots[poot.SlotPos.String()] = tt
	return c.b.Slot(poot.SlotPos, poot.Shape{len(pos)}, 0, int64(capacity-1))
}

// counted records fn's equations and returns how many it appended.
func (c *mixCase) counted(fn func()) int {
	n := c.b.NumEqns()
	fn()
	return c.b.NumEqns() - n
}

// run finishes the graph with the outputs and carries recorded so far and
// evaluates it: the outputs' values, and the states' values afterwards by
// name.
func (c *mixCase) run() ([][]float64, map[string][]float64) {
	c.t.Helper()
	out := poot.Out(c.outs...)
	for _, cr := range c.carry {
		out = out.WithState(cr.In, cr.Out)
	}
	g, err := c.b.Finish(out)
	if err != nil {
		c.t.Fatalf("finish: %v", err)
	}
	st, err := interp.NewState(g)
	if err != nil {
		c.t.Fatalf("state: %v", err)
	}
	for name, v := range c.states {
		copy(st.Tensors[name].Data, v.Data)
	}
	res, err := interp.Eval(g, c.consts, c.slots, st)
	if err != nil {
		c.t.Fatalf("eval: %v", err)
	}
	vals := make([][]float64, len(res))
	for i, r := range res {
		vals[i] = mixWiden(r.F32())
	}
	states := map[string][]float64{}
	for name, tt := range st.Tensors {
		states[name] = mixWiden(tt.F32())
	}
	return vals, states
}

func mixWiden(f []float32) []float64 {
	v := make([]float64, len(f))
	for i, x := range f {
		v[i] = float64(x)
	}
	return v
}

// mixRelErr is max|got-want| / max(max|want|, 0.01): the error relative to
// the result's scale (elementwise ratios are meaningless next to zeros).
// The floor keeps a result that cancels to nearly nothing (a width-1
// projection of small terms) from turning float32 rounding of its O(1)
// terms into a large ratio; the inputs of every test are O(1).
func mixRelErr(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var diff, scale float64
	for i := range want {
		diff = math.Max(diff, math.Abs(got[i]-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
	}
	if math.IsNaN(diff) {
		return math.Inf(1)
	}
	return diff / math.Max(scale, 0.01)
}

func mixClose(t mixFailer, what string, got, want []float64, tol float64) {
	t.Helper()
	if e := mixRelErr(got, want); !(e <= tol) {
		t.Fatalf("%s: relative error %.3g ≥ %.1g (got %.6g, want %.6g)", what, e, tol, mixHead(got), mixHead(want))
	}
}

func mixHead(v []float64) []float64 { return v[:min(len(v), 6)] }

// --- the reference mixture of experts, in float64 ---

type moeRef struct {
	e, d, f, s                  int
	router, routerBias, selBias []float64 // [E, D], [E], [E]
	gate, up, down              []float64 // [E, F, D], [E, F, D], [E, D, F]
	gateBias, upBias, downBias  []float64 // [E, F], [E, F], [E, D]
	sGate, sUp, sDown, sRouter  []float64 // [S, D], [S, D], [D, S], [1, D]
}

// mixMatVec is m [rows, cols] (at offset off) times v [cols].
func mixMatVec(m []float64, off, rows, cols int, v []float64) []float64 {
	out := make([]float64, rows)
	for r := range rows {
		var s float64
		for c := range cols {
			s += m[off+r*cols+c] * v[c]
		}
		out[r] = s
	}
	return out
}

func mixSigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// mixTop returns the indices of the k largest values, descending, lowest
// index first among equals.
func mixTop(v []float64, k int) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] > v[idx[b]] })
	return idx[:k]
}

func (m *moeRef) route(x []float64, cfg ops.MoEConfig) ([]int, []float64) {
	logits := mixMatVec(m.router, 0, m.e, m.d, x)
	for i := range logits {
		if m.routerBias != nil {
			logits[i] += m.routerBias[i]
		}
	}
	scores := append([]float64(nil), logits...)
	switch cfg.Gating {
	case ops.SoftmaxTopK:
		mx, sum := math.Inf(-1), 0.0
		for _, l := range logits {
			mx = math.Max(mx, l)
		}
		for i, l := range logits {
			scores[i] = math.Exp(l - mx)
			sum += scores[i]
		}
		for i := range scores {
			scores[i] /= sum
		}
	case ops.SigmoidTopK:
		for i, l := range logits {
			scores[i] = mixSigmoid(l)
		}
	}
	choice := append([]float64(nil), scores...)
	if cfg.Gating == ops.SigmoidTopK && m.selBias != nil {
		for i := range choice {
			choice[i] += m.selBias[i]
		}
	}
	if cfg.Groups > 1 {
		n := m.e / cfg.Groups
		gs := make([]float64, cfg.Groups)
		for g := range gs {
			grp := choice[g*n : (g+1)*n]
			if cfg.GroupScore == ops.GroupMax || n < 2 {
				gs[g] = grp[mixTop(grp, 1)[0]]
			} else {
				top := mixTop(grp, 2)
				gs[g] = grp[top[0]] + grp[top[1]]
			}
		}
		keep := map[int]bool{}
		for _, g := range mixTop(gs, cfg.TopGroups) {
			keep[g] = true
		}
		for i := range choice {
			if !keep[i/n] {
				choice[i] = math.Inf(-1)
			}
		}
	}
	idx := mixTop(choice, cfg.TopK)
	w := make([]float64, len(idx))
	for j, i := range idx {
		w[j] = scores[i]
	}
	switch {
	case cfg.Gating == ops.TopKSoftmax:
		mx, sum := math.Inf(-1), 0.0
		for _, v := range w {
			mx = math.Max(mx, v)
		}
		for j := range w {
			w[j] = math.Exp(w[j] - mx)
			sum += w[j]
		}
		for j := range w {
			w[j] /= sum
		}
	case cfg.Renormalize:
		var sum float64
		for _, v := range w {
			sum += v
		}
		for j := range w {
			w[j] /= sum
		}
	}
	if cfg.Scale != 0 {
		for j := range w {
			w[j] *= cfg.Scale
		}
	}
	return idx, w
}

func (m *moeRef) expert(e int, x []float64, cfg ops.MoEConfig) []float64 {
	g := mixMatVec(m.gate, e*m.f*m.d, m.f, m.d, x)
	u := mixMatVec(m.up, e*m.f*m.d, m.f, m.d, x)
	h := make([]float64, m.f)
	for i := range h {
		if m.gateBias != nil {
			g[i] += m.gateBias[e*m.f+i]
			u[i] += m.upBias[e*m.f+i]
		}
		if cfg.Activation == ops.ExpertClampedSwiGLU {
			gi := math.Min(g[i], cfg.Limit)
			ui := math.Max(math.Min(u[i], cfg.Limit), -cfg.Limit)
			h[i] = (ui + 1) * gi * mixSigmoid(cfg.Alpha*gi)
		} else {
			h[i] = g[i] * mixSigmoid(g[i]) * u[i]
		}
	}
	y := mixMatVec(m.down, e*m.d*m.f, m.d, m.f, h)
	if m.downBias != nil {
		for i := range y {
			y[i] += m.downBias[e*m.d+i]
		}
	}
	return y
}

func (m *moeRef) forward(x []float64, t int, cfg ops.MoEConfig) []float64 {
	out := make([]float64, t*m.d)
	for tok := range t {
		xt := x[tok*m.d : (tok+1)*m.d]
		o := out[tok*m.d : (tok+1)*m.d]
		idx, w := m.route(xt, cfg)
		for j, e := range idx {
			if cfg.ScaleInputs {
				xs := make([]float64, m.d)
				for i := range xs {
					xs[i] = xt[i] * w[j]
				}
				for i, v := range m.expert(e, xs, cfg) {
					o[i] += v
				}
			} else {
				for i, v := range m.expert(e, xt, cfg) {
					o[i] += w[j] * v
				}
			}
		}
		if m.sGate != nil {
			g := mixMatVec(m.sGate, 0, m.s, m.d, xt)
			u := mixMatVec(m.sUp, 0, m.s, m.d, xt)
			for i := range g {
				g[i] = g[i] * mixSigmoid(g[i]) * u[i]
			}
			y := mixMatVec(m.sDown, 0, m.d, m.s, g)
			gate := 1.0
			if m.sRouter != nil {
				gate = mixSigmoid(mixMatVec(m.sRouter, 0, 1, m.d, xt)[0])
			}
			for i := range o {
				o[i] += gate * y[i]
			}
		}
	}
	return out
}

// moeSetup draws the weights of a mixture and declares them.
type moeOptions struct {
	routerBias, selBias, expertBias, shared, sharedGate bool
}

func newMoE(c *mixCase, e, d, f, s int, o moeOptions) (*moeRef, ops.MoEWeights[mixBrand]) {
	m := &moeRef{e: e, d: d, f: f, s: s}
	var w ops.MoEWeights[mixBrand]
	w.Router, m.router = c.randConst("router", 1, e, d)
	w.Gate, m.gate = c.randConst("gate", 0.5, e, f, d)
	w.Up, m.up = c.randConst("up", 0.5, e, f, d)
	w.Down, m.down = c.randConst("down", 0.5, e, d, f)
	if o.routerBias {
		w.RouterBias, m.routerBias = c.randConst("router_bias", 0.5, e)
	}
	if o.selBias {
		w.SelectionBias, m.selBias = c.randConst("selection_bias", 0.3, e)
	}
	if o.expertBias {
		w.GateBias, m.gateBias = c.randConst("gate_bias", 0.2, e, f)
		w.UpBias, m.upBias = c.randConst("up_bias", 0.2, e, f)
		w.DownBias, m.downBias = c.randConst("down_bias", 0.2, e, d)
	}
	if o.shared {
		w.SharedGate, m.sGate = c.randConst("shared_gate", 0.5, s, d)
		w.SharedUp, m.sUp = c.randConst("shared_up", 0.5, s, d)
		w.SharedDown, m.sDown = c.randConst("shared_down", 0.5, d, s)
		if o.sharedGate {
			w.SharedRouter, m.sRouter = c.randConst("shared_router", 0.5, 1, d)
		}
	}
	return m, w
}

type moeForm struct {
	name string
	fn   func(*poot.Builder[mixBrand], mixH, ops.MoEWeights[mixBrand], ops.MoEConfig) mixH
}

var moeForms = []moeForm{
	{"sparse", ops.MoESparse[mixBrand]},
	{"dense", ops.MoEDense[mixBrand]},
	{"grouped", ops.MoEGrouped[mixBrand]},
}

func TestMoEMatchesReference(t *testing.T) {
	const e, d, f, s, tok = 8, 12, 6, 5, 5
	cases := []struct {
		name string
		cfg  ops.MoEConfig
		opt  moeOptions
	}{
		{"softmax_topk", ops.MoEConfig{TopK: 2}, moeOptions{}},
		{"softmax_topk_renorm_shared", ops.MoEConfig{TopK: 3, Renormalize: true}, moeOptions{shared: true}},
		{"qwen2moe_shared_gate", ops.MoEConfig{TopK: 2}, moeOptions{shared: true, sharedGate: true}},
		{"mixtral_topk_softmax", ops.MoEConfig{TopK: 2, Gating: ops.TopKSoftmax}, moeOptions{}},
		{"gptoss_biases_clamped", ops.MoEConfig{TopK: 2, Gating: ops.TopKSoftmax, Activation: ops.ExpertClampedSwiGLU, Alpha: 1.702, Limit: 0.4},
			moeOptions{routerBias: true, expertBias: true}},
		{"deepseek_v3", ops.MoEConfig{TopK: 3, Gating: ops.SigmoidTopK, Groups: 4, TopGroups: 2, Renormalize: true, Scale: 2.5},
			moeOptions{selBias: true, shared: true}},
		{"deepseek_v2_group_max", ops.MoEConfig{TopK: 3, Groups: 4, TopGroups: 2, GroupScore: ops.GroupMax, Scale: 16},
			moeOptions{shared: true}},
		{"sigmoid_no_renorm", ops.MoEConfig{TopK: 2, Gating: ops.SigmoidTopK}, moeOptions{}},
		{"llama4_scaled_inputs", ops.MoEConfig{TopK: 1, Gating: ops.SigmoidTopK, ScaleInputs: true}, moeOptions{shared: true}},
		{"scaled_inputs_biases", ops.MoEConfig{TopK: 2, Gating: ops.SigmoidTopK, ScaleInputs: true}, moeOptions{expertBias: true}},
	}
	for _, tc := range cases {
		for _, form := range moeForms {
			t.Run(tc.name+"/"+form.name, func(t *testing.T) {
				c := newMixCase(t, 1)
				m, w := newMoE(c, e, d, f, s, tc.opt)
				x, xv := c.randConst("x", 1, tok, d)
				var y mixH
				n := c.counted(func() { y = form.fn(c.b, x, w, tc.cfg) })
				c.outs = append(c.outs, y)
				got, _ := c.run()
				mixClose(t, "moe", got[0], m.forward(xv, tok, tc.cfg), 1e-5)
				t.Logf("%s %s: %d primitives for %d tokens, %d of %d experts", form.name, tc.name, n, tok, tc.cfg.TopK, e)
			})
		}
	}
}

// TestMoELaws: with k equal to the number of experts, the sparse and
// grouped mixtures are the dense (soft) mixture Σ_e p_e·expert_e(x); and for
// any k the three forms agree.
func TestMoELaws(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := rapid.IntRange(1, 6).Draw(rt, "experts")
		d := rapid.IntRange(1, 6).Draw(rt, "width")
		f := rapid.IntRange(1, 5).Draw(rt, "hidden")
		tok := rapid.IntRange(1, 4).Draw(rt, "tokens")
		gating := ops.Gating(rapid.IntRange(0, 2).Draw(rt, "gating"))
		all := rapid.Bool().Draw(rt, "k=E")
		k := e
		if !all {
			k = rapid.IntRange(1, e).Draw(rt, "k")
		}
		cfg := ops.MoEConfig{TopK: k, Gating: gating, Renormalize: rapid.Bool().Draw(rt, "renormalize")}
		c := newMixCase(rt, rapid.Uint64().Draw(rt, "seed"))
		m, w := newMoE(c, e, d, f, 1, moeOptions{})
		x, xv := c.randConst("x", 1, tok, d)
		for _, form := range moeForms {
			c.outs = append(c.outs, form.fn(c.b, x, w, cfg))
		}
		got, _ := c.run()
		mixClose(rt, "dense vs sparse", got[1], got[0], 1e-5)
		mixClose(rt, "grouped vs sparse", got[2], got[0], 1e-5)
		if all {
			// The soft mixture Σ_e p_e·expert_e(x), with p straight from
			// the logits: no top-k anywhere.
			soft := make([]float64, tok*d)
			for i := range tok {
				xt := xv[i*d : (i+1)*d]
				p := mixMatVec(m.router, 0, e, d, xt)
				var sum, mx float64 = 0, math.Inf(-1)
				for _, l := range p {
					mx = math.Max(mx, l)
				}
				for ex, l := range p {
					if gating == ops.SigmoidTopK {
						p[ex] = mixSigmoid(l)
					} else {
						p[ex] = math.Exp(l - mx)
					}
					sum += p[ex]
				}
				if gating != ops.SigmoidTopK || cfg.Renormalize {
					for ex := range p {
						p[ex] /= sum
					}
				}
				for ex := range e {
					for j, v := range m.expert(ex, xt, cfg) {
						soft[i*d+j] += p[ex] * v
					}
				}
			}
			mixClose(rt, "top-E vs soft mixture", got[0], soft, 1e-5)
		}
	})
}

func TestMoEConfigErrors(t *testing.T) {
	for _, cfg := range []ops.MoEConfig{
		{TopK: 0},
		{TopK: 9},
		{TopK: 2, Groups: 3, TopGroups: 1},
		{TopK: 2, Groups: 4, TopGroups: 5},
		{TopK: 5, Groups: 4, TopGroups: 2},
		{TopK: 2, Gating: 9},
	} {
		c := newMixCase(t, 1)
		_, w := newMoE(c, 8, 4, 3, 1, moeOptions{})
		x, _ := c.randConst("x", 1, 2, 4)
		for _, form := range moeForms {
			form.fn(c.b, x, w, cfg)
		}
		if c.b.Err() == nil {
			t.Errorf("%+v: no error recorded", cfg)
		}
	}
	// A missing weight is an error, not a panic.
	c := newMixCase(t, 1)
	x, _ := c.randConst("x", 1, 2, 4)
	for _, form := range moeForms {
		form.fn(c.b, x, ops.MoEWeights[mixBrand]{}, ops.MoEConfig{TopK: 1})
	}
	if c.b.Err() == nil {
		t.Errorf("missing weights: no error recorded")
	}
}

// TestMixersNeverPanic records every composite of the MoE, recurrent and
// latent attention files over operands of random shapes (some absent) and
// random, often nonsensical, configurations: the builder must record an
// error or a graph, never panic.
func TestMixersNeverPanic(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		b := poot.NewBuilder[mixBrand](poot.Limits{})
		n := 0
		operand := func(label string) mixH {
			if rapid.IntRange(0, 9).Draw(rt, label+" absent") == 0 {
				return mixH{}
			}
			rank := rapid.IntRange(1, 3).Draw(rt, label+" rank")
			dims := make([]int, rank)
			for i := range dims {
				dims[i] = rapid.IntRange(1, 4).Draw(rt, label+" dim")
			}
			n++
			d := poot.F32
			if rapid.IntRange(0, 5).Draw(rt, label+" i32") == 0 {
				d = poot.I32
			}
			return b.Constant(fmt.Sprintf("%s.%d", label, n), poot.T(d, dims...))
		}
		small := func(label string) int { return rapid.IntRange(-1, 5).Draw(rt, label) }
		x := operand("x")
		switch rapid.IntRange(0, 4).Draw(rt, "composite") {
		case 0:
			w := ops.MoEWeights[mixBrand]{
				Router: operand("router"), RouterBias: operand("rb"), SelectionBias: operand("sb"),
				Gate: operand("gate"), Up: operand("up"), Down: operand("down"),
				GateBias: operand("gb"), UpBias: operand("ub"), DownBias: operand("db"),
				SharedGate: operand("sg"), SharedUp: operand("su"), SharedDown: operand("sd"), SharedRouter: operand("sr"),
			}
			cfg := ops.MoEConfig{
				TopK: small("k"), Gating: ops.Gating(small("gating")), Groups: small("groups"), TopGroups: small("top groups"),
				GroupScore: ops.GroupScore(small("group score")), Renormalize: rapid.Bool().Draw(rt, "renorm"),
				ScaleInputs: rapid.Bool().Draw(rt, "scale inputs"), Activation: ops.ExpertActivation(small("act")),
			}
			for _, form := range moeForms {
				form.fn(b, x, w, cfg)
			}
		case 1:
			ops.CausalConv1D(b, x, operand("state"), operand("w"), operand("bias"))
		case 2:
			cfg := ops.GatedDeltaConfig{KeyHeads: small("hk"), ValueHeads: small("hv"), ChunkSize: small("chunk"), TiledHeads: rapid.Bool().Draw(rt, "tiled")}
			ops.GatedDelta(b, x, operand("k"), operand("v"), operand("g"), operand("beta"), operand("z"), operand("norm"), operand("state"), cfg)
			ops.GatedDeltaDecay(b, x, operand("dt"), operand("alog"))
			nw := ops.GatedDeltaNetWeights[mixBrand]{Q: operand("wq"), K: operand("wk"), V: operand("wv"), Z: operand("wz"), Conv: operand("wc"),
				Beta: operand("wb"), Alpha: operand("wa"), DtBias: operand("dtb"), ALog: operand("al"), Norm: operand("wn"), Out: operand("wo")}
			ops.GatedDeltaNet(b, x, nw, ops.GatedDeltaNetState[mixBrand]{Conv: operand("cs"), Delta: operand("ds")}, cfg)
		case 4:
			y, _ := ops.Mamba2SSM(b, x, operand("dt"), operand("B"), operand("C"), operand("dtb"), operand("alog"), operand("D"), operand("state"),
				ops.Mamba2Config{Heads: small("h"), Groups: small("g"), ChunkSize: small("chunk")})
			ops.Mamba2Gate(b, y, operand("z"), operand("w"), small("g"), 1e-5)
		case 3:
			w := ops.MLAWeights[mixBrand]{
				Q: operand("q"), QA: operand("qa"), QANorm: operand("qan"), QB: operand("qb"), KVA: operand("kva"),
				KVANorm: operand("kvan"), KVB: operand("kvb"), KBT: operand("kbt"), VB: operand("vb"),
			}
			rot := ops.Rotary[mixBrand]{Cos: operand("cos"), Sin: operand("sin")}
			cfg := ops.MLAConfig{Heads: small("h"), NopeDim: small("nope"), RopeDim: small("rope"), ValueDim: small("v"),
				KVLoraRank: small("lora"), Rows: small("rows"), Absorb: rapid.Bool().Draw(rt, "absorb")}
			ops.LatentQuery(b, x, rot, w, cfg)
			ops.LatentKV(b, x, rot, w, cfg)
			ops.LatentAttention(b, x, operand("cache"), operand("mask"), w, cfg)
		}
		_ = b.Err()
	})
}

// storedConst declares a random constant stored as dtype d and returns the
// values it decodes to, which the references use.
func (c *mixCase) storedConst(name string, d poot.DType, scale float64, dims ...int) (mixH, []float64) {
	c.t.Helper()
	n := 1
	for _, x := range dims {
		n *= x
	}
	v := c.random(n, scale)
	f := make([]float32, n)
	for i, x := range v {
		f[i] = float32(x)
	}
	tt, err := tensor.Quantize(poot.T(d, dims...), f)
	if err != nil {
		c.t.Fatalf("quantize %s: %v", name, err)
	}
	back, err := tt.ToF32()
	if err != nil {
		c.t.Fatalf("decode %s: %v", name, err)
	}
	c.consts[name] = tt
	return c.b.Constant(name, poot.T(d, dims...)), mixWiden(back)
}

// TestMoEStoredWeights reads the router, the expert stacks and the biases
// as stored (half precision and packed blocks): the contractions decode
// them, and the result matches the reference over the decoded values.
func TestMoEStoredWeights(t *testing.T) {
	const e, d, f, s, tok = 4, 32, 32, 32, 3
	cfg := ops.MoEConfig{TopK: 2, Gating: ops.SigmoidTopK, Renormalize: true}
	for _, form := range moeForms {
		t.Run(form.name, func(t *testing.T) {
			c := newMixCase(t, 4)
			m := &moeRef{e: e, d: d, f: f, s: s}
			var w ops.MoEWeights[mixBrand]
			w.Router, m.router = c.storedConst("router", poot.F16, 1, e, d)
			w.SelectionBias, m.selBias = c.storedConst("selection_bias", poot.BF16, 0.3, e)
			w.Gate, m.gate = c.storedConst("gate", poot.Q8_0, 0.5, e, f, d)
			w.Up, m.up = c.storedConst("up", poot.Q4_0, 0.5, e, f, d)
			w.Down, m.down = c.storedConst("down", poot.BF16, 0.5, e, d, f)
			w.GateBias, m.gateBias = c.storedConst("gate_bias", poot.BF16, 0.2, e, f)
			w.UpBias, m.upBias = c.storedConst("up_bias", poot.F16, 0.2, e, f)
			w.DownBias, m.downBias = c.storedConst("down_bias", poot.BF16, 0.2, e, d)
			w.SharedGate, m.sGate = c.storedConst("shared_gate", poot.Q8_0, 0.5, s, d)
			w.SharedUp, m.sUp = c.storedConst("shared_up", poot.F16, 0.5, s, d)
			w.SharedDown, m.sDown = c.storedConst("shared_down", poot.Q8_0, 0.5, d, s)
			x, xv := c.randConst("x", 1, tok, d)
			c.outs = append(c.outs, form.fn(c.b, x, w, cfg))
			got, _ := c.run()
			mixClose(t, "moe", got[0], m.forward(xv, tok, cfg), 1e-5)
		})
	}
}
