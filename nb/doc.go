// Package nb is poot for notebooks: a non-generic façade over the IR, the
// composites of package ops and the oracle, for interactive use from
// gophernotes and gomacro.
//
// Those interpreters cannot import generic declarations or instantiate
// compiled generics, so nothing exported here has a type parameter: one
// hidden brand, a plain *Graph that records, and a plain Value handle.
// Every primitive and every common composite is a method of Graph; weights
// and inputs are declared by name and bound by name when the graph runs:
//
//	g := nb.New()
//	x := g.Input("x", 2, 4)
//	y := g.RMSNorm(x, g.Weight("w", 4), 1e-6)
//	out, err := g.Run(y, map[string][]float64{"x": xs, "w": ws})
//
// Binary methods broadcast numpy-style (recorded as explicit Reshape and
// Broadcast equations, since the IR itself never broadcasts); the
// composites record exactly what their functions in package ops record,
// in the same scopes, so String shows a notebook graph as it would show a
// family's. Scope groups a block of calls the same way.
//
// Errors are values, as in the builder: no method panics; the first error
// is kept (a *poot.Error naming the method and the line of the notebook
// code that called it), later calls return placeholders, and Err, String,
// Finish, Run and RunAll report it. A mistake in a call to Run (a value of
// another graph, data of the wrong length) is an error of that call only.
//
// # Models and shapes
//
// A model is any type with a Forward method (see Model), or a function
// (TraceFunc); Trace records it with its input named "x". Graphs have
// static shapes, so give Trace the input's dims:
//
//	g, y, err := nb.Trace(model, 2, 4) // x is f32[2,4]
//
// This is the way that works from a notebook: gomacro hands compiled code
// its own wrapper of an interpreted model, which has Forward alone, so an
// interpreted InputDims method (InputShaper) is never seen. Where the dims
// are left out, and for an Input or Weight declared without dims inside
// Forward, the shape comes from the data: the graph is traced again at
// each Run, with each such value a vector as long as its data (like
// jax.jit, which traces once per shape); a shape error then says which
// shapes came from the data. Until then Dump says which values wait for
// data. Values recorded outside Forward do not survive a retrace; the
// Value that Trace returns does. Outside Trace a shape must be given:
// Input("s", 1) is a one-element input, since Input("s") would mean "from
// the data". An Input too large for the graph's limits is an error where
// it is declared.
//
// An error recorded from interpreted code is placed at NotebookPos ("the
// notebook cell"): Go sees only the interpreter's frames there.
//
// # Running
//
// Run and RunAll evaluate with the oracle (package interp): exact and slow,
// the reference every backend is compared with. Data are float64 slices in
// row-major order, one per input or weight name; integer inputs (tokens,
// positions) must hold integers, and weights declared with WeightAs are
// quantized to their dtype first. Only what the requested outputs read must
// be bound; a name the graph does not declare is an error. A result is a
// Tensor: the elements with their shape, printed as a table.
//
// # Pictures
//
// A notebook shows a value by the methods it has (gophernotes looks for
// SVG, HTML and others): a Graph and an LLM draw themselves as SVG (see
// Graph.Picture), a Tensor as an HTML table, and a Chart (NextTokens,
// BarChart) as an SVG bar chart. Everything is drawn here in Go: no
// Graphviz or other program is needed.
//
// # Checkpoints
//
// Open loads a checkpoint through package driver and gives a plain LLM:
// Generate (GenerateFunc hands over each piece as it is decoded),
// Tokenize, Detokenize, Logits and LogitsAll, with ints, strings and
// Tensors only.
//
// Graphs and LLMs are not safe for concurrent use. A graph's limits (a
// million equations, 1 GiB for any one intermediate, 4 GiB in all) turn a
// typo in a shape into an error rather than an exhausted machine. Finish
// hands the recorded graph, as a plain *poot.Graph, to the rest of poot.
//
// What nb is not for: model families (write them with package ops over a
// branded poot.Builder) and speed (use package driver with a fast
// interpreter).
package nb
