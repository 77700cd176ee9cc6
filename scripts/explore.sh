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
#
# It then fuzzes every Fuzz target for FUZZ_EXECS inputs each (a count, not
# a duration: Go 1.26 can fail a time-limited run at its deadline with no
# crasher). A crasher lands in testdata/fuzz/<Target>/ of its package;
# commit it with the fix and go test replays it from then on.
set -uo pipefail
cd "$(dirname "$0")/.."

checks="${CHECKS:-2000}"
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)

unset RAPID_SEED
echo "== property tests with fresh seeds, $checks cases each: ${pkgs[*]}"
RAPID_CHECKS="$checks" go test -count=1 -timeout 60m "${pkgs[@]}"
status=$?

execs="${FUZZ_EXECS:-20000}"
while read -r file target; do
	pkg="./$(dirname "$file")"
	if [ ${#pkgs[@]} -gt 0 ] && [ "${pkgs[*]}" != "./..." ] && [[ " ${pkgs[*]} " != *" $pkg "* ]]; then
		continue
	fi
	echo "== fuzz $pkg $target, $execs inputs"
	go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "${execs}x" -fuzzminimizetime 100x || status=1
done < <(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sed 's|^\./||; s|:func | |')

found=$(git ls-files --others --exclude-standard -- '*testdata/rapid/*' '*testdata/fuzz/*')
if [ -n "$found" ]; then
	echo "== new failure files (fix the failure, then commit them):"
	echo "$found"
fi
exit $status
