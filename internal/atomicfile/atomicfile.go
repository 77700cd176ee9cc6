// Package atomicfile writes files and directories so that their path never
// shows a partial result: the content is written under a temporary name in
// the same directory and renamed into place only once it is complete and
// synced. A reader that has the old file mapped keeps the old inode, so it
// never sees its pages change or vanish (the SIGBUS of a file rewritten in
// place), and a writer that fails or is cancelled removes its temporary.
//
// It is not a locking or transactional library: two writers of one path
// race, and the last rename wins.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExists is wrapped by the error for a target that exists when the
// caller did not allow replacing it.
var ErrExists = errors.New("already exists (give --force to replace it)")

// ExistsError names the path that would have been overwritten.
type ExistsError struct{ Path string }

// Error formats the ExistsError.
func (e *ExistsError) Error() string { return fmt.Sprintf("%s %v", e.Path, ErrExists) }

// Unwrap returns ErrExists.
func (e *ExistsError) Unwrap() error { return ErrExists }

// Mode says whether an existing target may be replaced.
type Mode uint8

// The modes.
const (
	Replace   Mode = iota // replace an existing file (as os.Create would, but atomically)
	NoReplace             // fail with an *ExistsError if the target exists
)

// WriteFile writes the file at path through write, which gets a buffered
// temporary file in path's directory. The file appears at path, with mode
// 0644, only if write succeeds; otherwise the temporary is removed and
// path is untouched.
func WriteFile(path string, mode Mode, write func(w io.Writer) error) (err error) {
	if mode == NoReplace {
		if err := checkAbsent(path); err != nil {
			return err
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := publish(name, path, mode); err != nil {
		return err
	}
	done = true
	return nil
}

// WriteDir builds a directory at path through build, which fills a
// temporary directory beside path. The directory appears at path only if
// build succeeds. With Replace an existing directory at path is moved
// aside and removed once the new one is in place.
func WriteDir(path string, mode Mode, build func(dir string) error) error {
	if err := checkAbsent(path); err != nil && (mode == NoReplace || !errors.Is(err, ErrExists)) {
		return err
	}
	parent, base := filepath.Split(filepath.Clean(path))
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := build(tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err == nil {
		return nil
	} else if mode == NoReplace {
		os.RemoveAll(tmp)
		return &ExistsError{Path: path}
	}
	// Replace: move the old directory aside, put the new one in place,
	// then remove the old one.
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		os.RemoveAll(tmp)
		return fmt.Errorf("%s exists and is not a directory", path)
	}
	old, err := os.MkdirTemp(parent, "."+base+".old-*")
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	os.Remove(old)
	if err := os.Rename(path, old); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Rename(old, path)
		os.RemoveAll(tmp)
		return err
	}
	return os.RemoveAll(old)
}

func checkAbsent(path string) error {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return &ExistsError{Path: path}
	case errors.Is(err, fs.ErrNotExist):
		return nil
	}
	return err
}

// publish moves the finished temporary to path. NoReplace links it, which
// fails if path appeared meanwhile, and falls back to a checked rename on
// file systems without hard links.
func publish(tmp, path string, mode Mode) error {
	if mode == Replace {
		return os.Rename(tmp, path)
	}
	err := os.Link(tmp, path)
	switch {
	case err == nil:
		return os.Remove(tmp)
	case errors.Is(err, fs.ErrExist):
		return &ExistsError{Path: path}
	}
	if err := checkAbsent(path); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
