// Package pootest is the agreement kit: what every interpreter of poot is
// held to. It generates random well-formed graphs over every primitive with
// random shapes and data ([GenGraph]), runs one graph under two
// interpreters and compares their outputs and carried state with a per-dtype
// tolerance ([Agree], [Compare]), and when they differ finds the first
// equation whose value differs and names its scope ([WitnessAll] makes every
// intermediate observable).
//
// Model families use it to check their graphs under a new backend; the CPU
// and CUDA backends are held to the oracle (package interp) with it.
package pootest
