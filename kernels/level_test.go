package kernels_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pootlabs/poot/kernels"
)

func TestLevelFromEnv(t *testing.T) {
	best := kernels.BestLevel()
	for _, tc := range []struct {
		v    string
		best kernels.Level
		want kernels.Level
		bad  bool
	}{
		{"", best, best, false},
		{"  ", kernels.LevelAVX2, kernels.LevelAVX2, false},
		{"go", kernels.LevelAVX2, kernels.LevelGo, false},
		{" AVX2 ", kernels.LevelAVX2, kernels.LevelAVX2, false},
		{"avx2", kernels.LevelGo, kernels.LevelGo, true},
		{"avx512", kernels.LevelAVX512, kernels.LevelAVX512, false},
		{"avx512", kernels.LevelAVX2, kernels.LevelAVX2, true},
		{"avx2", kernels.LevelAVX512, kernels.LevelAVX2, false},
		{"sse9", kernels.LevelAVX2, kernels.LevelAVX2, true},
		{"sse9", kernels.LevelGo, kernels.LevelGo, true},
	} {
		l, err := kernels.LevelFromEnv(tc.v, tc.best)
		if l != tc.want || (err != nil) != tc.bad {
			t.Errorf("LevelFromEnv(%q, %v) = %v, %v; want %v, error %v", tc.v, tc.best, l, err, tc.want, tc.bad)
		}
		if err != nil {
			var ke *kernels.Error
			if !errors.Is(err, kernels.ErrLevel) || !errors.As(err, &ke) || ke.Op != kernels.EnvVar {
				t.Errorf("LevelFromEnv(%q): error %v is not a POOT_KERNELS ErrLevel", tc.v, err)
			}
			if !strings.Contains(err.Error(), "using "+tc.want.String()) {
				t.Errorf("LevelFromEnv(%q): error %q does not say the fallback", tc.v, err)
			}
		}
	}
}

func TestSetLevel(t *testing.T) {
	start := kernels.CurrentLevel()
	ls := kernels.Levels()
	if ls[0] != kernels.LevelGo || ls[len(ls)-1] > kernels.BestLevel() {
		t.Fatalf("Levels() = %v, best %v", ls, kernels.BestLevel())
	}
	if ls[len(ls)-1] != kernels.BestLevel() && os.Getenv(kernels.EnvVar) == "" {
		t.Fatalf("Levels() = %v without %s, best %v", ls, kernels.EnvVar, kernels.BestLevel())
	}
	for _, l := range ls {
		restore, err := kernels.SetLevel(l)
		if err != nil {
			t.Fatalf("SetLevel(%v): %v", l, err)
		}
		if kernels.CurrentLevel() != l || !strings.HasPrefix(kernels.Features(), l.String()) {
			t.Errorf("after SetLevel(%v): level %v, Features %q", l, kernels.CurrentLevel(), kernels.Features())
		}
		restore()
		if kernels.CurrentLevel() != start {
			t.Fatalf("restore left level %v, want %v", kernels.CurrentLevel(), start)
		}
	}
	for _, l := range []kernels.Level{ls[len(ls)-1] + 1, kernels.BestLevel() + 1, 200} {
		restore, err := kernels.SetLevel(l)
		restore()
		if !errors.Is(err, kernels.ErrLevel) || kernels.CurrentLevel() != start {
			t.Errorf("SetLevel(%v) = %v, level now %v", l, err, kernels.CurrentLevel())
		}
	}
}

func TestParseLevel(t *testing.T) {
	for _, l := range kernels.Levels() {
		if got, err := kernels.ParseLevel(l.String()); got != l || err != nil {
			t.Errorf("ParseLevel(%q) = %v, %v", l.String(), got, err)
		}
	}
	if _, err := kernels.ParseLevel("avx9"); !errors.Is(err, kernels.ErrLevel) {
		t.Errorf("ParseLevel(avx9) error %v", err)
	}
}
