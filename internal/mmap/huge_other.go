//go:build !linux

package mmap

// adviseHuge does nothing: transparent huge pages are Linux's.
func adviseHuge([]byte) {}

// HugePages reports false: transparent huge pages are Linux's, and a
// resident copy elsewhere would cost memory without the speed.
func HugePages() (available int64, ok bool) { return 0, false }
