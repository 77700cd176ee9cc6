package poot

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// Sentinel errors. Every error the IR returns is an *Error whose Kind is one
// of these, so callers test with errors.Is.
var (
	// ErrForeignHandle: a handle minted by another builder (or the zero
	// handle) was passed to a builder.
	ErrForeignHandle = errors.New("foreign handle")
	// ErrType: operands or parameters a primitive's type rule rejects.
	ErrType = errors.New("invalid types")
	// ErrName: an empty or duplicate input name.
	ErrName = errors.New("invalid name")
	// ErrLimit: the builder's limits would be exceeded.
	ErrLimit = errors.New("limit exceeded")
	// ErrFinished: the builder was used after Finish.
	ErrFinished = errors.New("builder finished")
	// ErrScope: Pop without a matching Push, or Finish inside a scope.
	ErrScope = errors.New("unbalanced scope")
	// ErrInvalidGraph: a graph (or an edit's result) failed validation.
	ErrInvalidGraph = errors.New("invalid graph")
	// ErrEdit: an edit's arguments are invalid.
	ErrEdit = errors.New("invalid edit")
	// ErrDigestMismatch: two scopes that were asked to correspond do not.
	ErrDigestMismatch = errors.New("scopes differ")
	// ErrComposite: a composite's record does not describe its body (a
	// result it does not compute, a value it reads that is not an operand,
	// an invalid name or attribute).
	ErrComposite = errors.New("invalid composite")
)

// Error is the typed error of the IR. It says what went wrong (Kind), in which
// primitive, over which operand types, in which scope, and where in the model
// code the failing builder call was made.
type Error struct {
	Kind   error        // one of the sentinels above
	Op     string       // the primitive or builder method, if any
	Inputs []TensorType // the operands' types, if any
	Scope  string       // the scope path the call was made in
	Pos    string       // file:line of the model code that called the builder
	Detail string       // what exactly is wrong
}

// Error formats the error on one line.
func (e *Error) Error() string {
	var sb strings.Builder
	sb.WriteString("poot: ")
	if e.Scope != "" {
		sb.WriteString(e.Scope)
		sb.WriteString(": ")
	}
	if e.Op != "" {
		sb.WriteString(e.Op)
		if e.Inputs != nil {
			sb.WriteByte('(')
			for i, t := range e.Inputs {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(t.String())
			}
			sb.WriteByte(')')
		}
		sb.WriteString(": ")
	}
	sb.WriteString(e.Kind.Error())
	if e.Detail != "" {
		sb.WriteString(": ")
		sb.WriteString(e.Detail)
	}
	if e.Pos != "" {
		sb.WriteString(" (at ")
		sb.WriteString(e.Pos)
		sb.WriteByte(')')
	}
	return sb.String()
}

// Unwrap returns the sentinel kind.
func (e *Error) Unwrap() error { return e.Kind }

func graphError(format string, args ...any) error {
	return &Error{Kind: ErrInvalidGraph, Detail: fmt.Sprintf(format, args...)}
}

// callerPos finds the model code that made the failing call: the first
// frame outside the IR and composite packages and outside the shared
// family components (package families: a family's Step.Cache call is
// reported at the family's line, not at step.go). When the frames above the
// shared components are not model code (the driver calling a standard
// decoder's tracer), the shared component's frame is the model code. It
// runs only when an error is recorded, so tracing stays cheap.
func callerPos() string {
	var pcs [32]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	pos := func(f runtime.Frame) string { return shortFile(f.File) + ":" + strconv.Itoa(f.Line) }
	shared := ""
	for {
		f, more := frames.Next()
		switch {
		case internalFrame(f):
		case strings.HasPrefix(f.Function, modulePath+"/families.") && !strings.HasSuffix(f.File, "_test.go"):
			if shared == "" {
				shared = pos(f)
			}
		case shared != "" && !strings.HasSuffix(f.File, "_test.go") && strings.HasPrefix(f.Function, modulePath+"/") &&
			!strings.HasPrefix(f.Function, modulePath+"/families/") && !strings.HasPrefix(f.Function, modulePath+"/examples/"):
			return shared // the driver, a command, a test kit: not model code
		default:
			return pos(f)
		}
		if !more {
			return shared
		}
	}
}

const modulePath = "github.com/pootlabs/poot"

func internalFrame(f runtime.Frame) bool {
	if strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	fn := f.Function
	for _, pkg := range []string{modulePath + ".", modulePath + "/ops.", modulePath + "/nb."} {
		if strings.HasPrefix(fn, pkg) {
			return true
		}
	}
	return false
}

func shortFile(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}
