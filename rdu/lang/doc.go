// Package lang is the layer-program language of the streamed lowering: its
// syntax tree, a printer, a lexer and parser, and a type checker. A
// program is English-like text, one statement a line:
//
//	## kind0
//	Let pos be 1.
//	Let x be a 1 by 64 tensor of Real.
//	Let an0 be a 1 by 64 tensor of Real.
//	Let Wq0 be a 64 by 64 tensor of Real.
//	Let Kc0 be a 256 by 32 tensor of Real.
//	Let xn0 be rmsnorm of x with weight an0 with epsilon 1e-05.
//	Let qr0 be xn0 matmul Wq0.
//	Set row pos of Kc0 to kp0.
//	Let ct0 be attention of qp0 over Kc0 and Vc0 with 4 heads 2 groups up to pos.
//
// What it is for: writing down, for a vendor's compiler and for poot's
// simulator, exactly what one layer kind computes. It is not a general
// language: there are no loops, no functions and no control flow, every
// name is bound once, and every tensor is a matrix.
//
// # Grammar
//
// In EBNF; words in quotes are keywords (no name may be one), name is a
// letter or underscore followed by letters, digits and underscores, int is
// an optional minus and decimal digits, and real is an int with an
// optional fraction (a period followed by digits) and exponent. Whitespace,
// newlines included, only separates tokens. Counts (rows, columns, heads,
// groups, taps, windows, chunks, experts, items) are at least 1.
//
//	program   = "##" name { statement } .
//	statement = ( "Let" name "be" binding | "Set" write ) "." .
//	binding   = "a" int "by" int "tensor" "of" ( "Real" | "Int" )
//	          | int
//	          | expr .
//	write     = "item" int "of" name "to" int
//	          | "row" index "of" name "to" name
//	          | "rows" "from" index "of" name "to" name .
//	index     = name | int .
//	heads     = "across" int "heads" .
//	expr      = "rmsnorm" "of" name [ "with" "weight" [ "one" "plus" ] name ] [ heads ] [ epsilon ]
//	          | "layernorm" "of" name [ "with" "weight" [ "one" "plus" ] name [ "and" "bias" name ]
//	                | "with" "bias" name ] [ epsilon ]
//	          | "l2norm" "of" name [ heads ] [ epsilon ]
//	          | "rope" "of" name "with" "cos" name "and" "sin" name
//	                [ "from" "position" index ] heads [ "interleaved" ]
//	          | "attention" "of" name "over" name "and" name "with" int "heads" int "groups"
//	                [ "up" "to" index ] scores
//	          | "causal" "attention" "of" name "over" name "and" name
//	                "with" int "heads" int "groups" "from" index scores
//	          | "swiglu" "of" name "and" name
//	          | ( "gelu" | "silu" | "sigmoid" | "argmax" ) "of" name
//	          | "causal" "conv" "of" name "with" "weight" name "state" name
//	                [ "from" "position" index ] "over" int "taps"
//	          | "decay" "of" name "with" "bias" name [ "log" ] "rate" name
//	          | "gated" "delta" "of" name "over" name "and" name "with" [ "sigmoid" ] "gate" name
//	                "beta" name "decay" name "state" name [ "from" "position" index ] "norm" name "with" int "heads" int "groups" [ "tiled" ] [ epsilon ]
//	          | "moe" "of" name "with" "router" name [ bias ] "gate" name [ bias ] "up" name [ bias ]
//	                "down" name [ bias ] "choosing" int "of" int routing
//	          | "row" index "of" name
//	          | "rows" name "of" name
//	          | "the" ( "first" | "last" ) int "of" "every" int "of" name
//	          | "the" int "after" "the" "first" int "of" "every" int "of" name
//	          | name "matmul" name [ heads ]
//	          | name "plus" name
//	          | name "hadamard" name
//	          | name "joined" "with" name [ heads ]
//	          | name "scaled" "by" real
//	          | name "capped" "at" real .
//	epsilon   = "with" "epsilon" real .
//	scores    = [ "within" "a" "window" "of" int ] [ "in" "chunks" "of" int ]
//	            [ "scaled" "by" real ] [ "capped" "at" real ] [ "with" "sinks" name ] .
//	bias      = "plus" name .
//	routing   = [ "by" "sigmoid" [ "biased" "by" name ] ] [ "within" "the" "top" int "of" int "groups" ]
//	            [ "without" "renormalizing" ] [ "scaled" "by" real ] [ "weighting" "the" "inputs" ]
//	            [ "using" "a" "swiglu" "clamped" "at" real "with" "slope" real ] .
//
// # Meaning
//
// Every value is an R by C matrix of Real (32-bit floating point) or Int,
// or an Int scalar. Rows, items and positions count from 1. A declaration
// ("Let W be a 64 by 512 tensor of Real.") names a matrix something outside
// the program provides: a weight, a cache, a host table, the previous
// program's result; a scalar ("Let pos be 1.") names a number, which a
// bundle's runtime inputs overwrite. Every other name is bound once by a
// Let, from names bound before it. A Set writes a declared tensor in place;
// after it, the name means the written tensor.
//
//   - rmsnorm of x with weight w: each row of x (each of its heads' slices,
//     across N heads) divided by sqrt(mean of its squares + ε), ε 1e-6
//     unless given, then times w (one row as wide as the slice), or 1 + w
//     with "one plus"; no weight means a weight of ones. l2norm divides by sqrt(sum of squares + ε).
//     layernorm of x with weight w and bias b: each row less its mean,
//     divided by sqrt(mean of the squared differences + ε) (the biased
//     variance), times w (or 1 + w), plus b; either may be left out.
//     The seed's language has no layernorm: this statement, and the
//     "after" form of column runs below, are poot's extensions, for
//     Phi-2, StableLM, GPT-NeoX and Falcon.
//   - rope of x with cos C and sin S from position p across N heads: each
//     head of row r of x has its first 2h channels turned by the angles of
//     row p + r − 1 of C and S (h columns: row p for a single row; without
//     "from position", row r), in
//     pairs (i, i+h), or (2i, 2i+1) when interleaved: (a, b) becomes
//     (a·c − b·s, b·c + a·s). The remaining channels pass through.
//   - attention of q over K and V with H heads G groups: for each row of q
//     and each head h (D = columns of q / H wide), softmax over the visible
//     rows j of K of scale·(q_h · K_j,g) with g = h / (H/G) the head's
//     group, then the weighted sum of those rows of V. scale is 1/sqrt(D)
//     unless given; "capped at c" replaces each score s by c·tanh(s/c)
//     before the mask; "with sinks S" adds a logit S_h to each head's
//     denominator that attends to nothing. Visible: with "up to p" the rows
//     1…p, else every row of K; "within a window of W" keeps those with
//     p − j < W; "in chunks of C" those with ⌊(p−1)/C⌋ = ⌊(j−1)/C⌋. In
//     "causal attention … from p", row r of q is at position p + r − 1 and
//     sees the rows up to its own position.
//   - swiglu of g and u is silu(g)·u; silu(x) is x/(1+e^−x), sigmoid(x)
//     1/(1+e^−x), gelu(x) 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))); argmax
//     of a one-row x is the item of its largest element (the first of
//     equals), an Int scalar.
//   - a matmul b is the matrix product (a: R by K, b: K by N); across N heads
//     a's columns and b's rows are cut into N blocks multiplied pairwise and
//     joined. plus and hadamard are elementwise, the right operand of one
//     row standing for every row (of hadamard, also one column of as many
//     rows standing for every column). joined with puts b's columns after a's
//     (across N heads: head by head). scaled by multiplies by the number;
//     capped at c is c·tanh(x/c).
//   - row p of X is X's p-th row; rows t of X the rows an Int tensor t
//     lists; the first (last) N of every M of X keeps, of each run of M
//     columns, the first (last) N; the N after the first S of every M
//     keeps columns S+1 … S+N of each run (a fused projection's middle
//     part, its keys between its queries and values).
//   - Set row p of K to v writes the one-row v into row p of K; Set rows
//     from p of K to v writes v's rows into rows p, p+1, ….
//   - moe of x: the router's logits x·R (plus its bias) score E experts
//     and each row goes to the K of the highest scores: by default the
//     softmax over all E, "by sigmoid" each expert's sigmoid, chosen after
//     adding the selection bias; the K kept scores are divided by their sum
//     unless "without renormalizing", then multiplied by the scale. "within
//     the top U of C groups" first keeps the U best of C equal groups of
//     consecutive experts, a group scored by its largest score (by
//     softmax) or the sum of its two largest (by sigmoid). Each chosen
//     expert e computes down_e·swiglu(gate_e·x, up_e·x), or gpt-oss's
//     (u+1)·g·sigmoid(A·g) over g clamped above at L and u clamped to
//     [−L, L] when "using a swiglu clamped at L with slope A"; the results
//     are summed weighted by the scores, or, "weighting the inputs", each
//     expert's input is weighted instead. The gate and up stacks are E·F by
//     D and the down stack E·D by F, one block of rows an expert, and
//     gate_e·x is the column of the dot products of x with the rows of
//     expert e's block; the router is D by E; the expert biases are E by F
//     (E by D for down), one row an expert.
//   - causal conv of x with weight w state s over T taps: w is T by C, s
//     holds the T−1 rows before x (T−1 by C). Over the window of s's rows
//     followed by x's, row r of the result is Σ_j w[j]·window[r+j] per
//     column (w's last row multiplies the current row); then s becomes the
//     window's last T−1 rows. The statement both binds and writes s. With
//     "from position p", p is the position of x's first row, and at
//     position 1 (a new sequence) s is read as zeros; gated delta's clause
//     means the same for S.
//   - decay of x with bias b rate a: a · softplus(x + b) per column, b and
//     a rows as wide as x (the log decay, ≤ 0, for a ≤ 0); with "log rate"
//     the rate is −exp(a).
//   - gated delta of q over k and v with gate z beta β decay g state S
//     norm w with H heads G groups: q and k are G key heads of Dk columns,
//     v and z H value heads of Dv; value head h reads key head h/(H/G)
//     (h mod G when "tiled"); β
//     and g are one column a value head; S is H·Dv by Dk, head h's Dv rows
//     each a value channel's key vector; w is 1 by Dv. For each row: q and
//     k are divided per key head by sqrt(sum of squares + ε), and q is
//     scaled by 1/sqrt(Dk); per value head S ← S·exp(g), u = β·(v − S·k),
//     S ← S + u⊗k, o = S·q; the result is o per head divided by
//     sqrt(mean of squares + ε), times w, times silu(z) (sigmoid(z)
//     with "sigmoid gate"). The statement both binds and writes S.
//
// A program that parses may still be ill-typed: Check infers every name's
// type and reports the first statement that does not type, with the rule it
// breaks.
package lang
