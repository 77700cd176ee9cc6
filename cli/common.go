package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/load"
)

// stdin is the commands' standard input (tests replace it).
var stdin io.Reader = os.Stdin

// parseTokens reads comma-separated token ids.
func parseTokens(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, usagef("--tokens: no token ids given")
	}
	var out []int32
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, usagef("--tokens: entry %d %q is not a token id", i, f)
		}
		out = append(out, int32(v))
	}
	return out, nil
}

func joinTokens(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}

// isTerminal reports whether w is a terminal, where progress bars belong.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// bar draws a progress bar on w when it is a terminal; clear erases it.
type bar struct {
	w    io.Writer
	on   bool
	last int
}

func newBar(w io.Writer) *bar { return &bar{w: w, on: isTerminal(w), last: -1} }

func (b *bar) draw(label string, frac float64) {
	if !b.on {
		return
	}
	const width = 30
	n := int(math.Round(frac * width))
	pct := int(frac * 100)
	if pct == b.last {
		return
	}
	b.last = pct
	fmt.Fprintf(b.w, "\r%-10s [%s%s] %3d%%", label, strings.Repeat("=", n), strings.Repeat(" ", width-n), pct)
}

func (b *bar) clear() {
	if b.on {
		fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", 60))
	}
}

// maxCtx bounds --ctx: the cache is allocated in full when a session opens,
// so the bound keeps a typo from asking for terabytes.
const maxCtx = 1 << 20

// checkCtx validates a --ctx value.
func checkCtx(capacity int) error {
	switch {
	case capacity < 0:
		return usagef("--ctx %d: want 0 (the model's context, at most %d) or more", capacity, driver.DefaultCapacity)
	case capacity > maxCtx:
		return usagef("--ctx %d: at most %d", capacity, maxCtx)
	}
	return nil
}

// openSession opens a model, drawing a progress bar on stderr; driver.Open
// checks the model against its tensor table and its tokenizer against the
// model.
func openSession(path, interpName string, capacity int, kv *cacheType, stderr io.Writer) (*driver.Session, error) {
	if path == "" {
		return nil, usagef("no model: give -m MODEL (a GGUF file or a safetensors directory)")
	}
	if err := checkCtx(capacity); err != nil {
		return nil, err
	}
	b := newBar(stderr)
	s, err := driver.Open(path, driver.Options{Interp: interpName, Capacity: capacity, KV: kv.dtype(), Residency: kv.residency(), Progress: func(p driver.Progress) {
		b.last = -1
		b.draw(p.Stage, float64(p.Done)/float64(p.Total))
	}})
	b.clear()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// modelFlags registers -m/--model, --interp and, for a command that holds
// a KV cache (capacity not nil), --ctx and --cache-type, whose value it
// returns.
func modelFlags(fs *flagSet, model, interpName *string, capacity *int) *cacheType {
	fs.StringVar(model, "m", "", "the model: a GGUF file or a safetensors directory")
	fs.StringVar(model, "model", "", "same as -m")
	if interpName != nil {
		fs.StringVar(interpName, "interp", driver.DefaultInterpreter, "the interpreter: "+strings.Join(driver.Interpreters(), ", "))
	}
	if capacity == nil {
		return nil
	}
	fs.IntVar(capacity, "ctx", 0, "context size in tokens (0: the model's, at most 4096)")
	return cacheTypeFlag(fs)
}

// cacheType is the value of --cache-type, the KV caches' dtype, with that
// of --load, where the weights are read from.
type cacheType struct {
	d   poot.DType
	res load.Residency
}

// cacheTypeFlag registers --cache-type and --load.
func cacheTypeFlag(fs *flagSet) *cacheType {
	c := &cacheType{d: poot.F32}
	fs.TextVar(&c.res, "load", load.Auto, "where the weights are read from: mmap (the file's memory map), copy (a private copy in huge pages, faster to stream) or auto (copy when the file is at least 64 MiB, fits in half the free memory and the system has huge pages)")
	fs.Var(c, "cache-type", "the KV caches' dtype: f32, f16 (half the memory and the bytes attention reads; as llama.cpp's -ctk f16 -ctv f16) or q8_0 (0.27 of f32's memory; as -ctk q8_0 -ctv q8_0; cache widths must be multiples of 32)")
	return c
}

func (c *cacheType) String() string {
	if c == nil {
		return "f32"
	}
	return c.d.String()
}

func (c *cacheType) Set(s string) error {
	d, err := poot.ParseDType(s)
	if err != nil || d == poot.Invalid || families.CheckCacheDType(d) != nil {
		return fmt.Errorf("%q: want f32, f16 or q8_0", s)
	}
	c.d = d
	return nil
}

// residency is --load's value (load.Auto when the command has none).
func (c *cacheType) residency() load.Residency {
	if c == nil {
		return load.Auto
	}
	return c.res
}

// dtype is the flag's dtype (F32 when the command has none).
func (c *cacheType) dtype() poot.DType {
	if c == nil {
		return poot.F32
	}
	return c.d
}

// threadsFlag registers --threads.
func threadsFlag(fs *flagSet) *int {
	return fs.Int("threads", 0, fmt.Sprintf("threads of the model's arithmetic (0: all %d cores; at most %d per core)", runtime.NumCPU(), maxThreadsPerCPU))
}

// setThreads applies --threads n for the command's run: the cpu backend
// runs its loops on GOMAXPROCS workers. It returns what restores the
// previous setting (commands run in-process in tests).
func setThreads(n int) (restore func(), err error) {
	if limit := maxThreadsPerCPU * runtime.NumCPU(); n < 0 || n > limit {
		return nil, usagef("--threads %d: want 0 (all cores) up to %d (%d per core on %d cores)", n, limit, maxThreadsPerCPU, runtime.NumCPU())
	}
	if n == 0 {
		return func() {}, nil
	}
	old := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(old) }, nil
}

// maxPromptBytes bounds a prompt read from a file or stdin.
const maxPromptBytes = 256 << 20

// promptSource is a command's prompt flags: -p TEXT (-p - reads stdin)
// or -f FILE. A prompt read from a file or stdin is used byte for byte
// (NUL and control characters included, a final newline kept).
type promptSource struct{ text, file string }

// promptFlags registers -p/--prompt and -f/--file.
func promptFlags(fs *flagSet, what string) *promptSource {
	p := &promptSource{}
	fs.StringVar(&p.text, "p", "", what+" (-p - reads it from stdin)")
	fs.StringVar(&p.text, "prompt", "", "same as -p")
	fs.StringVar(&p.file, "f", "", "read "+what+" from this file (- for stdin)")
	fs.StringVar(&p.file, "file", "", "same as -f")
	return p
}

// read returns the prompt and whether one was given.
func (p *promptSource) read(fs *flagSet) (string, bool, error) {
	text := fs.given("p") || fs.given("prompt")
	if text && p.file != "" {
		return "", false, usagef("give -p or -f, not both")
	}
	name := p.file
	if text && p.text == "-" {
		name = "-"
	}
	if name == "" {
		return p.text, text, nil
	}
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return "", false, err
		}
		defer f.Close()
		r = f
	} else {
		name = "stdin"
	}
	data, err := io.ReadAll(io.LimitReader(r, maxPromptBytes+1))
	if err != nil {
		return "", false, fmt.Errorf("reading the prompt from %s: %w", name, err)
	}
	if len(data) > maxPromptBytes {
		return "", false, usagef("the prompt in %s is larger than %d MiB", name, maxPromptBytes>>20)
	}
	return string(data), true, nil
}

// cmdVersion prints the version of poot and of Go it was built with.
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	if err := flags("version", "version", stdout).parse(args); err != nil {
		return err
	}
	version, rev := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = " " + s.Value
			}
		}
	}
	_, err := fmt.Fprintf(stdout, "poot %s%s (%s %s/%s)\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}
