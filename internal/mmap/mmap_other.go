//go:build !linux && !darwin

package mmap

import "os"

// Open reads the whole file at path into memory; this platform has no mmap
// support in package syscall that poot relies on.
func Open(path string) (*Map, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return &Map{data: data}, nil
}
