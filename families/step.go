package families

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
)

// KVLayout says how a step's KV cache is stored.
type KVLayout uint8

// The KV layouts.
const (
	// Contiguous gives every row its own capacity-long stretch of cache
	// rows: row r's position p lives at cache row r*capacity+p.
	Contiguous KVLayout = iota
	// Paged stores every row's positions in a shared pool of fixed-size
	// pages; the slot_map and write_map slots say where.
	Paged
)

// String returns "contiguous" or "paged".
func (l KVLayout) String() string {
	switch l {
	case Contiguous:
		return "contiguous"
	case Paged:
		return "paged"
	}
	return fmt.Sprintf("kvlayout(%d)", uint8(l))
}

// LogitsMode says which positions' logits a step returns.
type LogitsMode uint8

// The logits modes.
const (
	// LastToken returns logits f32[rows, vocab] for each row's last new
	// token (what generation needs).
	LastToken LogitsMode = iota
	// AllTokens returns logits f32[rows*new, vocab] for every new token
	// (scoring, speculative verification, tests).
	AllTokens
)

// StepShape is the static shape of one step: everything about a step that
// changes the graph, and nothing that does not (weights, token values and
// positions are data).
type StepShape struct {
	// Rows is the number of sequences in the step (batch size), at least 1.
	Rows int
	// New is the number of new tokens per row: the prompt chunk of a
	// prefill, 1 for decode.
	New int
	// Capacity is the number of cache positions each row can address; every
	// position must be below it.
	Capacity int
	// Layout is the KV layout, Contiguous or Paged.
	Layout KVLayout
	// PageSize is the number of cache rows in a page (Paged only).
	PageSize int
	// Pages is the number of pages in the shared pool (Paged only); zero
	// means enough for every row at full capacity.
	Pages int
	// Logits says which positions' logits come back.
	Logits LogitsMode
	// Hidden asks for a second output: the final hidden states before the
	// final norm, f32[rows*new, dim], for steps that carry them (draft
	// models, multi-token prediction).
	Hidden bool
	// KV is the dtype of the caches Step.Cache declares: F32 (the zero
	// value means F32), F16, which halves their memory and the bytes
	// attention reads at the cost of rounding each cached key and value to
	// binary16 (llama.cpp's -ctk f16 -ctv f16), or Q8_0, which stores 34
	// bytes for every 32 values (0.27 of F32) and quantizes each block of
	// 32 (llama.cpp's -ctk q8_0 -ctv q8_0); a Q8_0 cache needs every
	// cache's width to be a multiple of 32.
	KV poot.DType
}

// CheckCacheDType refuses a cache dtype other than F32, F16 and Q8_0 (the
// zero DType means F32).
func CheckCacheDType(d poot.DType) error {
	if d != poot.Invalid && d != poot.F32 && d != poot.F16 && d != poot.Q8_0 {
		return fmt.Errorf("caches of %v; they hold f32, f16 or q8_0", d)
	}
	return nil
}

// CacheDType is the dtype the step's caches hold.
func (s StepShape) CacheDType() poot.DType {
	if s.KV == poot.Invalid {
		return poot.F32
	}
	return s.KV
}

// Tokens is the number of new tokens in the step, Rows*New.
func (s StepShape) Tokens() int { return s.Rows * s.New }

// PoolRows is the number of cache rows a state holds: Rows*Capacity for a
// contiguous layout, Pages*PageSize for a paged one.
func (s StepShape) PoolRows() int {
	if s.Layout == Paged {
		pages := s.Pages
		if pages == 0 && s.PageSize > 0 {
			pages = s.Rows * ((s.Capacity + s.PageSize - 1) / s.PageSize)
		}
		return pages * s.PageSize
	}
	return s.Rows * s.Capacity
}

// Validate checks the shape on its own, independent of any model.
func (s StepShape) Validate() error {
	bad := func(field string, format string, args ...any) error {
		return &StepError{Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case s.Rows < 1:
		return bad("Rows", "%d rows; need at least 1", s.Rows)
	case s.New < 1:
		return bad("New", "%d new tokens per row; need at least 1", s.New)
	case s.Capacity < 1:
		return bad("Capacity", "capacity %d; need at least 1", s.Capacity)
	case s.New > s.Capacity:
		return bad("New", "%d new tokens per row exceed the capacity %d", s.New, s.Capacity)
	case s.Layout != Contiguous && s.Layout != Paged:
		return bad("Layout", "unknown layout %v", s.Layout)
	case s.Logits != LastToken && s.Logits != AllTokens:
		return bad("Logits", "unknown logits mode %d", s.Logits)
	case CheckCacheDType(s.KV) != nil:
		return bad("KV", "%v", CheckCacheDType(s.KV))
	}
	if s.Layout == Paged {
		if s.PageSize < 1 {
			return bad("PageSize", "page size %d; a paged layout needs at least 1", s.PageSize)
		}
		if s.Pages < 0 {
			return bad("Pages", "%d pages", s.Pages)
		}
	} else if s.PageSize != 0 || s.Pages != 0 {
		return bad("PageSize", "page size %d and %d pages given for a contiguous layout", s.PageSize, s.Pages)
	}
	if int64(s.Rows)*int64(s.New) > math.MaxInt32 || int64(s.PoolRows()) > math.MaxInt32 || int64(s.Rows)*int64(s.Capacity) > math.MaxInt32 {
		return bad("Rows", "the step addresses more than 2^31 tokens or cache rows")
	}
	return nil
}

// The program names the driver uses. Any other name is allowed; these are
// the ones every family traces.
const (
	Prefill = "prefill"
	Decode  = "decode"
)

// StepSpec names one program of a model and fixes its shape.
type StepSpec struct {
	// Program names the program: Prefill, Decode, or a family's own.
	// Prefill and decode are the same body; the name is for the driver.
	Program string
	// Shape is the step's static shape.
	Shape StepShape
	// Carries, when not empty, lists the state inputs the caller expects the
	// step to carry (cache.k.0, cache.v.0, …); tracing fails with a
	// StepError when the traced graph's states differ. Empty accepts the
	// model's own list.
	Carries []string
}

// StepError reports a step shape or spec that is invalid on its own or for
// a model.
type StepError struct {
	Model  string // the family, when the check was against a model
	Field  string // the StepShape field at fault
	Detail string
}

// Error formats the error on one line.
func (e *StepError) Error() string {
	if e.Model != "" {
		return fmt.Sprintf("families: %s: step %s: %s", e.Model, e.Field, e.Detail)
	}
	return fmt.Sprintf("families: step %s: %s", e.Field, e.Detail)
}

// Step gives a tracer the inputs of one step: typed token and position
// slots (and for paged layouts the slot and write maps), the KV cache
// states with their writes and reads, the attention masks built from the
// positions, and the state carries to finish the graph with.
type Step[B any] struct {
	B     *poot.Builder[B]
	Shape StepShape
	// Tokens is i32[rows*new] in [0, vocab).
	Tokens poot.Traced[B]
	// Pos is i32[rows*new] in [0, capacity): each new token's absolute
	// position.
	Pos poot.Traced[B]
	// SlotMap is i32[rows, capacity] in [0, pool rows) (paged only).
	SlotMap poot.Traced[B]
	// WriteMap is i32[rows*new] in [0, pool rows) (paged only).
	WriteMap poot.Traced[B]

	carries  []poot.Carry[B]
	masks    map[int]poot.Traced[B]
	writeIdx poot.Traced[B]
	haveIdx  bool
}

// NewStep declares the step's slots on b. The shape is validated; an invalid
// one is recorded as the builder's error.
func NewStep[B any](b *poot.Builder[B], shape StepShape, vocab int) *Step[B] {
	s := &Step[B]{B: b, Shape: shape, masks: map[int]poot.Traced[B]{}}
	if err := shape.Validate(); err != nil {
		b.Fail(err)
	}
	n := shape.Tokens()
	s.Tokens = b.Slot(poot.SlotToken, poot.Shape{n}, 0, int64(vocab-1))
	s.Pos = b.Slot(poot.SlotPos, poot.Shape{n}, 0, int64(shape.Capacity-1))
	if shape.Layout == Paged {
		pool := int64(shape.PoolRows())
		s.SlotMap = b.Slot(poot.SlotMap, poot.Shape{shape.Rows, shape.Capacity}, 0, pool-1)
		s.WriteMap = b.Slot(poot.SlotWriteMap, poot.Shape{n}, 0, pool-1)
	}
	return s
}

// CacheName is the name of layer l's key ("k") or value ("v") cache state.
func CacheName(kind string, layer int) string { return fmt.Sprintf("cache.%s.%d", kind, layer) }

// cacheRows returns the cache row each new token is written to.
func (s *Step[B]) cacheRows() poot.Traced[B] {
	if s.Shape.Layout == Paged {
		return s.WriteMap
	}
	if !s.haveIdx {
		s.writeIdx = ops.CacheIndex(s.B, s.Pos, s.Shape.Rows, s.Shape.Capacity)
		s.haveIdx = true
	}
	return s.writeIdx
}

// Cache declares the state named name with the width of fresh's columns
// (of the shape's cache dtype), writes the step's new rows (fresh,
// f32[rows*new, width], cast to that dtype) into it, records the carry,
// and returns the cache as the rows see it: f32[rows*capacity, width],
// logical position p of row r at row r*capacity+p (the layout
// ops.Attention reads), cast back to f32 from an f16 or q8_0 cache. Positions not
// yet written hold whatever the state holds (zeros from a fresh state);
// the attention mask hides them.
func (s *Step[B]) Cache(name string, fresh poot.Traced[B]) poot.Traced[B] {
	b, sh := s.B, s.Shape
	checkLayerName(b, name)
	width := b.Dim(fresh, -1)
	dt := sh.CacheDType()
	if dt.Packed() && width%dt.BlockElems() != 0 {
		b.Fail(&StepError{Field: "KV", Detail: fmt.Sprintf("a %v cache holds whole blocks of %d values; %s is %d wide", dt, dt.BlockElems(), name, width)})
	}
	in := b.StateInput(name, poot.T(dt, sh.PoolRows(), width))
	if dt != poot.F32 {
		fresh = b.Cast(fresh, dt)
	}
	out := b.WriteRows(in, s.cacheRows(), fresh)
	s.carries = append(s.carries, poot.Carry[B]{In: in, Out: out})
	if sh.Layout == Paged {
		out = b.Reshape(b.Gather(out, s.SlotMap), sh.Rows*sh.Capacity, width)
	}
	if dt != poot.F32 {
		out = b.Cast(out, poot.F32)
	}
	return out
}

// RowState declares a per-row recurrent state named name, f32[rows,
// dims...] (a convolution window, a delta-rule matrix): row r of the step
// reads and writes its own slice, whatever the KV layout (recurrent states
// are not paged). Record its next value with Carry.
func (s *Step[B]) RowState(name string, dims ...int) poot.Traced[B] {
	checkLayerName(s.B, name)
	return s.B.StateInput(name, poot.T(poot.F32, append([]int{s.Shape.Rows}, dims...)...))
}

// checkLayerName fails the builder when a state named for layer l
// (cache.k.3) is declared inside another layer's scope (layer.2): a
// copied line that names the wrong layer would otherwise give two layers
// one cache, or a cache its layer never reads.
func checkLayerName[B any](b *poot.Builder[B], name string) {
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 || !strings.HasPrefix(name, "cache.") {
		return
	}
	l, err := strconv.Atoi(name[dot+1:])
	if err != nil {
		return
	}
	for _, part := range strings.Split(b.CurrentScope(), "/") {
		if rest, ok := strings.CutPrefix(part, "layer."); ok {
			if m, err := strconv.Atoi(rest); err == nil && m != l {
				b.Fail(&StepError{Field: "Carries", Detail: fmt.Sprintf("state %q is declared in the scope of layer %d", name, m)})
			}
			return
		}
	}
}

// Carry records that the state input in is overwritten by out after the
// step; Finish closes the graph with it.
func (s *Step[B]) Carry(in, out poot.Traced[B]) {
	s.carries = append(s.carries, poot.Carry[B]{In: in, Out: out})
}

// Mask returns the attention mask Bool[rows*new, capacity]: new token i of
// row r may see its row's logical position j when j <= pos and, for
// window > 0, when pos - j < window. It is built once per window and shared
// by the layers.
func (s *Step[B]) Mask(window int) poot.Traced[B] {
	if m, ok := s.masks[window]; ok {
		return m
	}
	m := ops.CausalMask(s.B, s.Pos, s.Shape.Capacity, window, 0)
	s.masks[window] = m
	return m
}

// Last selects each row's last new token from x f32[rows*new, d], giving
// f32[rows, d]; with one new token per row it records nothing.
func (s *Step[B]) Last(x poot.Traced[B]) poot.Traced[B] {
	b, sh := s.B, s.Shape
	if sh.New == 1 {
		return x
	}
	d := b.Dim(x, -1)
	x = b.Reshape(x, sh.Rows, sh.New, d)
	return b.Reshape(b.SliceAxis(x, 1, sh.New-1, sh.New), sh.Rows, d)
}

// Finish closes the graph with the given outputs and every cache carry.
func (s *Step[B]) Finish(outputs ...poot.Traced[B]) (*poot.Graph, error) {
	out := poot.Out(outputs...)
	for _, c := range s.carries {
		out = out.WithState(c.In, c.Out)
	}
	return s.B.Finish(out)
}
