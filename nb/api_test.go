package nb_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// checkPackage type-checks the named files of one package, with imports
// read from the compiler's export data, at the given language version
// ("" for the module's).
func checkPackage(t *testing.T, files map[string]string, goVersion string) (*types.Package, *types.Info, error) {
	t.Helper()
	fset := token.NewFileSet()
	var parsed []*ast.File
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, files[name], parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", exportLookup(t)), GoVersion: goVersion}
	pkg, err := conf.Check(parsed[0].Name.Name, fset, parsed, info)
	return pkg, info, err
}

var (
	exportOnce  sync.Once
	exportFiles map[string]string
	exportErr   error
)

// exportLookup finds the compiler's export data of nb and everything it
// imports through go list, which builds them as needed.
func exportLookup(t *testing.T) func(path string) (io.ReadCloser, error) {
	t.Helper()
	exportOnce.Do(func() {
		out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", "github.com/pootlabs/poot/nb").Output()
		if err != nil {
			exportErr = err
			return
		}
		exportFiles = map[string]string{}
		for _, line := range strings.Split(string(out), "\n") {
			if path, file, ok := strings.Cut(line, " "); ok && file != "" {
				exportFiles[path] = file
			}
		}
	})
	if exportErr != nil {
		t.Skipf("go list: %v", exportErr)
	}
	return func(path string) (io.ReadCloser, error) {
		f, ok := exportFiles[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(f)
	}
}

// sourceFiles reads the package's non-test Go files.
func sourceFiles(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = string(b)
	}
	return files
}

// genericAPI lists every place where the exported API of pkg mentions a
// type parameter or an instantiated generic type: what gomacro cannot
// import.
func genericAPI(pkg *types.Package) []string {
	var bad []string
	seen := map[types.Type]bool{}
	var walk func(where string, t types.Type)
	walk = func(where string, t types.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Alias:
			if t.TypeArgs().Len() > 0 || t.TypeParams().Len() > 0 {
				bad = append(bad, where+": generic alias "+t.String())
			}
			walk(where, types.Unalias(t))
		case *types.TypeParam:
			bad = append(bad, where+": type parameter "+t.String())
		case *types.Named:
			if t.TypeArgs().Len() > 0 || t.TypeParams().Len() > 0 {
				bad = append(bad, where+": generic type "+t.String())
			}
		case *types.Pointer:
			walk(where, t.Elem())
		case *types.Slice:
			walk(where, t.Elem())
		case *types.Array:
			walk(where, t.Elem())
		case *types.Chan:
			walk(where, t.Elem())
		case *types.Map:
			walk(where, t.Key())
			walk(where, t.Elem())
		case *types.Signature:
			if t.TypeParams().Len() > 0 {
				bad = append(bad, where+": type parameters")
			}
			for i := 0; i < t.Params().Len(); i++ {
				walk(where, t.Params().At(i).Type())
			}
			for i := 0; i < t.Results().Len(); i++ {
				walk(where, t.Results().At(i).Type())
			}
		case *types.Struct:
			for i := 0; i < t.NumFields(); i++ {
				if f := t.Field(i); f.Exported() {
					walk(where+"."+f.Name(), f.Type())
				}
			}
		case *types.Interface:
			for i := 0; i < t.NumMethods(); i++ {
				if m := t.Method(i); m.Exported() {
					walk(where+"."+m.Name(), m.Type())
				}
			}
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		seen = map[types.Type]bool{}
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.TypeName:
			walk(name, obj.Type())
			if n, ok := types.Unalias(obj.Type()).(*types.Named); ok {
				walk(name, n.Underlying())
				for i := 0; i < n.NumMethods(); i++ {
					if m := n.Method(i); m.Exported() {
						walk(name+"."+m.Name(), m.Type())
					}
				}
			}
		default:
			walk(name, obj.Type())
		}
	}
	sort.Strings(bad)
	return bad
}

// No exported signature of nb has a type parameter or an instantiated
// generic type.
func TestAPIHasNoGenerics(t *testing.T) {
	pkg, _, err := checkPackage(t, sourceFiles(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if bad := genericAPI(pkg); len(bad) > 0 {
		t.Errorf("the exported API mentions generics, which gomacro cannot import:\n%s", strings.Join(bad, "\n"))
	}
	for _, name := range []string{"Graph", "Value", "New", "Trace", "Model", "LLM", "Open"} {
		if pkg.Scope().Lookup(name) == nil {
			t.Errorf("%s is missing from the API", name)
		}
	}
}

// The check finds each kind of generic exposure.
func TestAPICheckCatchesGenerics(t *testing.T) {
	src := `package p
import "github.com/pootlabs/poot"
type hidden struct{}
type Ok struct{ h poot.Traced[hidden] }
func (Ok) Fine(x int) []string { return nil }
type Alias = poot.Traced[hidden]
func F[T any](x T) {}
func G() poot.Traced[hidden] { return poot.Traced[hidden]{} }
type S struct{ Field *poot.Builder[hidden] }
type I interface{ M(map[string]poot.Outputs[hidden]) }
type N[T any] struct{}
func (Ok) Method() []poot.Carry[hidden] { return nil }
`
	pkg, _, err := checkPackage(t, map[string]string{"p.go": src}, "")
	if err != nil {
		t.Fatal(err)
	}
	bad := genericAPI(pkg)
	for _, want := range []string{"Alias:", "F:", "G:", "S.Field:", "I.M:", "N:", "Ok.Method:"} {
		found := false
		for _, b := range bad {
			found = found || strings.HasPrefix(b, want)
		}
		if !found {
			t.Errorf("the check misses %s; it reports:\n%s", want, strings.Join(bad, "\n"))
		}
	}
	for _, b := range bad {
		if strings.HasPrefix(b, "Ok.Fine") || strings.HasPrefix(b, "Ok:") {
			t.Errorf("false report: %s", b)
		}
	}
}

var apiLine = regexp.MustCompile(`^pkg ([^ ,]+)(?: \([^)]*\))?, (?:func|type|const|var) (\w+)|^pkg ([^ ,]+)(?: \([^)]*\))?, method \(\*?(\w+)\) (\w+)`)

// newerAPI lists the standard library identifiers added after Go 1.18, as
// "strings.CutPrefix" and "sync/atomic.Uint64.Add", from $GOROOT/api.
func newerAPI(t *testing.T) map[string]string {
	t.Helper()
	newer := map[string]string{}
	paths, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "api", "go1.*.txt"))
	for _, p := range paths {
		v := strings.TrimSuffix(filepath.Base(p), ".txt")
		var minor int
		for _, c := range strings.TrimPrefix(v, "go1.") {
			minor = minor*10 + int(c-'0')
		}
		if minor <= 18 {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			m := apiLine.FindStringSubmatch(sc.Text())
			switch {
			case m == nil:
			case m[1] != "":
				newer[m[1]+"."+m[2]] = v
			default:
				newer[m[3]+"."+m[4]+"."+m[5]] = v
			}
		}
		f.Close()
	}
	if len(newer) < 100 {
		t.Skipf("no API lists under %s/api", runtime.GOROOT())
	}
	return newer
}

// stdAfter118 reports the uses in info of standard library API newer than
// Go 1.18.
func stdAfter118(newer map[string]string, info *types.Info) []string {
	var bad []string
	for id, obj := range info.Uses {
		if obj.Pkg() == nil || strings.Contains(strings.Split(obj.Pkg().Path(), "/")[0], ".") {
			continue
		}
		key := obj.Pkg().Path() + "." + obj.Name()
		if f, ok := obj.(*types.Func); ok {
			if recv := f.Type().(*types.Signature).Recv(); recv != nil {
				rt := recv.Type()
				if p, ok := rt.(*types.Pointer); ok {
					rt = p.Elem()
				}
				if n, ok := rt.(*types.Named); ok {
					key = obj.Pkg().Path() + "." + n.Obj().Name() + "." + obj.Name()
				}
			}
		}
		if v, ok := newer[key]; ok {
			bad = append(bad, id.Name+" ("+key+", "+v+")")
		}
	}
	sort.Strings(bad)
	return bad
}

// The examples are what a notebook user copies into a gomacro cell, which
// knows Go 1.18: its syntax (no min/max builtins, no range over an int) and
// its standard library.
func TestExamplesAreGo118(t *testing.T) {
	b, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, info, err := checkPackage(t, map[string]string{"example_test.go": string(b)}, "go1.18")
	if err != nil {
		t.Fatalf("the examples are not Go 1.18: %v", err)
	}
	if bad := stdAfter118(newerAPI(t), info); len(bad) > 0 {
		t.Errorf("the examples use standard library API newer than Go 1.18: %v", bad)
	}
}

// The Go 1.18 check rejects what a gomacro cell cannot run.
func TestGo118CheckCatchesNewerCode(t *testing.T) {
	for _, src := range []string{
		"package p\nfunc f() int { return min(1, 2) }",
		"package p\nfunc f() { for range 3 {} }",
	} {
		if _, _, err := checkPackage(t, map[string]string{"p.go": src}, "go1.18"); err == nil {
			t.Errorf("accepted as Go 1.18:\n%s", src)
		}
	}
	src := "package p\nimport (\"strings\"; \"sync/atomic\")\nvar a atomic.Uint64\nfunc f() { strings.CutPrefix(\"ab\", \"a\"); a.Add(1) }"
	_, info, err := checkPackage(t, map[string]string{"p.go": src}, "go1.18")
	if err != nil {
		t.Fatal(err)
	}
	bad := stdAfter118(newerAPI(t), info)
	if len(bad) != 3 {
		t.Errorf("found %v, want CutPrefix, Uint64 and Uint64.Add", bad)
	}
}

// Every exported identifier has a doc comment that starts with its name.
func TestDocComments(t *testing.T) {
	fset := token.NewFileSet()
	for name, src := range sourceFiles(t) {
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		check := func(id *ast.Ident, docs ...*ast.CommentGroup) {
			if !id.IsExported() {
				return
			}
			for _, d := range docs {
				if d != nil && strings.HasPrefix(d.Text(), id.Name+" ") || d != nil && strings.HasPrefix(d.Text(), id.Name+":") {
					return
				}
			}
			t.Errorf("%s: %s has no doc comment starting with its name", fset.Position(id.Pos()), id.Name)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					recv := d.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if id, ok := recv.(*ast.Ident); ok && !id.IsExported() {
						continue
					}
				}
				check(d.Name, d.Doc)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						check(s.Name, s.Doc, d.Doc)
					case *ast.ValueSpec:
						for _, id := range s.Names {
							check(id, s.Doc, d.Doc)
						}
					}
				}
			}
		}
	}
}
