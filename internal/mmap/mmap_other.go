//go:build !linux && !darwin

package mmap

// openFlags is empty where package syscall has no O_NONBLOCK for poot to
// rely on.
const openFlags = 0

// Open reads the whole regular file at path into memory; this platform has
// no mmap support in package syscall that poot relies on.
func Open(path string) (*Map, error) {
	data, err := ReadFile(path, 0)
	if err != nil {
		return nil, err
	}
	return &Map{data: data}, nil
}

// Resident does nothing: the Map already holds the file's bytes in memory.
func (m *Map) Resident() error { return nil }

// Anonymous returns n zeroed bytes of heap memory: this platform has no
// anonymous mappings in package syscall that poot relies on.
func Anonymous(n int) ([]byte, error) { return make([]byte, n), nil }

// Free drops memory from Anonymous to the garbage collector.
func Free([]byte) error { return nil }
