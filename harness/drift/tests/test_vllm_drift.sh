#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_vllm_drift: `pdkv vllm-drift` on the vLLM-shaped trees under fixtures/vllm-drift/ (each
# release shape, a new field, a removed field, a renamed env var, no connector, a wheel built here,
# the installed-package form found through python3) — verdicts, exit codes, --json and --model keys.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. ci/testlib.sh
BIN=${PDKV_BIN:-build/bin}
D=$BIN/pdkv-vllm-drift
F=fixtures/vllm-drift
[ -x "$D" ] || { echo "SKIP: $D not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
T=$(mktemp -d /tmp/pdkv-drift.XXXXXX)
trap 'rm -rf "$T"' EXIT

# run NAME ARGS...: stdout in $T/NAME.out, stderr in $T/NAME.err, exit status in RC
run() {
	local n=$1
	shift
	"$D" "$@" >"$T/$n.out" 2>"$T/$n.err"
	RC=$?
}
# jq_ FILE PYEXPR: evaluates PYEXPR on the JSON in FILE (as d), prints the result
jq_() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }
has() { grep -qF -- "$2" "$T/$1.out" "$T/$1.err"; }

# a release row each shape pdkv models: bn at 0.23, gen A at 0.13 (single-file connector)
run bn --vllm $F/v0.23-bn
check "v0.23-bn: exit 0" [ "$RC" = 0 ]
check "v0.23-bn: models" has bn "verdict: pdkv models this vLLM"
check "v0.23-bn: rows named" grep -qE "same as row [^(]*0\.23[^(]* \(bn\), field 8" "$T/bn.out"
# b1 at 0.19 (vLLM #36869: block_lens, flat block lists, the D-paired text); named as a bn
# release its structs are pdkv's b1, listed off the wire
run b1 --vllm $F/v0.19-b1
check "v0.19-b1: exit 0, models" [ "$RC" = 0 ]
check "v0.19-b1: shape b1" has b1 "your vLLM 0.19.1: pdkv models it (row 0.19 - 0.20, shape b1)"
run b1n --vllm $F/v0.19-b1 --vllm-version 0.23 --json -
check "b1 tree as 0.23: shape item" grep -qF "the structs are pdkv's b1 (run pdkv with --v1-shape b1)" <<<"$(jq_ $T/b1n.out '[i["detail"] for i in d["items"] if i["category"] == "shape"][0]')"
run a --vllm $F/v0.13-a --json -
check "v0.13-a: exit 0" [ "$RC" = 0 ]
check "v0.13-a: verdict models, shape a" [ "$(jq_ $T/a.out 'd["verdict"], d["gen"]')" = "models a" ]
check "v0.13-a: trans_done known" [ "$(jq_ $T/a.out '[i["status"] for i in d["items"] if i["name"] == "TRANS_DONE"][0]')" = known ]

# the installed-package form (a directory named vllm) and a wheel (a zip file, read unpacked)
run pkg --vllm $F/v0.23-bn/vllm --json -
check "package dir: models, kind package" [ "$(jq_ $T/pkg.out 'd["verdict"], d["vllm"]["kind"]')" = "models package" ]
python3 - "$F/v0.23-bn" "$T/vllm-0.23.0-py3-none-any.whl" <<'EOF'
import os, sys, zipfile
root, whl = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl, "w") as z:
    for d, _, files in os.walk(os.path.join(root, "vllm")):
        for f in files:
            p = os.path.join(d, f)
            z.write(p, os.path.relpath(p, root))
    z.writestr("vllm-0.23.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: vllm\nVersion: 0.23.0\n")
EOF
run whl --vllm "$T/vllm-0.23.0-py3-none-any.whl" --json -
check "wheel: exit 0" [ "$RC" = 0 ]
check "wheel: version from metadata, kind wheel" [ "$(jq_ $T/whl.out 'd["vllm"]["version"], d["vllm"]["kind"]')" = "0.23.0 wheel" ]

# a new field, a removed field: the wire is not modelled (exit 1)
run new --vllm $F/new-field --json -
check "new-field: exit 1" [ "$RC" = 1 ]
check "new-field: verdict" [ "$(jq_ $T/new.out 'd["verdict"]')" = wire_differs ]
check "new-field: the item" [ "$(jq_ $T/new.out '[(i["status"], i["wire"]) for i in d["items"] if i["name"] == "MooncakeXferMetadata.remote_dp_rank"]')" = "[('new', True)]" ]
check "new-field: summary line" grep -qE "^your vLLM 0.23.0: 1 new struct field pdkv does not model \(wire; row [^,]*0\.23[^,]*, shape bn\)$" <<<"$(jq_ $T/new.out 'd["summary"]')"
check "new-field: an err_msg a helper returns is new, off the wire" [ "$(jq_ $T/new.out '[(i["status"], i["wire"]) for i in d["items"] if i["name"] == "region counts differ: local={}, remote={}."]')" = "[('new', False)]" ]
run gone --vllm $F/removed-field
check "removed-field: exit 1" [ "$RC" = 1 ]
check "removed-field: gone block_lens" grep -qE "gone +MooncakeXferMetadata.block_lens" "$T/gone.out"
check "removed-field: verdict text" has gone "verdict: pdkv does not model this vLLM's wire"

# a renamed env var: off the wire (exit 0, listed)
run env --vllm $F/renamed-env --json -
check "renamed-env: exit 0" [ "$RC" = 0 ]
check "renamed-env: verdict off the wire" [ "$(jq_ $T/env.out 'd["verdict_text"]')" = "pdkv models it with differences that do not touch the wire" ]
check "renamed-env: gone + new" [ "$(jq_ $T/env.out 'sorted((i["status"], i["name"]) for i in d["items"] if i["category"] == "env" and i["status"] != "known")')" = "[('gone', 'VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT'), ('new', 'VLLM_MOONCAKE_ABORT_TIMEOUT')]" ]

# 0.31 with the bl shape: modelled when pdkv's 0.31 row is bl, else 7+1 new fields
run m31 --model --vllm-version 0.31
G31=$(jq_ $T/m31.out 'd["gen"]')
run bl --vllm $F/v0.31-bl --json -
if [ "$G31" = bl ]; then
	check "v0.31-bl on a bl row: exit 0, models" [ "$RC $(jq_ $T/bl.out 'd["verdict"]')" = "0 models" ]
else
	check "v0.31-bl on a $G31 row: exit 1" [ "$RC" = 1 ]
	check "v0.31-bl: registered_layer_names new" [ "$(jq_ $T/bl.out '[i["status"] for i in d["items"] if i["name"] == "MooncakeXferMetadata.registered_layer_names"][0]')" = new ]
fi
# a release past the table: its newest row's shape, said so
run new99 --vllm $F/v0.31-bl --vllm-version 0.99.1
check "0.99.1: newer than the table" has new99 "is newer than pdkv's newest row"
# the bn tree named 0.16 (row b0): bn matches, so off the wire with the shape listed
run m16 --model --vllm-version 0.16
if [ "$(jq_ $T/m16.out 'd["gen"]')" = b0 ]; then
	run b16 --vllm $F/v0.23-bn --vllm-version 0.16 --json -
	check "bn tree as 0.16: exit 0, off the wire" [ "$RC $(jq_ $T/b16.out 'd["verdict"]')" = "0 models_off_wire" ]
	check "bn tree as 0.16: shape item" grep -qF "says b0; the structs are pdkv's bn (run pdkv with --v1-shape bn)" <<<"$(jq_ $T/b16.out '[i["detail"] for i in d["items"] if i["category"] == "shape"][0]')"
fi
# --shape forces the comparison
run shp --vllm $F/v0.23-bn --shape b0
check "--shape b0 on bn: exit 1" [ "$RC" = 1 ]

# errors: exit 2 with what is wrong
run nocon --vllm $F/no-connector --json "$T/nocon.json"
check "no-connector: exit 2" [ "$RC" = 2 ]
check "no-connector: message" has nocon "vLLM 0.10.1 has no MooncakeConnector"
check "no-connector: --json error" [ -n "$(jq_ $T/nocon.json 'd["error"]')" ]
run nopath --vllm "$T/nowhere"
check "missing path: exit 2" [ "$RC" = 2 ]
check "missing path: message" has nopath "no such file or directory"
run notv --vllm "$T"
check "not a vLLM tree: exit 2" [ "$RC" = 2 ]
check "not a vLLM tree: message" has notv "is not a vLLM tree"
echo "not a zip" >"$T/bad.whl"
run badwhl --vllm "$T/bad.whl"
check "unreadable wheel: exit 2" [ "$RC" = 2 ]
check "unreadable wheel: message" has badwhl "cannot read it as a wheel"
PDKV_PYTHON=$T/no-python run nopy --vllm $F/v0.23-bn
check "python3 missing: exit 2" [ "$RC" = 2 ]
check "python3 missing: message" has nopy "not found"
run usage --bogus
check "unknown flag: exit 2" [ "$RC" = 2 ]

# never imported: a tree whose modules would fail on import still reads, also when found via
# python3's own search path (the default, no --vllm)
cp -r $F/v0.23-bn "$T/poison"
printf 'raise SystemExit("vllm was imported")\n' >>"$T/poison/vllm/__init__.py"
printf 'import torch\nraise SystemExit("imported")\n' >>"$T/poison/vllm/envs.py"
PYTHONPATH=$T/poison run dflt --json -
check "default path (python3's vllm), never imported: models" [ "$RC $(jq_ $T/dflt.out 'd["verdict"], d["vllm"]["kind"]')" = "0 models package" ]

# --model and --json keys
run model --model --vllm-version 0.23
check "--model keys" [ "$(jq_ $T/model.out 'all(k in d for k in ("version","row","gen","structs","routes","sockets","env","extra_config","kv_load_failure_policy","metrics","err_msgs"))')" = True ]
check "--model 0.23: bn, 8 fields" [ "$(jq_ $T/model.out 'd["gen"], len(d["structs"][0]["fields"])')" = "bn 8" ]
run mbl --model --shape bl
check "--model --shape bl: 15 fields" [ "$(jq_ $T/mbl.out 'len(d["structs"][0]["fields"])')" = 15 ]
check "--json keys" [ "$(jq_ $T/new.out 'all(k in d for k in ("vllm","row","gen","note","items","verdict","verdict_text","summary","exit"))')" = True ]
check "pdkv dispatches vllm-drift" "$BIN/pdkv" vllm-drift --help >/dev/null

# pdkv run --external says the line once, for the vLLM it can see (PDKV_VLLM), before the
# deployment is reached (here: nothing listens, so the scenario fails after the line)
if [ -x "$BIN/pdkv-run" ]; then
	NOWHERE=prefill=http://127.0.0.1:9,decode=http://127.0.0.1:9,proxy=http://127.0.0.1:9
	PDKV_VLLM=$F/new-field "$BIN/pdkv-run" --external $NOWHERE scenarios/external/live-1p1d.json >"$T/ext.out" 2>&1
	check "run --external: the drift line" grep -q "^# external: your vLLM 0.23.0: 1 new struct field pdkv does not model" "$T/ext.out"
	PDKV_VLLM=$T/nowhere "$BIN/pdkv-run" --external $NOWHERE scenarios/external/live-1p1d.json >"$T/ext2.out" 2>&1
	check "run --external: silent without a vLLM to see" bash -c "! grep -q 'your vLLM' '$T/ext2.out'"
fi

[ "$fails" = 0 ] && echo "test_vllm_drift: all passed" || echo "test_vllm_drift: $fails failed"
[ "$fails" = 0 ]
