#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv run names how a process that died mid-run ended (issue 34: a soak's proxy "exited during
# the run" and only its log's first warning was shown, so a SIGKILL looked like a silent exit).
# Decode is SIGKILLed 300 ms into a gen B workload and not restarted: the FAIL says
# "(decode killed by signal 9 (Killed))". Loopback, about 5 s.
set -u
cd "$(dirname "$0")/../.." || exit 1
. ci/testlib.sh
BIN=${PDKV_BIN:-build/bin}
for b in pdkv-run pdkv-standin pdkv-proxy; do
	[ -x "$BIN/$b" ] || { echo "SKIP: $b not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
T=$(mktemp -d /tmp/pdkv-died.XXXXXX)
trap 'rm -rf "$T"' EXIT
export VLLM_HOST_IP=127.0.0.1 MC_TCP_BIND_ADDRESS=127.0.0.1
python3 - "$T/s.json" <<'PY'
import json, sys
s = json.load(open("scenarios/16-v1-gen-b0-1p1d.json"))
s["name"] = "decode-dies"
s["decode_args"] = ["--ns-per-token", "2000000"]
s["faults"] = [{"at": "during_workload", "after_ms": 300, "kill": "decode", "signal": "KILL"}]
s["workload"].update({"requests": 4, "max_tokens": 400})
s["checks"] = ["http_ok"]
s["timeout_s"] = 60
json.dump(s, open(sys.argv[1], "w"))
PY
timeout 120 "$BIN/pdkv-run" --workdir "$T/w" "$T/s.json" >"$T/out" 2>&1
rc=$?
check "the run FAILs (exit $rc)" [ $rc = 1 ]
check "the FAIL names how decode ended: killed by signal 9" \
	grep -q "cannot read /metrics of decode after the workload (decode killed by signal 9 (Killed))" "$T/out"
[ "$fails" = 0 ] || { cat "$T/out"; exit 1; }
