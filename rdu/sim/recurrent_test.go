package sim

import (
	"math"
	"testing"
)

// TestCausalConv: each column is the sum of its filter times the window of
// the state's rows and the new row; the state then holds the last taps−1
// rows; from position 1 the state is read as zeros.
func TestCausalConv(t *testing.T) {
	env := map[string]value{
		"x":   mat(1, 2, 5, 6),
		"W":   mat(3, 2, 1, 10, 2, 20, 3, 30), // row 3 multiplies the new row
		"S":   mat(2, 2, 1, 2, 3, 4),
		"pos": 2,
	}
	near(t, "conv", eval(t, env, "causal conv of x with weight W state S from position pos over 3 taps").(*matrix).data,
		1*1+2*3+3*5, 10*2+20*4+30*6)
	near(t, "state", env["S"].(*matrix).data, 3, 4, 5, 6)
	env["pos"] = 1
	near(t, "fresh", eval(t, env, "causal conv of x with weight W state S from position pos over 3 taps").(*matrix).data, 15, 180)
	near(t, "fresh state", env["S"].(*matrix).data, 0, 0, 5, 6)
}

// TestDecay: rate times softplus(x + bias), the rate given or −exp of it.
func TestDecay(t *testing.T) {
	env := map[string]value{"x": mat(1, 2, 0, 1), "B": mat(1, 2, 0, -1), "A": mat(1, 2, -2, 0)}
	sp0 := math.Log(2)
	near(t, "rate", eval(t, env, "decay of x with bias B rate A").(*matrix).data, -2*sp0, 0)
	near(t, "log rate", eval(t, env, "decay of x with bias B log rate A").(*matrix).data, -math.Exp(-2)*sp0, -sp0)
}

// TestGatedDelta: one head of two key dims and one value dim, worked by
// hand: unit q and k, S ← S·e^g, u = β(v − S·k), S ← S + u k, o = S·q,
// then the norm of one value (o/|o|), the weight and silu of the gate.
func TestGatedDelta(t *testing.T) {
	env := map[string]value{
		"q": mat(1, 2, 3, 4), "k": mat(1, 2, 1, 0), "v": mat(1, 1, 2),
		"z": mat(1, 1, 1), "b": mat(1, 1, 0.5), "g": mat(1, 1, float32(math.Log(0.5))),
		"S": mat(1, 2, 2, 2), "w": mat(1, 1, 3),
	}
	got := eval(t, env, "gated delta of q over k and v with gate z beta b decay g state S norm w with 1 heads 1 groups with epsilon 1e-30").(*matrix).data
	// S·e^g = [1 1]; S·k = 1; u = 0.5·(2−1) = 0.5; S = [1.5 1];
	// q = (0.6, 0.8)/sqrt 2; o = (0.9+0.8)/sqrt 2 > 0, normed to 1.
	silu1 := 1 / (1 + math.Exp(-1))
	near(t, "out", got, 3*silu1)
	near(t, "state", env["S"].(*matrix).data, 1.5, 1)
}
