// Package poot is the core of poot: a small, typed intermediate
// representation in which a language-model family is an ordinary Go function
// that records primitive equations, and several interpreters consume the same
// recorded equations.
//
// # Tracing
//
// A model records its step through a [Builder]. Each builder call takes
// [Traced] handles, computes the result's [TensorType] from the operands'
// types (no data exists at this point), appends one equation and returns a
// handle to the result:
//
//	b := poot.NewBuilder[myModel](poot.Limits{})
//	x := b.SlotNamed("x", poot.T(poot.F32, 1, 64))
//	w := b.Constant("w", poot.T(poot.F32, 128, 64))
//	y := b.Exp(b.MatMul(x, w))
//	g, err := b.Finish(poot.Out(y))
//
// Handles carry no data, so model code cannot branch on activations: the
// graph is the same on every step, which is what lets a planner capture a
// step once and replay it. The type parameter of Builder is a brand: handles
// of a Builder[X] do not compile where a Builder[Y] is expected, and handles
// of another builder of the same brand are a typed error (ErrForeignHandle).
//
// # Values
//
// A graph has four kinds of values ([Kind]): constants (weights and tables,
// declared by name and bound when a checkpoint is loaded), slots (per-step
// inputs such as token ids and positions, with declared integer ranges),
// state (KV caches and recurrent states, each carried to a state output of
// the same type) and device values (every intermediate).
//
// # Primitives
//
// The primitives ([Op]) are few and orthogonal: elementwise arithmetic,
// comparisons and Select, reductions, contractions (MatMul, and
// IndexedMatMul for experts), layout (Reshape, Broadcast, Transpose, Slice,
// Concat), row reads and writes (Gather, WriteRows), Iota, Literal and Cast.
// Each has one definition holding its type rule and its documented
// semantics; interpreters attach one rule per primitive. There is no
// implicit broadcasting. Composite operations (RMSNorm, attention, mixtures
// of experts) are ordinary Go functions in package ops, not opcodes.
//
// # Errors
//
// A builder keeps the first error it meets, as an [*Error] naming the
// primitive, the operand types, the scope and the file:line of the model
// code; later calls record nothing and return poisoned handles, and
// [Builder.Finish] returns the error. Model code therefore needs no error
// plumbing, and no input makes the IR panic.
//
// # Graphs and passes
//
// A finished [Graph] is immutable, well formed ([Graph.Validate]) and
// brand-free. Passes change it only through edits that return a new,
// validated graph: [Graph.Replace], [Graph.RemoveDead],
// [Graph.RenameConstants], [Graph.RetypeConstants] and
// [Graph.WithWitnesses]. Scopes ([Builder.Scope]) mark layers and composite
// operations; [Digest] and [Renaming] compare scopes up to the names of their
// weights, which is how layers of one kind are recognised. A graph prints as
// text ([Graph.Format]) and as Graphviz ([Graph.DOT]).
//
// Package poot is not an interpreter and holds no tensor data: package
// interp evaluates graphs, package lower plans them for fast backends.
package poot
