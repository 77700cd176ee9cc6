package load

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/mmap"
)

// DataCheck is what CheckData found in one tensor's stored bytes: how many
// values are NaN or infinite. For packed types the values checked are the
// blocks' binary16 (or, for Q8_K, float32) scales and minimums, which every
// element of the block is multiplied by; the quants themselves are integers
// and cannot be non-finite. MXFP4's scales are E8M0 exponent bytes, whose
// only non-finite value is 0xFF, the Microscaling spec's NaN (llama.cpp's
// --check-tensors rejects it too, although ggml decodes it as 2^127).
type DataCheck struct {
	Tensor  string
	DType   poot.DType
	Checked int64 // values examined
	Bad     int64 // of them NaN or ±Inf
	// First is the index of the first bad value: an element index for
	// plain types, a block index for packed ones. -1 when Bad is 0.
	First int64
	// What names the values examined: "elements", or the scale fields
	// ("block scales d", "block scales d and minimums dmin").
	What string
}

// String describes the result on one line.
func (d DataCheck) String() string {
	if d.Bad == 0 {
		return fmt.Sprintf("%s (%v): %d %s, all finite", d.Tensor, d.DType, d.Checked, d.What)
	}
	unit := "element"
	if d.DType.Packed() {
		unit = "block"
	}
	return fmt.Sprintf("%s (%v): %d of %d %s are NaN or infinite, the first in %s %d", d.Tensor, d.DType, d.Bad, d.Checked, d.What, unit, d.First)
}

// scaleFields says where the floating-point fields of a packed block lie:
// byte offsets of binary16 fields, of one float32 for Q8_K, of one E8M0
// byte for MXFP4.
var scaleFields = map[poot.DType]struct {
	f16  []int
	f32  []int
	e8m0 []int
	what string
}{
	poot.Q8_0:  {f16: []int{0}, what: "block scales d"},
	poot.Q4_0:  {f16: []int{0}, what: "block scales d"},
	poot.Q5_0:  {f16: []int{0}, what: "block scales d"},
	poot.Q4_1:  {f16: []int{0, 2}, what: "block scales d and minimums m"},
	poot.Q5_1:  {f16: []int{0, 2}, what: "block scales d and minimums m"},
	poot.Q4_K:  {f16: []int{0, 2}, what: "block scales d and minimums dmin"},
	poot.Q5_K:  {f16: []int{0, 2}, what: "block scales d and minimums dmin"},
	poot.Q6_K:  {f16: []int{208}, what: "block scales d"},
	poot.Q8_K:  {f32: []int{0}, what: "block scales d"},
	poot.MXFP4: {e8m0: []int{0}, what: "block scales e (E8M0, 0xff is NaN)"},
}

// ScanData counts the non-finite values of data stored as dt; see
// DataCheck. A dtype with no floating-point values (I32, Bool) checks
// nothing.
func ScanData(dt poot.DType, data []byte) DataCheck {
	r := DataCheck{DType: dt, First: -1, What: "elements"}
	bad := func(i int64) {
		if r.Bad == 0 {
			r.First = i
		}
		r.Bad++
	}
	le := binary.LittleEndian
	switch dt {
	case poot.F32:
		for i := 0; i+4 <= len(data); i += 4 {
			if v := math.Float32frombits(le.Uint32(data[i:])); math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				bad(int64(i / 4))
			}
		}
		r.Checked = int64(len(data) / 4)
	case poot.F16, poot.BF16:
		for i := 0; i+2 <= len(data); i += 2 {
			if !finiteHalf(dt, le.Uint16(data[i:])) {
				bad(int64(i / 2))
			}
		}
		r.Checked = int64(len(data) / 2)
	default:
		f, ok := scaleFields[dt]
		if !ok {
			r.What = "values (none are floating point)"
			return r
		}
		r.What = f.what
		bb := dt.BlockBytes()
		for b := 0; b+bb <= len(data); b += bb {
			blk := data[b : b+bb]
			ok := true
			for _, off := range f.f16 {
				ok = ok && finiteHalf(poot.F16, le.Uint16(blk[off:]))
			}
			for _, off := range f.f32 {
				v := float64(math.Float32frombits(le.Uint32(blk[off:])))
				ok = ok && !math.IsNaN(v) && !math.IsInf(v, 0)
			}
			for _, off := range f.e8m0 {
				ok = ok && blk[off] != 0xff
			}
			if !ok {
				bad(int64(b / bb))
			}
			r.Checked++
		}
	}
	return r
}

// finiteHalf reports whether a binary16 or bfloat16 value is finite: its
// exponent bits are not all ones.
func finiteHalf(dt poot.DType, h uint16) bool {
	if dt == poot.BF16 {
		return h&0x7f80 != 0x7f80
	}
	return h&0x7c00 != 0x7c00
}

// CheckData scans the stored bytes of the named tensor for non-finite
// values (see DataCheck), as llama.cpp's --check-tensors does. It reads the
// mapping under mmap.Guard: a file truncated meanwhile is an
// *mmap.FaultError, not a crash.
func (c *Checkpoint) CheckData(name string) (DataCheck, error) {
	var r DataCheck
	err := mmap.Guard("checking "+name+" in "+c.path, func() error {
		t, err := c.Tensor(name)
		if err != nil {
			return err
		}
		r = ScanData(t.Type.DType, t.Data)
		return nil
	})
	r.Tensor = name
	return r, err
}
