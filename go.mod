module github.com/pootlabs/poot

go 1.26.0

require (
	github.com/dlclark/regexp2/v2 v2.13.0
	github.com/google/go-cmp v0.7.0
	github.com/x448/float16 v0.8.4
	golang.org/x/text v0.44.0
	pgregory.net/rapid v1.3.0
)

require github.com/ebitengine/purego v0.11.3
