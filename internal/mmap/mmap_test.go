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
