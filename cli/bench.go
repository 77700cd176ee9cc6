package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/internal/mmap"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/kernels"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/tensor"
)

// The bench command registers itself, so the command table needs no edit.
func init() {
	commands["bench"] = command{cmdBench, "measure prompt and generation speed (tokens/s) and memory bandwidth"}
}

// benchResult is what bench reports; --json prints it as one object.
type benchResult struct {
	Model            string  `json:"model"`
	Interp           string  `json:"interp"`
	Threads          int     `json:"threads"`
	Depth            int     `json:"depth"`
	CacheType        string  `json:"cache_type"`
	Weights          string  `json:"weights"` // where they were read from: "mmap" or "copy" (see --load)
	PromptTokens     int     `json:"prompt_tokens"`
	GenTokens        int     `json:"gen_tokens"`
	PromptTokensPerS float64 `json:"prompt_tokens_per_s"`
	GenTokensPerS    float64 `json:"gen_tokens_per_s"`
	BytesPerToken    int64   `json:"bytes_per_token"`
	GenBandwidthGBs  float64 `json:"gen_bandwidth_gb_per_s"`
	PeakBandwidthGBs float64 `json:"peak_bandwidth_gb_per_s"`
	// LowBandwidthGBs is the lowest of the host's bandwidth samples (the
	// peak is the highest): far apart, the host's memory changed speed
	// during the run, and decode's fraction of the peak understates it.
	LowBandwidthGBs   float64 `json:"low_bandwidth_gb_per_s,omitempty"`
	BandwidthFraction float64 `json:"bandwidth_fraction"`
	// RepFractions is each rep's decode bandwidth over the better of the
	// two bandwidth samples taken just before and just after it: where
	// the host's memory changes speed during a run, a rep is set beside
	// the memory it met rather than the run's best. Absent where the
	// samples do not bracket every rep (--cpuprofile with several reps)
	// and on a device.
	RepFractions []float64 `json:"rep_bandwidth_fractions,omitempty"`
	// Kernels is the CPU kernels' dispatch level that ran ("go", "avx2", "avx512");
	// KernelFeatures is kernels.Features(): the level, and why it is not the
	// best when POOT_KERNELS lowered it or was rejected.
	Kernels        string `json:"kernels"`
	KernelFeatures string `json:"kernel_features"`
	// Device names the accelerator an interpreter such as cuda ran on;
	// its peak bandwidth is then the device's copy bandwidth.
	Device string `json:"device,omitempty"`
}

// deviceInterp is an interpreter that runs on an accelerator (cuda): it
// names the device and measures its memory bandwidth, which decode's
// fraction is taken against instead of the host's.
type deviceInterp interface {
	Device() (string, error)
	CopyBandwidth() (float64, error)
}

// benchFlags are bench's settings.
type benchFlags struct {
	model, interp, cpuProfile         string
	prompt, gen, depth, threads, reps int
	json                              bool
	kv                                *cacheType
}

// maxThreadsPerCPU bounds --threads: more workers than this many per core
// only cost memory (each holds buffers) and scheduling.
const maxThreadsPerCPU = 4

// cmdBench runs one prefill of --prompt tokens and --gen greedy decode
// steps on the chosen interpreter and reports tokens per second, and for
// generation the bytes read per token (weights and the KV cache) over the
// time, as a fraction of the machine's read bandwidth measured here.
func cmdBench(args []string, stdout, stderr io.Writer) error {
	bf, err := parseBench(args, stdout)
	if err != nil {
		return err
	}
	bar := newBar(stderr)
	b, err := newBencher(bf, bar)
	bar.clear()
	if err != nil {
		return err
	}
	defer b.ckpt.Close()
	defer b.close()
	// The warm-up run touches every mapped weight page once, as
	// llama-bench's warm-up does.
	if _, _, err := b.run(); err != nil {
		return err
	}
	// The read bandwidth is sampled before the reps and after each, and
	// the best sample counts: on a shared machine one sample can fall in a
	// neighbour's burst, and a low peak would overstate decode's fraction.
	// The samples stay out of the timed steps; under --cpuprofile they are
	// taken before the profile starts and after it stops, so that it shows
	// only the model's steps.
	dev, onDevice := b.in.(deviceInterp)
	var probe *bandwidthProbe
	if bf.gen > 0 && !onDevice {
		probe = newBandwidthProbe(bf.threads)
		defer probe.free()
		probe.sample()
	}
	var prefillTime, genTime time.Duration
	var repGen []time.Duration
	err = func() error {
		if bf.cpuProfile != "" {
			f, err := os.Create(bf.cpuProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		for range bf.reps {
			p, g, err := b.run()
			if err != nil {
				return err
			}
			prefillTime += p
			genTime += g
			repGen = append(repGen, g)
			if probe != nil && bf.cpuProfile == "" {
				probe.sample()
			}
		}
		return nil
	}()
	if err != nil {
		return err
	}
	var peak, low float64
	if probe != nil {
		if bf.cpuProfile != "" {
			probe.sample()
		}
		peak, low = probe.best, probe.low
	}
	var device string
	if onDevice {
		if device, err = dev.Device(); err != nil {
			return err
		}
		if bf.gen > 0 {
			if peak, err = dev.CopyBandwidth(); err != nil {
				return err
			}
		}
	}
	prefillTime /= time.Duration(bf.reps)
	genTime /= time.Duration(bf.reps)
	r := benchResult{Model: bf.model, Interp: bf.interp, Threads: bf.threads, Depth: bf.depth, CacheType: bf.kv.String(), Weights: load.Mapped.String(), PromptTokens: bf.prompt, GenTokens: bf.gen,
		Kernels: kernels.CurrentLevel().String(), KernelFeatures: kernels.Features(), Device: device}
	if b.ckpt.Resident() {
		r.Weights = load.Copied.String()
	}
	if bf.prompt > 0 {
		r.PromptTokensPerS = float64(bf.prompt) / prefillTime.Seconds()
	}
	if bf.gen > 0 {
		r.GenTokensPerS = float64(bf.gen) / genTime.Seconds()
		r.BytesPerToken = b.decodeBytes()
	}
	r.GenBandwidthGBs = float64(r.BytesPerToken) * r.GenTokensPerS / 1e9
	r.PeakBandwidthGBs, r.LowBandwidthGBs = peak, low
	if r.PeakBandwidthGBs > 0 {
		r.BandwidthFraction = r.GenBandwidthGBs / r.PeakBandwidthGBs
	}
	if probe != nil && len(probe.samples) == len(repGen)+1 {
		for i, g := range repGen {
			bw := float64(r.BytesPerToken) * float64(bf.gen) / g.Seconds() / 1e9
			r.RepFractions = append(r.RepFractions, bw/max(probe.samples[i], probe.samples[i+1]))
		}
	}
	return r.print(stdout, bf.json)
}

// parseBench reads and validates bench's flags.
func parseBench(args []string, stdout io.Writer) (benchFlags, error) {
	var bf benchFlags
	fs := flags("bench", "bench -m MODEL [--interp NAME] [--prompt N] [--gen N] [--depth D] [--cache-type f32|f16|q8_0] [--load auto|mmap|copy] [--threads T] [--reps R] [--json]", stdout)
	modelFlags(fs, &bf.model, &bf.interp, nil)
	bf.kv = cacheTypeFlag(fs)
	fs.IntVar(&bf.prompt, "prompt", 64, "prompt tokens, processed in one prefill step (0: none, decode only)")
	fs.IntVar(&bf.gen, "gen", 32, "tokens to generate, one decode step each (0: none, prompt only)")
	fs.IntVar(&bf.depth, "depth", 0, "positions already in the cache before the prompt (as llama-bench's -d): attention's cost at long contexts")
	fs.IntVar(&bf.threads, "threads", 0, fmt.Sprintf("worker threads of the cpu interpreter (0: all cores; at most %d per core)", maxThreadsPerCPU))
	fs.BoolVar(&bf.json, "json", false, "print one JSON object")
	fs.IntVar(&bf.reps, "reps", 3, "measured repetitions after one warm-up run; the figures are their means (as llama-bench's -r)")
	fs.StringVar(&bf.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured runs to this file")
	if err := fs.parse(args); err != nil {
		return bf, err
	}
	limit := maxThreadsPerCPU * runtime.NumCPU()
	switch {
	case bf.model == "":
		return bf, usagef("no model: give -m MODEL")
	case bf.prompt < 0 || bf.gen < 0 || bf.prompt+bf.gen == 0 || bf.reps < 1:
		return bf, usagef("--prompt and --gen must be at least 0 and not both 0 (0 skips that part, as llama-bench's -p 0 or -n 0), --reps at least 1")
	case bf.prompt > maxCtx || bf.gen > maxCtx || bf.depth < 0 || bf.depth > maxCtx:
		return bf, usagef("--prompt, --gen and --depth must be at most %d (and --depth at least 0)", maxCtx)
	case bf.threads < 0 || bf.threads > limit:
		return bf, usagef("--threads %d: want 0 (all cores) up to %d (%d per core on %d cores)", bf.threads, limit, maxThreadsPerCPU, runtime.NumCPU())
	}
	if bf.interp == "" {
		bf.interp = driver.DefaultInterpreter
	}
	if bf.threads == 0 {
		bf.threads = runtime.GOMAXPROCS(0)
	}
	return bf, nil
}

// bencher holds a model's compiled prefill and decode steps.
type bencher struct {
	bf              benchFlags
	ckpt            *load.Checkpoint
	in              interp.Interpreter
	vocab, capacity int
	prefill, decode interp.Executable
	pg, dg          *poot.Graph
	state           *interp.State
	toks            []int32
	// outs keeps each step's output tensors from one run to the next for
	// an interpreter that can write into them (see intoRunner).
	outs map[interp.Executable][]tensor.Tensor
}

// close releases the executables that hold resources outside the Go
// heap (a GPU's memory), reporting what they measured when asked to
// (cuda's POOT_CUDA_PROFILE).
func (b *bencher) close() {
	for _, x := range []interp.Executable{b.prefill, b.decode} {
		if c, ok := x.(interface{ Close() }); ok {
			c.Close()
		}
	}
}

// intoRunner is an executable that can write a step's outputs into
// tensors the caller keeps (the cpu interpreter's RunInto). A decode step
// that returned fresh logits (half a megabyte at a vocabulary of 128k)
// would spend up to two milliseconds a step in page faults and the
// garbage collector, which is not the step's own cost.
type intoRunner interface {
	RunInto(slots interp.Slots, state *interp.State, outs []tensor.Tensor) error
}

// newBencher opens the model and compiles its two steps, drawing its
// progress on bar.
func newBencher(bf benchFlags, bar *bar) (*bencher, error) {
	var in interp.Interpreter
	if bf.interp == "cpu" {
		in = cpu.Interpreter{Threads: bf.threads}
	} else {
		var err error
		if in, err = driver.NewInterpreter(bf.interp); err != nil {
			return nil, err
		}
	}
	bar.draw("open", 0)
	ckpt, err := load.OpenWith(bf.model, bf.kv.residency())
	if err != nil {
		return nil, err
	}
	b := &bencher{bf: bf, ckpt: ckpt, in: in, capacity: bf.depth + bf.prompt + bf.gen}
	ok := false
	defer func() {
		if !ok {
			ckpt.Close()
		}
	}()
	m, err := registry.FromCheckpoint(ckpt)
	if err != nil {
		return nil, err
	}
	if mc := m.Schema().MaxContext; mc > 0 && b.capacity > mc {
		return nil, usagef("--depth plus --prompt plus --gen is %d, beyond the model's context %d", b.capacity, mc)
	}
	compile := func(n int) (interp.Executable, *poot.Graph, error) {
		g, err := m.Trace(families.StepSpec{Program: "bench", Shape: families.StepShape{Rows: 1, New: n, Capacity: b.capacity, Logits: families.LastToken, KV: b.bf.kv.dtype()}}, poot.Limits{})
		if err != nil {
			return nil, nil, err
		}
		bg, consts, err := load.Bind(g, ckpt, m.Weights().Resolver())
		if err != nil {
			return nil, nil, err
		}
		x, err := in.Compile(bg, interp.ConstMap(consts))
		return x, bg, err
	}
	if bf.prompt > 0 {
		bar.draw("prefill", 1.0/3)
		if b.prefill, b.pg, err = compile(bf.prompt); err != nil {
			return nil, err
		}
	}
	if bf.gen > 0 {
		bar.draw("decode", 2.0/3)
		if b.decode, b.dg, err = compile(1); err != nil {
			return nil, err
		}
	}
	b.vocab = m.Schema().Vocab
	b.toks = make([]int32, max(bf.prompt, 1))
	for i := range b.toks {
		b.toks[i] = int32((i*7919 + 13) % b.vocab)
	}
	ok = true
	return b, nil
}

// step runs one compiled step on toks at positions from start.
func (b *bencher) step(x interp.Executable, toks []int32, start int) ([]float32, error) {
	pos := make([]int32, len(toks))
	for i := range pos {
		pos[i] = int32(start + i)
	}
	tt, _ := tensor.FromI32(poot.Shape{len(toks)}, toks)
	pt, _ := tensor.FromI32(poot.Shape{len(toks)}, pos)
	slots := interp.Slots{"token": tt, "pos": pt}
	if r, ok := x.(intoRunner); ok && b.outs[x] != nil {
		out := b.outs[x]
		if err := r.RunInto(slots, b.state, out); err != nil {
			return nil, err
		}
		return out[0].F32(), nil
	}
	out, err := x.Run(slots, b.state)
	if err != nil {
		return nil, err
	}
	if b.outs == nil {
		b.outs = map[interp.Executable][]tensor.Tensor{}
	}
	b.outs[x] = out
	return out[0].F32(), nil
}

// run is one measured repetition: a prefill from an empty cache, then
// greedy decode steps.
// Without a prompt, decode starts from the first bench token at depth.
func (b *bencher) run() (prefillTime, genTime time.Duration, err error) {
	g := b.pg
	if g == nil {
		g = b.dg
	}
	// One State serves every run, emptied before each as llama-bench
	// empties its context's cache: a fresh one would put the first touch
	// of every cache page (the kernel zeroing it) in the timed prefill.
	if b.state == nil {
		if b.state, err = interp.NewState(g); err != nil {
			return 0, 0, err
		}
	} else {
		b.state.Discard()
		for _, t := range b.state.Tensors {
			clear(t.Data)
		}
	}
	// The cache rows before depth are zero: attention reads them as it
	// would a filled cache.
	next := b.toks[0]
	if b.prefill != nil {
		t0 := time.Now()
		logits, err := b.step(b.prefill, b.toks, b.bf.depth)
		if err != nil {
			return 0, 0, err
		}
		prefillTime = time.Since(t0)
		next = argmax(logits)
	}
	t1 := time.Now()
	for i := range b.bf.gen {
		logits, err := b.step(b.decode, []int32{next}, b.bf.depth+b.bf.prompt+i)
		if err != nil {
			return 0, 0, err
		}
		next = argmax(logits)
	}
	return prefillTime, time.Since(t1), nil
}

// argmax is the greedy choice: the first index of the largest logit.
func argmax(logits []float32) int32 { return int32(kernels.ArgMax(logits)) }

// decodeBytes is the bytes a decode step moves: the planner's count when
// the interpreter has a plan, otherwise every constant once and the filled
// half of the KV cache.
func (b *bencher) decodeBytes() int64 {
	var bytes int64
	if x, ok := b.decode.(*cpu.Exec); ok {
		for _, k := range x.Plan().Kernels {
			bytes += k.Bytes
		}
		return bytes
	}
	for _, id := range b.dg.Inputs(poot.Const) {
		bytes += b.dg.Type(id).Bytes()
	}
	for _, id := range b.dg.Inputs(poot.State) {
		t := b.dg.Type(id)
		bytes += t.Bytes() / int64(b.capacity) * int64(b.bf.depth+b.bf.prompt+b.bf.gen/2)
	}
	return bytes
}

// print writes the result as text or one JSON object.
func (r benchResult) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	fmt.Fprintf(w, "model %s, interp %s, %d threads, depth %d, %s KV cache, weights by %s\n", r.Model, r.Interp, r.Threads, r.Depth, r.CacheType, r.Weights)
	if r.Device != "" {
		fmt.Fprintf(w, "device %s\n", r.Device)
	} else {
		fmt.Fprintf(w, "kernels %s\n", r.KernelFeatures)
	}
	if r.PromptTokens > 0 {
		fmt.Fprintf(w, "prompt  %5d tokens  %10.2f tokens/s\n", r.PromptTokens, r.PromptTokensPerS)
	}
	if r.GenTokens > 0 {
		fmt.Fprintf(w, "gen     %5d tokens  %10.2f tokens/s  %.2f GB/s of %.2f GB/s %s bandwidth (%.0f%%)",
			r.GenTokens, r.GenTokensPerS, r.GenBandwidthGBs, r.PeakBandwidthGBs, r.bandwidthKind(), 100*r.BandwidthFraction)
		if r.LowBandwidthGBs > 0 {
			fmt.Fprintf(w, ", samples %.1f-%.1f GB/s", r.LowBandwidthGBs, r.PeakBandwidthGBs)
		}
		if len(r.RepFractions) > 0 {
			lo, hi := slices.Min(r.RepFractions), slices.Max(r.RepFractions)
			fmt.Fprintf(w, "; reps %.0f-%.0f%% of the samples beside them", 100*lo, 100*hi)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// bandwidthKind names the peak decode is measured against: the host's
// streaming read or the device's copy (read and write counted).
func (r benchResult) bandwidthKind() string {
	if r.Device != "" {
		return "device copy"
	}
	return "read"
}

// bandwidthProbe measures the machine's streaming read bandwidth in GB/s:
// goroutines reading a 1 GiB buffer (larger than any last-level cache
// these machines report; 480 MiB is the largest seen) with the kernels'
// widest loads (kernels.XorWords: a scalar loop under-measures, so that
// decode seemed to pass the machine's bandwidth). Each sample is the best
// of twelve passes with threads goroutines and, when that is fewer,
// twelve with one per core; best is the best sample so far and low the
// lowest. Each goroutine reads its part in the three ways the decode
// kernels might: as one sequential stream, as two side by side
// (kernels.XorWordsPair: one core of a Zen 5 reads about a sixth more
// through two), and as two with software prefetch (kernels.XorWordsPairAhead: a tenth more again
// on the Intel Xeon), and the best counts, so that no way of reading
// lets decode pass the figure.
//
// The buffer is advised for huge pages, as the weights are by default
// (load.Auto): on 4 KiB pages the figure would be that of mapped weights.
type bandwidthProbe struct {
	buf       []uint64
	mapped    []byte
	threads   int
	samples   []float64 // every sample, in the order taken
	best, low float64
}

func newBandwidthProbe(threads int) *bandwidthProbe {
	const words = 128 << 20
	p := &bandwidthProbe{threads: threads}
	if b, err := mmap.Anonymous(words * 8); err == nil {
		p.mapped = b
		p.buf = unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), words)
	} else {
		p.buf = make([]uint64, words)
	}
	for i := range p.buf {
		p.buf[i] = uint64(i)
	}
	return p
}

// sample measures once more, records the figure, and keeps the best and
// the lowest.
func (p *bandwidthProbe) sample() {
	s := readPass(p.buf, p.threads)
	if n := runtime.GOMAXPROCS(0); n > p.threads {
		s = max(s, readPass(p.buf, n))
	}
	p.samples = append(p.samples, s)
	p.best = max(p.best, s)
	if p.low == 0 || s < p.low {
		p.low = s
	}
}

func (p *bandwidthProbe) free() {
	if p.mapped != nil {
		mmap.Free(p.mapped)
	}
	p.buf, p.mapped = nil, nil
}

func readPass(buf []uint64, threads int) float64 {
	best := 0.0
	sums := make([]uint64, threads)
	for i := range 12 {
		t0 := time.Now()
		var wg sync.WaitGroup
		for w := range threads {
			part := buf[len(buf)*w/threads : len(buf)*(w+1)/threads]
			h := len(part) / 2
			switch i % 3 {
			case 0:
				wg.Go(func() { sums[w] = kernels.XorWords(part) })
			case 1:
				wg.Go(func() { sums[w] = kernels.XorWordsPair(part[:h], part[h:]) })
			default:
				wg.Go(func() { sums[w] = kernels.XorWordsPairAhead(part[:h], part[h:], 512) })
			}
		}
		wg.Wait()
		best = max(best, float64(len(buf)*8)/time.Since(t0).Seconds()/1e9)
	}
	return best
}
