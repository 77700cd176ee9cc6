module github.com/pootlabs/poot

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/exp v0.0.0-20261113113407-e3970619a1a4 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
