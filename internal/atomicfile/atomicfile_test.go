package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := WriteFile(path, NoReplace, write("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, NoReplace, write("two")); !errors.Is(err, ErrExists) {
		t.Errorf("NoReplace over an existing file = %v, want ErrExists", err)
	}
	if err := WriteFile(path, Replace, write("three")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := WriteFile(path, Replace, func(w io.Writer) error { io.WriteString(w, "partial"); return boom }); err != boom {
		t.Errorf("failing write = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "three" {
		t.Errorf("file holds %q, want the last complete write", b)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only the file (no temporaries)", names)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode())
	}
}

// A reader holding the old file keeps its contents when the path is
// replaced.
func TestWriteFileKeepsOpenReaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteFile(path, Replace, func(w io.Writer) error { _, err := io.WriteString(w, "a longer new file"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(f); string(b) != "old" {
		t.Errorf("the open reader sees %q, want the old contents", b)
	}
}

func TestWriteDir(t *testing.T) {
	parent := t.TempDir()
	path := filepath.Join(parent, "model")
	fill := func(s string) func(string) error {
		return func(dir string) error { return os.WriteFile(filepath.Join(dir, "x"), []byte(s), 0o644) }
	}
	if err := WriteDir(path, NoReplace, fill("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(path, NoReplace, fill("two")); !errors.Is(err, ErrExists) {
		t.Errorf("NoReplace over an existing directory = %v, want ErrExists", err)
	}
	if err := WriteDir(path, Replace, fill("three")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := WriteDir(path, Replace, func(string) error { return boom }); err != boom {
		t.Errorf("failing build = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(path, "x")); string(b) != "three" {
		t.Errorf("directory holds %q, want the last complete build", b)
	}
	if names := entries(t, parent); len(names) != 1 {
		t.Errorf("parent holds %v, want only the directory", names)
	}
}
