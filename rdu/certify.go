package rdu

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/sim"
	"github.com/pootlabs/poot/tensor"
)

// ErrCertify is wrapped by the error of a bundle whose simulation does not
// agree with the oracle.
var ErrCertify = errors.New("the simulated bundle disagrees with the oracle")

// DefaultTolerance bounds the difference between a simulated logit and
// the oracle's, relative to the largest logit's magnitude (at least 1).
const DefaultTolerance = 1e-5

// Certificate says how a bundle was certified: its composition checked,
// then Steps runs of the simulated bundle against the oracle on the graph
// it was lowered from, from an empty cache, with the largest difference
// between their logits.
type Certificate struct {
	Steps     int
	Tokens    []int32
	MaxDiff   float64
	MaxLogit  float64
	Tolerance float64
}

// Certify runs the bundle b, lowered from g, on the simulator (reading its
// weights through w) and g on the oracle (with consts), from empty caches,
// over steps runs of g's token count (the first tokens of a fixed
// sequence), and compares every logit the step returns. A difference
// beyond tol (relative to the largest logit's magnitude, at least 1) is an
// error wrapping ErrCertify; so is a bundle that does not compose.
func Certify(b *bundle.Bundle, g *poot.Graph, consts interp.Consts, w sim.Weights, steps int, tol float64) (Certificate, error) {
	m, err := sim.New(b, w)
	if err != nil {
		return Certificate{Tolerance: tol}, err
	}
	return CertifyMachine(m, g, consts, steps, tol)
}

// CertifyMachine is Certify on a machine already loaded; it leaves the
// machine's caches as the runs left them.
func CertifyMachine(m *sim.Machine, g *poot.Graph, consts interp.Consts, steps int, tol float64) (Certificate, error) {
	c := Certificate{Tolerance: tol}
	b := m.Bundle()
	m.Reset()
	prog, err := interp.Compile(g, consts)
	if err != nil {
		return c, fmt.Errorf("rdu: certifying against the oracle: %w", err)
	}
	state, err := interp.NewState(g)
	if err != nil {
		return c, err
	}
	man := b.Manifest
	t := man.Deployment.Tokens
	vocab := 0
	for _, id := range g.Inputs(poot.Slot) {
		if v := g.Value(id); v.Slot == poot.SlotToken {
			vocab = int(v.Max) + 1
		}
	}
	seqs := max(man.Deployment.Batch, 1)
	per := t / seqs // tokens a sequence
	steps = min(steps, (man.Deployment.Ctx-seqs+1)/per)
	if vocab < 1 || steps < 1 {
		return c, fmt.Errorf("rdu: certifying: a vocabulary of %d and %d steps of %d tokens in a context of %d", vocab, steps, t, man.Deployment.Ctx)
	}
	for s := range steps {
		toks, pos := make([]int32, t), make([]int32, t)
		for i := range t {
			// Sequence i/per starts i/per positions later than the one
			// before it, with tokens of its own.
			p := s*per + i%per + i/per
			toks[i] = int32((p*7919 + 1 + 31*(i/per)) % vocab)
			pos[i] = int32(p)
		}
		c.Tokens = append(c.Tokens, toks...)
		tt, err := tensor.FromI32(poot.Shape{t}, toks)
		if err != nil {
			return c, err
		}
		pt, err := tensor.FromI32(poot.Shape{t}, pos)
		if err != nil {
			return c, err
		}
		out, err := prog.Run(interp.Slots{"token": tt, "pos": pt}, state)
		if err != nil {
			return c, fmt.Errorf("rdu: certifying: the oracle: %w", err)
		}
		want := out[0].F32()
		got, err := runStep(m, toks, pos)
		if err != nil {
			return c, err
		}
		if len(got) != len(want) {
			return c, fmt.Errorf("%w: %d logits simulated, the oracle returns %d", ErrCertify, len(got), len(want))
		}
		for i, x := range want {
			c.MaxLogit = math.Max(c.MaxLogit, math.Abs(float64(x)))
			d := math.Abs(float64(x) - float64(got[i]))
			if d != d {
				d = math.Inf(1)
			}
			c.MaxDiff = math.Max(c.MaxDiff, d)
		}
		c.Steps++
	}
	if c.MaxDiff > tol*math.Max(1, c.MaxLogit) {
		return c, fmt.Errorf("%w: logits differ by %.3g (largest logit %.3g, tolerance %.3g) over %d steps", ErrCertify, c.MaxDiff, c.MaxLogit, tol, c.Steps)
	}
	return c, nil
}

// KindCertificate says how one kind's program was certified by itself.
type KindCertificate struct {
	Kind    string
	Layer   int
	Steps   int
	MaxDiff float64
	MaxAbs  float64
}

type kindBrand struct{}

// CertifyKinds certifies each kind's program once, by itself, whatever the
// depth of the model: the program of the kind's first layer, run on the
// simulator, against the oracle on that layer's own equations (and the
// step tables they read), over steps positions from empty caches with
// pseudo-random hidden states. A difference beyond tol (relative to the
// largest value, at least 1) is an error wrapping ErrCertify.
func CertifyKinds(m *sim.Machine, g *poot.Graph, consts interp.Consts, steps int, tol float64) ([]KindCertificate, error) {
	v, flow, err := analysis(g)
	if err != nil {
		return nil, err
	}
	man := m.Bundle().Manifest
	m.Reset()
	var out []KindCertificate
	for _, k := range man.Kinds {
		l := k.Layers[0]
		sub, err := v.layerGraph(l, flow.out[1+l], man.Deployment.Ctx)
		if err != nil {
			return nil, err
		}
		used := interp.ConstMap{}
		for _, id := range sub.Inputs(poot.Const) {
			name := sub.Value(id).Name
			t, ok := consts.Lookup(name)
			if !ok {
				return nil, fmt.Errorf("rdu: certifying %s: no constant %q", k.Name, name)
			}
			used[name] = t
		}
		prog, err := interp.Compile(sub, used)
		if err != nil {
			return nil, fmt.Errorf("rdu: certifying %s against the oracle: %w", k.Name, err)
		}
		state, err := interp.NewState(sub)
		if err != nil {
			return nil, err
		}
		hidID, ok := sub.Lookup("hidden")
		if !ok {
			return nil, fmt.Errorf("rdu: certifying %s: the layer reads no hidden state", k.Name)
		}
		hid := sub.Type(hidID)
		t, d := hid.Shape[0], hid.Shape[1]
		c := KindCertificate{Kind: k.Name, Layer: l}
		seed := uint32(2166136261)
		seqs := max(man.Deployment.Batch, 1)
		for s := 0; s < steps && (s+1)*t/seqs+seqs-1 <= man.Deployment.Ctx; s++ {
			x := make([]float32, t*d)
			for i := range x {
				seed = seed*1664525 + 1013904223
				x[i] = float32(seed>>8)/float32(1<<24)*2 - 1
			}
			pos := make([]int32, t)
			for i := range pos {
				per := t / seqs
				pos[i] = int32(s*per + i%per + i/per)
			}
			xt, err := tensor.FromF32(hid.Shape, x)
			if err != nil {
				return nil, err
			}
			pt, err := tensor.FromI32(poot.Shape{t}, pos)
			if err != nil {
				return nil, err
			}
			res, err := prog.Run(interp.Slots{"hidden": xt, "pos": pt}, state)
			if err != nil {
				return nil, fmt.Errorf("rdu: certifying %s: the oracle: %w", k.Name, err)
			}
			want := res[0].F32()
			got := make([]float32, len(x))
			for _, grp := range runs(man, t) {
				hid, ps := make([]float32, 0, len(grp)*d), make([]int, len(grp))
				for j, i := range grp {
					hid, ps[j] = append(hid, x[i*d:(i+1)*d]...), int(pos[i])
				}
				rows, err := m.RunLayer(l, hid, ps)
				if err != nil {
					return nil, err
				}
				if len(rows) != len(hid) {
					return nil, fmt.Errorf("%w: kind %s leaves %d values for %d", ErrCertify, k.Name, len(rows), len(hid))
				}
				for j, i := range grp {
					copy(got[i*d:(i+1)*d], rows[j*d:(j+1)*d])
				}
			}
			if len(got) != len(want) {
				return nil, fmt.Errorf("%w: kind %s leaves %d values, the oracle %d", ErrCertify, k.Name, len(got), len(want))
			}
			for j, g := range got {
				w := float64(want[j])
				c.MaxAbs = math.Max(c.MaxAbs, math.Abs(w))
				diff := math.Abs(w - float64(g))
				if diff != diff {
					diff = math.Inf(1)
				}
				c.MaxDiff = math.Max(c.MaxDiff, diff)
			}
			c.Steps++
		}
		if c.Steps == 0 {
			return nil, fmt.Errorf("rdu: certifying %s: no step fits a context of %d", k.Name, man.Deployment.Ctx)
		}
		if c.MaxDiff > tol*math.Max(1, c.MaxAbs) {
			return nil, fmt.Errorf("%w: kind %s (layer %d) differs from the oracle by %.3g (largest value %.3g)", ErrCertify, k.Name, l, c.MaxDiff, c.MaxAbs)
		}
		out = append(out, c)
	}
	m.Reset()
	return out, nil
}

// lastLowered keeps the analysis of the graph Lower last finished, which
// certifying its bundle reads again: reading a graph is what grows with the
// model's depth, and it is read once. Only Lower writes a view; it is read
// only after.
var lastLowered struct {
	sync.Mutex
	g    *poot.Graph
	v    *stepView
	flow *flowInfo
}

func remember(g *poot.Graph, v *stepView, flow *flowInfo) {
	lastLowered.Lock()
	defer lastLowered.Unlock()
	lastLowered.g, lastLowered.v, lastLowered.flow = g, v, flow
}

// analysis returns g's analysis and flow, the last lowering's when it was
// of g.
func analysis(g *poot.Graph) (*stepView, *flowInfo, error) {
	lastLowered.Lock()
	if lastLowered.g == g && g != nil {
		defer lastLowered.Unlock()
		return lastLowered.v, lastLowered.flow, nil
	}
	lastLowered.Unlock()
	v, err := analyse(g)
	if err != nil {
		return nil, nil, err
	}
	flow, err := v.flow()
	return v, flow, err
}

// layerGraph is layer l's equations as a graph of their own: the hidden
// state a slot "hidden", the layer's weights and caches, the step tables
// it reads (computed from the positions as the step computes them), and
// the layer's result as the output, its caches carried.
func (v *stepView) layerGraph(l int, result poot.ValueID, ctx int) (*poot.Graph, error) {
	inSet := map[int]bool{}
	var cone func(id poot.ValueID)
	cone = func(id poot.ValueID) {
		p := v.prod[id]
		if p < 0 || inSet[p] {
			return
		}
		inSet[p] = true
		for _, in := range v.eqns[p].Inputs {
			cone(in)
		}
	}
	for _, i := range v.layers[l] {
		inSet[i] = true
	}
	for _, i := range v.layers[l] {
		for _, in := range v.eqns[i].Inputs {
			if v.table[in] {
				cone(in)
			}
		}
	}
	b := poot.NewBuilder[kindBrand](poot.Limits{})
	h := map[poot.ValueID]poot.Traced[kindBrand]{}
	var carries []poot.StatePair
	pairs := map[poot.ValueID]poot.ValueID{}
	for _, s := range v.g.States() {
		pairs[s.In] = s.Out
	}
	input := func(id poot.ValueID) error {
		if _, ok := h[id]; ok {
			return nil
		}
		val := v.g.Value(id)
		switch {
		case val.Kind == poot.Const:
			h[id] = b.Constant(val.Name, val.Type)
		case val.Kind == poot.State:
			h[id] = b.StateInput(val.Name, val.Type)
			carries = append(carries, poot.StatePair{In: id, Out: pairs[id]})
		case val.Kind == poot.Slot && val.Slot == poot.SlotPos:
			h[id] = b.Slot(poot.SlotPos, val.Type.Shape, 0, int64(ctx-1))
		case val.Kind == poot.Device:
			h[id] = b.SlotNamed("hidden", val.Type)
		default:
			return fmt.Errorf("rdu: layer %d reads %v %q", l, val.Kind, val.Name)
		}
		return nil
	}
	for i, e := range v.eqns {
		if !inSet[i] {
			continue
		}
		in := make([]poot.Traced[kindBrand], len(e.Inputs))
		for j, x := range e.Inputs {
			if p := v.prod[x]; p < 0 || !inSet[p] {
				if err := input(x); err != nil {
					return nil, err
				}
			}
			in[j] = h[x]
		}
		h[e.Out] = b.Apply(e.Op, e.Params, in...)
	}
	outs := poot.Out(h[result])
	for _, c := range carries {
		o, ok := h[c.Out]
		if !ok {
			return nil, fmt.Errorf("rdu: layer %d's state %q is carried from outside the layer", l, v.g.Value(c.In).Name)
		}
		outs = outs.WithState(h[c.In], o)
	}
	return b.Finish(outs)
}

// runs cuts a traced step's n tokens into the bundle's runs, each the
// indices of the tokens it takes in the order of its rows: a decode bundle
// a token a run, a prefill bundle the chunk in one run, a batched bundle
// the t-th token of every sequence in run t (a step's tokens are its
// sequences' in order, n/B each).
func runs(man bundle.Manifest, n int) [][]int {
	var out [][]int
	switch man.Deployment.Kind {
	case Prefill:
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return [][]int{all}
	case Batched:
		b := man.Deployment.Batch
		for t := range n / b {
			grp := make([]int, b)
			for s := range grp {
				grp[s] = s*(n/b) + t
			}
			out = append(out, grp)
		}
		return out
	}
	for i := range n {
		out = append(out, []int{i})
	}
	return out
}

// runStep runs a traced step's tokens at their positions through the
// machine, run by run, and returns the logits in the step's order: a row a
// token, or only each sequence's last when the step wants those.
func runStep(m *sim.Machine, toks, pos []int32) ([]float32, error) {
	man := m.Bundle().Manifest
	rows := make([][]float32, len(toks))
	var last []float32
	for _, grp := range runs(man, len(toks)) {
		tk, ps := make([]int, len(grp)), make([]int, len(grp))
		for j, i := range grp {
			tk[j], ps[j] = int(toks[i]), int(pos[i])
		}
		r, err := m.Run(tk, ps)
		if err != nil {
			return nil, err
		}
		if last = r.Logits; man.Deployment.Kind == Prefill {
			return last, nil
		}
		v := len(r.Logits) / len(grp)
		for j, i := range grp {
			rows[i] = r.Logits[j*v : (j+1)*v]
		}
	}
	if man.LastOnly {
		return last, nil
	}
	var out []float32
	for _, r := range rows {
		out = append(out, r...)
	}
	return out, nil
}
