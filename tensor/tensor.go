// Package tensor holds host tensors: a type and the bytes of its elements
// exactly as stored (little-endian; packed quantized types as runs of blocks
// along the last axis). It is the currency in which weights, slots, state and
// results move between the loaders, the driver and the interpreters.
//
// A Tensor may own its bytes or be a zero-copy view over memory that belongs
// to someone else, such as a memory-mapped checkpoint ([View]); the package
// never copies data it is not asked to. Conversions between element types are
// explicit ([Tensor.ToF32], [Quantize]) and delegate to package quant, which
// is bit-exact with ggml.
//
// The package does no arithmetic on tensors: that is the interpreters' job.
package tensor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/quant"
)

// ErrType is returned (wrapped) when a tensor's type is invalid, or when its
// dtype is not the one an operation needs.
var ErrType = errors.New("tensor: wrong type")

// ErrSize is returned (wrapped) when a byte or element count does not match
// a tensor's type.
var ErrSize = errors.New("tensor: size mismatch")

// Tensor is a typed run of stored bytes. Data holds exactly Type.Bytes()
// bytes, little-endian, row-major with the last axis contiguous; a packed
// dtype stores each last-axis row as whole blocks. The zero Tensor is
// invalid.
type Tensor struct {
	Type poot.TensorType
	Data []byte
}

// hostLittleEndian reports whether the machine stores multi-byte numbers
// least significant byte first, in which case F32 and I32 data can be read
// in place.
var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

func checkType(t poot.TensorType) (int64, error) {
	n := t.Bytes()
	if n < 0 {
		return 0, fmt.Errorf("%w: %v has no valid storage size", ErrType, t)
	}
	return n, nil
}

// New returns a zero-filled tensor of type t that owns its bytes. Its Data
// is 8-byte aligned, so [Tensor.F32] and [Tensor.I32] never copy.
func New(t poot.TensorType) (Tensor, error) {
	n, err := checkType(t)
	if err != nil {
		return Tensor{}, err
	}
	return Tensor{Type: cloneType(t), Data: alignedBytes(int(n))}, nil
}

// alignedBytes allocates n zero bytes backed by uint64s, so the slice is
// 8-byte aligned.
func alignedBytes(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}

func cloneType(t poot.TensorType) poot.TensorType {
	return poot.TensorType{Shape: t.Shape.Clone(), DType: t.DType}
}

// View wraps b as a tensor of type t without copying. len(b) must equal
// t.Bytes(). The tensor aliases b: it sees later writes to b, and writing
// through it writes b (which faults for a read-only memory map).
func View(t poot.TensorType, b []byte) (Tensor, error) {
	n, err := checkType(t)
	if err != nil {
		return Tensor{}, err
	}
	if int64(len(b)) != n {
		return Tensor{}, fmt.Errorf("%w: %v takes %d bytes, got %d", ErrSize, t, n, len(b))
	}
	return Tensor{Type: cloneType(t), Data: b}, nil
}

func fromCount(d poot.DType, shape poot.Shape, n int) (Tensor, error) {
	t := poot.TensorType{Shape: shape, DType: d}
	if _, err := checkType(t); err != nil {
		return Tensor{}, err
	}
	if shape.Size() != int64(n) {
		return Tensor{}, fmt.Errorf("%w: %v has %d elements, got %d", ErrSize, t, shape.Size(), n)
	}
	return New(t)
}

// FromF32 returns an F32 tensor of the given shape holding a copy of v.
func FromF32(shape poot.Shape, v []float32) (Tensor, error) {
	t, err := fromCount(poot.F32, shape, len(v))
	if err != nil {
		return Tensor{}, err
	}
	for i, x := range v {
		binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(x))
	}
	return t, nil
}

// FromI32 returns an I32 tensor of the given shape holding a copy of v.
func FromI32(shape poot.Shape, v []int32) (Tensor, error) {
	t, err := fromCount(poot.I32, shape, len(v))
	if err != nil {
		return Tensor{}, err
	}
	for i, x := range v {
		binary.LittleEndian.PutUint32(t.Data[4*i:], uint32(x))
	}
	return t, nil
}

// FromBool returns a Bool tensor of the given shape holding v as bytes 0
// and 1.
func FromBool(shape poot.Shape, v []bool) (Tensor, error) {
	t, err := fromCount(poot.Bool, shape, len(v))
	if err != nil {
		return Tensor{}, err
	}
	for i, x := range v {
		if x {
			t.Data[i] = 1
		}
	}
	return t, nil
}

// Quantize encodes the float32 values v as a tensor of type t, whose dtype
// may be any float type (F32, F16, BF16 or packed). The bytes are those of
// ggml's reference conversions (package quant): F16 and BF16 round to
// nearest even, packed types use the reference quantizers.
func Quantize(t poot.TensorType, v []float32) (Tensor, error) {
	if !t.DType.Float() {
		return Tensor{}, fmt.Errorf("%w: cannot quantize to %v", ErrType, t.DType)
	}
	out, err := fromCount(t.DType, t.Shape, len(v))
	if err != nil {
		return Tensor{}, err
	}
	rows, rowElems, rowBytes := out.rows()
	for r := 0; r < rows; r++ {
		if err := quant.QuantizeRow(t.DType, out.Data[r*rowBytes:(r+1)*rowBytes], v[r*rowElems:(r+1)*rowElems]); err != nil {
			return Tensor{}, fmt.Errorf("tensor: quantize %v: %w", t, err)
		}
	}
	return out, nil
}

// rows splits the tensor into its last-axis rows: how many, elements per
// row, bytes per row. A scalar is one row of one element.
func (t Tensor) rows() (n, elems, bytes int) {
	s := t.Type.Shape
	elems = 1
	if len(s) > 0 {
		elems = s[len(s)-1]
	}
	size := int(t.Type.Shape.Size())
	if elems == 0 || size == 0 {
		return 0, elems, 0
	}
	return size / elems, elems, int(t.Type.DType.RowBytes(int64(elems)))
}

// Validate reports whether the type is valid and Data has exactly its
// storage size.
func (t Tensor) Validate() error {
	n, err := checkType(t.Type)
	if err != nil {
		return err
	}
	if int64(len(t.Data)) != n {
		return fmt.Errorf("%w: %v takes %d bytes, got %d", ErrSize, t.Type, n, len(t.Data))
	}
	return nil
}

// Len is the number of elements (0 for an invalid type).
func (t Tensor) Len() int {
	n := t.Type.Shape.Size()
	if n < 0 {
		return 0
	}
	return int(n)
}

// Clone returns a copy of t that owns its bytes.
func (t Tensor) Clone() Tensor {
	d := alignedBytes(len(t.Data))
	copy(d, t.Data)
	return Tensor{Type: cloneType(t.Type), Data: d}
}

// String describes the tensor by its type: "tensor f32[2,3]".
func (t Tensor) String() string { return "tensor " + t.Type.String() }

// F32 returns the elements of an F32 tensor. When Data is 4-byte aligned and
// the host is little-endian the result aliases Data (an unsafe
// reinterpretation: writing it writes the tensor); otherwise it is a copy.
// It returns nil when t is not a valid F32 tensor.
func (t Tensor) F32() []float32 {
	if t.Type.DType != poot.F32 || t.Validate() != nil {
		return nil
	}
	n := len(t.Data) / 4
	if n == 0 {
		return []float32{}
	}
	if hostLittleEndian && uintptr(unsafe.Pointer(&t.Data[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&t.Data[0])), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out
}

// I32 returns the elements of an I32 tensor, aliasing Data under the same
// conditions as [Tensor.F32] and copying otherwise. It returns nil when t is
// not a valid I32 tensor.
func (t Tensor) I32() []int32 {
	if t.Type.DType != poot.I32 || t.Validate() != nil {
		return nil
	}
	n := len(t.Data) / 4
	if n == 0 {
		return []int32{}
	}
	if hostLittleEndian && uintptr(unsafe.Pointer(&t.Data[0]))%4 == 0 {
		return unsafe.Slice((*int32)(unsafe.Pointer(&t.Data[0])), n)
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out
}

// Bool returns a copy of the elements of a Bool tensor (any nonzero byte is
// true). It returns nil when t is not a valid Bool tensor.
func (t Tensor) Bool() []bool {
	if t.Type.DType != poot.Bool || t.Validate() != nil {
		return nil
	}
	out := make([]bool, len(t.Data))
	for i, b := range t.Data {
		out[i] = b != 0
	}
	return out
}

// ToF32 decodes every element of t to a new float32 slice: F16 and BF16
// widen exactly, packed types dequantize exactly as ggml does, I32 rounds to
// nearest even and Bool gives 0 or 1.
func (t Tensor) ToF32() ([]float32, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	out := make([]float32, t.Len())
	switch t.Type.DType {
	case poot.I32:
		for i := range out {
			out[i] = float32(int32(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
		return out, nil
	case poot.Bool:
		for i, b := range t.Data {
			if b != 0 {
				out[i] = 1
			}
		}
		return out, nil
	}
	rows, elems, rowBytes := t.rows()
	for r := 0; r < rows; r++ {
		if err := quant.DequantizeRow(t.Type.DType, out[r*elems:(r+1)*elems], t.Data[r*rowBytes:(r+1)*rowBytes]); err != nil {
			return nil, fmt.Errorf("tensor: decode %v: %w", t.Type, err)
		}
	}
	return out, nil
}
