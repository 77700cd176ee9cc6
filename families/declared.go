package families

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pootlabs/poot"
)

// ProbeShape is the step Tensors traces to read a model's weights: one row,
// one new token, one cache position. Every step of a model reads the same
// weights (the shape changes only how they are used), so the smallest step
// names them all at the least cost.
var ProbeShape = StepShape{Rows: 1, New: 1, Capacity: 1}

// Tensors lists the weights a model reads, read from its own trace: the
// constants of a ProbeShape decode step, in the order the step first uses
// them, with their poot-order shapes. There is no second list to keep in
// step with the tracer: what a family declares while tracing is what a
// checkpoint must hold, what a synthesiser writes and what the loader
// binds.
//
// Each weight's Role comes from where the trace uses it, through the
// composites' operand lists: the weight of a norm is "norm", the bias of a
// projection, a LayerNorm, a convolution or a router is "bias", the sinks
// of an attention are "sinks", the filter of a causal convolution "conv". A few roles no composite operand carries are
// read from canonical names: rope_freqs.weight ("rope_freqs") and the
// decay rates of a recurrent mixer, ssm_a ("decay"). Everything else is a
// "weight".
func Tensors(m Model) ([]TensorSpec, error) { return tensorsWithin(m, poot.Limits{}) }

// tensorsWithin is Tensors with the probe trace under limits.
func tensorsWithin(m Model, limits poot.Limits) ([]TensorSpec, error) {
	g, err := m.Trace(StepSpec{Program: Decode, Shape: ProbeShape}, limits)
	if err != nil {
		return nil, fmt.Errorf("families: %s: reading the weights from a trace: %w", m.Family(), err)
	}
	return TensorsOf(g), nil
}

// TensorsOf lists the constants of a traced graph as Tensors does.
func TensorsOf(g *poot.Graph) []TensorSpec {
	roles := map[poot.ValueID]string{}
	producers := g.Producers()
	// stored follows an operand back through the layout changes a family
	// makes to a weight before using it (a transpose, a reshape, a cast)
	// to the constant it reads, or returns -1.
	stored := func(v poot.ValueID) poot.ValueID {
		for v >= 0 && g.Value(v).Kind == poot.Device {
			e := g.Eqn(producers[v])
			if e.Op != poot.Transpose && e.Op != poot.Reshape && e.Op != poot.Cast {
				return -1
			}
			v = e.Inputs[0]
		}
		if v < 0 || g.Value(v).Kind != poot.Const {
			return -1
		}
		return v
	}
	for _, c := range g.Composites() {
		for i, v := range c.Operands {
			if v = stored(v); v < 0 {
				continue
			}
			if r := operandRole(c.Name, i); r != "" && roles[v] == "" {
				roles[v] = r
			}
		}
	}
	// In the order of first use: the order a reader of the model meets
	// them (the embedding, then each layer's norm before its projections),
	// whatever order the family declared them in.
	consts := g.Inputs(poot.Const)
	first := map[poot.ValueID]int{}
	for i, e := range g.Eqns() {
		for _, in := range e.Inputs {
			if _, seen := first[in]; !seen && g.Value(in).Kind == poot.Const {
				first[in] = i
			}
		}
	}
	use := func(id poot.ValueID) int {
		if i, ok := first[id]; ok {
			return i
		}
		return math.MaxInt // unused: last, in declaration order
	}
	slices.SortStableFunc(consts, func(a, b poot.ValueID) int { return cmp.Compare(use(a), use(b)) })
	var ts []TensorSpec
	for _, id := range consts {
		v := g.Value(id)
		role := roles[id]
		switch {
		case role != "":
		case v.Name == "rope_freqs.weight":
			role = "rope_freqs"
		case strings.HasSuffix(v.Name, ".ssm_a"):
			role = "decay"
		default:
			role = "weight"
		}
		ts = append(ts, TensorSpec{Name: v.Name, Shape: v.Type.Shape.Clone(), Role: role})
	}
	return ts
}

// operandRole is the role of operand i of composite name, or "" when the
// operand is an ordinary weight. The operand orders are those package ops
// documents.
func operandRole(name string, i int) string {
	switch name {
	case "rmsnorm":
		if i == 1 {
			return "norm"
		}
	case "layernorm":
		switch i {
		case 1:
			return "norm"
		case 2:
			return "bias"
		}
	case "linear":
		if i == 2 {
			return "bias"
		}
	case "causal_conv":
		switch i {
		case 2:
			return "conv" // stored F32 by llama.cpp's converter, whose convolution reads no other type
		case 3:
			return "bias"
		}
	case "attention":
		if i == 4 {
			return "sinks"
		}
	case "moe":
		switch i {
		case 2, 3, 7, 8, 9: // router, selection and expert biases
			return "bias"
		}
	case "gated_delta":
		if i == 6 {
			return "norm"
		}
	case "mamba2_ssm":
		if i == 4 {
			return "bias"
		}
	}
	return ""
}

// States lists the states a step of shape carries, read from its trace:
// each state input's name and type, in the order the graph declares them.
func States(m Model, shape StepShape) ([]poot.Value, error) {
	g, err := m.Trace(StepSpec{Program: Decode, Shape: shape}, poot.Limits{})
	if err != nil {
		return nil, err
	}
	var out []poot.Value
	for _, id := range g.Inputs(poot.State) {
		out = append(out, g.Value(id))
	}
	return out, nil
}

// CheckCarries checks a traced step's states against the ones a caller
// expects (StepSpec.Carries); empty expectations accept any. Families call
// it at the end of Trace.
func CheckCarries(family string, want []string, g *poot.Graph) error {
	if len(want) == 0 {
		return nil
	}
	set := map[string]bool{}
	for _, id := range g.Inputs(poot.State) {
		set[g.Value(id).Name] = true
	}
	for _, n := range want {
		if !set[n] {
			return &StepError{Model: family, Field: "Carries", Detail: fmt.Sprintf("the model carries no state %q", n)}
		}
		delete(set, n)
	}
	if len(set) > 0 {
		return &StepError{Model: family, Field: "Carries", Detail: fmt.Sprintf("the spec omits %d of the model's states", len(set))}
	}
	return nil
}
