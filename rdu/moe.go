package rdu

import (
	"math"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/rdu/lang"
)

// The gatings, group scores and expert activations of the "moe"
// composite's attributes (package ops numbers them so).
const (
	gatingSoftmaxTopK = 0
	gatingTopKSoftmax = 1
	gatingSigmoidTopK = 2
	groupTop2Sum      = 0
	groupMax          = 1
	expertSwiGLU      = 0
	expertClamped     = 1
)

// moe writes a mixture of experts as its statement, and its shared expert,
// when it has one, as the statements of a SwiGLU feed-forward added to it.
func (l *lifter) moe(c poot.Composite) {
	res := c.Results[0]
	l.preview(res, "mo")
	a := c.Attrs
	op := func(i int) poot.ValueID {
		if i >= len(c.Operands) {
			return -1
		}
		return c.Operands[i]
	}
	topK, _ := a.Int("top_k")
	gating, _ := a.Int("gating")
	groups, _ := a.Int("groups")
	topGroups, _ := a.Int("top_groups")
	groupScore, _ := a.Int("group_score")
	renorm, _ := a.Bool("renormalize")
	scale, _ := a.Float("scale")
	scaleInputs, _ := a.Bool("scale_inputs")
	act, _ := a.Int("activation")
	alpha, _ := a.Float("alpha")
	limit, _ := a.Float("limit")
	if gating < gatingSoftmaxTopK || gating > gatingSigmoidTopK {
		l.reject(ErrExperts, "gating %d", gating)
	}
	if act != expertSwiGLU && act != expertClamped {
		l.reject(ErrExperts, "experts gated by activation %d, not a SwiGLU", act)
	}
	if math.IsNaN(scale) || scale < 0 || math.IsInf(scale, 0) {
		l.reject(ErrExperts, "a routed scale of %v, not a positive number", scale)
	}
	if act == expertClamped && !(limit > 0 && !math.IsInf(limit, 0) && !math.IsNaN(alpha) && !math.IsInf(alpha, 0)) {
		l.reject(ErrExperts, "a clamped SwiGLU with limit %v and slope %v", limit, alpha)
	}
	x := l.ref(op(0))
	l.cols(op(0))
	gt := l.v.g.Type(op(4)).Shape
	if len(gt) != 3 {
		l.reject(ErrExperts, "an expert stack %v", gt)
	}
	experts := gt[0]
	if groups > 1 {
		switch {
		case gating == gatingTopKSoftmax:
			l.reject(ErrGroups, "a group limit over a softmax of the kept logits")
		case experts%groups != 0 || topGroups < 1 || topGroups > groups || topGroups*(experts/groups) < topK:
			l.reject(ErrGroups, "the top %d of %d groups of %d experts, choosing %d", topGroups, groups, experts, topK)
		case experts/groups >= 2 && (gating == gatingSoftmaxTopK) != (groupScore == groupMax):
			l.reject(ErrGroups, "groups scored by %s under %s gating (the language scores a group by its largest softmax score, or the sum of its two largest sigmoid scores)",
				map[int]string{groupTop2Sum: "their two largest scores", groupMax: "their largest score"}[groupScore],
				map[int]string{gatingSoftmaxTopK: "softmax", gatingSigmoidTopK: "sigmoid"}[gating])
		}
	} else {
		groups, topGroups = 0, 0
	}
	e := lang.MoE{X: x, K: topK, E: experts, Sigmoid: gating == gatingSigmoidTopK, TopGroups: topGroups, Groups: groups,
		WeightInputs: scaleInputs, Clamped: act == expertClamped}
	if gating != gatingTopKSoftmax && !renorm {
		e.NoRenormalize = true
	}
	if scale != 0 && scale != 1 {
		e.Scale = scale
	}
	if e.Clamped {
		e.Limit, e.Alpha = limit, alpha
	}
	opt := func(i int, form weightForm, contraction bool) string {
		if op(i) < 0 {
			return ""
		}
		return l.weightAs(op(i), form, contraction)
	}
	e.Router = opt(1, formMatrix, true)
	e.RouterBias = opt(2, formRow, false)
	if op(3) >= 0 {
		if !e.Sigmoid {
			l.reject(ErrExperts, "a selection bias over softmax scores")
		}
		e.SelectionBias = opt(3, formRow, false)
	}
	e.Gate = opt(4, formTable, true)
	e.Up = opt(5, formTable, true)
	e.Down = opt(6, formTable, true)
	e.GateBias = opt(7, formTable, false)
	e.UpBias = opt(8, formTable, false)
	e.DownBias = opt(9, formTable, false)
	shared := op(10) >= 0
	if !shared {
		l.emit(lang.Let{Name: l.bind(res, "mo"), Expr: e})
		return
	}
	if op(11) < 0 || op(12) < 0 {
		l.reject(ErrExperts, "a shared expert without its up or down projection")
	}
	mo := l.fresh("mo")
	l.emit(lang.Let{Name: mo, Expr: e})
	sg, su := l.fresh("sg"), l.fresh("su")
	l.emit(lang.Let{Name: sg, Expr: lang.Binary{Op: lang.MatMul, A: x, B: l.weightAs(op(10), formMatrix, true)}})
	l.emit(lang.Let{Name: su, Expr: lang.Binary{Op: lang.MatMul, A: x, B: l.weightAs(op(11), formMatrix, true)}})
	sh := l.fresh("sh")
	l.emit(lang.Let{Name: sh, Expr: lang.SwiGLU{Gate: sg, Up: su}})
	sd := l.fresh("sd")
	l.emit(lang.Let{Name: sd, Expr: lang.Binary{Op: lang.MatMul, A: sh, B: l.weightAs(op(12), formMatrix, true)}})
	if op(13) >= 0 {
		// A shared expert gated by its own router: times sigmoid(x·r), one
		// number a row.
		if t := l.v.g.Type(op(13)).Shape; len(t) != 2 || t[0] != 1 {
			l.reject(ErrExperts, "a shared expert's router %v, not one row", t)
		}
		sr, ss, sdg := l.fresh("sr"), l.fresh("ss"), l.fresh("sdg")
		l.emit(lang.Let{Name: sr, Expr: lang.Binary{Op: lang.MatMul, A: x, B: l.weightAs(op(13), formMatrix, true)}})
		l.emit(lang.Let{Name: ss, Expr: lang.Unary{Op: lang.Sigmoid, X: sr}})
		l.emit(lang.Let{Name: sdg, Expr: lang.Binary{Op: lang.Hadamard, A: sd, B: ss}})
		sd = sdg
	}
	l.emit(lang.Let{Name: l.bind(res, "me"), Expr: lang.Binary{Op: lang.Plus, A: mo, B: sd}})
}

// weightAs is weight with the contraction flag given.
func (l *lifter) weightAs(id poot.ValueID, form weightForm, contraction bool) string {
	name := l.weight(id, form)
	d := l.res.decls[name]
	d.contraction = contraction
	l.res.decls[name] = d
	return name
}
