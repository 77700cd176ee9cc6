//go:build race

package kernels_test

// raceEnabled: the race detector is on (go test -race), which runs the
// tests several times slower; the heaviest shape sweeps take a subset.
const raceEnabled = true
