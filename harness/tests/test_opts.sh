#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_opts: every command pdkv installs parses its flags with pd_opt, in one style — --help and
# --version exit 0 on stdout; an unknown flag, a missing value and a bad value exit 2 with one
# line on stderr, "PROG: ...", naming the flag (and, for a bad value, what is expected).
set -u
BIN=${PDKV_BIN:-build/bin}
. "$(dirname "$0")/../../ci/testlib.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# run NAME ARGS...: stdout in $T/o, stderr in $T/e, exit status in $rc
run() { timeout 10 "$@" >"$T/o" 2>"$T/e" </dev/null; rc=$?; }
one_line() { [ "$(wc -l <"$T/e")" = 1 ]; }

n=0
for b in "$BIN"/pdkv*; do
	[ -x "$b" ] || continue
	name=$(basename "$b")
	n=$((n + 1))
	run "$b" --help
	check "$name --help exits 0 ($rc)" [ $rc = 0 ]
	check "$name --help lists --version" grep -q -- "--version" "$T/o"
	run "$b" --version
	check "$name --version exits 0 ($rc)" [ $rc = 0 ]
	run "$b" --pdkv-no-such-flag
	check "$name unknown flag exits 2 ($rc)" [ $rc = 2 ]
	check "$name unknown flag: one line ($(head -c 200 "$T/e"))" one_line
	check "$name unknown flag: common style" \
		grep -Eq '^(pdkv[- a-z]*): unknown option --pdkv-no-such-flag \(see \1 --help\)$' "$T/e"
done
check "every command checked ($n)" [ $n -ge 14 ]

# subcommands parse with the same table-driven parser
for cmd in "report compare" "config check" "bench serve" "ports"; do
	run "$BIN/pdkv" $cmd --pdkv-no-such-flag
	check "pdkv $cmd unknown flag exits 2 ($rc)" [ $rc = 2 ]
	check "pdkv $cmd unknown flag: common style ($(head -c 200 "$T/e"))" \
		grep -Eq '^pdkv[- a-z]*: unknown option --pdkv-no-such-flag \(see .* --help\)$' "$T/e"
done

# missing and bad values: "PROG: --flag: missing value", "PROG: --flag: expected X, got "V""
while IFS='|' read -r prog flag; do
	run "$BIN/$prog" "$flag"
	check "$prog $flag (no value) exits 2 ($rc)" [ $rc = 2 ]
	check "$prog $flag: missing value ($(head -c 200 "$T/e"))" \
		grep -Eq "^pdkv[- a-z]*: $flag: missing value$" "$T/e"
	run "$BIN/$prog" "$flag" not-a-number
	check "$prog $flag not-a-number exits 2 ($rc)" [ $rc = 2 ]
	check "$prog $flag bad value: one line naming the flag and what is expected" \
		grep -Eq "^pdkv[- a-z]*: $flag: expected .+, got \"not-a-number\"$" "$T/e"
	one_line || bad "$prog $flag bad value: more than one line"
done <<'EOF'
pdkv-proxy|--port
pdkv-standin|--port
pdkv-report|--alpha
pdkv-interop|--duration
pdkv-metaserver|--max-connections
pdkv-run|--timeout
EOF

# vLLM's spellings of the stand-in: '_' for '-', -tp, --kv-transfer-config
run "$BIN/pdkv-standin" --max_model_len=64 -tp 1 --dry-run
check "pdkv-standin --max_model_len / -tp accepted ($rc: $(head -c 200 "$T/e"))" [ $rc = 0 ]

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all $n commands parse flags in one style"
