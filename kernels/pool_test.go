package kernels_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/pootlabs/poot/kernels"
)

// TestPoolCompletes checks that Run returns only after every chunk has
// finished, over loops that alternate between finishing within the pool's
// spin and outlasting it (so that the caller parks). A completion signal
// left over from an earlier loop once let Run return while workers were
// still inside their chunks.
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
