package lang

// Rename returns a copy of p with every name replaced by f(name): the
// names it declares, binds, reads and writes. The program's own name is
// kept.
func Rename(p *Program, f func(string) string) *Program {
	out := &Program{Name: p.Name, Stmts: make([]Stmt, len(p.Stmts))}
	opt := func(s string) string {
		if s == "" {
			return ""
		}
		return f(s)
	}
	idx := func(i Index) Index {
		if i.Name != "" {
			i.Name = f(i.Name)
		}
		return i
	}
	idxp := func(i *Index) *Index {
		if i == nil {
			return nil
		}
		j := idx(*i)
		return &j
	}
	for k, s := range p.Stmts {
		switch s := s.(type) {
		case Declare:
			s.Name = f(s.Name)
			out.Stmts[k] = s
		case Scalar:
			s.Name = f(s.Name)
			out.Stmts[k] = s
		case SetItem:
			s.Name = f(s.Name)
			out.Stmts[k] = s
		case SetRow:
			s.Target, s.Row, s.Value = f(s.Target), idx(s.Row), f(s.Value)
			out.Stmts[k] = s
		case SetRows:
			s.Target, s.From, s.Value = f(s.Target), idx(s.From), f(s.Value)
			out.Stmts[k] = s
		case Let:
			s.Name = f(s.Name)
			s.Expr = renameExpr(s.Expr, f, opt, idx, idxp)
			out.Stmts[k] = s
		default:
			out.Stmts[k] = s
		}
	}
	return out
}

func renameExpr(e Expr, f, opt func(string) string, idx func(Index) Index, idxp func(*Index) *Index) Expr {
	switch e := e.(type) {
	case RMSNorm:
		e.X, e.Weight = f(e.X), opt(e.Weight)
		return e
	case LayerNorm:
		e.X, e.Weight, e.Bias = f(e.X), opt(e.Weight), opt(e.Bias)
		return e
	case L2Norm:
		e.X = f(e.X)
		return e
	case Rope:
		e.X, e.Cos, e.Sin, e.From = f(e.X), f(e.Cos), f(e.Sin), idxp(e.From)
		return e
	case Attention:
		e.Q, e.K, e.V, e.At, e.Sinks = f(e.Q), f(e.K), f(e.V), idxp(e.At), opt(e.Sinks)
		return e
	case SwiGLU:
		e.Gate, e.Up = f(e.Gate), f(e.Up)
		return e
	case Unary:
		e.X = f(e.X)
		return e
	case CausalConv:
		e.X, e.Weight, e.State, e.From = f(e.X), f(e.Weight), f(e.State), idxp(e.From)
		return e
	case Decay:
		e.X, e.Bias, e.Rate = f(e.X), f(e.Bias), f(e.Rate)
		return e
	case GatedDelta:
		e.Q, e.K, e.V, e.Gate, e.Beta, e.Decay, e.State, e.Norm = f(e.Q), f(e.K), f(e.V), f(e.Gate), f(e.Beta), f(e.Decay), f(e.State), f(e.Norm)
		e.From = idxp(e.From)
		return e
	case MoE:
		e.X, e.Router, e.RouterBias = f(e.X), f(e.Router), opt(e.RouterBias)
		e.Gate, e.GateBias, e.Up, e.UpBias = f(e.Gate), opt(e.GateBias), f(e.Up), opt(e.UpBias)
		e.Down, e.DownBias, e.SelectionBias = f(e.Down), opt(e.DownBias), opt(e.SelectionBias)
		return e
	case Binary:
		e.A, e.B = f(e.A), f(e.B)
		return e
	case Scaled:
		e.X = f(e.X)
		return e
	case Capped:
		e.X = f(e.X)
		return e
	case Row:
		e.Index, e.X = idx(e.Index), f(e.X)
		return e
	case Rows:
		e.Indices, e.X = f(e.Indices), f(e.X)
		return e
	case Columns:
		e.X = f(e.X)
		return e
	}
	return e
}
