// Package cli is the poot command as a library: every subcommand
// (generate, logits, tokenize, detokenize, inspect, lower, run-bundle,
// trace, synth, bench, demo) over the shipped families and any a program
// adds. A family written outside poot gets the whole command in a binary
// of its own:
//
//	package main
//
//	import (
//		"example.com/myfamily"
//		"github.com/pootlabs/poot/cli"
//	)
//
//	func main() { cli.Main(myfamily.Row) }
//
// Errors are one line on stderr and a non-zero exit status: 1 for a
// failure, 2 for a usage error.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"

	// The backends the command ships: the cpu backend is the default interpreter.
	_ "github.com/pootlabs/poot/lower/cpu/register"
)

// command is one subcommand: a function of its arguments and output
// streams, so tests run it in-process.
type command struct {
	run     func(args []string, stdout, stderr io.Writer) error
	summary string
}

var commands = map[string]command{
	"generate":   {cmdGenerate, "generate text from a prompt, streaming it"},
	"logits":     {cmdLogits, "print the logits of token ids as JSON"},
	"tokenize":   {cmdTokenize, "print the token ids of a text"},
	"detokenize": {cmdDetokenize, "print the text of token ids"},
	"inspect":    {cmdInspect, "describe a checkpoint: family, hyperparameters, tensors, decode step"},
	"lower":      {cmdLower, "lower a model to a streamed bundle for a dataflow accelerator (--target rdu) and certify it"},
	"run-bundle": {cmdRunBundle, "generate text with the simulator from a bundle poot lower wrote"},
	"trace":      {cmdTrace, "print a step's graph (text or Graphviz DOT)"},
	"synth":      {cmdSynth, "write a random-weight checkpoint of any family"},
	"demo":       {cmdDemo, "synthesize a tiny model, trace it, run it and generate (no files needed)"},
	"serve":      {cmdServe, "serve the OpenAI API (chat and completions, streamed) over HTTP, batching requests"},
	"chat":       {cmdChat, "chat in the terminal over the model's chat template, streaming replies"},
	"version":    {cmdVersion, "print the version of poot and the Go it was built with (also --version)"},
}

// usageError is an error in the command line (exit status 2).
type usageError struct{ msg string }

// Error returns the message.
func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Main registers rows (families a program adds to the shipped ones; a
// family already registered under a row's name is left as it is), runs
// the command line of the process and exits with its status.
func Main(rows ...families.Row) {
	os.Exit(Run(os.Args[1:], os.Stdout, os.Stderr, rows...))
}

// Run registers rows as Main does, runs the command line args (without
// the program's name) and returns the exit status.
func Run(args []string, stdout, stderr io.Writer, rows ...families.Row) int {
	registry.Register(rows...)
	return run(args, stdout, stderr)
}

// run runs the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) (status int) {
	defer func() {
		// The last guard of the no-panic promise: a bug must still be one
		// line, never a trace.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "poot: internal error: %s\n", oneLine(fmt.Sprint(r)))
			status = 70
		}
	}()
	if len(args) == 0 {
		mainUsage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && name == "help" {
			// poot help CMD is poot CMD --help.
			name, args = args[1], []string{args[1], "--help"}
			break
		}
		out := &checkedWriter{w: stdout}
		mainUsage(out)
		if out.err != nil {
			fmt.Fprintf(stderr, "poot: writing the help: %s\n", oneLine(out.err.Error()))
			return 1
		}
		return 0
	}
	if name == "--version" || name == "-version" {
		name, args = "version", append([]string{"version"}, args[1:]...)
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "poot: unknown command %q (run poot --help)\n", name)
		return 2
	}
	// Every write to stdout goes through out, which keeps the first
	// failure: a full disk or a closed pipe is an error, not exit 0.
	out := &checkedWriter{w: stdout}
	err := c.run(args[1:], out, stderr)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		if out.err != nil {
			err = &outputError{out.err}
		}
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case isUsage(err):
		fmt.Fprintf(stderr, "poot %s: %s (run poot %s --help)\n", name, oneLine(err.Error()), name)
		return 2
	default:
		// Package errors that start with the command's own name ("synth:
		// ...") would read "poot synth: synth: ...".
		fmt.Fprintf(stderr, "poot %s: %s\n", name, strings.TrimPrefix(oneLine(err.Error()), name+": "))
		return 1
	}
}

// checkedWriter passes writes through to w until one fails, then keeps
// that error and refuses the rest, so a command that ignores a write's
// result still ends with the failure.
type checkedWriter struct {
	w   io.Writer
	err error
}

// Write writes p to the underlying writer unless an earlier write failed.
func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

// outputError is a failed write of a command's output.
type outputError struct{ err error }

// Error names the failure.
func (e *outputError) Error() string { return "writing the output: " + e.err.Error() }

// Unwrap returns the write error.
func (e *outputError) Unwrap() error { return e.err }

// writeErr returns the first failed write to w, when w is the command's
// checked stdout.
func writeErr(w io.Writer) error {
	if c, ok := w.(*checkedWriter); ok && c.err != nil {
		return &outputError{c.err}
	}
	return nil
}

func isUsage(err error) bool {
	var u *usageError
	return errors.As(err, &u)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

func mainUsage(w io.Writer) {
	fmt.Fprintln(w, "poot runs language models traced to a small IR.\n\nUsage:\n  poot <command> [flags]\n\nCommands:")
	for _, n := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(w, "  %-11s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun poot <command> --help for a command's flags. Start with: poot demo")
}

// flagSet is a command's flag set that prints its usage only for --help
// (to stdout, as asked for): parse errors become one-line usage errors.
type flagSet struct {
	*flag.FlagSet
	synopsis string
	help     io.Writer
}

// flags makes a command's flag set; --help prints to stdout.
func flags(name, synopsis string, stdout io.Writer) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), synopsis: synopsis, help: stdout}
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args; --help prints the usage and is flag.ErrHelp, a flag
// error or a stray argument is a usage error.
func (fs *flagSet) parse(args []string) error {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(fs.help, "Usage: poot %s\n\nFlags (one or two dashes):\n", fs.synopsis)
		fs.SetOutput(fs.help)
		fs.PrintDefaults()
		return err
	case err != nil:
		return usagef("%v", err)
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// given reports whether the named flag was set on the command line.
func (fs *flagSet) given(name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
