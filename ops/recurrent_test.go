package ops_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
	"pgregory.net/rapid"
)

func refCausalConv(x, state, w, bias []float64, t, c, taps int) (y, newState []float64) {
	win := append(append([]float64(nil), state...), x...)
	y = make([]float64, t*c)
	for i := range t {
		for ch := range c {
			var s float64
			for j := range taps {
				s += w[j*c+ch] * win[(i+j)*c+ch]
			}
			if bias != nil {
				s += bias[ch]
			}
			y[i*c+ch] = s
		}
	}
	return y, append([]float64(nil), win[t*c:]...)
}

func TestCausalConv1D(t *testing.T) {
	for _, tc := range []struct{ t, c, taps int }{{1, 3, 4}, {5, 6, 4}, {2, 1, 2}, {3, 4, 5}} {
		for _, withBias := range []bool{false, true} {
			t.Run(fmt.Sprintf("T%d_C%d_taps%d_bias%v", tc.t, tc.c, tc.taps, withBias), func(t *testing.T) {
				c := newMixCase(t, 3)
				x, xv := c.randConst("x", 1, tc.t, tc.c)
				w, wv := c.randConst("w", 1, tc.taps, tc.c)
				var bias mixH
				var bv []float64
				if withBias {
					bias, bv = c.randConst("bias", 1, tc.c)
				}
				sv := c.random((tc.taps-1)*tc.c, 1)
				s := c.state("conv_state", sv, tc.taps-1, tc.c)
				var y, s2 mixH
				n := c.counted(func() { y, s2 = ops.CausalConv1D(c.b, x, s, w, bias) })
				c.outs = append(c.outs, y)
				c.carry = append(c.carry, poot.Carry[mixBrand]{In: s, Out: s2})
				got, st := c.run()
				wantY, wantS := refCausalConv(xv, sv, wv, bv, tc.t, tc.c, tc.taps)
				mixClose(t, "conv rows", got[0], wantY, 1e-6)
				mixClose(t, "conv state", st["conv_state"], wantS, 0)
				t.Logf("causal_conv1d T=%d C=%d taps=%d: %d primitives", tc.t, tc.c, tc.taps, n)
			})
		}
	}
}

// deltaSpec sizes a gated delta rule test.
type deltaSpec struct {
	t, hk, hv, dk, dv int
	tiled             bool
}

// deltaInputs are the random inputs of a gated delta test, in float64 and
// as graph handles.
type deltaInputs struct {
	q, k, v, z, a, bRaw, dtBias, aLog, normW, state0 []float64 // state0 is [Hv, Dk, Dv]
	hq, hk, hv, hz, ha, hb, hdt, halog, hnorm        mixH
}

func newDeltaInputs(c *mixCase, s deltaSpec) *deltaInputs {
	in := &deltaInputs{}
	in.hq, in.q = c.randConst("q", 1, s.t, s.hk*s.dk)
	in.hk, in.k = c.randConst("k", 1, s.t, s.hk*s.dk)
	in.hv, in.v = c.randConst("v", 1, s.t, s.hv*s.dv)
	in.hz, in.z = c.randConst("z", 1, s.t, s.hv*s.dv)
	in.ha, in.a = c.randConst("a", 2, s.t, s.hv)
	in.hb, in.bRaw = c.randConst("b", 2, s.t, s.hv)
	in.hdt, in.dtBias = c.randConst("dt_bias", 1, s.hv)
	in.halog, in.aLog = c.randConst("a_log", 1, s.hv)
	in.hnorm, in.normW = c.randConst("norm", 1, s.dv)
	in.state0 = c.random(s.hv*s.dk*s.dv, 0.5)
	return in
}

// graphState is state0 transposed to the graph's [Hv, Dv, Dk] layout.
func graphState(s []float64, hv, dk, dv int) []float64 {
	out := make([]float64, len(s))
	for h := range hv {
		for i := range dk {
			for j := range dv {
				out[(h*dv+j)*dk+i] = s[(h*dk+i)*dv+j]
			}
		}
	}
	return out
}

func mixSoftplus(x float64) float64 { return math.Log1p(math.Exp(x)) }

// refGatedDelta follows the recurrent reference of the Qwen3-Next
// implementations: state per value head [Dk, Dv], q and k L2-normalised,
// q scaled by 1/sqrt(Dk), then the gated RMSNorm of the output.
func refGatedDelta(in *deltaInputs, s deltaSpec) (out, state []float64) {
	state = append([]float64(nil), in.state0...)
	out = make([]float64, s.t*s.hv*s.dv)
	l2 := func(v []float64) []float64 {
		var ss float64
		for _, x := range v {
			ss += x * x
		}
		r := 1 / math.Sqrt(ss+1e-6)
		o := make([]float64, len(v))
		for i, x := range v {
			o[i] = x * r
		}
		return o
	}
	rep := s.hv / s.hk
	for t := range s.t {
		for h := range s.hv {
			kh := h / rep
			if s.tiled {
				kh = h % s.hk
			}
			q := l2(in.q[(t*s.hk+kh)*s.dk : (t*s.hk+kh+1)*s.dk])
			for i := range q {
				q[i] /= math.Sqrt(float64(s.dk))
			}
			k := l2(in.k[(t*s.hk+kh)*s.dk : (t*s.hk+kh+1)*s.dk])
			v := in.v[(t*s.hv+h)*s.dv : (t*s.hv+h+1)*s.dv]
			g := -math.Exp(in.aLog[h]) * mixSoftplus(in.a[t*s.hv+h]+in.dtBias[h])
			beta := mixSigmoid(in.bRaw[t*s.hv+h])
			st := state[h*s.dk*s.dv : (h+1)*s.dk*s.dv]
			for i := range st {
				st[i] *= math.Exp(g)
			}
			delta := make([]float64, s.dv)
			for j := range s.dv {
				var mem float64
				for i := range s.dk {
					mem += st[i*s.dv+j] * k[i]
				}
				delta[j] = (v[j] - mem) * beta
			}
			for i := range s.dk {
				for j := range s.dv {
					st[i*s.dv+j] += k[i] * delta[j]
				}
			}
			o := out[(t*s.hv+h)*s.dv : (t*s.hv+h+1)*s.dv]
			var ms float64
			for j := range s.dv {
				for i := range s.dk {
					o[j] += st[i*s.dv+j] * q[i]
				}
				ms += o[j] * o[j]
			}
			r := 1 / math.Sqrt(ms/float64(s.dv)+1e-6)
			for j := range o {
				z := in.z[(t*s.hv+h)*s.dv+j]
				o[j] = o[j] * r * in.normW[j] * z * mixSigmoid(z)
			}
		}
	}
	return out, state
}

// gatedDeltaLayer records the decay, beta and the rule over rows
// [from, to) of the inputs, chaining the state.
func gatedDeltaLayer(b *poot.Builder[mixBrand], in *deltaInputs, s deltaSpec, state mixH, from, to int, cfg ops.GatedDeltaConfig) (out, newState mixH) {
	rows := func(x mixH) mixH {
		if from == 0 && to == s.t {
			return x
		}
		return b.SliceAxis(x, 0, from, to)
	}
	g := ops.GatedDeltaDecay(b, rows(in.ha), in.hdt, in.halog)
	beta := ops.Sigmoid(b, rows(in.hb))
	return ops.GatedDelta(b, rows(in.hq), rows(in.hk), rows(in.hv), g, beta, rows(in.hz), in.hnorm, state, cfg)
}

func TestGatedDeltaMatchesReference(t *testing.T) {
	specs := []deltaSpec{
		{t: 1, hk: 2, hv: 2, dk: 4, dv: 3},
		{t: 7, hk: 2, hv: 2, dk: 4, dv: 3},
		{t: 6, hk: 1, hv: 3, dk: 5, dv: 2},
		{t: 6, hk: 2, hv: 4, dk: 3, dv: 4},
		{t: 6, hk: 2, hv: 4, dk: 3, dv: 4, tiled: true},
		{t: 70, hk: 1, hv: 2, dk: 16, dv: 8},
	}
	for _, s := range specs {
		for _, chunk := range []int{0, 1, 3, 4, 16, 64} {
			name := fmt.Sprintf("T%d_hk%d_hv%d_tiled%v_chunk%d", s.t, s.hk, s.hv, s.tiled, chunk)
			t.Run(name, func(t *testing.T) {
				c := newMixCase(t, 5)
				in := newDeltaInputs(c, s)
				st := c.state("delta_state", graphState(in.state0, s.hv, s.dk, s.dv), s.hv, s.dv, s.dk)
				cfg := ops.GatedDeltaConfig{KeyHeads: s.hk, ValueHeads: s.hv, TiledHeads: s.tiled, ChunkSize: chunk}
				var out, st2 mixH
				n := c.counted(func() { out, st2 = gatedDeltaLayer(c.b, in, s, st, 0, s.t, cfg) })
				c.outs = append(c.outs, out)
				c.carry = append(c.carry, poot.Carry[mixBrand]{In: st, Out: st2})
				got, states := c.run()
				wantOut, wantState := refGatedDelta(in, s)
				mixClose(t, "output", got[0], wantOut, 1e-5)
				mixClose(t, "state", states["delta_state"], graphState(wantState, s.hv, s.dk, s.dv), 1e-5)
				t.Logf("gated_delta %s: %d primitives", name, n)
			})
		}
	}
}

// TestGatedDeltaChunkLaw: a chunk of T tokens (in either form) equals T
// single-token steps chained through the state.
func TestGatedDeltaChunkLaw(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		hk := rapid.IntRange(1, 2).Draw(rt, "key heads")
		s := deltaSpec{
			t: rapid.IntRange(1, 9).Draw(rt, "tokens"), hk: hk, hv: hk * rapid.IntRange(1, 2).Draw(rt, "ratio"),
			dk: rapid.IntRange(1, 5).Draw(rt, "dk"), dv: rapid.IntRange(1, 4).Draw(rt, "dv"), tiled: rapid.Bool().Draw(rt, "tiled"),
		}
		chunk := rapid.IntRange(0, 10).Draw(rt, "chunk")
		c := newMixCase(rt, rapid.Uint64().Draw(rt, "seed"))
		in := newDeltaInputs(c, s)
		gs := graphState(in.state0, s.hv, s.dk, s.dv)
		cfg := ops.GatedDeltaConfig{KeyHeads: s.hk, ValueHeads: s.hv, TiledHeads: s.tiled}
		stA := c.state("state_a", gs, s.hv, s.dv, s.dk)
		stB := c.state("state_b", gs, s.hv, s.dv, s.dk)
		cfgChunk := cfg
		cfgChunk.ChunkSize = chunk
		whole, stA2 := gatedDeltaLayer(c.b, in, s, stA, 0, s.t, cfgChunk)
		steps := make([]mixH, s.t)
		stB2 := stB
		for i := range s.t {
			steps[i], stB2 = gatedDeltaLayer(c.b, in, s, stB2, i, i+1, cfg)
		}
		c.outs = append(c.outs, whole, c.b.Concat(0, steps...))
		c.carry = append(c.carry, poot.Carry[mixBrand]{In: stA, Out: stA2}, poot.Carry[mixBrand]{In: stB, Out: stB2})
		got, states := c.run()
		mixClose(rt, "chunk vs steps", got[0], got[1], 1e-5)
		mixClose(rt, "state after chunk vs steps", states["state_a"], states["state_b"], 1e-5)
	})
}

func TestRecurrentShapeErrors(t *testing.T) {
	c := newMixCase(t, 1)
	x, _ := c.randConst("x", 1, 3, 4)
	w, _ := c.randConst("w", 1, 4, 4)
	bad := c.state("bad", make([]float64, 2*4), 2, 4) // taps-1 = 3 rows expected
	ops.CausalConv1D(c.b, x, bad, w, mixH{})
	if c.b.Err() == nil {
		t.Errorf("conv with a short state: no error recorded")
	}
	c = newMixCase(t, 1)
	in := newDeltaInputs(c, deltaSpec{t: 2, hk: 2, hv: 2, dk: 3, dv: 3})
	st := c.state("s", make([]float64, 2*3*3), 2, 3, 3)
	gatedDeltaLayer(c.b, in, deltaSpec{t: 2, hk: 2, hv: 2, dk: 3, dv: 3}, st, 0, 2, ops.GatedDeltaConfig{KeyHeads: 2, ValueHeads: 3})
	if c.b.Err() == nil {
		t.Errorf("gated delta with 3 value heads over 2 key heads: no error recorded")
	}
}

// mambaSpec sizes a Mamba2 test.
type mambaSpec struct{ t, h, g, p, n int }

type mambaInputs struct {
	x, dt, bm, cm, dtBias, aLog, d, z, w, state0 []float64 // state0 is [H, P, N]
	hx, hdt, hb, hc, hdtb, halog, hd, hz, hw     mixH
}

func newMambaInputs(c *mixCase, s mambaSpec) *mambaInputs {
	in := &mambaInputs{}
	in.hx, in.x = c.randConst("mamba_x", 1, s.t, s.h*s.p)
	in.hdt, in.dt = c.randConst("mamba_dt", 2, s.t, s.h)
	in.hb, in.bm = c.randConst("mamba_B", 1, s.t, s.g*s.n)
	in.hc, in.cm = c.randConst("mamba_C", 1, s.t, s.g*s.n)
	in.hdtb, in.dtBias = c.randConst("mamba_dt_bias", 1, s.h)
	in.halog, in.aLog = c.randConst("mamba_a_log", 1, s.h)
	in.hd, in.d = c.randConst("mamba_D", 1, s.h)
	in.hz, in.z = c.randConst("mamba_z", 1, s.t, s.h*s.p)
	in.hw, in.w = c.randConst("mamba_norm", 1, s.h*s.p)
	in.state0 = c.random(s.h*s.p*s.n, 0.5)
	return in
}

// refMamba2 is the recurrent form of Mamba2's SSM followed by its gated
// group norm.
func refMamba2(in *mambaInputs, s mambaSpec) (y, gated, state []float64) {
	state = append([]float64(nil), in.state0...)
	y = make([]float64, s.t*s.h*s.p)
	rep := s.h / s.g
	for t := range s.t {
		for h := range s.h {
			grp := h / rep
			delta := mixSoftplus(in.dt[t*s.h+h] + in.dtBias[h])
			decay := math.Exp(-math.Exp(in.aLog[h]) * delta)
			bv := in.bm[(t*s.g+grp)*s.n : (t*s.g+grp+1)*s.n]
			cv := in.cm[(t*s.g+grp)*s.n : (t*s.g+grp+1)*s.n]
			for p := range s.p {
				xv := in.x[(t*s.h+h)*s.p+p]
				st := state[(h*s.p+p)*s.n : (h*s.p+p+1)*s.n]
				var o float64
				for n := range s.n {
					st[n] = st[n]*decay + delta*xv*bv[n]
					o += st[n] * cv[n]
				}
				y[(t*s.h+h)*s.p+p] = o + in.d[h]*xv
			}
		}
	}
	gated = make([]float64, len(y))
	width := s.h * s.p / s.g
	for t := range s.t {
		for g := range s.g {
			off := t*s.h*s.p + g*width
			var ms float64
			for i := range width {
				z := in.z[off+i]
				gated[off+i] = y[off+i] * z * mixSigmoid(z)
				ms += gated[off+i] * gated[off+i]
			}
			r := 1 / math.Sqrt(ms/float64(width)+1e-5)
			for i := range width {
				gated[off+i] *= r * in.w[g*width+i]
			}
		}
	}
	return y, gated, state
}

func TestMamba2MatchesReference(t *testing.T) {
	for _, s := range []mambaSpec{{1, 2, 1, 3, 4}, {7, 4, 2, 2, 3}, {6, 3, 3, 2, 2}, {40, 2, 1, 4, 8}} {
		for _, chunk := range []int{0, 1, 3, 16} {
			name := fmt.Sprintf("T%d_h%d_g%d_chunk%d", s.t, s.h, s.g, chunk)
			t.Run(name, func(t *testing.T) {
				c := newMixCase(t, 9)
				in := newMambaInputs(c, s)
				st := c.state("ssm_state", in.state0, s.h, s.p, s.n)
				var y, gated, st2 mixH
				n := c.counted(func() {
					y, st2 = ops.Mamba2SSM(c.b, in.hx, in.hdt, in.hb, in.hc, in.hdtb, in.halog, in.hd, st, ops.Mamba2Config{Heads: s.h, Groups: s.g, ChunkSize: chunk})
				})
				gated = ops.Mamba2Gate(c.b, y, in.hz, in.hw, s.g, 1e-5)
				c.outs = append(c.outs, y, gated)
				c.carry = append(c.carry, poot.Carry[mixBrand]{In: st, Out: st2})
				got, states := c.run()
				wantY, wantGated, wantState := refMamba2(in, s)
				mixClose(t, "y", got[0], wantY, 1e-5)
				mixClose(t, "gated", got[1], wantGated, 1e-5)
				mixClose(t, "state", states["ssm_state"], wantState, 1e-5)
				t.Logf("mamba2_ssm %s: %d primitives", name, n)
			})
		}
	}
}

// TestMamba2ChunkLaw: a chunk of T tokens equals T single-token steps.
func TestMamba2ChunkLaw(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := rapid.IntRange(1, 2).Draw(rt, "groups")
		s := mambaSpec{
			t: rapid.IntRange(1, 9).Draw(rt, "tokens"), h: g * rapid.IntRange(1, 2).Draw(rt, "heads per group"), g: g,
			p: rapid.IntRange(1, 4).Draw(rt, "head dim"), n: rapid.IntRange(1, 4).Draw(rt, "state dim"),
		}
		chunk := rapid.IntRange(0, 10).Draw(rt, "chunk")
		c := newMixCase(rt, rapid.Uint64().Draw(rt, "seed"))
		in := newMambaInputs(c, s)
		stA := c.state("state_a", in.state0, s.h, s.p, s.n)
		stB := c.state("state_b", in.state0, s.h, s.p, s.n)
		rows := func(x mixH, i int) mixH { return c.b.SliceAxis(x, 0, i, i+1) }
		whole, stA2 := ops.Mamba2SSM(c.b, in.hx, in.hdt, in.hb, in.hc, in.hdtb, in.halog, in.hd, stA, ops.Mamba2Config{Heads: s.h, Groups: s.g, ChunkSize: chunk})
		steps := make([]mixH, s.t)
		stB2 := stB
		for i := range s.t {
			steps[i], stB2 = ops.Mamba2SSM(c.b, rows(in.hx, i), rows(in.hdt, i), rows(in.hb, i), rows(in.hc, i), in.hdtb, in.halog, in.hd, stB2, ops.Mamba2Config{Heads: s.h, Groups: s.g})
		}
		c.outs = append(c.outs, whole, c.b.Concat(0, steps...))
		c.carry = append(c.carry, poot.Carry[mixBrand]{In: stA, Out: stA2}, poot.Carry[mixBrand]{In: stB, Out: stB2})
		got, states := c.run()
		mixClose(rt, "chunk vs steps", got[0], got[1], 1e-5)
		mixClose(rt, "state after chunk vs steps", states["state_a"], states["state_b"], 1e-5)
	})
}

// TestGatedDeltaNet checks the whole mixer against the float64 pieces,
// run as one prefill and as a prefill followed by steps that carry both
// states.
func TestGatedDeltaNet(t *testing.T) {
	s := deltaSpec{t: 6, hk: 2, hv: 4, dk: 3, dv: 2}
	const d, taps = 5, 4
	kd, vd := s.hk*s.dk, s.hv*s.dv
	ch := 2*kd + vd
	for _, split := range [][]int{{6}, {3, 1, 1, 1}} {
		for _, chunk := range []int{0, 4} {
			name := fmt.Sprintf("split%v_chunk%d", split, chunk)
			t.Run(name, func(t *testing.T) {
				c := newMixCase(t, 21)
				var w ops.GatedDeltaNetWeights[mixBrand]
				hx, xv := c.randConst("x", 1, s.t, d)
				var wq, wk, wv, wz, wc, wb, wa, dtb, alog, norm, wo []float64
				w.Q, wq = c.randConst("wq", 0.5, kd, d)
				w.K, wk = c.randConst("wk", 0.5, kd, d)
				w.V, wv = c.randConst("wv", 0.5, vd, d)
				w.Z, wz = c.randConst("wz", 0.5, vd, d)
				w.Conv, wc = c.randConst("wconv", 0.5, taps, ch)
				w.Beta, wb = c.randConst("wbeta", 0.5, s.hv, d)
				w.Alpha, wa = c.randConst("walpha", 0.5, s.hv, d)
				w.DtBias, dtb = c.randConst("dt_bias", 1, s.hv)
				w.ALog, alog = c.randConst("a_log", 1, s.hv)
				w.Norm, norm = c.randConst("norm", 1, s.dv)
				w.Out, wo = c.randConst("wo", 0.5, d, vd)
				conv0 := c.random((taps-1)*ch, 1)
				delta0 := c.random(s.hv*s.dk*s.dv, 0.5)
				st := ops.GatedDeltaNetState[mixBrand]{
					Conv:  c.state("conv", conv0, taps-1, ch),
					Delta: c.state("delta", graphState(delta0, s.hv, s.dk, s.dv), s.hv, s.dv, s.dk),
				}
				cfg := ops.GatedDeltaConfig{KeyHeads: s.hk, ValueHeads: s.hv, ChunkSize: chunk}
				cur := st
				var outs []mixH
				n, from := 0, 0
				for _, rows := range split {
					var o mixH
					x := hx
					if rows != s.t {
						x = c.b.SliceAxis(hx, 0, from, from+rows)
					}
					n = c.counted(func() { o, cur = ops.GatedDeltaNet(c.b, x, w, cur, cfg) })
					outs = append(outs, o)
					from += rows
				}
				c.outs = append(c.outs, c.b.Concat(0, outs...))
				c.carry = append(c.carry, poot.Carry[mixBrand]{In: st.Conv, Out: cur.Conv}, poot.Carry[mixBrand]{In: st.Delta, Out: cur.Delta})
				got, states := c.run()

				// The reference: projections, convolution, SiLU, then the
				// gated delta rule of refGatedDelta.
				qkv := make([]float64, s.t*ch)
				in := &deltaInputs{dtBias: dtb, aLog: alog, normW: norm, state0: delta0}
				for i := range s.t {
					xt := xv[i*d : (i+1)*d]
					copy(qkv[i*ch:], mixMatVec(wq, 0, kd, d, xt))
					copy(qkv[i*ch+kd:], mixMatVec(wk, 0, kd, d, xt))
					copy(qkv[i*ch+2*kd:], mixMatVec(wv, 0, vd, d, xt))
					in.z = append(in.z, mixMatVec(wz, 0, vd, d, xt)...)
					in.bRaw = append(in.bRaw, mixMatVec(wb, 0, s.hv, d, xt)...)
					in.a = append(in.a, mixMatVec(wa, 0, s.hv, d, xt)...)
				}
				conv, convState := refCausalConv(qkv, conv0, wc, nil, s.t, ch, taps)
				for i := range s.t {
					row := conv[i*ch : (i+1)*ch]
					for j, v := range row {
						row[j] = v * mixSigmoid(v)
					}
					in.q = append(in.q, row[:kd]...)
					in.k = append(in.k, row[kd:2*kd]...)
					in.v = append(in.v, row[2*kd:]...)
				}
				o, deltaState := refGatedDelta(in, s)
				want := make([]float64, 0, s.t*d)
				for i := range s.t {
					want = append(want, mixMatVec(wo, 0, d, vd, o[i*vd:(i+1)*vd])...)
				}
				mixClose(t, "output", got[0], want, 1e-5)
				mixClose(t, "conv state", states["conv"], convState, 1e-6)
				mixClose(t, "delta state", states["delta"], graphState(deltaState, s.hv, s.dk, s.dv), 1e-5)
				t.Logf("gated_delta_net %s: %d primitives for the last call (%d tokens)", name, n, split[len(split)-1])
			})
		}
	}
}

// TestRecurrentBatchLaw: R sequences batched in one call (rows [R·T, ...],
// states with a leading R) equal R separate calls, for the convolution,
// the gated delta rule in both forms, and Mamba2's scan.
func TestRecurrentBatchLaw(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := rapid.IntRange(1, 3).Draw(rt, "sequences")
		tok := rapid.IntRange(1, 5).Draw(rt, "tokens")
		chunk := rapid.IntRange(0, 4).Draw(rt, "chunk")
		c := newMixCase(rt, rapid.Uint64().Draw(rt, "seed"))
		seqRows := func(x mixH, i int) mixH {
			if r == 1 {
				return x
			}
			return c.b.SliceAxis(x, 0, i*tok, (i+1)*tok)
		}
		perSeq := func(name string, v []float64, i int, dims ...int) mixH {
			n := len(v) / r
			return c.constant(fmt.Sprintf("%s_%d", name, i), v[i*n:(i+1)*n], dims...)
		}
		// The states are plain constants here: a recurrent composite reads
		// any F32 value as its state.
		var batched, separate []mixH

		// Convolution.
		const ch, taps = 3, 3
		x, _ := c.randConst("conv_x", 1, r*tok, ch)
		w, _ := c.randConst("conv_w", 1, taps, ch)
		cs := c.random(r*(taps-1)*ch, 1)
		y, s2 := ops.CausalConv1D(c.b, x, c.constant("conv", cs, r, taps-1, ch), w, mixH{})
		batched = append(batched, y, s2)
		var ys, ss []mixH
		for i := range r {
			yi, si := ops.CausalConv1D(c.b, seqRows(x, i), perSeq("conv", cs, i, taps-1, ch), w, mixH{})
			ys, ss = append(ys, yi), append(ss, c.b.Reshape(si, 1, taps-1, ch))
		}
		separate = append(separate, c.b.Concat(0, ys...), c.b.Concat(0, ss...))

		// Gated delta rule.
		ds := deltaSpec{t: r * tok, hk: 1, hv: 2, dk: 2, dv: 3}
		in := newDeltaInputs(c, ds)
		dstate := c.random(r*ds.hv*ds.dk*ds.dv, 0.5)
		cfg := ops.GatedDeltaConfig{KeyHeads: ds.hk, ValueHeads: ds.hv, ChunkSize: chunk}
		o, st2 := gatedDeltaLayer(c.b, in, ds, c.constant("delta", dstate, r, ds.hv, ds.dv, ds.dk), 0, ds.t, cfg)
		batched = append(batched, o, st2)
		ys, ss = nil, nil
		for i := range r {
			oi, si := gatedDeltaLayer(c.b, in, ds, perSeq("delta", dstate, i, ds.hv, ds.dv, ds.dk), i*tok, (i+1)*tok, cfg)
			ys, ss = append(ys, oi), append(ss, c.b.Reshape(si, 1, ds.hv, ds.dv, ds.dk))
		}
		separate = append(separate, c.b.Concat(0, ys...), c.b.Concat(0, ss...))

		// Mamba2.
		ms := mambaSpec{t: r * tok, h: 2, g: 1, p: 2, n: 3}
		mi := newMambaInputs(c, ms)
		mstate := c.random(r*ms.h*ms.p*ms.n, 0.5)
		mcfg := ops.Mamba2Config{Heads: ms.h, Groups: ms.g, ChunkSize: chunk}
		my, mst2 := ops.Mamba2SSM(c.b, mi.hx, mi.hdt, mi.hb, mi.hc, mi.hdtb, mi.halog, mi.hd, c.constant("ssm", mstate, r, ms.h, ms.p, ms.n), mcfg)
		batched = append(batched, my, mst2)
		ys, ss = nil, nil
		for i := range r {
			yi, si := ops.Mamba2SSM(c.b, seqRows(mi.hx, i), seqRows(mi.hdt, i), seqRows(mi.hb, i), seqRows(mi.hc, i), mi.hdtb, mi.halog, mi.hd,
				perSeq("ssm", mstate, i, ms.h, ms.p, ms.n), mcfg)
			ys, ss = append(ys, yi), append(ss, c.b.Reshape(si, 1, ms.h, ms.p, ms.n))
		}
		separate = append(separate, c.b.Concat(0, ys...), c.b.Concat(0, ss...))

		c.outs = append(batched, separate...)
		got, _ := c.run()
		names := []string{"conv rows", "conv state", "delta output", "delta state", "mamba2 output", "mamba2 state"}
		for i, name := range names {
			mixClose(rt, name, got[i], got[len(names)+i], 1e-6)
		}
	})
}

// TestGatedDeltaDecayRate checks the decay from a stored rate (llama.cpp's
// ssm_a = -exp(A_log)) against the float64 formula and against the decay
// from A_log, including inputs large enough that a naive softplus would
// overflow.
func TestGatedDeltaDecayRate(t *testing.T) {
	const rows, heads = 5, 3
	c := newMixCase(t, 31)
	a, av := c.randConst("a", 4, rows, heads)
	av[0], av[1] = 120, -120 // softplus(120) overflows exp in float32
	c.consts["a"] = mixTensor(t, av, rows, heads)
	dt, dtv := c.randConst("dt_bias", 1, heads)
	alog, alogv := c.randConst("a_log", 1, heads)
	ratev := make([]float64, heads)
	for h := range ratev {
		ratev[h] = float64(float32(-math.Exp(alogv[h])))
	}
	rate := c.constant("rate", ratev, heads)
	c.outs = append(c.outs, ops.GatedDeltaDecayRate(c.b, a, dt, rate), ops.GatedDeltaDecay(c.b, a, dt, alog))
	got, _ := c.run()
	want := make([]float64, rows*heads)
	for i := range want {
		x := av[i] + dtv[i%heads]
		sp := math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
		want[i] = ratev[i%heads] * sp
	}
	mixClose(t, "decay from the rate", got[0], want, 1e-5)
	mixClose(t, "decay from the rate vs from A_log", got[0], got[1], 1e-5)
}

// TestGatedDeltaMix checks that the mixer core keeps sequences apart: two
// sequences in one call, their states stacked, give what each gives alone.
// (TestGatedDeltaNet checks its values, through GatedDeltaNet.)
func TestGatedDeltaMix(t *testing.T) {
	s := deltaSpec{t: 4, hk: 1, hv: 2, dk: 3, dv: 3}
	const taps = 3
	kd, vd := s.hk*s.dk, s.hv*s.dv
	ch := 2*kd + vd
	for _, chunk := range []int{0, 2} {
		t.Run(fmt.Sprintf("chunk%d", chunk), func(t *testing.T) {
			c := newMixCase(t, 41)
			rows := 2 * s.t
			qkv, _ := c.randConst("qkv", 1, rows, ch)
			z, _ := c.randConst("z", 1, rows, vd)
			g, _ := c.randConst("g", 0.5, rows, s.hv)
			beta, _ := c.randConst("beta", 0.5, rows, s.hv)
			conv, _ := c.randConst("wconv", 0.5, taps, ch)
			norm, _ := c.randConst("norm", 1, s.dv)
			convs, deltas := c.random(2*(taps-1)*ch, 1), c.random(2*s.hv*s.dv*s.dk, 0.5)
			cfg := ops.GatedDeltaConfig{KeyHeads: s.hk, ValueHeads: s.hv, ChunkSize: chunk}
			both := ops.GatedDeltaNetState[mixBrand]{
				Conv:  c.state("conv", convs, 2, taps-1, ch),
				Delta: c.state("delta", deltas, 2, s.hv, s.dv, s.dk),
			}
			o, next := ops.GatedDeltaMix(c.b, qkv, z, g, beta, conv, norm, both, cfg)
			c.outs = append(c.outs, o)
			c.carry = append(c.carry, poot.Carry[mixBrand]{In: both.Conv, Out: next.Conv}, poot.Carry[mixBrand]{In: both.Delta, Out: next.Delta})
			rowsOf := func(x mixH, r int) mixH { return c.b.SliceAxis(x, 0, r*s.t, (r+1)*s.t) }
			for r := range 2 {
				cn, dn := (taps-1)*ch, s.hv*s.dv*s.dk
				one := ops.GatedDeltaNetState[mixBrand]{
					Conv:  c.state(fmt.Sprint("conv", r), convs[r*cn:(r+1)*cn], taps-1, ch),
					Delta: c.state(fmt.Sprint("delta", r), deltas[r*dn:(r+1)*dn], s.hv, s.dv, s.dk),
				}
				o, next := ops.GatedDeltaMix(c.b, rowsOf(qkv, r), rowsOf(z, r), rowsOf(g, r), rowsOf(beta, r), conv, norm, one, cfg)
				c.outs = append(c.outs, o)
				c.carry = append(c.carry, poot.Carry[mixBrand]{In: one.Conv, Out: next.Conv}, poot.Carry[mixBrand]{In: one.Delta, Out: next.Delta})
			}
			got, states := c.run()
			mixClose(t, "output", got[0], append(got[1], got[2]...), 1e-6)
			mixClose(t, "conv state", states["conv"], append(states["conv0"], states["conv1"]...), 0)
			mixClose(t, "delta state", states["delta"], append(states["delta0"], states["delta1"]...), 1e-6)
		})
	}
}
