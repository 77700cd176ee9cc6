module github.com/pootlabs/poot

go 1.26.0

require (
	github.com/x448/float16 v0.8.4
	pgregory.net/rapid v1.3.0
)

require github.com/google/go-cmp v0.7.0 // indirect
