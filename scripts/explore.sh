#!/usr/bin/env bash
# Explores the property tests with fresh random seeds and many more cases
# than CI runs. CI (.ci/run) fixes the seed so that a commit always gets the
# same verdict; this script is where new counterexamples are found. Run it
# before submitting:
#
#   scripts/explore.sh              # every package, 2000 cases a property
#   CHECKS=10000 scripts/explore.sh ./pootest ./lower/cpu
#
# rapid writes each failure it finds to testdata/rapid/<Test>/ in the
# failing package; commit those files with the fix, and every later run
# (CI's included) replays them before drawing new cases.
set -uo pipefail
cd "$(dirname "$0")/.."

checks="${CHECKS:-2000}"
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)

unset RAPID_SEED
echo "== property tests with fresh seeds, $checks cases each: ${pkgs[*]}"
RAPID_CHECKS="$checks" go test -count=1 -timeout 60m "${pkgs[@]}"
status=$?

found=$(git ls-files --others --exclude-standard -- '*testdata/rapid/*')
if [ -n "$found" ]; then
	echo "== new failure files (fix the failure, then commit them):"
	echo "$found"
fi
exit $status
