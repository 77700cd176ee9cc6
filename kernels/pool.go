package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool is a fixed set of worker goroutines for parallel loops. The goroutine
// that calls Run works too, so a Pool of n workers starts n-1 goroutines.
// Run may be called from one goroutine at a time; calls are serialised.
// A Pool costs nothing while idle (its goroutines block on channels).
type Pool struct {
	mu      sync.Mutex // serialises Run
	workers int
	wake    []chan struct{}
	done    chan struct{}

	// The current loop, written by Run before waking the workers.
	fn      func(lo, hi int)
	n       int
	chunk   int
	next    atomic.Int64 // next chunk index to claim
	pending atomic.Int32 // workers still running the current loop
	closed  bool
}

// NewPool starts a pool of n workers (n < 1 means runtime.GOMAXPROCS(0)).
func NewPool(n int) *Pool {
	if n < 1 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &Pool{workers: n, done: make(chan struct{}, 1)}
	p.wake = make([]chan struct{}, n-1)
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
		go p.worker(p.wake[i])
	}
	return p
}

// Workers is the number of goroutines a Run uses, the caller included.
func (p *Pool) Workers() int { return p.workers }

// Close stops the worker goroutines; the Pool must not be used afterwards.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for _, w := range p.wake {
		close(w)
	}
}

// Run calls fn(lo, hi) on disjoint ranges that together cover [0,n), in
// parallel on the pool's workers and the calling goroutine, and returns when
// all calls have returned. Ranges are claimed dynamically, so a slow worker
// (a vCPU shared with a noisy neighbour) takes fewer of them. Run allocates
// nothing; fn itself escapes, so callers on hot paths should pass a func
// value they keep (a method value stored in a field) rather than a fresh
// closure. fn must not call Run on the same pool (that deadlocks) and must
// not panic (a panic on a worker goroutine ends the program).
func (p *Pool) Run(n int, fn func(lo, hi int)) { p.RunGrain(n, 1, fn) }

// RunGrain is [Pool.Run] with every range boundary except n a multiple of
// grain (grain < 1 means 1), for loops whose work comes in tiles.
func (p *Pool) RunGrain(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	// About four chunks a worker: small enough to balance, large enough that
	// claiming them costs nothing.
	chunk := (n + 4*p.workers - 1) / (4 * p.workers)
	chunk = (chunk + grain - 1) / grain * grain
	if p.workers == 1 || chunk >= n {
		fn(0, n)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		fn(0, n)
		return
	}
	p.fn, p.n, p.chunk = fn, n, chunk
	p.next.Store(0)
	helpers := min(len(p.wake), (n+chunk-1)/chunk-1)
	p.pending.Store(int32(helpers))
	for _, w := range p.wake[:helpers] {
		w <- struct{}{}
	}
	p.work()
	if helpers > 0 {
		<-p.done
	}
	p.fn = nil
}

// work claims and runs chunks of the current loop until none are left.
func (p *Pool) work() {
	fn, n, chunk := p.fn, p.n, p.chunk
	for {
		lo := int(p.next.Add(1)-1) * chunk
		if lo >= n {
			return
		}
		fn(lo, min(lo+chunk, n))
	}
}

func (p *Pool) worker(wake chan struct{}) {
	for range wake {
		p.work()
		if p.pending.Add(-1) == 0 {
			p.done <- struct{}{}
		}
	}
}
