package mmap

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvHugepage is Linux's MADV_HUGEPAGE, which package syscall lacks.
const madvHugepage = 14

// adviseHuge asks for b to be backed by transparent huge pages. Advice the
// kernel refuses changes nothing but speed, so its error is dropped.
func adviseHuge(b []byte) { _ = syscall.Madvise(b, madvHugepage) }

// HugePages reports whether the kernel backs advised anonymous memory with
// transparent huge pages (its mode is "always" or "madvise"), and the
// memory available for new allocations without swapping, in bytes
// (MemAvailable). ok is false where either cannot be read.
func HugePages() (available int64, ok bool) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !(bytes.Contains(mode, []byte("[always]")) || bytes.Contains(mode, []byte("[madvise]"))) {
		return 0, false
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kb, found := strings.CutPrefix(sc.Text(), "MemAvailable:"); found {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(kb, "kB")), 10, 64)
			return n << 10, err == nil
		}
	}
	return 0, false
}
