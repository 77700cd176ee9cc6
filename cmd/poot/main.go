// Command poot runs language models with poot: generate text, print logits,
// tokenize, inspect a checkpoint, print a step's graph, lower a model for a
// dataflow accelerator, and write random-weight checkpoints. `poot demo`
// shows the whole idea with no files.
//
// Usage:
//
//	poot <command> [flags]
//
// Every command takes --help. Errors are one line on stderr and a non-zero
// exit status: 1 for a failure, 2 for a usage error. The command is package
// cli; a binary of one's own with more families is cli.Main(rows...).
package main

import "github.com/pootlabs/poot/cli"

func main() { cli.Main() }
