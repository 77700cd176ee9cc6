// Package poot is the core of poot: a small, typed intermediate representation
// in which a language-model family is an ordinary Go function that records
// primitive equations through a [Builder]. The finished [Graph] is plain data
// that several interpreters consume: the oracle (package interp) evaluates it
// tensor by tensor, the planner (package lower) fuses and schedules it for fast
// kernels, and the streamed lowering splits it into per-layer programs.
package poot
