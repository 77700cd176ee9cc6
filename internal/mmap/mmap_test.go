package mmap

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 4095, 4096, 4097, 1 << 20} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(i*7 + i>>8)
		}
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := Open(path)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if m.Len() != size || !bytes.Equal(m.Bytes(), want) {
			t.Errorf("size %d: contents differ", size)
		}
		if err := m.Close(); err != nil {
			t.Errorf("size %d: close: %v", size, err)
		}
		if err := m.Close(); !errors.Is(err, ErrClosed) {
			t.Errorf("size %d: second close = %v, want ErrClosed", size, err)
		}
		if m.Bytes() != nil {
			t.Errorf("size %d: Bytes after Close is not nil", size)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
	if _, err := Open(dir); err == nil {
		t.Errorf("directory: no error")
	}
}

// Paths that are not regular files are refused at once, never read or
// waited on: a FIFO with no writer, a link to /dev/zero, a directory.
func TestOpenNotRegular(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Skip("no symlinks:", err)
	}
	paths := map[string]string{"link to /dev/zero": zero, "directory": dir}
	if fifo := filepath.Join(dir, "fifo"); mkfifo(fifo) == nil {
		paths["fifo"] = fifo
	}
	for name, p := range paths {
		if _, err := Open(p); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Open(%s) = %v, want ErrNotRegular", name, err)
		}
		if _, err := ReadFile(p, 1<<20); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(%s) = %v, want ErrNotRegular", name, err)
		}
		if err := CheckRegular(p, 0); !errors.Is(err, ErrNotRegular) {
			t.Errorf("CheckRegular(%s) = %v, want ErrNotRegular", name, err)
		}
	}
}

func TestReadFileCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(path, 100); err != nil || len(b) != 100 {
		t.Errorf("ReadFile at the cap = %d bytes, %v", len(b), err)
	}
	_, err := ReadFile(path, 99)
	var fe *FileError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &fe) || fe.Path != path {
		t.Errorf("ReadFile over the cap = %v, want a FileError wrapping ErrTooLarge", err)
	}
	if err := CheckRegular(path, 99); !errors.Is(err, ErrTooLarge) {
		t.Errorf("CheckRegular over the cap = %v", err)
	}
}

// A file truncated under its mapping faults the reader; Guard turns that
// into an error.
func TestGuardFault(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.unmap == nil {
		t.Skip("no mmap on this platform")
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var sum byte
	err = Guard("summing the test file", func() error {
		for _, b := range m.Bytes() {
			sum += b
		}
		return nil
	})
	var fe *FaultError
	if !errors.As(err, &fe) || fe.What != "summing the test file" {
		t.Fatalf("Guard = %v, want a FaultError", err)
	}
	// Other panics are not swallowed.
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recovered %v, want the original panic", r)
		}
	}()
	Guard("x", func() error { panic("boom") })
}

func TestGuardPassesErrors(t *testing.T) {
	want := errors.New("plain")
	if err := Guard("x", func() error { return want }); err != want {
		t.Errorf("Guard = %v, want the function's error", err)
	}
}
