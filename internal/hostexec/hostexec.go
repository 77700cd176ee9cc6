// Package hostexec is the one generic host implementation of every
// primitive: a kernel per equation over host memory, compiled once and run
// each step. The oracle (package interp) runs every equation through it;
// the CPU backend (lower/cpu) runs through it every equation it has no
// faster kernel for (its contractions, fused programs and attention are its
// own). Both therefore compute the same thing in the same way, down to the
// error texts of runtime faults.
//
// Elementwise primitives with a scalar meaning need no rule here: their
// kernel applies the functions of their poot.Scalar record. The other
// primitives have one rule each, in a table indexed by Op.
//
// It is not an interpreter: it knows nothing of graphs, bindings, state or
// memory planning. A caller hands it one equation at a time with the
// storage of its operands and result ([Eqn]).
package hostexec

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/pootlabs/poot"
)

// Sentinel errors of runtime faults and unsupported equations; package
// interp exports them under the same names.
var (
	// ErrIndexRange: a Gather, WriteRows or IndexedMatMul index lies
	// outside its table.
	ErrIndexRange = errors.New("index out of range")
	// ErrDivideByZero: an I32 division by zero.
	ErrDivideByZero = errors.New("integer division by zero")
	// ErrUnsupported: an equation the host kernels cannot evaluate.
	ErrUnsupported = errors.New("unsupported")
)

// Storage is the memory of one value as a kernel reads it each time it
// runs, so a caller may point it elsewhere between runs: the stored bytes,
// and views of them as float32 and int32 elements, which must be valid for
// F32 and I32 values. A view may be longer than the value.
type Storage interface {
	Bytes() []byte
	F32() []float32
	I32() []int32
}

// Buf is a Storage over one byte slice.
type Buf struct {
	b []byte
	f []float32
	i []int32
}

// NewBuf returns a zeroed Buf of n bytes, aligned for its word views.
func NewBuf(n int64) *Buf {
	w := make([]uint32, (n+3)/4)
	x := &Buf{}
	if len(w) > 0 {
		x.Set(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*4)[:n])
	}
	return x
}

// Set points the Buf at b, viewed as words when b is aligned to 4 bytes.
func (x *Buf) Set(b []byte) {
	x.b, x.f, x.i = b, nil, nil
	if len(b) >= 4 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 == 0 {
		x.f = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
		x.i = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
	}
}

// Bytes returns the stored bytes.
func (x *Buf) Bytes() []byte { return x.b }

// F32 returns the bytes viewed as float32 elements (nil when unaligned).
func (x *Buf) F32() []float32 { return x.f }

// I32 returns the bytes viewed as int32 elements (nil when unaligned).
func (x *Buf) I32() []int32 { return x.i }

// Parallel runs n parts of a loop: fn(lo, hi) computes parts [lo, hi).
// kernels.Pool is one; [Spawn] is another.
type Parallel interface {
	Workers() int
	Run(n int, fn func(lo, hi int))
}

// Spawn is a Parallel that runs each part on a goroutine of its own; its
// value is the number of workers it reports.
type Spawn int

// Workers returns s.
func (s Spawn) Workers() int { return int(s) }

// Run runs the n parts on n goroutines and waits for them.
func (Spawn) Run(n int, fn func(lo, hi int)) {
	var wg sync.WaitGroup
	for p := range n {
		wg.Go(func() { fn(p, p+1) })
	}
	wg.Wait()
}

// Eqn is one equation as a kernel is compiled for it: the primitive, its
// params, the types of operands and result, and their storage.
type Eqn struct {
	Op     poot.Op
	Params poot.Params
	In     []poot.TensorType
	Out    poot.TensorType
	Args   []Storage
	Res    Storage
	// Par splits large contractions into parts; nil runs them serially.
	// Every output is computed by one part in the same order either way,
	// so the result does not depend on it.
	Par Parallel
}

// rule compiles an equation into the function that runs it each step.
type rule func(e *Eqn) (func() error, error)

var rules [poot.NumOps]rule

func init() {
	rules[poot.Select] = ruleSelect
	rules[poot.ReduceSum] = ruleReduce
	rules[poot.ReduceMax] = ruleReduce
	rules[poot.ArgMax] = ruleReduce
	rules[poot.ArgTopK] = ruleArgTopK
	rules[poot.MatMul] = ruleMatMul
	rules[poot.IndexedMatMul] = ruleIndexedMatMul
	rules[poot.Broadcast] = ruleBroadcast
	rules[poot.Transpose] = ruleTranspose
	rules[poot.Slice] = ruleSlice
	rules[poot.Concat] = ruleConcat
	rules[poot.Gather] = ruleGather
	rules[poot.WriteRows] = ruleWriteRows
	rules[poot.Iota] = ruleFill
	rules[poot.Literal] = ruleFill
	rules[poot.Cast] = ruleCast
}

// Compile returns the function that evaluates e each step. Iota and
// Literal are filled now and return no function, since their values never
// change; Reshape returns none either, since it moves no data: the caller
// gives its result the operand's storage. A WriteRows whose result is the
// same Storage as its destination writes in place.
func Compile(e *Eqn) (func() error, error) {
	if e.Op == poot.Reshape {
		return nil, nil
	}
	if s, ok := e.Op.Scalar(); ok {
		return elementwise(e, s)
	}
	if !e.Op.Valid() || rules[e.Op] == nil {
		return nil, fmt.Errorf("%w: no host kernel for %v", ErrUnsupported, e.Op)
	}
	return rules[e.Op](e)
}

// Bool is the stored byte of a Bool: 1 for true, 0 for false.
func Bool(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func size(t poot.TensorType) int { return int(t.Shape.Size()) }
