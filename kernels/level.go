package kernels

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Level is a kernel dispatch level: which family of routines the products
// and row operations run. Higher levels need more of the CPU; every level
// computes the same integer block sums, so they differ only by float
// rounding.
type Level uint8

// The dispatch levels, lowest first.
const (
	LevelGo     Level = iota // portable Go, on every machine
	LevelAVX2                // AVX2, FMA and F16C assembly (amd64)
	LevelAVX512              // avx2 plus AVX-512 F/BW/VL and VNNI kernels (amd64)
	numLevels
)

var levelNames = [numLevels]string{"go", "avx2", "avx512"}

// String returns the level's name as POOT_KERNELS spells it: "go", "avx2"
// or "avx512".
func (l Level) String() string {
	if l < numLevels {
		return levelNames[l]
	}
	return fmt.Sprintf("Level(%d)", uint8(l))
}

// ErrLevel is returned (wrapped in an [*Error]) for a dispatch level that is
// unknown or that this CPU cannot run.
var ErrLevel = errors.New("kernel level not available")

// EnvVar is the environment variable read once at start-up to lower the
// dispatch level below the best the CPU supports (for testing and for
// comparing paths). It holds a level name; empty means the best. A lowered
// level is also a ceiling: [Levels] and [SetLevel] then behave as on a CPU
// whose best is that level, so the tests run only the paths up to it.
const EnvVar = "POOT_KERNELS"

var (
	bestLevel = detectLevel()
	level     Level
	ceiling   Level // the start-up level: bestLevel or lower by POOT_KERNELS
	envErr    error
	// useAsm and useAVX512 are the switches the hot loops read:
	// level >= LevelAVX2 and level >= LevelAVX512.
	useAsm, useAVX512 bool
)

func init() {
	l, err := levelFromEnv(os.Getenv(EnvVar), bestLevel)
	envErr = err
	ceiling = l
	setLevel(l)
}

func detectLevel() Level {
	if detectAVX2() && detectAVX512() {
		return LevelAVX512
	}
	if detectAVX2() {
		return LevelAVX2
	}
	return LevelGo
}

func setLevel(l Level) {
	level = l
	useAsm = l >= LevelAVX2
	useAVX512 = l >= LevelAVX512
}

// ParseLevel returns the level named s ("go", "avx2", "avx512"; case and surrounding
// space ignored). An unknown name is an [*Error] wrapping [ErrLevel].
func ParseLevel(s string) (Level, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for l, name := range levelNames {
		if s == name {
			return Level(l), nil
		}
	}
	return LevelGo, &Error{Op: "ParseLevel", Err: ErrLevel,
		Detail: fmt.Sprintf("unknown level %q, want one of %s", s, strings.Join(levelNames[:], ", "))}
}

// levelFromEnv turns the value of POOT_KERNELS into the level to run: the
// best when v is empty, the named level when the CPU has it, and otherwise
// the best together with an error saying why v was not used.
func levelFromEnv(v string, best Level) (Level, error) {
	if strings.TrimSpace(v) == "" {
		return best, nil
	}
	l, err := ParseLevel(v)
	if err != nil {
		return best, &Error{Op: EnvVar, Err: ErrLevel,
			Detail: fmt.Sprintf("%q is not a level (want one of %s); using %v", v, strings.Join(levelNames[:], ", "), best)}
	}
	if l > best {
		return best, &Error{Op: EnvVar, Err: ErrLevel,
			Detail: fmt.Sprintf("%q is not supported by this CPU (best is %v); using %v", v, best, best)}
	}
	return l, nil
}

// CurrentLevel returns the level the kernels run now.
func CurrentLevel() Level { return level }

// BestLevel returns the highest level this CPU supports, as detected with
// CPUID at start-up.
func BestLevel() Level { return bestLevel }

// Levels returns every level this process may run, lowest first: those
// the CPU supports, up to the one POOT_KERNELS chose at start-up. These are
// the levels a test runs its checks under.
func Levels() []Level {
	ls := make([]Level, 0, numLevels)
	for l := LevelGo; l <= ceiling; l++ {
		ls = append(ls, l)
	}
	return ls
}

// EnvError returns why the value of POOT_KERNELS was not used (an [*Error]
// wrapping [ErrLevel]), or nil when it was unset or honoured. A rejected
// value never stops the program: the kernels run at [BestLevel] instead.
func EnvError() error { return envErr }

// SetLevel switches the kernels to level l and returns a function restoring
// the previous level. A level the CPU lacks, one above the level
// POOT_KERNELS chose, or an unknown one is refused with an [*Error] wrapping
// [ErrLevel] and changes nothing (restore is then a no-op). It is meant for
// tests and benchmarks: it must not be called while kernels are running.
func SetLevel(l Level) (restore func(), err error) {
	if l >= numLevels || l > bestLevel {
		return func() {}, &Error{Op: "SetLevel", Err: ErrLevel,
			Detail: fmt.Sprintf("%v is not supported by this CPU (best is %v)", l, bestLevel)}
	}
	if l > ceiling {
		return func() {}, &Error{Op: "SetLevel", Err: ErrLevel,
			Detail: fmt.Sprintf("%v is above %s=%v", l, EnvVar, ceiling)}
	}
	prev := level
	setLevel(l)
	return func() { setLevel(prev) }, nil
}

// Features describes the kernels in use on this machine: the current
// level's name ("go", "avx2" or "avx512"), followed in parentheses by the best level
// when POOT_KERNELS lowered it, or by the rejection when POOT_KERNELS held a
// value that could not be used.
func Features() string {
	s := level.String()
	switch {
	case envErr != nil:
		s += " (" + envErr.Error() + ")"
	case level != bestLevel:
		s += fmt.Sprintf(" (best %v, lowered by %s)", bestLevel, EnvVar)
	}
	return s
}
