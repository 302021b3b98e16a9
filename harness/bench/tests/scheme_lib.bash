# SPDX-License-Identifier: Apache-2.0
# scheme_lib.bash: what the --scheme test scripts share (sourced, not a test itself): check,
# the short --check run shape, and run NAME ARGS... (text in $T/NAME.out, JSON and CSV beside it).
# The script sets B (the bench) and T (its temporary directory) first.
fails=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi; }
SHORT="--block_size=16K --batch_size=8 --duration=0.2 --check"

run() {
	local name=$1; shift
	# shellcheck disable=SC2086
	TMPDIR=$T timeout 120 "$B" "$@" $SHORT --json="$T/$name.json" --csv="$T/$name.csv" >"$T/$name.out" 2>&1
	local rc=$?
	check "$name: exit 0 (--check passed)" [ $rc = 0 ]
	[ $rc = 0 ] || tail -20 "$T/$name.out"
}
