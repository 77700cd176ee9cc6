package kernels_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pootlabs/poot/kernels"
)

// TestPoolCompletes checks that Run returns only after every chunk has
// finished, over loops that alternate between finishing within the pool's
// spin and outlasting it (so that the caller parks), some after a pause
// longer than the workers' spin (so that they park and must be woken). A
// completion signal left over from an earlier loop once let Run return
// while workers were still inside their chunks.
func TestPoolCompletes(t *testing.T) {
	loops := 1500
	if testing.Short() {
		loops = 300
	}
	p := kernels.NewPool(6) // more workers than cores: workers get preempted
	defer p.Close()
	const n = 48
	var done [n]atomic.Bool
	for loop := range loops {
		long := loop%3 == 2
		if loop%50 == 49 {
			time.Sleep(3 * time.Millisecond)
		}
		p.Run(n, func(lo, hi int) {
			if long {
				start := time.Now()
				for time.Since(start) < 150*time.Microsecond {
				}
			}
			for i := lo; i < hi; i++ {
				done[i].Store(true)
			}
		})
		for i := range done {
			if !done[i].Swap(false) {
				t.Fatalf("loop %d: Run returned before chunk %d finished", loop, i)
			}
		}
	}
}

// TestPoolLateSignal holds the last worker of every loop between counting
// itself done and signalling, long enough for the caller of the next loop
// to park: that late signal must not end the next loop. The protocol this
// replaced let it, and the caller then replaced the loop's function while
// the worker was reading it; the race detector (go test -race) reports
// that on the first loops, and the checks below catch chunks cut short.
func TestPoolLateSignal(t *testing.T) {
	loops := 300
	if testing.Short() {
		loops = 60
	}
	p := kernels.NewPoolFinishing(2, func() { time.Sleep(time.Millisecond) })
	defer p.Close()
	const n = 64
	var done [n]atomic.Bool
	for loop := range loops {
		p.Run(n, func(lo, hi int) {
			start := time.Now()
			for time.Since(start) < 20*time.Microsecond {
			}
			for i := lo; i < hi; i++ {
				if done[i].Swap(true) {
					t.Errorf("loop %d: index %d ran twice", loop, i)
				}
			}
		})
		for i := range done {
			if !done[i].Swap(false) {
				t.Fatalf("loop %d: Run returned before index %d was done", loop, i)
			}
		}
	}
}

// TestPoolPanicReachesCaller checks that a panic in a loop body, on
// whichever goroutine ran the chunk, comes out of Run on the caller (so a
// recover there sees it) after the other chunks have stopped, and that the
// pool runs ordinary loops afterwards.
func TestPoolPanicReachesCaller(t *testing.T) {
	p := kernels.NewPool(4)
	defer p.Close()
	const n = 64
	for bad := range n {
		got := func() (r any) {
			defer func() { r = recover() }()
			p.Run(n, func(lo, hi int) {
				if lo <= bad && bad < hi {
					panic(bad)
				}
			})
			return nil
		}()
		if got != bad {
			t.Fatalf("chunk holding %d panicked; Run's caller recovered %v", bad, got)
		}
		var count atomic.Int64
		p.Run(n, func(lo, hi int) { count.Add(int64(hi - lo)) })
		if count.Load() != n {
			t.Fatalf("after a panicking loop, the next loop covered %d of %d indices", count.Load(), n)
		}
	}
}

// TestPoolRunSplit: RunSplit covers [0, n) once, in min(parts, n) chunks
// whose sizes differ by at most one, for every pool size, count and
// length tried (the naive check: count each index and each chunk).
func TestPoolRunSplit(t *testing.T) {
	for _, workers := range []int{1, 2, 3} {
		p := kernels.NewPool(workers)
		for _, n := range []int{0, 1, 2, 5, 48, 97, 2048} {
			for _, parts := range []int{0, 1, 2, 3, 8, 100} {
				hits := make([]atomic.Int32, n)
				var chunks atomic.Int32
				var lmin, lmax atomic.Int64
				lmin.Store(int64(n + 1))
				p.RunSplit(n, parts, func(lo, hi int) {
					chunks.Add(1)
					for l := int64(hi - lo); ; {
						if m := lmin.Load(); l >= m || lmin.CompareAndSwap(m, l) {
							break
						}
					}
					for l := int64(hi - lo); ; {
						if m := lmax.Load(); l <= m || lmax.CompareAndSwap(m, l) {
							break
						}
					}
					for i := lo; i < hi; i++ {
						hits[i].Add(1)
					}
				})
				for i := range hits {
					if h := hits[i].Load(); h != 1 {
						t.Fatalf("%d workers, n %d, %d parts: index %d run %d times", workers, n, parts, i, h)
					}
				}
				want := int32(min(max(parts, 1), n))
				if workers == 1 && n > 0 {
					want = 1
				}
				if got := chunks.Load(); got != want {
					t.Fatalf("%d workers, n %d, %d parts: %d chunks, want %d", workers, n, parts, got, want)
				}
				if n > 0 && lmax.Load()-lmin.Load() > 1 {
					t.Fatalf("%d workers, n %d, %d parts: chunk sizes %d to %d", workers, n, parts, lmin.Load(), lmax.Load())
				}
			}
		}
		p.Close()
	}
}

// TestPoolRunGrain: RunGrain covers [0, n) once, in min(4·workers,
// ceil(n/grain)) chunks that start at multiples of grain and hold numbers
// of grains differing by at most one (the last grain may be short).
func TestPoolRunGrain(t *testing.T) {
	for _, workers := range []int{1, 2, 3} {
		p := kernels.NewPool(workers)
		for _, n := range []int{0, 1, 5, 47, 48, 97, 2048, 8192} {
			for _, grain := range []int{1, 6, 48} {
				what := fmt.Sprintf("%d workers, n %d, grain %d", workers, n, grain)
				spans := chunks(t, what, n, func(fn func(lo, hi int)) { p.RunGrain(n, grain, fn) })
				want := min(4*workers, (n+grain-1)/grain)
				if workers == 1 {
					want = min(n, 1)
				}
				if len(spans) != want {
					t.Fatalf("%s: %d chunks, want %d", what, len(spans), want)
				}
				gmin, gmax := n+1, 0
				for _, s := range spans {
					if s[0]%grain != 0 {
						t.Fatalf("%s: a chunk starts at %d", what, s[0])
					}
					g := (s[1] - s[0] + grain - 1) / grain
					gmin, gmax = min(gmin, g), max(gmax, g)
				}
				if workers > 1 && gmax-gmin > 1 {
					t.Fatalf("%s: chunks of %d to %d grains", what, gmin, gmax)
				}
			}
		}
		p.Close()
	}
}

// TestPoolRunGuided: RunGuided covers [0, n) once, in the chunks that a
// plain walk of its rule gives (the pool computes each chunk from its
// index alone): over whole grains, rounds in which the workers split
// half of what is left evenly, while each would get at least least
// grains, then the rest in equal chunks of least grains or more.
func TestPoolRunGuided(t *testing.T) {
	want := func(n, grain, w, least int) [][2]int {
		if w == 1 || n <= least*grain {
			return [][2]int{{0, n}}
		}
		var spans [][2]int
		add := func(lo, hi int) { spans = append(spans, [2]int{min(lo*grain, n), min(hi*grain, n)}) }
		start, rest := 0, (n+grain-1)/grain
		for (rest-rest/2)/w >= least {
			half := rest - rest/2
			for j := range w {
				add(start+half*j/w, start+half*(j+1)/w)
			}
			start, rest = start+half, rest/2
		}
		k := max(rest/least, 1)
		for j := range k {
			add(start+rest*j/k, start+rest*(j+1)/k)
		}
		return spans
	}
	for _, workers := range []int{1, 2, 3} {
		p := kernels.NewPool(workers)
		for _, n := range []int{1, 5, 47, 97, 512, 2048, 8192, 128256} {
			for _, grain := range []int{1, 6, 48} {
				for _, least := range []int{1, 7, 64, 300} {
					what := fmt.Sprintf("%d workers, n %d, grain %d, least %d", workers, n, grain, least)
					spans := chunks(t, what, n, func(fn func(lo, hi int)) { p.RunGuided(n, grain, least, fn) })
					if w := want(n, grain, workers, least); !slices.Equal(spans, w) {
						t.Fatalf("%s: chunks %v, want %v", what, spans, w)
					}
					for _, s := range spans {
						if s[0]%grain != 0 {
							t.Fatalf("%s: a chunk starts at %d", what, s[0])
						}
						if l := s[1] - s[0]; l < min(least*grain, n) && s[1] != n {
							t.Fatalf("%s: a chunk of %d", what, l)
						}
					}
				}
			}
		}
		p.RunGuided(0, 1, 4, func(lo, hi int) { t.Fatalf("RunGuided(0) ran [%d,%d)", lo, hi) })
		p.Close()
	}
}

// chunks runs a loop over [0, n) through run and returns its chunks in
// order, failing t (the message led by what) when an index ran other than
// once.
func chunks(t *testing.T, what string, n int, run func(fn func(lo, hi int))) [][2]int {
	t.Helper()
	hits := make([]atomic.Int32, n)
	var mu sync.Mutex
	var spans [][2]int
	run(func(lo, hi int) {
		mu.Lock()
		spans = append(spans, [2]int{lo, hi})
		mu.Unlock()
		for i := lo; i < hi; i++ {
			hits[i].Add(1)
		}
	})
	for i := range hits {
		if h := hits[i].Load(); h != 1 {
			t.Fatalf("%s: index %d run %d times", what, i, h)
		}
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	return spans
}
