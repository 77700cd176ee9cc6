package poot

// Traced is a handle to a value being recorded by a Builder[B]. It carries
// no data: only the value's id and the identity of the builder that minted
// it. Its type is read through the builder (Builder.Aval).
//
// The type parameter B is the brand. Handles of a Builder[X] cannot be passed
// to a Builder[Y]: that is a compile error. Passing a handle of another
// builder of the same brand is caught at run time and recorded as
// ErrForeignHandle. Because a handle has no data, model code cannot branch on
// activations, so the recorded graph is the same on every step.
type Traced[B any] struct {
	id    ValueID
	owner uint64
}

// ID is the id the handle's value will have in the finished graph. It is -1
// for a poisoned handle (one returned after the builder recorded an error).
func (h Traced[B]) ID() ValueID {
	if h.owner == 0 {
		return -1
	}
	return h.id
}

// Carry pairs a state input with the value that replaces it after the step.
type Carry[B any] struct{ In, Out Traced[B] }

// Named is a handle with a name, used for validation witnesses.
type Named[B any] struct {
	Name  string
	Value Traced[B]
}

// Outputs is what Finish closes a graph with: the step's outputs in order,
// the state carries, and named validation witnesses.
type Outputs[B any] struct {
	Values    []Traced[B]
	States    []Carry[B]
	Witnesses []Named[B]
}

// Out starts an Outputs with the given output values.
func Out[B any](values ...Traced[B]) Outputs[B] { return Outputs[B]{Values: values} }

// WithState returns o with the carry in -> out added.
func (o Outputs[B]) WithState(in, out Traced[B]) Outputs[B] {
	o.States = append(o.States[:len(o.States):len(o.States)], Carry[B]{in, out})
	return o
}

// WithWitness returns o with a named witness added.
func (o Outputs[B]) WithWitness(name string, v Traced[B]) Outputs[B] {
	o.Witnesses = append(o.Witnesses[:len(o.Witnesses):len(o.Witnesses)], Named[B]{name, v})
	return o
}
