// Command customfamily is poot's command with one more family: the
// parallel-residual decoder of package examples/parallel, written outside
// poot. Every subcommand (generate, logits, inspect, trace, bench, lower,
// …) runs it:
//
//	go run ./examples/customfamily inspect -m parallel.gguf
//
// main_test.go writes a random checkpoint of the family and drives the
// subcommands on it.
package main

import (
	"github.com/pootlabs/poot/cli"
	"github.com/pootlabs/poot/examples/parallel"
)

func main() { cli.Main(parallel.Row) }
