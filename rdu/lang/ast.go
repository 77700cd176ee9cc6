package lang

// Program is one layer program: its name (the "## name" header) and its
// statements in order.
type Program struct {
	Name  string
	Stmts []Stmt
}

// Stmt is one statement: a declaration (Declare, Scalar), a binding (Let)
// or a write (SetItem, SetRow, SetRows).
type Stmt interface{ stmt() }

// Elem is a tensor's element type.
type Elem uint8

// The element types.
const (
	Real Elem = iota // 32-bit floating point
	Int              // 32-bit integer
)

// String returns "Real" or "Int".
func (e Elem) String() string {
	if e == Int {
		return "Int"
	}
	return "Real"
}

// Declare is "Let Name be a Rows by Cols tensor of Elem.": a tensor the
// program reads that something outside it provides (a weight, a cache, a
// host table, the hidden state).
type Declare struct {
	Name       string
	Rows, Cols int
	Elem       Elem
}

// Scalar is "Let Name be Value.": an Int scalar, such as the token and the
// position a decode bundle reads at run time (Value only seeds them).
type Scalar struct {
	Name  string
	Value int
}

// SetItem is "Set item Item of Name to Value.": element Item (from 1, in
// row-major order) of an Int tensor.
type SetItem struct {
	Name        string
	Item, Value int
}

// Let is "Let Name be Expr.".
type Let struct {
	Name string
	Expr Expr
}

// SetRow is "Set row Row of Target to Value.": row Row (from 1) of a
// declared tensor is overwritten by the one-row tensor Value (a cache
// append).
type SetRow struct {
	Target string
	Row    Index
	Value  string
}

// SetRows is "Set rows from From of Target to Value.": the rows of Value
// overwrite Target's rows From, From+1, ….
type SetRows struct {
	Target string
	From   Index
	Value  string
}

func (Declare) stmt() {}
func (Scalar) stmt()  {}
func (SetItem) stmt() {}
func (Let) stmt()     {}
func (SetRow) stmt()  {}
func (SetRows) stmt() {}

// Index is a row or position: an Int scalar's name, or a number (from 1)
// when Name is empty.
type Index struct {
	Name string
	Num  int
}

// Expr is the right-hand side of a Let.
type Expr interface{ expr() }

// DefaultEpsilon is the epsilon of a normalisation that names none.
const DefaultEpsilon = 1e-6

// RMSNorm is "rmsnorm of X [with weight [one plus] Weight] [across Heads
// heads] [with epsilon Epsilon]": each row (each head's slice of it)
// divided by its root mean square plus Epsilon under the root, times
// Weight (or 1 + Weight).
type RMSNorm struct {
	X, Weight string // Weight "" for none
	OnePlus   bool   // scale by 1 + Weight
	Heads     int    // 0: the whole row
	Epsilon   float64
}

// LayerNorm is "layernorm of X [with weight [one plus] Weight] [and bias
// Bias] [with epsilon Epsilon]" (without a weight, "with bias Bias"): each
// row less its mean, divided by the root of its variance plus Epsilon, times
// Weight (or 1 + Weight), plus Bias.
type LayerNorm struct {
	X, Weight, Bias string // "" for none
	OnePlus         bool
	Epsilon         float64
}

// L2Norm is "l2norm of X [across Heads heads] [with epsilon Epsilon]".
type L2Norm struct {
	X       string
	Heads   int
	Epsilon float64
}

// Rope is "rope of X with cos Cos and sin Sin [from position From] across
// Heads heads [interleaved]": the rotary embedding of each head.
type Rope struct {
	X, Cos, Sin string
	From        *Index // nil: row r of the tables turns row r of X
	Heads       int
	Interleaved bool // pairs (2i, 2i+1) rather than (i, i+n/2)
}

// Attention is "[causal] attention of Q over K and V with Heads heads
// Groups groups [up to P | from P] [within a window of Window] [in chunks
// of Chunk] [scaled by Scale] [capped at Cap] [with sinks Sinks]".
type Attention struct {
	Q, K, V       string
	Heads, Groups int
	// Causal marks the stacked form: row r of Q sits at position At + r - 1
	// and sees the keys up to its own position.
	Causal bool
	At     *Index // "up to" (plain) or "from" (causal); nil: every key
	Window int    // 0: none
	Chunk  int    // 0: none
	Scale  float64
	Cap    float64 // 0: none
	Sinks  string  // "" for none
}

// SwiGLU is "swiglu of Gate and Up".
type SwiGLU struct{ Gate, Up string }

// UnaryOp names a one-operand function.
type UnaryOp uint8

// The one-operand functions.
const (
	Gelu UnaryOp = iota // GELU, tanh approximation
	Silu
	Sigmoid
	Argmax // the item (from 1) of a one-row tensor's largest element
)

var unaryNames = [...]string{Gelu: "gelu", Silu: "silu", Sigmoid: "sigmoid", Argmax: "argmax"}

// String returns the function's keyword.
func (o UnaryOp) String() string {
	if int(o) < len(unaryNames) {
		return unaryNames[o]
	}
	return "unary?"
}

// Unary is "gelu of X", "silu of X", "sigmoid of X" or "argmax of X".
type Unary struct {
	Op UnaryOp
	X  string
}

// CausalConv is "causal conv of X with weight Weight state State [from
// position From] over Taps taps". From, when given, is the position of X's
// first row: at position 1 the state is read as zeros (a new sequence).
type CausalConv struct {
	X, Weight, State string
	From             *Index
	Taps             int
}

// Decay is "decay of X with bias Bias [log] rate Rate"; LogRate says the
// rate is −exp(Rate).
type Decay struct {
	X, Bias, Rate string
	LogRate       bool
}

// GatedDelta is "gated delta of Q over K and V with [sigmoid] gate Gate
// beta Beta decay Decay state State [from position From] norm Norm with Heads heads Groups
// groups [tiled] [with epsilon Epsilon]"; Tiled says value head h reads key head h mod Groups
// rather than h/(Heads/Groups).
type GatedDelta struct {
	Q, K, V                        string
	SigmoidGate                    bool
	Gate, Beta, Decay, State, Norm string
	// From, when given, is the position of the first row, as CausalConv's.
	From          *Index
	Heads, Groups int
	Tiled         bool
	// Epsilon is the epsilon of the L2 norms and of the output's norm.
	Epsilon float64
}

// MoE is "moe of X with router Router [plus RouterBias] gate Gate [plus
// GateBias] up Up [plus UpBias] down Down [plus DownBias] choosing K of E
// [by sigmoid [biased by SelectionBias]] [within the top TopGroups of
// Groups groups] [without renormalizing] [scaled by Scale] [weighting the
// inputs] [using a swiglu clamped at Limit with slope Alpha]".
type MoE struct {
	X                  string
	Router, RouterBias string
	Gate, GateBias     string
	Up, UpBias         string
	Down, DownBias     string
	K, E               int
	Sigmoid            bool
	SelectionBias      string
	TopGroups, Groups  int // 0: no group limit
	NoRenormalize      bool
	Scale              float64 // 0: none
	WeightInputs       bool
	Clamped            bool
	Limit, Alpha       float64
}

// BinaryOp names a two-operand form.
type BinaryOp uint8

// The two-operand forms.
const (
	MatMul BinaryOp = iota
	Plus
	Hadamard
	Joined
)

var binaryNames = [...]string{MatMul: "matmul", Plus: "plus", Hadamard: "hadamard", Joined: "joined with"}

// String returns the form's keywords.
func (o BinaryOp) String() string {
	if int(o) < len(binaryNames) {
		return binaryNames[o]
	}
	return "binary?"
}

// Binary is "A matmul B [across Heads heads]", "A plus B", "A hadamard B"
// or "A joined with B [across Heads heads]".
type Binary struct {
	Op    BinaryOp
	A, B  string
	Heads int // matmul and joined only; 0: none
}

// Scaled is "X scaled by By".
type Scaled struct {
	X  string
	By float64
}

// Capped is "X capped at At": At·tanh(x/At).
type Capped struct {
	X  string
	At float64
}

// Row is "row Index of X".
type Row struct {
	Index Index
	X     string
}

// Rows is "rows Indices of X": the rows an Int tensor lists, in order.
type Rows struct{ Indices, X string }

// Columns is "the first N of every Every of X", "the last N of every
// Every of X", or "the N after the first After of every Every of X": of
// each run of Every columns, N of them, from column After + 1 of the run.
type Columns struct {
	Last            bool
	N, After, Every int // After is 0 for "first" and "last"
	X               string
}

func (RMSNorm) expr()    {}
func (L2Norm) expr()     {}
func (LayerNorm) expr()  {}
func (Rope) expr()       {}
func (Attention) expr()  {}
func (SwiGLU) expr()     {}
func (Unary) expr()      {}
func (CausalConv) expr() {}
func (Decay) expr()      {}
func (GatedDelta) expr() {}
func (MoE) expr()        {}
func (Binary) expr()     {}
func (Scaled) expr()     {}
func (Capped) expr()     {}
func (Row) expr()        {}
func (Rows) expr()       {}
func (Columns) expr()    {}
