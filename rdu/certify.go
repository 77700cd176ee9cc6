package rdu

import (
	"errors"
	"fmt"
	"math"

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
	steps = min(steps, man.Deployment.Ctx/t)
	if vocab < 1 || steps < 1 {
		return c, fmt.Errorf("rdu: certifying: a vocabulary of %d and %d steps of %d tokens in a context of %d", vocab, steps, t, man.Deployment.Ctx)
	}
	for s := range steps {
		toks, pos := make([]int32, t), make([]int32, t)
		for i := range t {
			p := s*t + i
			toks[i] = int32((p*7919 + 1) % vocab)
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
		var got []float32
		for i := range t {
			r, err := m.Step(int(toks[i]), int(pos[i]))
			if err != nil {
				return c, err
			}
			if !man.LastOnly || i == t-1 {
				got = append(got, r.Logits...)
			}
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
