package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/interp"
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
	Model             string  `json:"model"`
	Interp            string  `json:"interp"`
	Threads           int     `json:"threads"`
	PromptTokens      int     `json:"prompt_tokens"`
	GenTokens         int     `json:"gen_tokens"`
	PromptTokensPerS  float64 `json:"prompt_tokens_per_s"`
	GenTokensPerS     float64 `json:"gen_tokens_per_s"`
	BytesPerToken     int64   `json:"bytes_per_token"`
	GenBandwidthGBs   float64 `json:"gen_bandwidth_gb_per_s"`
	PeakBandwidthGBs  float64 `json:"peak_bandwidth_gb_per_s"`
	BandwidthFraction float64 `json:"bandwidth_fraction"`
}

// cmdBench runs one prefill of --prompt tokens and --gen greedy decode
// steps on the chosen interpreter and reports tokens per second, and for
// generation the bytes read per token (weights and the KV cache) over the
// time, as a fraction of the machine's read bandwidth measured here.
func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := flags("bench", "bench -m MODEL [--interp NAME] [--prompt N] [--gen N] [--threads T] [--reps R] [--json]", stderr)
	var model, interpName string
	modelFlags(fs, &model, &interpName, nil)
	promptN := fs.Int("prompt", 64, "prompt tokens, processed in one prefill step")
	genN := fs.Int("gen", 32, "tokens to generate, one decode step each")
	threads := fs.Int("threads", 0, "worker threads of the cpu interpreter (0: all cores)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	reps := fs.Int("reps", 3, "measured repetitions after one warm-up run; the figures are their means (as llama-bench's -r)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measured runs to this file")
	if err := fs.parse(args); err != nil {
		return err
	}
	if model == "" {
		return usagef("no model: give -m MODEL")
	}
	if *promptN < 1 || *genN < 1 || *reps < 1 {
		return usagef("--prompt, --gen and --reps must be at least 1")
	}
	if interpName == "" {
		interpName = driver.DefaultInterpreter
	}
	nThreads := *threads
	if nThreads < 1 {
		nThreads = runtime.GOMAXPROCS(0)
	}
	var in interp.Interpreter
	if interpName == "cpu" {
		in = cpu.Interpreter{Threads: nThreads}
	} else {
		var err error
		if in, err = driver.NewInterpreter(interpName); err != nil {
			return err
		}
	}
	ckpt, err := load.Open(model)
	if err != nil {
		return err
	}
	defer ckpt.Close()
	m, err := driver.ModelOf(ckpt)
	if err != nil {
		return err
	}
	capacity := *promptN + *genN
	if mc := m.Schema().MaxContext; mc > 0 && capacity > mc {
		return usagef("--prompt plus --gen is %d, beyond the model's context %d", capacity, mc)
	}
	compile := func(n int) (interp.Executable, *poot.Graph, error) {
		g, err := m.Trace(families.StepSpec{Program: "bench", Shape: families.StepShape{Rows: 1, New: n, Capacity: capacity, Logits: families.LastToken}}, poot.Limits{})
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
	prefill, pg, err := compile(*promptN)
	if err != nil {
		return err
	}
	decode, dg, err := compile(1)
	if err != nil {
		return err
	}
	var state *interp.State
	vocab := m.Schema().Vocab
	toks := make([]int32, *promptN)
	for i := range toks {
		toks[i] = int32((i*7919 + 13) % vocab)
	}
	step := func(x interp.Executable, toks []int32, start int) ([]float32, error) {
		pos := make([]int32, len(toks))
		for i := range pos {
			pos[i] = int32(start + i)
		}
		tt, _ := tensor.FromI32(poot.Shape{len(toks)}, toks)
		pt, _ := tensor.FromI32(poot.Shape{len(toks)}, pos)
		out, err := x.Run(interp.Slots{"token": tt, "pos": pt}, state)
		if err != nil {
			return nil, err
		}
		return out[0].F32(), nil
	}
	// run is one measured repetition: a prefill from an empty cache, then
	// greedy decode steps.
	run := func() (prefillTime, genTime time.Duration, err error) {
		if state, err = interp.NewState(pg); err != nil {
			return 0, 0, err
		}
		t0 := time.Now()
		logits, err := step(prefill, toks, 0)
		if err != nil {
			return 0, 0, err
		}
		prefillTime = time.Since(t0)
		t1 := time.Now()
		for i := range *genN {
			best := 0
			for j, v := range logits {
				if v > logits[best] {
					best = j
				}
			}
			if logits, err = step(decode, []int32{int32(best)}, *promptN+i); err != nil {
				return 0, 0, err
			}
		}
		return prefillTime, time.Since(t1), nil
	}
	// The warm-up run touches every mapped weight page once, as
	// llama-bench's warm-up does.
	if _, _, err := run(); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var prefillTime, genTime time.Duration
	for range *reps {
		p, g, err := run()
		if err != nil {
			return err
		}
		prefillTime += p
		genTime += g
	}
	prefillTime /= time.Duration(*reps)
	genTime /= time.Duration(*reps)
	// The bytes a decode step moves: the planner's count when the
	// interpreter has a plan, otherwise every constant once and the
	// filled half of the KV cache.
	var bytes int64
	if x, ok := decode.(*cpu.Exec); ok {
		for _, k := range x.Plan().Kernels {
			bytes += k.Bytes
		}
	} else {
		for _, id := range dg.Inputs(poot.Const) {
			bytes += dg.Type(id).Bytes()
		}
		for _, id := range dg.Inputs(poot.State) {
			t := dg.Type(id)
			bytes += t.Bytes() / int64(capacity) * int64(*promptN+*genN/2)
		}
	}
	r := benchResult{Model: model, Interp: interpName, Threads: nThreads, PromptTokens: *promptN, GenTokens: *genN,
		PromptTokensPerS: float64(*promptN) / prefillTime.Seconds(), GenTokensPerS: float64(*genN) / genTime.Seconds(),
		BytesPerToken: bytes}
	r.GenBandwidthGBs = float64(bytes) * r.GenTokensPerS / 1e9
	r.PeakBandwidthGBs = readBandwidth(nThreads)
	if r.PeakBandwidthGBs > 0 {
		r.BandwidthFraction = r.GenBandwidthGBs / r.PeakBandwidthGBs
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(r)
	}
	fmt.Fprintf(stdout, "model %s, interp %s, %d threads\n", model, interpName, nThreads)
	fmt.Fprintf(stdout, "prompt  %5d tokens  %10.2f tokens/s\n", r.PromptTokens, r.PromptTokensPerS)
	fmt.Fprintf(stdout, "gen     %5d tokens  %10.2f tokens/s  %.2f GB/s of %.2f GB/s read bandwidth (%.0f%%)\n",
		r.GenTokens, r.GenTokensPerS, r.GenBandwidthGBs, r.PeakBandwidthGBs, 100*r.BandwidthFraction)
	return nil
}

// readBandwidth measures how fast goroutines read 256 MiB of written
// memory, in GB/s: the best of five passes, each with one goroutine and
// with threads goroutines.
func readBandwidth(threads int) float64 {
	best := 0.0
	for _, n := range []int{1, threads} {
		best = max(best, readPass(n))
	}
	return best
}

func readPass(threads int) float64 {
	buf := make([]uint64, 32<<20)
	for i := range buf {
		buf[i] = uint64(i)
	}
	best := 0.0
	sums := make([]uint64, threads)
	for range 5 {
		t0 := time.Now()
		var wg sync.WaitGroup
		for w := range threads {
			part := buf[len(buf)*w/threads : len(buf)*(w+1)/threads]
			wg.Go(func() {
				var s0, s1, s2, s3 uint64
				for i := 0; i+4 <= len(part); i += 4 {
					s0 += part[i]
					s1 += part[i+1]
					s2 += part[i+2]
					s3 += part[i+3]
				}
				sums[w] = s0 + s1 + s2 + s3
			})
		}
		wg.Wait()
		best = max(best, float64(len(buf)*8)/time.Since(t0).Seconds()/1e9)
	}
	return best
}
