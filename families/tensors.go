package families

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
)

// Bounds on counts read from a checkpoint's metadata, checked as they are
// read and before anything is allocated per layer or per expert: a header
// that says 2,000,000,000 layers must not cost gigabytes before its tensor
// table is consulted. Both are far beyond any published model (which have
// at most a few hundred layers and experts).
const (
	MaxLayers  = 1 << 12
	MaxExperts = 1 << 12
)

// ErrShape is wrapped by a TensorError for a stored tensor whose shape is
// not the one the hyperparameters give.
var ErrShape = errors.New("shape differs from the configuration")

// TensorError reports a weight the configuration needs that the checkpoint
// lacks (ErrMissing) or stores with another shape (ErrShape): the first
// such tensor in the model's order, so a layer count larger than the file
// names the first layer it does not hold.
type TensorError struct {
	Model  string // family name
	Tensor string // canonical name
	Stored string // the name looked up in the checkpoint, when it differs
	Err    error  // ErrMissing or ErrShape
	Detail string
}

// Error formats the TensorError on one line.
func (e *TensorError) Error() string {
	s := fmt.Sprintf("families: %s: tensor %q", e.Model, e.Tensor)
	if e.Stored != "" && e.Stored != e.Tensor {
		s += fmt.Sprintf(" (stored as %q)", e.Stored)
	}
	if errors.Is(e.Err, ErrMissing) {
		s += " is missing from the checkpoint"
	} else {
		s += ": " + e.Err.Error()
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel cause.
func (e *TensorError) Unwrap() error { return e.Err }

// TensorTable is what CheckTensors needs of a checkpoint: its tensor
// count and each stored tensor's poot-order shape. *load.Checkpoint has
// both; GGUFTable adapts a GGUF file.
type TensorTable interface {
	NumTensors() int
	TensorShape(stored string) (poot.Shape, bool)
}

type ggufTable struct{ f *gguf.File }

func (t ggufTable) NumTensors() int { return t.f.NumTensors() }

func (t ggufTable) TensorShape(name string) (poot.Shape, bool) {
	info, ok := t.f.Tensor(name)
	return info.Shape(), ok
}

// GGUFTable is f's tensor table.
func GGUFTable(f *gguf.File) TensorTable { return ggufTable{f} }

// CheckTensors checks a configured model against the checkpoint's tensor
// table before anything is traced: every weight the model reads must be
// stored, under the name its weight map gives, with the shape the
// hyperparameters give. The first weight that is not is a *TensorError.
// Afterwards every weight's size is bounded by the file, so tracing and
// binding cost memory in proportion to the checkpoint, not to a number in
// its header.
func CheckTensors(m Model, t TensorTable) error {
	layers := m.Schema().Layers
	if d, ok := m.(*Decoder); ok {
		layers = d.Layers
	}
	resolve := m.Weights().Resolver()
	// The probe trace runs before the checkpoint's shapes are checked, so
	// a header number that drives a loop of the tracer (a convolution of
	// 2^30 taps) must not cost memory in proportion to itself: the trace
	// is capped by the size of the tensor table, far above what any model
	// of that many tensors records.
	specs, err := tensorsWithin(m, poot.Limits{MaxEquations: 1<<20 + 1024*t.NumTensors()})
	if err != nil {
		return err
	}
	for _, spec := range specs {
		fail := func(stored string, err error, format string, args ...any) error {
			detail := fmt.Sprintf(format, args...)
			if l, _, ok := splitLayer(spec.Name); ok && l > 0 && errors.Is(err, ErrMissing) {
				detail = fmt.Sprintf("the configuration has %d layers, the checkpoint %d tensors", layers, t.NumTensors())
			}
			return &TensorError{Model: m.Family(), Tensor: spec.Name, Stored: stored, Err: err, Detail: detail}
		}
		src, ok := resolve(spec.Name)
		if !ok {
			return fail("", ErrMissing, "the weight map has no stored name for it")
		}
		if len(src.Parts) > 0 {
			if len(spec.Shape) == 0 || len(src.Parts) != spec.Shape[0] {
				return fail(src.Parts[0], ErrShape, "%d parts for shape %v", len(src.Parts), spec.Shape)
			}
			for _, p := range src.Parts {
				got, ok := t.TensorShape(p)
				switch {
				case !ok:
					return fail(p, ErrMissing, "")
				case !got.Equal(spec.Shape[1:]):
					return fail(p, ErrShape, "stored %v, want %v", got, spec.Shape[1:])
				}
			}
			continue
		}
		got, ok := t.TensorShape(src.Tensor)
		if !ok {
			return fail(src.Tensor, ErrMissing, "")
		}
		// The shape the loader makes of the stored one: matrices
		// transposed, then rows selected.
		eff := got.Clone()
		if n := len(eff); src.Transposed && n >= 2 {
			eff[n-2], eff[n-1] = eff[n-1], eff[n-2]
		}
		if src.RowEnd > 0 && len(eff) > 0 {
			axis := max(len(eff)-2, 0)
			if src.Columns {
				axis = len(eff) - 1
			}
			if src.RowStart < 0 || src.RowEnd > eff[axis] || src.RowStart >= src.RowEnd {
				return fail(src.Tensor, ErrShape, "rows [%d, %d) of stored %v, want %v", src.RowStart, src.RowEnd, got, spec.Shape)
			}
			step := max(src.RowStep, 1)
			eff[axis] = (src.RowEnd - src.RowStart + step - 1) / step
		}
		if src.Squeeze && load.Squeezed(eff).Equal(load.Squeezed(spec.Shape)) {
			eff = spec.Shape
		}
		if !eff.Equal(spec.Shape) {
			return fail(src.Tensor, ErrShape, "stored %v, the configuration gives %v", got, spec.Shape)
		}
	}
	return nil
}

// CheckLayerTensors fails key, a layer count read from f's metadata through
// r, when f holds no tensors of some layer below layers, naming the first
// such layer, and reports whether the count is usable. A family that reads
// its own GGUF keys (rather than through GGUFDecoder, which does this)
// calls it before sizing anything by the count; it costs time and memory in
// proportion to the tensor table, whatever the count says.
func CheckLayerTensors(f *gguf.File, r *Reader, model, key string, layers int) bool {
	return checkLayerTensors(f, r, model, key, layers)
}

// checkLayerTensors fails the layer count key when the GGUF file holds no
// tensors of some layer below it, naming the first such layer, and reports
// whether the count is usable. It costs time and memory in proportion to
// the tensor table, whatever the count says.
func checkLayerTensors(f *gguf.File, r *Reader, model, key string, layers int) bool {
	present := make([]bool, min(layers, f.NumTensors()+1))
	for _, t := range f.Tensors() {
		if l, _, ok := splitLayer(t.Name); ok && l < len(present) {
			present[l] = true
		}
	}
	for l := range layers {
		if l < len(present) && present[l] {
			continue
		}
		if r.err == nil {
			r.err = &TensorError{Model: model, Tensor: "blk." + strconv.Itoa(l) + ".attn_norm.weight", Err: ErrMissing,
				Detail: fmt.Sprintf("%s is %d, but the file has no tensors of layer %d (blk.%d.*)", r.Key(key), layers, l, l)}
		}
		return false
	}
	return true
}

// CheckVocab checks a tokenizer of tokens entries against a model whose
// embedding (and output) have rows rows. More tokens than rows would give
// ids the model cannot embed. Fewer is normal padding (rows rounded up to a
// multiple of 64 or 128, a few reserved slots) up to an eighth of the rows;
// a tokenizer much shorter than the model belongs to another model, and
// would turn most text into unknown tokens. Errors are *VocabError.
func CheckVocab(rows, tokens int) error {
	if tokens > rows || rows-tokens > rows/8 {
		return &VocabError{Rows: rows, Tokens: tokens}
	}
	return nil
}

// VocabError reports a tokenizer whose size does not fit the model.
type VocabError struct {
	Rows, Tokens int
}

// Error formats the VocabError on one line.
func (e *VocabError) Error() string {
	if e.Tokens > e.Rows {
		return fmt.Sprintf("families: the tokenizer has %d tokens but the model's embedding has only %d rows: ids from %d up cannot be embedded", e.Tokens, e.Rows, e.Rows)
	}
	return fmt.Sprintf("families: the tokenizer has %d tokens but the model's embedding has %d rows: the vocabulary does not belong to this model", e.Tokens, e.Rows)
}
