package driver

import (
	"math"
	"testing"
)

func TestGreedyTiesLowestID(t *testing.T) {
	s := NewSampler(SamplerOptions{})
	for _, c := range []struct {
		logits []float32
		want   int32
	}{
		{[]float32{1, 3, 3, 2}, 1},
		{[]float32{5, 5, 5}, 0},
		{[]float32{float32(math.NaN()), 1, 2, 2}, 2},
		{[]float32{-1}, 0},
	} {
		if got := s.Sample(c.logits, nil); got != c.want {
			t.Errorf("greedy %v: %d, want %d", c.logits, got, c.want)
		}
	}
	if got := s.Sample(nil, nil); got != -1 {
		t.Errorf("empty logits: %d, want -1", got)
	}
}

func TestSeededReproducible(t *testing.T) {
	logits := make([]float32, 100)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i)))
	}
	o := SamplerOptions{Temperature: 1.5, TopK: 50, TopP: 0.95, MinP: 0.01, Seed: 42}
	a, b := NewSampler(o), NewSampler(o)
	o.Seed = 43
	c := NewSampler(o)
	same := true
	for range 200 {
		x, y, z := a.Sample(logits, nil), b.Sample(logits, nil), c.Sample(logits, nil)
		if x != y {
			t.Fatalf("equal seeds differ: %d vs %d", x, y)
		}
		same = same && x == z
	}
	if same {
		t.Error("seeds 42 and 43 gave the same 200 samples")
	}
}

// draws samples n times and returns the frequency of each id.
func draws(o SamplerOptions, logits []float32, history []int32, n int) []float64 {
	s := NewSampler(o)
	f := make([]float64, len(logits))
	for range n {
		f[s.Sample(logits, history)]++
	}
	for i := range f {
		f[i] /= float64(n)
	}
	return f
}

func TestSamplingStages(t *testing.T) {
	// Probabilities 0.1, 0.2, 0.3, 0.4 at temperature 1.
	logits := []float32{float32(math.Log(0.1)), float32(math.Log(0.2)), float32(math.Log(0.3)), float32(math.Log(0.4))}
	near := func(name string, got, want []float64) {
		t.Helper()
		for i := range want {
			if math.Abs(got[i]-want[i]) > 0.02 {
				t.Errorf("%s: frequencies %.3f, want %.3f", name, got, want)
				return
			}
		}
	}
	const n = 20000
	near("temperature 1", draws(SamplerOptions{Temperature: 1, Seed: 1}, logits, nil, n), []float64{0.1, 0.2, 0.3, 0.4})
	// Temperature 0.5 squares the probabilities: 1, 4, 9, 16 over 30.
	near("temperature 0.5", draws(SamplerOptions{Temperature: 0.5, Seed: 2}, logits, nil, n), []float64{1.0 / 30, 4.0 / 30, 9.0 / 30, 16.0 / 30})
	// Top-k 2 keeps 0.3 and 0.4.
	near("top-k 2", draws(SamplerOptions{Temperature: 1, TopK: 2, Seed: 3}, logits, nil, n), []float64{0, 0, 3.0 / 7, 4.0 / 7})
	// Top-p 0.6: 0.4 then 0.3 reaches 0.7 >= 0.6, so two tokens stay.
	near("top-p 0.6", draws(SamplerOptions{Temperature: 1, TopP: 0.6, Seed: 4}, logits, nil, n), []float64{0, 0, 3.0 / 7, 4.0 / 7})
	// Top-p 0.39: the first token alone reaches it.
	near("top-p 0.39", draws(SamplerOptions{Temperature: 1, TopP: 0.39, Seed: 5}, logits, nil, n), []float64{0, 0, 0, 1})
	// Min-p 0.45: tokens at least 0.45 times as likely as 0.4 (0.2 and up).
	near("min-p 0.45", draws(SamplerOptions{Temperature: 1, MinP: 0.45, Seed: 6}, logits, nil, n), []float64{0, 2.0 / 9, 3.0 / 9, 4.0 / 9})
	// Top-k 1 is greedy at any temperature.
	near("top-k 1", draws(SamplerOptions{Temperature: 5, TopK: 1, Seed: 7}, logits, nil, 100), []float64{0, 0, 0, 1})
}

func TestRepeatPenalty(t *testing.T) {
	// Positive logits are divided: 2/2 = 1 < 1.5, so token 1 wins.
	s := NewSampler(SamplerOptions{RepeatPenalty: 2})
	if got := s.Sample([]float32{2, 1.5}, []int32{0}); got != 1 {
		t.Errorf("positive logit: %d, want 1", got)
	}
	// Negative logits are multiplied: -1*2 = -2 < -1.5.
	if got := s.Sample([]float32{-1, -1.5}, []int32{0}); got != 1 {
		t.Errorf("negative logit: %d, want 1", got)
	}
	// A token seen many times is penalized once.
	if got := s.Sample([]float32{2, 0.9}, []int32{0, 0, 0}); got != 0 {
		t.Errorf("repeated token penalized more than once: %d, want 0", got)
	}
	// Outside the window: no penalty.
	s = NewSampler(SamplerOptions{RepeatPenalty: 2, RepeatLastN: 1})
	if got := s.Sample([]float32{2, 1.5}, []int32{0, 1}); got != 0 {
		t.Errorf("token outside the window penalized: %d, want 0", got)
	}
	// Out-of-range history entries are ignored.
	if got := s.Sample([]float32{2, 1.5}, []int32{-5, 99}); got != 0 {
		t.Errorf("bad history changed the pick: %d", got)
	}
}

func TestSamplerCheck(t *testing.T) {
	for _, o := range []SamplerOptions{
		{Temperature: math.NaN()}, {TopP: -0.1}, {MinP: 1.5}, {RepeatPenalty: -1}, {Temperature: math.Inf(1)},
	} {
		if o.Check() == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if err := (SamplerOptions{Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.1}).Check(); err != nil {
		t.Error(err)
	}
}

func TestStopFilter(t *testing.T) {
	cases := []struct {
		stops  []string
		pieces []string
		want   string
		hit    bool
	}{
		{nil, []string{"Hello", " world"}, "Hello world", false},
		{[]string{"o w"}, []string{"Hel", "lo w", "orld"}, "Hell", true},
		{[]string{"o w"}, []string{"Hel", "lo", " ", "w"}, "Hell", true},
		{[]string{"xyz"}, []string{"ab", "x", "y", "q"}, "abxyq", false},
		{[]string{"END", "D"}, []string{"the EN", "D"}, "the ", true}, // the earliest stop wins
		{[]string{"D", "xEND"}, []string{"the EN", "D"}, "the EN", true},
		{[]string{""}, []string{"a"}, "a", false},
	}
	for _, c := range cases {
		f := stopFilter{stops: c.stops}
		got, hit := "", false
		for _, p := range c.pieces {
			out, h := f.push(p)
			got += out
			if h {
				hit = true
				break
			}
		}
		if !hit {
			got += f.flush()
		}
		if got != c.want || hit != c.hit {
			t.Errorf("stops %q pieces %q: %q %v, want %q %v", c.stops, c.pieces, got, hit, c.want, c.hit)
		}
	}
}
