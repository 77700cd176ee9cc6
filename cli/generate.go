package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/pootlabs/poot/driver"
)

// stopList collects repeated --stop flags.
type stopList []string

// String joins the stop strings.
func (l *stopList) String() string { return strings.Join(*l, ",") }

// Set adds a stop string.
func (l *stopList) Set(s string) error { *l = append(*l, s); return nil }

// checkSampling validates the sampling flags against their help.
func checkSampling(temp float64, topK int, topP, minP, penalty float64, lastN int) error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !finite(temp) || temp < 0:
		return usagef("--temp %v: want 0 (greedy) or a positive number", temp)
	case topK < 0:
		return usagef("--top-k %d: want 0 (all tokens) or more", topK)
	case !finite(topP) || topP <= 0 || topP > 1:
		return usagef("--top-p %v: want a probability in (0, 1]", topP)
	case !finite(minP) || minP < 0 || minP > 1:
		return usagef("--min-p %v: want a number in [0, 1]", minP)
	case !finite(penalty) || penalty <= 0:
		return usagef("--repeat-penalty %v: want a positive number (1: none)", penalty)
	case lastN < -1:
		return usagef("--repeat-last-n %d: want -1 (all), 0 (none) or more", lastN)
	}
	return nil
}

// cmdGenerate prints the prompt followed by the generated text and a
// newline, streaming the text as it is produced; the summary goes to stderr.
func cmdGenerate(args []string, stdout, stderr io.Writer) error {
	fs := flags("generate", "generate -m MODEL (-p PROMPT | -f FILE) [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--seed S] [--stop S] [--interp NAME]", stdout)
	var model, interpName string
	var capacity int
	kv := modelFlags(fs, &model, &interpName, &capacity)
	ps := promptFlags(fs, "the prompt")
	threads := threadsFlag(fs)
	n := fs.Int("n", 128, "the most tokens to generate (0: until the end of the context)")
	temp := fs.Float64("temp", 0, "temperature; 0 is greedy (the most likely token, the lowest id on ties)")
	topK := fs.Int("top-k", 0, "keep the K most likely tokens (0: all)")
	topP := fs.Float64("top-p", 1, "keep the most likely tokens up to probability P (1: all)")
	minP := fs.Float64("min-p", 0, "keep tokens at least P times as likely as the best (0: all)")
	penalty := fs.Float64("repeat-penalty", 1, "penalty on the last --repeat-last-n tokens (1: none)")
	lastN := fs.Int("repeat-last-n", driver.DefaultRepeatLastN, "tokens the repetition penalty looks back on (-1: all)")
	seed := fs.Int64("seed", -1, "random seed (-1: from the clock)")
	ignoreEOS := fs.Bool("ignore-eos", false, "keep generating past end-of-generation tokens")
	noBOS := fs.Bool("no-bos", false, "do not add the BOS token")
	special := fs.Bool("special", false, "parse special-token text (\"<s>\") in the prompt")
	quiet := fs.Bool("quiet", false, "no summary line on stderr")
	var stops stopList
	fs.Var(&stops, "stop", "stop before this text (repeatable)")
	if err := fs.parse(args); err != nil {
		return err
	}
	prompt, _, err := ps.read(fs)
	if err != nil {
		return err
	}
	if prompt == "" {
		return usagef("no prompt: give -p PROMPT or -f FILE")
	}
	if *n < 0 {
		return usagef("-n %d: want 0 or more", *n)
	}
	if err := checkSampling(*temp, *topK, *topP, *minP, *penalty, *lastN); err != nil {
		return err
	}
	restore, err := setThreads(*threads)
	if err != nil {
		return err
	}
	defer restore()
	s, err := openSession(model, interpName, capacity, kv, stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	sd := uint64(*seed)
	if *seed < 0 {
		sd = uint64(time.Now().UnixNano())
	}
	opts := driver.GenerateOptions{
		SamplerOptions: driver.SamplerOptions{Temperature: *temp, TopK: *topK, TopP: *topP, MinP: *minP,
			RepeatPenalty: *penalty, RepeatLastN: *lastN, Seed: sd},
		MaxTokens: *n, Stop: stops, IgnoreEOS: *ignoreEOS, NoBOS: *noBOS, ParseSpecial: *special,
	}
	if err := opts.Check(); err != nil {
		return usagef("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ids, err := s.Encode(prompt, opts)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(stdout)
	// Flush each piece: the text streams. A failed write (a full disk, a
	// closed pipe) stops generating and is the command's error.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var writeErr error
	emit := func(text string) {
		if writeErr != nil {
			return
		}
		out.WriteString(text)
		if writeErr = out.Flush(); writeErr != nil {
			cancel()
		}
	}
	emit(prompt)
	if writeErr != nil {
		return &outputError{writeErr}
	}
	st, err := s.GenerateTokens(ctx, ids, opts, emit)
	emit("\n")
	if writeErr != nil {
		return &outputError{writeErr}
	}
	if err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintf(stderr, "%s (%s)\n", st.Summary(), s.Interpreter().Name())
	}
	return nil
}
