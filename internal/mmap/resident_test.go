//go:build linux || darwin

package mmap

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Resident keeps a Map's bytes, in chunks on several goroutines, leaves
// them read-only, and closes as a mapping does.
func TestResident(t *testing.T) {
	defer func(c int) { copyChunk = c }(copyChunk)
	copyChunk = 3 * 4096 // several chunks a file, a short last one
	dir := t.TempDir()
	for _, size := range []int{0, 1, 4097, 5*3*4096 + 17} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(i*13 + i>>9)
		}
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Resident(); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		// The copy outlives the file.
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Bytes(), want) {
			t.Errorf("size %d: the resident copy differs", size)
		}
		if size > 0 {
			err := Guard("writing", func() error { m.Bytes()[0]++; return nil })
			if !errors.Is(err, ErrFault) {
				t.Errorf("size %d: writing the resident copy = %v, want a fault", size, err)
			}
		}
		if err := m.Close(); err != nil {
			t.Errorf("size %d: close: %v", size, err)
		}
	}
	heap := FromBytes([]byte("abc"))
	if err := heap.Resident(); err != nil || string(heap.Bytes()) != "abc" {
		t.Errorf("Resident of heap bytes = %v, %q", err, heap.Bytes())
	}
}

// A file truncated before Resident copies it is a *FaultError, and the
// Map is left as it was.
func TestResidentTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 8*4096), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	old := &m.Bytes()[0]
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	var fe *FaultError
	if err := m.Resident(); !errors.As(err, &fe) {
		t.Fatalf("Resident of a truncated file = %v, want a FaultError", err)
	}
	if &m.Bytes()[0] != old || m.Len() != 8*4096 {
		t.Error("a failed Resident changed the Map")
	}
}

// Anonymous memory is zeroed, writable and released by Free.
func TestAnonymous(t *testing.T) {
	b, err := Anonymous(3<<20 + 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 3<<20+5 || bytes.IndexFunc(b, func(r rune) bool { return r != 0 }) >= 0 {
		t.Fatal("Anonymous memory is not n zero bytes")
	}
	b[len(b)-1] = 7
	if err := Free(b); err != nil {
		t.Error(err)
	}
}
