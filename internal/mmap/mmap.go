// Package mmap maps whole files into memory, read-only, so that checkpoint
// readers can hand out zero-copy views of tensor data. On Linux and Darwin it
// uses mmap(2); elsewhere it falls back to reading the file into memory, which
// keeps the same API at the cost of resident memory.
//
// It is not a general memory-mapping library: there is no writing, no partial
// mapping and no remapping. A mapped file that another process truncates can
// fault the reader (SIGBUS); checkpoints are expected to be immutable.
package mmap

import "errors"

// ErrClosed is returned by Close when the map has already been closed.
var ErrClosed = errors.New("mmap: already closed")

// Map is a read-only view of a whole file. Its bytes stay valid until Close.
// A Map is safe for concurrent reads; Close must not race with them.
type Map struct {
	data   []byte
	unmap  func([]byte) error // nil when data is ordinary heap memory or empty
	closed bool
}

// Bytes returns the file's contents. The slice must not be written to (on
// Linux and Darwin that faults) and must not be used after Close.
func (m *Map) Bytes() []byte { return m.data }

// Len is the length of the file in bytes.
func (m *Map) Len() int { return len(m.data) }

// Close releases the mapping. Closing twice returns ErrClosed.
func (m *Map) Close() error {
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	data := m.data
	m.data = nil
	if m.unmap != nil && len(data) > 0 {
		return m.unmap(data)
	}
	return nil
}
