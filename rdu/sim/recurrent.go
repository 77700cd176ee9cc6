package sim

import (
	"fmt"
	"math"

	"github.com/pootlabs/poot/rdu/lang"
)

// This file runs the recurrent mixer's statements as package lang defines
// them: the causal convolution over its carried window, the decay, and the
// gated delta rule. The first and the last also write their state.

// stateOf returns a declared state the statement writes.
func stateOf(env map[string]value, name string, rows, cols int) (*matrix, error) {
	s, err := realOf(env, name)
	if err != nil {
		return nil, err
	}
	if s.transposed || s.rows != rows || s.cols != cols {
		return nil, fmt.Errorf("state %s is %d by %d, want %d by %d", name, s.rows, s.cols, rows, cols)
	}
	return s, nil
}

func causalConv(env map[string]value, e lang.CausalConv) (value, error) {
	ms, err := reals(env, e.X, e.Weight)
	if err != nil {
		return nil, err
	}
	x, w := ms[0].plain(), ms[1]
	taps, c := e.Taps, x.cols
	if taps < 2 || w.rows != taps || w.cols != c {
		return nil, fmt.Errorf("causal conv over %d taps with a %d by %d weight for %d columns", taps, w.rows, w.cols, c)
	}
	s, err := stateOf(env, e.State, taps-1, c)
	if err != nil {
		return nil, err
	}
	if err := fresh(env, e.From, s); err != nil {
		return nil, err
	}
	window := make([]float32, 0, (taps-1+x.rows)*c)
	window = append(window, s.data...)
	window = append(window, x.data...)
	out := newMatrix(x.rows, c)
	for r := range x.rows {
		for col := range c {
			var acc float64
			for j := range taps {
				acc += float64(w.at(j, col)) * float64(window[(r+j)*c+col])
			}
			out.data[r*c+col] = float32(acc)
		}
	}
	copy(s.data, window[x.rows*c:])
	return out, nil
}

func softplus(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

func decay(env map[string]value, e lang.Decay) (value, error) {
	ms, err := reals(env, e.X, e.Bias, e.Rate)
	if err != nil {
		return nil, err
	}
	x, b, a := ms[0].plain(), ms[1].plain(), ms[2].plain()
	if b.rows != 1 || a.rows != 1 || b.cols != x.cols || a.cols != x.cols {
		return nil, fmt.Errorf("decay of %d columns with a bias of %d by %d and a rate of %d by %d", x.cols, b.rows, b.cols, a.rows, a.cols)
	}
	out := newMatrix(x.rows, x.cols)
	for r := range x.rows {
		for col := range x.cols {
			rate := float64(a.data[col])
			if e.LogRate {
				rate = -math.Exp(rate)
			}
			out.data[r*x.cols+col] = float32(rate * softplus(float64(x.data[r*x.cols+col])+float64(b.data[col])))
		}
	}
	return out, nil
}

// unitHeads divides each of heads runs of row by its Euclidean length
// (with eps under the root) and scales it by scale.
func unitHeads(row []float32, heads int, eps, scale float64) []float64 {
	d := len(row) / heads
	out := make([]float64, len(row))
	for h := range heads {
		var ss float64
		for _, v := range row[h*d : (h+1)*d] {
			ss += float64(v) * float64(v)
		}
		inv := float64(float32(1/math.Sqrt(ss+eps))) * scale
		for i, v := range row[h*d : (h+1)*d] {
			out[h*d+i] = float64(v) * inv
		}
	}
	return out
}

func gatedDelta(env map[string]value, e lang.GatedDelta) (value, error) {
	ms, err := reals(env, e.Q, e.K, e.V, e.Gate, e.Beta, e.Decay, e.Norm)
	if err != nil {
		return nil, err
	}
	q, k, v, z, beta, g, w := ms[0].plain(), ms[1].plain(), ms[2].plain(), ms[3].plain(), ms[4].plain(), ms[5].plain(), ms[6].plain()
	hv, hk := e.Heads, e.Groups
	if hk < 1 || hv < 1 || hv%hk != 0 || q.cols%hk != 0 || v.cols%hv != 0 || k.rows != q.rows || k.cols != q.cols ||
		v.rows != q.rows || z.rows != q.rows || z.cols != v.cols || beta.cols != hv || g.cols != hv || beta.rows != q.rows || g.rows != q.rows {
		return nil, fmt.Errorf("gated delta of %d by %d queries, %d by %d values over %d heads in %d groups", q.rows, q.cols, v.rows, v.cols, hv, hk)
	}
	dk, dv := q.cols/hk, v.cols/hv
	if w.rows != 1 || w.cols != dv {
		return nil, fmt.Errorf("gated delta norm %s is %d by %d, want 1 by %d", e.Norm, w.rows, w.cols, dv)
	}
	s, err := stateOf(env, e.State, hv*dv, dk)
	if err != nil {
		return nil, err
	}
	if err := fresh(env, e.From, s); err != nil {
		return nil, err
	}
	scale := 1 / math.Sqrt(float64(dk))
	out := newMatrix(q.rows, v.cols)
	o := make([]float64, dv)
	for r := range q.rows {
		qn := unitHeads(q.row(r), hk, e.Epsilon, float64(float32(scale)))
		kn := unitHeads(k.row(r), hk, e.Epsilon, 1)
		for h := range hv {
			kh := h / (hv / hk)
			if e.Tiled {
				kh = h % hk
			}
			qh, kv := qn[kh*dk:(kh+1)*dk], kn[kh*dk:(kh+1)*dk]
			ex := math.Exp(float64(g.data[r*hv+h]))
			bt := float64(beta.data[r*hv+h])
			for i := range dv {
				srow := s.data[(h*dv+i)*dk : (h*dv+i+1)*dk]
				var sk float64
				for j := range dk {
					srow[j] = float32(float64(srow[j]) * ex)
					sk += float64(srow[j]) * kv[j]
				}
				u := (float64(v.data[r*v.cols+h*dv+i]) - sk) * bt
				var sq float64
				for j := range dk {
					srow[j] = float32(float64(srow[j]) + u*kv[j])
					sq += float64(srow[j]) * qh[j]
				}
				o[i] = float64(float32(sq))
			}
			var ss float64
			for _, x := range o {
				ss += x * x
			}
			inv := 1 / math.Sqrt(ss/float64(dv)+e.Epsilon)
			for i, x := range o {
				zz := float64(z.data[r*z.cols+h*dv+i])
				act := zz / (1 + math.Exp(-zz))
				if e.SigmoidGate {
					act = 1 / (1 + math.Exp(-zz))
				}
				out.data[r*out.cols+h*dv+i] = float32(x * inv * float64(w.data[i]) * act)
			}
		}
	}
	return out, nil
}

// fresh zeroes a state its statement reads from position 1.
func fresh(env map[string]value, from *lang.Index, s *matrix) error {
	if from == nil {
		return nil
	}
	p, err := index(env, *from)
	if err != nil {
		return err
	}
	if p == 1 {
		clear(s.data)
	}
	return nil
}
