package kernels

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Pool is a fixed set of worker goroutines for parallel loops. The goroutine
// that calls Run works too, so a Pool of n workers starts n-1 goroutines.
// Run may be called from one goroutine at a time; calls are serialised.
//
// A decode step launches hundreds of short loops, so waking a parked
// goroutine (tens of microseconds through the scheduler) would cost more
// than many loops take. Workers therefore spin, yielding, for a short while
// after each loop before they park on a channel, and the caller spins for
// the stragglers before it parks. An idle Pool costs nothing after that
// brief spin.
//
// A panic inside a loop body, on any worker, is handed to the caller: Run
// waits for the other chunks to finish and panics with the first value on
// its own goroutine, where a recover (or mmap.Guard) can see it. Workers
// run with runtime/debug.SetPanicOnFault set, so a memory fault while a
// body reads a mapped file (SIGBUS when the file is truncated underneath)
// reaches the caller as a runtime.Error panic rather than killing the
// process.
type Pool struct {
	mu      sync.Mutex // serialises Run
	workers int
	// yieldMask: a spinning goroutine yields (runtime.Gosched) once every
	// yieldMask+1 polls. Yielding takes the scheduler's lock, so two
	// spinners that yield often slow each other's hand-over; with a
	// processor for every worker they yield once in 1024 polls (about a
	// microsecond), with more workers than processors once in 64, so that
	// a spinner soon gives way to the goroutine that has work.
	yieldMask int
	wake      []chan struct{}
	parked    []atomic.Bool // worker i is parked (or about to park) on wake[i]
	done      chan struct{}
	// finished, when set (by tests), runs in a worker between counting
	// itself done with a loop and signalling the caller.
	finished func()

	// The fields below are grouped by who writes them, each group on
	// cache lines of its own: a hand-over that moved a line the caller
	// writes to a worker and back for a field another goroutine wrote
	// cost a trivial loop twice the time on the Zen 5.
	_ [64]byte

	// The current loop, written by Run before it publishes a new gen.
	fn     func(lo, hi int)
	n      int
	grain  int           // with g = ceil(n/grain) grains, chunk i < parts is
	parts  int           // grains [g*i/parts, g*(i+1)/parts), cut at n
	least  int           // > 0: guided chunks (RunGuided) of at least least grains for parts workers
	gen    atomic.Uint64 // loop generation; workers start a loop when it moves
	closed atomic.Bool
	// failed holds the first panic of the current loop (a *loopPanic);
	// workers that see it stop claiming chunks. Run clears it only when
	// it was set, so that a loop writes nothing here but its fields.
	failed atomic.Pointer[loopPanic]
	_      [64]byte

	next atomic.Int64 // next chunk index to claim
	_    [64]byte

	pending atomic.Int32 // workers still running the current loop
	// waiting is the generation of the loop whose end the caller is parked
	// on (0: none). The worker that finishes that loop last, and only it,
	// hands the caller a token on done; tagging the flag with the loop
	// keeps a worker that is slow to signal the end of one loop from
	// waking the caller in the middle of the next.
	waiting atomic.Uint64
	_       [64]byte
}

// loopPanic carries a panic value from the goroutine that raised it to
// Run's caller.
type loopPanic struct{ value any }

// spinFor is how long the caller polls for a loop's stragglers before it
// parks, and idleSpin how long a worker polls for the next loop before it
// parks. A worker outwaits the pause between two decode steps (the caller
// picking the next token and preparing the step's inputs, more than 100
// us): parked there, the workers made the first product of every step
// wait for them to wake, 185-202 us for the query projection of a 1B
// model in Q8_0 on the Zen 5 where it takes 90-104 us otherwise.
const (
	spinFor  = 100 * time.Microsecond
	idleSpin = time.Millisecond
)

// NewPool starts a pool of n workers (n < 1 means runtime.GOMAXPROCS(0)).
func NewPool(n int) *Pool { return newPool(n, nil) }

func newPool(n int, finished func()) *Pool {
	if n < 1 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &Pool{workers: n, done: make(chan struct{}, 1), finished: finished, yieldMask: 63}
	if n <= runtime.GOMAXPROCS(0) {
		p.yieldMask = 1023
	}
	p.wake = make([]chan struct{}, n-1)
	p.parked = make([]atomic.Bool, n-1)
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
		go p.worker(i)
	}
	return p
}

// Workers is the number of goroutines a loop runs on, the caller included.
func (p *Pool) Workers() int { return p.workers }

// Close stops the worker goroutines. Runs after Close execute on the caller
// alone.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Swap(true) {
		return
	}
	p.gen.Add(1)
	for _, w := range p.wake {
		close(w)
	}
}

// Run calls fn over [0, n) split into chunks, in parallel; it returns when
// every chunk is done.
func (p *Pool) Run(n int, fn func(lo, hi int)) { p.RunGrain(n, 1, fn) }

// RunGrain is Run with chunk boundaries at multiples of grain (so that,
// for example, each chunk holds whole blocks): four chunks a worker (or
// one a grain, when there are fewer grains), whose numbers of grains
// differ by at most one. Chunks of a fixed size with a short last one
// left the workers a product of 2048 rows in grains of 48 as 1152 rows
// to 896 (an eighth slower than an even split on two cores).
func (p *Pool) RunGrain(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	parts := min(4*p.workers, (n+grain-1)/grain)
	if p.workers == 1 || parts <= 1 {
		fn(0, n)
		return
	}
	p.run(fn, n, grain, parts, 0)
}

// RunSplit is Run with [0, n) split into min(parts, n) chunks of sizes
// that differ by at most one.
func (p *Pool) RunSplit(n, parts int, fn func(lo, hi int)) {
	parts = min(parts, n)
	if n <= 0 {
		return
	}
	if p.workers == 1 || parts <= 1 {
		fn(0, n)
		return
	}
	p.run(fn, n, 1, parts, 0)
}

// RunGuided is Run with chunks that shrink as the loop goes on, cut at
// multiples of grain: with g = ceil(n/grain) grains, the first w chunks
// (w the workers) take half of the g between them, the next w half of
// the rest, and so on, until a chunk would hold fewer than least grains;
// what is left then goes in chunks of least to 2*least-1 grains. A worker
// that is slower than the others, or starts late, then leaves them at
// most a small chunk to wait for at the end, while the loop takes few
// chunks in all (a chunk's start costs something where it starts streams
// of memory or packs a panel).
func (p *Pool) RunGuided(n, grain, least int, fn func(lo, hi int)) {
	grain, least = max(grain, 1), max(least, 1)
	if n <= 0 {
		return
	}
	if p.workers == 1 || n <= least*grain {
		fn(0, n)
		return
	}
	p.run(fn, n, grain, p.workers, least)
}

// guided returns chunk i of a loop over n grains split as RunGuided says
// among w workers (hi = lo = n past the last chunk).
func guided(n, w, least, i int) (lo, hi int) {
	for r := 0; ; r++ {
		start, rest := n-n>>r, n>>r
		half := rest - rest>>1 // this round's share
		if half/w < least {
			// The rest in k chunks of least to 2*least-1.
			k := max(rest/least, 1)
			j := i - r*w
			if j >= k {
				return n, n
			}
			return start + rest*j/k, start + rest*(j+1)/k
		}
		if i < (r+1)*w {
			j := i - r*w
			return start + half*j/w, start + half*(j+1)/w
		}
	}
}

// run runs one loop on every worker: parts chunks of whole grains, or
// with least > 0 guided chunks of at least least for parts workers.
func (p *Pool) run(fn func(lo, hi int), n, grain, parts, least int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		fn(0, n)
		return
	}
	p.fn, p.n, p.grain, p.parts, p.least = fn, n, grain, parts, least
	p.next.Store(0)
	p.pending.Store(int32(len(p.wake)))
	gen := p.gen.Add(1) // publishes the loop and next to spinning workers
	for i := range p.wake {
		if p.parked[i].CompareAndSwap(true, false) {
			p.wake[i] <- struct{}{}
		}
	}
	p.work()
	p.waitWorkers(gen)
	p.fn = nil
	if lp := p.failed.Load(); lp != nil {
		p.failed.Store(nil)
		panic(lp.value)
	}
}

// waitWorkers returns once every worker has finished loop gen.
func (p *Pool) waitWorkers(gen uint64) {
	start, mask := time.Now(), p.yieldMask
	for i := 0; p.pending.Load() != 0; i++ {
		if i&mask == mask {
			if time.Since(start) > spinFor {
				p.waiting.Store(gen)
				if p.pending.Load() == 0 && p.waiting.CompareAndSwap(gen, 0) {
					// The last worker finished before it could see the
					// flag, and will not signal.
					return
				}
				// The last worker has taken the flag or will: its token
				// is on its way.
				<-p.done
				return
			}
			runtime.Gosched()
		}
	}
}

// work claims and runs chunks of the current loop until none is left or
// some goroutine has panicked in it. A panic is recorded, not raised: every
// goroutine must still count itself done with the loop.
func (p *Pool) work() {
	fn, n, grain, parts, least := p.fn, p.n, p.grain, p.parts, p.least
	grains := (n + grain - 1) / grain
	defer func() {
		if r := recover(); r != nil {
			p.failed.CompareAndSwap(nil, &loopPanic{value: r})
		}
	}()
	for p.failed.Load() == nil {
		i := int(p.next.Add(1) - 1)
		if least > 0 {
			lo, hi := guided(grains, parts, least, i)
			if lo >= grains {
				return
			}
			fn(min(n, lo*grain), min(n, hi*grain))
			continue
		}
		if i >= parts {
			return
		}
		fn(min(n, grain*(grains*i/parts)), min(n, grain*(grains*(i+1)/parts)))
	}
}

// worker runs loops as their generations appear: spinning for idleSpin
// after each, then parked on its channel until Run wakes it.
func (p *Pool) worker(i int) {
	debug.SetPanicOnFault(true)
	var seen uint64
	mask := p.yieldMask
	for {
		start := time.Now()
		for k := 0; p.gen.Load() == seen; k++ {
			if k&mask != mask {
				continue
			}
			if time.Since(start) <= idleSpin {
				runtime.Gosched()
				continue
			}
			p.parked[i].Store(true)
			if p.gen.Load() != seen {
				// A loop was published while parking; take it unless Run
				// already claimed the wake-up.
				if !p.parked[i].CompareAndSwap(true, false) {
					if _, ok := <-p.wake[i]; !ok {
						return
					}
				}
				break
			}
			if _, ok := <-p.wake[i]; !ok {
				return
			}
			start = time.Now()
		}
		if p.closed.Load() {
			return
		}
		seen = p.gen.Load()
		p.work()
		if p.pending.Add(-1) == 0 {
			if p.finished != nil {
				p.finished()
			}
			if p.waiting.Load() == seen && p.waiting.CompareAndSwap(seen, 0) {
				p.done <- struct{}{}
			}
		}
	}
}
