// Package driver runs language models: it opens a checkpoint (a GGUF file or
// a safetensors directory), finds the model's family in the registry, traces
// the prefill and decode steps once per step shape, binds their constants as
// stored, compiles them with an interpreter chosen by name, carries the KV
// state from step to step, and turns tokens into text through the sampler.
//
// The loop is the whole job:
//
//	prompt -> tokenizer -> prefill (in chunks) -> logits -> sampler -> token
//	       -> decode step (one token, the cache carried) -> logits -> …
//
// Interpreters are found by name in a small registry (RegisterInterpreter):
// "oracle" (package interp, exact and slow) is registered here; faster
// backends register themselves under their own names from their own
// packages and slot in through the same interp.Interpreter interface. The
// CPU backend, the default, registers as "cpu" when a program imports
// github.com/pootlabs/poot/lower/cpu/register (a package apart from
// lower/cpu, so that the backend does not depend on the driver).
//
// The context is fixed when the session opens (Options.Capacity). A prompt
// that does not fit is a *ContextError. Generation that reaches the end of
// the context stops with StopContext; there is no context shift.
//
// What this package is not for: tracing (families), loading (load),
// tokenizing (tokenizer) or evaluating graphs (interp and the backends).
// It owns the loop and nothing else.
package driver
