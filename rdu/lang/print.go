package lang

import (
	"fmt"
	"strconv"
	"strings"
)

// Format returns the program's text: its header and one statement a line.
// Parse(Format(p)) is p for every program Parse returns.
func Format(p *Program) string {
	var sb strings.Builder
	sb.WriteString("## ")
	sb.WriteString(p.Name)
	sb.WriteByte('\n')
	for _, s := range p.Stmts {
		sb.WriteString(FormatStmt(s))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// FormatStmt returns one statement's text, with its final period.
func FormatStmt(s Stmt) string {
	switch s := s.(type) {
	case Declare:
		return fmt.Sprintf("Let %s be a %d by %d tensor of %v.", s.Name, s.Rows, s.Cols, s.Elem)
	case Scalar:
		return fmt.Sprintf("Let %s be %d.", s.Name, s.Value)
	case SetItem:
		return fmt.Sprintf("Set item %d of %s to %d.", s.Item, s.Name, s.Value)
	case SetRow:
		return fmt.Sprintf("Set row %s of %s to %s.", s.Row, s.Target, s.Value)
	case SetRows:
		return fmt.Sprintf("Set rows from %s of %s to %s.", s.From, s.Target, s.Value)
	case Let:
		return fmt.Sprintf("Let %s be %s.", s.Name, FormatExpr(s.Expr))
	}
	return fmt.Sprintf("<statement %T>", s)
}

// String returns the index as the language writes it.
func (i Index) String() string {
	if i.Name != "" {
		return i.Name
	}
	return strconv.Itoa(i.Num)
}

// FormatReal writes a real number as the language reads it: the shortest
// decimal that reads back as the same float64.
func FormatReal(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func heads(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" across %d heads", n)
}

func epsilon(e float64) string {
	if e == DefaultEpsilon {
		return ""
	}
	return " with epsilon " + FormatReal(e)
}

func plus(bias string) string {
	if bias == "" {
		return ""
	}
	return " plus " + bias
}

// FormatExpr returns an expression's text.
func FormatExpr(e Expr) string {
	switch e := e.(type) {
	case RMSNorm:
		w := ""
		if e.Weight != "" {
			w = " with weight " + e.Weight
			if e.OnePlus {
				w = " with weight one plus " + e.Weight
			}
		}
		return "rmsnorm of " + e.X + w + heads(e.Heads) + epsilon(e.Epsilon)
	case LayerNorm:
		w := ""
		switch {
		case e.Weight != "" && e.OnePlus:
			w = " with weight one plus " + e.Weight
		case e.Weight != "":
			w = " with weight " + e.Weight
		}
		switch {
		case e.Bias != "" && e.Weight != "":
			w += " and bias " + e.Bias
		case e.Bias != "":
			w = " with bias " + e.Bias
		}
		return "layernorm of " + e.X + w + epsilon(e.Epsilon)
	case L2Norm:
		return "l2norm of " + e.X + heads(e.Heads) + epsilon(e.Epsilon)
	case Rope:
		at := ""
		if e.From != nil {
			at = " from position " + e.From.String()
		}
		il := ""
		if e.Interleaved {
			il = " interleaved"
		}
		return fmt.Sprintf("rope of %s with cos %s and sin %s%s across %d heads%s", e.X, e.Cos, e.Sin, at, e.Heads, il)
	case Attention:
		var sb strings.Builder
		if e.Causal {
			sb.WriteString("causal ")
		}
		fmt.Fprintf(&sb, "attention of %s over %s and %s with %d heads %d groups", e.Q, e.K, e.V, e.Heads, e.Groups)
		if e.At != nil {
			if e.Causal {
				sb.WriteString(" from " + e.At.String())
			} else {
				sb.WriteString(" up to " + e.At.String())
			}
		}
		if e.Window != 0 {
			fmt.Fprintf(&sb, " within a window of %d", e.Window)
		}
		if e.Chunk != 0 {
			fmt.Fprintf(&sb, " in chunks of %d", e.Chunk)
		}
		if e.Scale != 0 {
			sb.WriteString(" scaled by " + FormatReal(e.Scale))
		}
		if e.Cap != 0 {
			sb.WriteString(" capped at " + FormatReal(e.Cap))
		}
		if e.Sinks != "" {
			sb.WriteString(" with sinks " + e.Sinks)
		}
		return sb.String()
	case SwiGLU:
		return "swiglu of " + e.Gate + " and " + e.Up
	case Unary:
		return e.Op.String() + " of " + e.X
	case CausalConv:
		return fmt.Sprintf("causal conv of %s with weight %s state %s%s over %d taps", e.X, e.Weight, e.State, fromPosition(e.From), e.Taps)
	case Decay:
		rate := "rate"
		if e.LogRate {
			rate = "log rate"
		}
		return fmt.Sprintf("decay of %s with bias %s %s %s", e.X, e.Bias, rate, e.Rate)
	case GatedDelta:
		gate := "gate"
		if e.SigmoidGate {
			gate = "sigmoid gate"
		}
		tiled := ""
		if e.Tiled {
			tiled = " tiled"
		}
		return fmt.Sprintf("gated delta of %s over %s and %s with %s %s beta %s decay %s state %s%s norm %s with %d heads %d groups%s%s",
			e.Q, e.K, e.V, gate, e.Gate, e.Beta, e.Decay, e.State, fromPosition(e.From), e.Norm, e.Heads, e.Groups, tiled, epsilon(e.Epsilon))
	case MoE:
		var sb strings.Builder
		fmt.Fprintf(&sb, "moe of %s with router %s%s gate %s%s up %s%s down %s%s choosing %d of %d",
			e.X, e.Router, plus(e.RouterBias), e.Gate, plus(e.GateBias), e.Up, plus(e.UpBias), e.Down, plus(e.DownBias), e.K, e.E)
		if e.Sigmoid {
			sb.WriteString(" by sigmoid")
			if e.SelectionBias != "" {
				sb.WriteString(" biased by " + e.SelectionBias)
			}
		}
		if e.Groups != 0 {
			fmt.Fprintf(&sb, " within the top %d of %d groups", e.TopGroups, e.Groups)
		}
		if e.NoRenormalize {
			sb.WriteString(" without renormalizing")
		}
		if e.Scale != 0 {
			sb.WriteString(" scaled by " + FormatReal(e.Scale))
		}
		if e.WeightInputs {
			sb.WriteString(" weighting the inputs")
		}
		if e.Clamped {
			fmt.Fprintf(&sb, " using a swiglu clamped at %s with slope %s", FormatReal(e.Limit), FormatReal(e.Alpha))
		}
		return sb.String()
	case Binary:
		h := ""
		if e.Op == MatMul || e.Op == Joined {
			h = heads(e.Heads)
		}
		return e.A + " " + e.Op.String() + " " + e.B + h
	case Scaled:
		return e.X + " scaled by " + FormatReal(e.By)
	case Capped:
		return e.X + " capped at " + FormatReal(e.At)
	case Row:
		return "row " + e.Index.String() + " of " + e.X
	case Rows:
		return "rows " + e.Indices + " of " + e.X
	case Columns:
		switch {
		case e.Last:
			return fmt.Sprintf("the last %d of every %d of %s", e.N, e.Every, e.X)
		case e.After > 0:
			return fmt.Sprintf("the %d after the first %d of every %d of %s", e.N, e.After, e.Every, e.X)
		}
		return fmt.Sprintf("the first %d of every %d of %s", e.N, e.Every, e.X)
	}
	return fmt.Sprintf("<expression %T>", e)
}

// fromPosition prints an optional "from position" clause.
func fromPosition(i *Index) string {
	if i == nil {
		return ""
	}
	return " from position " + i.String()
}
