// Package mmap maps whole files into memory, read-only, so that checkpoint
// readers can hand out zero-copy views of tensor data. On Linux and Darwin it
// uses mmap(2); elsewhere it falls back to reading the file into memory, which
// keeps the same API at the cost of resident memory.
//
// It also holds the two other guards a reader of untrusted files needs:
// ReadFile reads a small side file (a config.json, a tokenizer) with a size
// cap and refuses anything that is not a regular file, and Guard turns a
// fault while touching mapped memory (SIGBUS when another process truncates
// or rewrites the file in place) into a *FaultError instead of a crash.
//
// It is not a general memory-mapping library: there is no writing, no partial
// mapping and no remapping.
package mmap

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
)

// ErrClosed is returned by Close when the map has already been closed.
var ErrClosed = errors.New("mmap: already closed")

// ErrNotRegular is wrapped by the error for a path that names a directory,
// a device, a FIFO or a socket (directly or through a symbolic link): mapping
// or reading those either fails late, never ends (/dev/zero) or blocks
// forever (a FIFO with no writer).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by ReadFile's error for a file above its cap.
var ErrTooLarge = errors.New("file too large")

// FileError names the file a check refused and why.
type FileError struct {
	Path string
	Err  error  // ErrNotRegular, ErrTooLarge, or an os error
	What string // detail: the file's kind, or its size and the cap
}

// Error formats the FileError on one line.
func (e *FileError) Error() string {
	if e.What == "" {
		return fmt.Sprintf("%s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s: %v (%s)", e.Path, e.Err, e.What)
}

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// Map is a read-only view of a whole file (or of bytes already in memory,
// see FromBytes). Its bytes stay valid until Close. A Map is safe for
// concurrent reads; Close must not race with them.
type Map struct {
	data   []byte
	unmap  func([]byte) error // nil when data is ordinary heap memory or empty
	closed bool
}

// FromBytes wraps bytes already in memory as a Map, so that readers keep
// one representation whether their data came from a file or not. Close
// only drops the reference.
func FromBytes(data []byte) *Map { return &Map{data: data} }

// Bytes returns the file's contents. The slice must not be written to (on
// Linux and Darwin that faults) and must not be used after Close.
func (m *Map) Bytes() []byte { return m.data }

// Len is the length of the file in bytes.
func (m *Map) Len() int { return len(m.data) }

// Closed reports whether Close has been called.
func (m *Map) Closed() bool { return m.closed }

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

// kind names what a non-regular file is, for messages.
func kind(mode fs.FileMode) string {
	switch {
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0 || mode&fs.ModeCharDevice != 0:
		return "a device"
	}
	return "not a plain file"
}

// openRegular opens path for reading without blocking on a FIFO and checks
// that what it opened is a regular file: the check is on the open file, so
// a path swapped between a stat and the open cannot slip through.
func openRegular(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, &FileError{Path: path, Err: ErrNotRegular, What: kind(st.Mode())}
	}
	return f, st.Size(), nil
}

// CheckRegular reports an error unless path is a regular file (following
// symbolic links) of at most limit bytes (limit <= 0: any size). It opens
// the file without blocking, so a FIFO is refused, not waited on.
func CheckRegular(path string, limit int64) error {
	f, size, err := openRegular(path)
	if err != nil {
		return err
	}
	f.Close()
	if limit > 0 && size > limit {
		return &FileError{Path: path, Err: ErrTooLarge, What: fmt.Sprintf("%d bytes, at most %d allowed", size, limit)}
	}
	return nil
}

// ReadFile reads the regular file at path, refusing one larger than limit
// bytes (limit <= 0: no cap) with a *FileError wrapping ErrTooLarge. The cap
// holds even if the file grows while it is read.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func(n int64) error {
		return &FileError{Path: path, Err: ErrTooLarge, What: fmt.Sprintf("%d bytes, at most %d allowed", n, limit)}
	}
	if limit > 0 && size > limit {
		return nil, tooLarge(size)
	}
	r := io.Reader(f)
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if limit > 0 && int64(len(data)) > limit {
		return nil, tooLarge(int64(len(data)))
	}
	return data, nil
}

// ErrFault is wrapped by every *FaultError.
var ErrFault = errors.New("memory fault reading a mapped file")

// FaultError reports a memory fault while reading a mapped file: the file
// was truncated or rewritten in place while it was in use (or the storage
// behind it failed). What names the reader's activity.
type FaultError struct {
	What string
	Addr uintptr
}

// Error formats the FaultError on one line.
func (e *FaultError) Error() string {
	what := e.What
	if what == "" {
		what = "reading a mapped file"
	}
	return fmt.Sprintf("mmap: memory fault at %#x while %s: the file changed or was truncated while in use", e.Addr, what)
}

// Unwrap returns ErrFault.
func (e *FaultError) Unwrap() error { return ErrFault }

// Guard runs f and turns a memory fault inside it, on this goroutine, into
// a *FaultError naming what (for example "binding blk.3.attn_q.weight").
// Other panics pass through unchanged. A fault on a goroutine that f starts
// is not caught here: each such goroutine must run its own Guard.
//
// Guard uses runtime/debug.SetPanicOnFault, which makes the runtime report
// a fault at a non-nil address as a panic on the faulting goroutine instead
// of killing the process; the previous setting is restored afterwards.
func Guard(what string, f func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if fe, ok := asFault(r); ok {
				fe.What = what
				err = fe
				return
			}
			panic(r)
		}
	}()
	return f()
}

// asFault recognises the runtime error SetPanicOnFault raises: a
// runtime.Error that carries the faulting address.
func asFault(r any) (*FaultError, bool) {
	re, ok := r.(runtime.Error)
	if !ok {
		return nil, false
	}
	addr, ok := re.(interface{ Addr() uintptr })
	if !ok {
		return nil, false
	}
	return &FaultError{Addr: addr.Addr()}, true
}

// ReadHead returns the first n bytes of the regular file at path (fewer
// when the file is shorter), refusing what is not a regular file as Open
// does: enough to sniff a container's magic.
func ReadHead(path string, n int) ([]byte, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	k, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:k], nil
}
