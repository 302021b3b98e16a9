#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_readme_recipes: every README block marked "<!-- recipe: NAME; expect: REGEX -->" runs as
# written (ci/readme_recipes.py moves its ports to free ones and its hosts to 127.0.0.1), with
# build/bin first on PATH; its output must match REGEX, and nothing it started may survive it.
# curl in a recipe is what a user does by hand: it is retried until the servers it names answer
# 2xx (a user waits for the startup lines), at most 60 s. The servers a recipe leaves running
# (as a user's would) are stopped after it.
set -u
BIN=${PDKV_BIN:-build/bin}
[ -x "$BIN/pdkv-standin" ] && [ -x "$BIN/pdkv-proxy" ] || { echo "SKIP: stand-in/proxy not built"; exit 77; }
. "$(dirname "$0")/../../ci/testlib.sh"
T=$(mktemp -d /tmp/pdkv-recipes.XXXXXX)
trap 'rm -rf "$T"' EXIT
ABS=$(cd "$BIN" && pwd)
names=$(python3 ci/readme_recipes.py README.md --list)
check "README has runnable recipes ($(echo $names))" [ "$(echo "$names" | wc -w)" -ge 3 ]
for n in $names; do
	mkdir -p "$T/$n"
	python3 ci/readme_recipes.py README.md "$n" >"$T/$n/body.sh" 2>"$T/$n/expect" || { bad "$n: extract"; continue; }
	{
		echo 'curl() { local out code; for _ in $(seq 60); do'
		echo '  out=$(command curl -sS -m 30 -w "\n%{http_code}" "$@" 2>/dev/null); code=${out##*$'"'"'\n'"'"'}'
		echo '  case $code in 2??) printf "%s\n" "${out%$'"'"'\n'"'"'*}"; return 0 ;; esac; sleep 1; done'
		echo '  printf "%s\n" "${out%$'"'"'\n'"'"'*}"; return 1; }'
		cat "$T/$n/body.sh"
	} >"$T/$n/run.sh"
	( cd "$T/$n" && PATH="$ABS:$PATH" VLLM_HOST_IP=127.0.0.1 MC_TCP_BIND_ADDRESS=127.0.0.1 \
		timeout 120 bash run.sh >out 2>err )
	rc=$?
	# the servers it left running (a user stops them by hand): every process working in its dir
	for p in $(pgrep -f "pdkv-(standin|proxy|metaserver|bootstrap)" || true); do
		[ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$T/$n" ] && kill -TERM "$p" 2>/dev/null
	done
	sleep 0.5
	expect=$(head -1 "$T/$n/expect")
	check "$n: runs as written (exit $rc)" [ $rc = 0 ]
	check "$n: output matches /$expect/" grep -qE "$expect" "$T/$n/out"
	[ $rc = 0 ] && grep -qE "$expect" "$T/$n/out" || { echo "--- $n script"; cat "$T/$n/run.sh" | tail -n +5; echo "--- out"; tail -n 5 "$T/$n/out"; echo "--- err"; tail -n 15 "$T/$n/err"; echo "--- err: errors, all processes"; grep -E " (ERROR|FATAL) |rror:" "$T/$n/err" | head -n 10; }
	for p in $(pgrep -f "pdkv-(standin|proxy|metaserver|bootstrap)" || true); do
		[ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$T/$n" ] && kill -9 "$p"
	done
done
[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all README recipes ran as written"
