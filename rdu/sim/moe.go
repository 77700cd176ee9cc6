package sim

import (
	"fmt"
	"math"
	"sort"

	"github.com/pootlabs/poot/rdu/lang"
)

// moe runs a mixture of experts row by row, as package lang defines it.
func (m *Machine) moe(env map[string]value, e lang.MoE) (value, error) {
	get := func(name string) (*matrix, error) {
		if name == "" {
			return nil, nil
		}
		return realOf(env, name)
	}
	x, err := realOf(env, e.X)
	if err != nil {
		return nil, err
	}
	x = x.plain()
	var ws [9]*matrix
	for i, n := range []string{e.Router, e.RouterBias, e.SelectionBias, e.Gate, e.GateBias, e.Up, e.UpBias, e.Down, e.DownBias} {
		if ws[i], err = get(n); err != nil {
			return nil, err
		}
	}
	router, rbias, sbias, gate, gbias, up, ubias, down, dbias := ws[0], ws[1], ws[2], ws[3], ws[4], ws[5], ws[6], ws[7], ws[8]
	d, n := x.cols, e.E
	if router.rows != d || router.cols != n || gate.rows%n != 0 || gate.cols != d || up.rows != gate.rows || down.rows != n*d {
		return nil, fmt.Errorf("a mixture of %d experts of width %d with router %dx%d, gate %dx%d, down %dx%d", n, d, router.rows, router.cols, gate.rows, gate.cols, down.rows, down.cols)
	}
	f := gate.rows / n
	if down.cols != f {
		return nil, fmt.Errorf("down stack of %d columns for experts of %d", down.cols, f)
	}
	out := newMatrix(x.rows, d)
	logits := make([]float64, n)
	scores := make([]float64, n)
	choice := make([]float64, n)
	for r := range x.rows {
		xr := x.row(r)
		for j := range n {
			var acc float64
			for i, v := range xr {
				acc += float64(v) * float64(router.at(i, j))
			}
			if rbias != nil {
				acc = float64(float32(acc) + rbias.at(0, j))
			}
			logits[j] = float64(float32(acc))
		}
		if e.Sigmoid {
			for j, l := range logits {
				scores[j] = 1 / (1 + math.Exp(-l))
				choice[j] = scores[j]
				if sbias != nil {
					choice[j] += float64(sbias.at(0, j))
				}
			}
		} else {
			best := math.Inf(-1)
			for _, l := range logits {
				best = math.Max(best, l)
			}
			var sum float64
			for j, l := range logits {
				scores[j] = math.Exp(l - best)
				sum += scores[j]
			}
			for j := range scores {
				scores[j] /= sum
				choice[j] = scores[j]
			}
		}
		if e.Groups > 0 {
			limitGroups(choice, e.Groups, e.TopGroups, e.Sigmoid)
		}
		chosen := topK(choice, e.K)
		w := make([]float64, len(chosen))
		var total float64
		for i, j := range chosen {
			w[i] = scores[j]
			total += w[i]
		}
		for i := range w {
			if !e.NoRenormalize {
				w[i] /= total
			}
			if e.Scale != 0 {
				w[i] *= e.Scale
			}
		}
		acc := make([]float64, d)
		for i, j := range chosen {
			in := make([]float64, d)
			for c, v := range xr {
				in[c] = float64(v)
				if e.WeightInputs {
					in[c] = float64(float32(in[c] * w[i]))
				}
			}
			g := expertProduct(gate, gbias, j, f, in)
			u := expertProduct(up, ubias, j, f, in)
			h := make([]float64, f)
			for c := range h {
				if e.Clamped {
					gc := math.Min(g[c], e.Limit)
					uc := math.Max(math.Min(u[c], e.Limit), -e.Limit)
					h[c] = (uc + 1) * gc / (1 + math.Exp(-e.Alpha*gc))
				} else {
					h[c] = g[c] / (1 + math.Exp(-g[c])) * u[c]
				}
				h[c] = float64(float32(h[c]))
			}
			y := expertProduct(down, dbias, j, d, h)
			for c := range acc {
				if e.WeightInputs {
					acc[c] += y[c]
				} else {
					acc[c] += float64(float32(y[c] * w[i]))
				}
			}
		}
		for c, v := range acc {
			out.data[r*d+c] = float32(v)
		}
	}
	return out, nil
}

// expertProduct is expert j's block of a stack (rows j·n … j·n+n-1) times
// in, plus the expert's bias row.
func expertProduct(stack, bias *matrix, j, n int, in []float64) []float64 {
	out := make([]float64, n)
	for o := range n {
		var acc float64
		for i, v := range in {
			acc += v * float64(stack.at(j*n+o, i))
		}
		acc = float64(float32(acc))
		if bias != nil {
			acc = float64(float32(acc) + bias.at(j, o))
		}
		out[o] = acc
	}
	return out
}

// topK returns the indices of the k largest values, largest first, the
// lowest index first among equals, a NaN above every number.
func topK(v []float64, k int) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	above := func(a, b float64) bool {
		if a != a {
			return b == b
		}
		return b == b && a > b
	}
	sort.SliceStable(idx, func(i, j int) bool { return above(v[idx[i]], v[idx[j]]) })
	return idx[:k]
}

// limitGroups keeps the experts of the top groups of choice and sets the
// others to -Inf: a group scores its largest value, or under sigmoid
// scores the sum of its two largest.
func limitGroups(choice []float64, groups, top int, twoLargest bool) {
	n := len(choice) / groups
	score := make([]float64, groups)
	for g := range groups {
		seg := choice[g*n : (g+1)*n]
		if twoLargest && n >= 2 {
			best := topK(seg, 2)
			score[g] = seg[best[0]] + seg[best[1]]
		} else {
			score[g] = seg[topK(seg, 1)[0]]
		}
	}
	keep := map[int]bool{}
	for _, g := range topK(score, top) {
		keep[g] = true
	}
	for g := range groups {
		if !keep[g] {
			for i := g * n; i < (g+1)*n; i++ {
				choice[i] = math.Inf(-1)
			}
		}
	}
}
