package driver

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/pootlabs/poot/kernels"
)

// SamplerOptions configure token sampling. The stages run in llama.cpp's
// default order: repetition penalty, top-k, top-p, min-p, temperature,
// then a draw from the softmax. The zero value samples greedily.
type SamplerOptions struct {
	// Temperature divides the logits before the draw; zero or less picks
	// the most likely token (greedy, the lowest id on ties).
	Temperature float64
	// TopK keeps the K most likely tokens; zero or less keeps all.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probabilities
	// add up to at least P; zero or one or more keeps all.
	TopP float64
	// MinP keeps the tokens whose probability is at least MinP times the
	// most likely token's; zero keeps all.
	MinP float64
	// RepeatPenalty penalizes the tokens among the last RepeatLastN:
	// a positive logit is divided by it, a negative one multiplied by it.
	// Zero or one means no penalty.
	RepeatPenalty float64
	// RepeatLastN is how many recent tokens the penalty looks at; zero means
	// DefaultRepeatLastN, a negative value the whole history.
	RepeatLastN int
	// Seed seeds the draw; equal seeds give equal samples.
	Seed uint64
}

// DefaultRepeatLastN is the penalty window when RepeatLastN is zero
// (llama.cpp's default).
const DefaultRepeatLastN = 64

// Check validates the options.
func (o SamplerOptions) Check() error {
	bad := func(name string, v float64, want string) error {
		return &OptionError{Option: name, Detail: fmt.Sprintf("%v: want %s", v, want)}
	}
	switch {
	case math.IsNaN(o.Temperature) || math.IsInf(o.Temperature, 0):
		return bad("temperature", o.Temperature, "a finite number")
	case math.IsNaN(o.TopP) || o.TopP < 0:
		return bad("top-p", o.TopP, "a number in [0, 1]")
	case math.IsNaN(o.MinP) || o.MinP < 0 || o.MinP > 1:
		return bad("min-p", o.MinP, "a number in [0, 1]")
	case math.IsNaN(o.RepeatPenalty) || math.IsInf(o.RepeatPenalty, 0) || o.RepeatPenalty < 0:
		return bad("repeat-penalty", o.RepeatPenalty, "a positive number")
	}
	return nil
}

// Sampler picks the next token from a step's logits.
type Sampler struct {
	opts SamplerOptions
	rng  *rand.Rand
	cand []candidate
	seen map[int32]bool
}

type candidate struct {
	id    int32
	logit float32
	p     float64
}

// NewSampler returns a sampler with the given options (see Check).
func NewSampler(o SamplerOptions) *Sampler {
	return &Sampler{opts: o, rng: rand.New(rand.NewPCG(o.Seed, 0x706f6f74)), seen: map[int32]bool{}}
}

// Sample returns the next token given the logits of the last position and
// the tokens so far (prompt and generated, for the repetition penalty).
// logits is not modified. It returns -1 for empty logits.
func (s *Sampler) Sample(logits []float32, history []int32) int32 {
	if len(logits) == 0 {
		return -1
	}
	o := s.opts
	penalize := o.RepeatPenalty > 0 && o.RepeatPenalty != 1
	if !penalize && o.Temperature <= 0 {
		return argmax(logits)
	}
	s.cand = s.cand[:0]
	for i, l := range logits {
		s.cand = append(s.cand, candidate{id: int32(i), logit: l})
	}
	if penalize {
		n := o.RepeatLastN
		if n == 0 {
			n = DefaultRepeatLastN
		}
		recent := history
		if n > 0 && len(recent) > n {
			recent = recent[len(recent)-n:]
		}
		clear(s.seen)
		for _, id := range recent {
			if id < 0 || int(id) >= len(s.cand) || s.seen[id] {
				continue
			}
			s.seen[id] = true
			c := &s.cand[id]
			if c.logit > 0 {
				c.logit = float32(float64(c.logit) / o.RepeatPenalty)
			} else {
				c.logit = float32(float64(c.logit) * o.RepeatPenalty)
			}
		}
	}
	if o.Temperature <= 0 {
		best := 0
		for i, c := range s.cand {
			if c.logit > s.cand[best].logit {
				best = i
			}
		}
		return s.cand[best].id
	}
	c := s.cand
	if o.TopK > 0 || (o.TopP > 0 && o.TopP < 1) {
		// Most likely first; the lower id first on ties, so results do
		// not depend on the sort.
		slices.SortFunc(c, func(a, b candidate) int {
			if a.logit != b.logit {
				return cmp.Compare(b.logit, a.logit)
			}
			return cmp.Compare(a.id, b.id)
		})
	}
	if o.TopK > 0 && o.TopK < len(c) {
		c = c[:o.TopK]
	}
	if o.TopP > 0 && o.TopP < 1 {
		softmax(c, 1)
		sum := 0.0
		for i := range c {
			sum += c[i].p
			if sum >= o.TopP {
				c = c[:i+1]
				break
			}
		}
	}
	if o.MinP > 0 {
		maxLogit := c[0].logit
		for _, x := range c {
			maxLogit = max(maxLogit, x.logit)
		}
		// p_i >= minP * p_max  <=>  l_i >= l_max + ln(minP)
		floor := float64(maxLogit) + math.Log(o.MinP)
		kept := c[:0]
		for _, x := range c {
			if float64(x.logit) >= floor {
				kept = append(kept, x)
			}
		}
		c = kept
	}
	softmax(c, o.Temperature)
	r := s.rng.Float64()
	sum := 0.0
	for _, x := range c {
		sum += x.p
		if r < sum {
			return x.id
		}
	}
	return c[len(c)-1].id
}

// softmax sets p to the softmax of logit/temp over c.
func softmax(c []candidate, temp float64) {
	m := math.Inf(-1)
	for _, x := range c {
		m = max(m, float64(x.logit)/temp)
	}
	sum := 0.0
	for i := range c {
		c[i].p = math.Exp(float64(c[i].logit)/temp - m)
		sum += c[i].p
	}
	for i := range c {
		c[i].p /= sum
	}
}

// argmax returns the index of the largest logit, the lowest on ties. NaNs
// never win.
func argmax(v []float32) int32 { return int32(kernels.ArgMax(v)) }
