#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# pdkv run --hosts without machines: a hosts.txt that cannot be read or parsed is a usage error
# naming file and line; a "hosts" host missing from it fails before any ssh; a scenario without
# "hosts" runs here as always. (The ssh runs themselves: test_hosts, as root.)
set -u
cd "$(dirname "$0")/../.." || exit 1
RUN=${BUILD:-build}/bin/pdkv-run
T=$(mktemp -d /tmp/pdkv-hosts-cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$RUN" --hosts "$T/none.txt" scenarios/30-netns-1p1d-v0.json 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *"--hosts: $T/none.txt: cannot read"* ]] || fail "missing file: rc $rc: $out"

printf 'hostA 192.0.2.10\nhostB\n' >"$T/bad.txt"
out=$("$RUN" --hosts "$T/bad.txt" scenarios/30-netns-1p1d-v0.json 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *"bad.txt:2: host \"hostB\" has no address"* ]] || fail "bad line: rc $rc: $out"

printf 'hostB 192.0.2.11\nhostC 192.0.2.12\n' >"$T/noa.txt"
out=$("$RUN" --hosts "$T/noa.txt" --workdir "$T/w" scenarios/30-netns-1p1d-v0.json 2>&1)
rc=$?
[ $rc = 1 ] && [[ $out == *"--hosts: hosts.prefill: host \"hostA\" is not in $T/noa.txt"* ]] ||
	fail "host not listed: rc $rc: $out"

out=$("$RUN" --hosts "$T/noa.txt" --workdir "$T/w" scenarios/04-1p1d-tcp-p2p-v0.json 2>&1)
rc=$?
[ $rc = 0 ] && [[ $out == *"1 passed"* ]] || fail "a scenario without hosts: rc $rc: $out"
echo "PASS: pdkv run --hosts: usage errors, unlisted host, scenarios without hosts"
