package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/atomicfile"
)

// WriterTensor is one tensor for Write.
type WriterTensor struct {
	Name  string
	DType DType // use DTypeOf to convert a poot.DType
	Shape poot.Shape
	// Data holds the tensor's bytes. When it is nil and Reader is not,
	// exactly the tensor's size is copied from Reader while writing.
	Data   []byte
	Reader io.Reader
}

// size validates t and returns its byte size.
func (t WriterTensor) size() (int64, error) {
	if t.Name == MetadataKey || t.Name == "" {
		return 0, fmt.Errorf("safetensors: write: invalid tensor name %q", t.Name)
	}
	es := t.DType.Size()
	if es == 0 {
		return 0, fmt.Errorf("safetensors: write: tensor %q: unknown dtype %q", t.Name, string(t.DType))
	}
	n := t.Shape.Size()
	if n < 0 || n > (1<<62)/int64(es) {
		return 0, fmt.Errorf("safetensors: write: tensor %q: invalid shape %v", t.Name, t.Shape)
	}
	size := n * int64(es)
	if t.Data != nil && int64(len(t.Data)) != size {
		return 0, fmt.Errorf("safetensors: write: tensor %q: %d data bytes, %s%v needs %d", t.Name, len(t.Data), t.DType, t.Shape, size)
	}
	if t.Data == nil && t.Reader == nil && size != 0 {
		return 0, fmt.Errorf("safetensors: write: tensor %q: neither Data nor Reader given", t.Name)
	}
	return size, nil
}

// Write writes one safetensors file holding the tensors, back to back in the
// given order, and the metadata (omitted when empty). The header is padded
// with spaces to a multiple of 8 bytes so that the data section is aligned.
func Write(w io.Writer, tensors []WriterTensor, metadata map[string]string) error {
	sizes := make([]int64, len(tensors))
	seen := make(map[string]bool, len(tensors))
	for i, t := range tensors {
		if seen[t.Name] {
			return fmt.Errorf("safetensors: write: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		var err error
		if sizes[i], err = t.size(); err != nil {
			return err
		}
	}

	// The header is assembled by hand to keep the tensors in order;
	// encoding/json would sort a map's keys.
	hdr := []byte{'{'}
	if len(metadata) > 0 {
		md, err := json.Marshal(metadata)
		if err != nil {
			return fmt.Errorf("safetensors: write: %w", err)
		}
		hdr = append(hdr, `"`+MetadataKey+`":`...)
		hdr = append(hdr, md...)
	}
	var offset int64
	for i, t := range tensors {
		if len(hdr) > 1 {
			hdr = append(hdr, ',')
		}
		name, err := json.Marshal(t.Name)
		if err != nil {
			return fmt.Errorf("safetensors: write: %w", err)
		}
		hdr = append(hdr, name...)
		hdr = append(hdr, `:{"dtype":`...)
		hdr = strconv.AppendQuote(hdr, string(t.DType))
		hdr = append(hdr, `,"shape":[`...)
		for j, d := range t.Shape {
			if j > 0 {
				hdr = append(hdr, ',')
			}
			hdr = strconv.AppendInt(hdr, int64(d), 10)
		}
		hdr = append(hdr, `],"data_offsets":[`...)
		hdr = strconv.AppendInt(hdr, offset, 10)
		hdr = append(hdr, ',')
		offset += sizes[i]
		hdr = strconv.AppendInt(hdr, offset, 10)
		hdr = append(hdr, "]}"...)
	}
	hdr = append(hdr, '}')
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}

	bw := bufio.NewWriterSize(w, 1<<20)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
	bw.Write(lenBuf[:])
	if _, err := bw.Write(hdr); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	for i, t := range tensors {
		var err error
		if t.Data != nil {
			_, err = bw.Write(t.Data)
		} else if sizes[i] > 0 {
			var n int64
			n, err = io.CopyN(bw, t.Reader, sizes[i])
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("reader gave %d of %d bytes", n, sizes[i])
			}
		}
		if err != nil {
			return fmt.Errorf("safetensors: write: tensor %q: %w", t.Name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return nil
}

// WriteFile writes one safetensors file at path (see Write), atomically:
// the file is written under a temporary name in path's directory and
// renamed into place once complete, replacing what was there. A failed
// write leaves path as it was.
func WriteFile(path string, tensors []WriterTensor, metadata map[string]string) error {
	return writeFile(path, tensors, metadata)
}

func writeFile(path string, tensors []WriterTensor, metadata map[string]string) error {
	err := atomicfile.WriteFile(path, atomicfile.Replace, func(w io.Writer) error { return Write(w, tensors, metadata) })
	if err != nil && !strings.HasPrefix(err.Error(), "safetensors:") {
		return fmt.Errorf("safetensors: %w", err)
	}
	return err
}
