#!/usr/bin/env bash
# Builds a gophernotes Jupyter kernel with poot's package nb compiled in,
# from checkouts of gomacro and gophernotes (neither is served by the Go
# module proxy), and installs it as the kernel "gophernotes-poot".
#
#   scripts/notebook-kernel.sh GOMACRO_DIR GOPHERNOTES_DIR [KERNEL_DIR]
#
# KERNEL_DIR defaults to ~/.local/share/jupyter/kernels/gophernotes-poot;
# it receives the kernel binary and its kernel.json. The checkouts are
# copied, not changed. Needs Go 1.26 and the Go module proxy (for
# golang.org/x/tools and the kernel's other modules); poot itself is used
# from this checkout.
#
# What it does, and why:
#  1. gomacro and gophernotes build on Go 1.26 only with golang.org/x/tools
#     upgraded (XTOOLS, default v0.39.0) and `godebug gotypesalias=0` in the
#     main module's go.mod (Go 1.27 removes that setting).
#  2. nb's bindings are generated with gomacro's own generator (import _b)
#     and compiled into the kernel, so `import "github.com/pootlabs/poot/nb"`
#     in a cell is a table lookup: no plugin is built at run time, nothing
#     is fetched, and the kernel's and poot's dependencies cannot skew.
set -euo pipefail

if [ $# -lt 2 ]; then
	sed -n '2,9p' "$0" >&2
	exit 2
fi
poot=$(cd "$(dirname "$0")/.." && pwd)
gomacro=$(cd "$1" && pwd)
gophernotes=$(cd "$2" && pwd)
kernel=${3:-${XDG_DATA_HOME:-$HOME/.local/share}/jupyter/kernels/gophernotes-poot}
xtools=${XTOOLS:-v0.39.0}
for f in "$gomacro/go.mod" "$gophernotes/go.mod" "$gophernotes/imports/a_package.go"; do
	[ -f "$f" ] || { echo "notebook-kernel: $f is missing: is that a checkout?" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -R "$gomacro" "$work/gomacro"
cp -R "$gophernotes" "$work/gophernotes"
step() { echo "notebook-kernel: $*" >&2; }

step "building gomacro (for its binding generator)"
(
	cd "$work/gomacro"
	go mod edit -godebug gotypesalias=0
	go get "golang.org/x/tools@$xtools"
	go mod tidy
	go build -o "$work/bin/gomacro" .
)

step "generating the bindings of package nb"
# gomacro writes bindings into its imports directory under GOPATH/src and
# runs `go get` there, so that directory is a module requiring this poot.
gopath="$work/gopath"
imports="$gopath/src/github.com/cosmos72/gomacro/imports"
mkdir -p "$imports"
cat >"$imports/go.mod" <<EOF
module poot.bindings

go 1.26

require github.com/pootlabs/poot v0.0.0

replace github.com/pootlabs/poot => $poot
EOF
# gomacro's `go get github.com/pootlabs/poot/nb` would ask the proxy for
# that path; with poot's requirements resolved here first it runs offline.
echo 'package stub; import _ "github.com/pootlabs/poot/nb"' >"$imports/stub.go"
(cd "$imports" && go mod tidy)
rm "$imports/stub.go"
modcache=$(go env GOMODCACHE)
(cd "$work" && GOPATH="$gopath" GOMODCACHE="$modcache" GOFLAGS=-mod=mod GOPROXY=off \
	"$work/bin/gomacro" -e 'import _b "github.com/pootlabs/poot/nb"') 2>&1 | grep -v 'skipping import of' >&2 || true
bindings="$imports/github_com_pootlabs_poot_nb.go"
[ -s "$bindings" ] || { echo "notebook-kernel: gomacro wrote no bindings for nb" >&2; exit 1; }
cp "$bindings" "$work/gophernotes/imports/"

step "building gophernotes with nb compiled in"
mkdir -p "$kernel"
(
	cd "$work/gophernotes"
	go mod edit -replace "github.com/cosmos72/gomacro=$work/gomacro" \
		-require github.com/pootlabs/poot@v0.0.0 -replace "github.com/pootlabs/poot=$poot" \
		-godebug gotypesalias=0
	go get "golang.org/x/tools@$xtools"
	GOFLAGS=-mod=mod go build -o "$kernel/gophernotes" .
)
cp "$gophernotes"/kernel/logo-*.png "$kernel/" 2>/dev/null || true
cat >"$kernel/kernel.json" <<EOF
{
  "argv": ["$kernel/gophernotes", "{connection_file}"],
  "display_name": "Go (poot)",
  "language": "go",
  "env": {"GODEBUG": "gotypesalias=0", "GOFLAGS": "-mod=mod"}
}
EOF
step "installed $kernel (kernel name: $(basename "$kernel"))"
