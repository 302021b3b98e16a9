#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv run --launcher k8s --dry-run: the manifests of a V0 (etcd) and a V1 TP=2 scenario, checked
# for structure (no cluster runs here): a ConfigMap, a headless Service, one Pod per role in its
# subdomain with the Pod's IP as VLLM_HOST_IP, the command lines a local run uses, and the check
# Job (pdkv run --external against the Pods' names). Also the flag combinations pdkv run refuses,
# and --launcher slurm outside any allocation (no cluster needed for either).
set -u
cd "$(dirname "$0")/../.." || exit 1
. ci/testlib.sh
BIN=$(cd "${PDKV_BIN:-build/bin}" 2>/dev/null && pwd)
[ -x "$BIN/pdkv-run" ] || { echo "SKIP: pdkv-run not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

"$BIN/pdkv-run" --launcher k8s --dry-run --out "$T/m" scenarios/30-netns-1p1d-v0.json \
	scenarios/18-v1-gen-bn-tp2.json >"$T/out" 2>&1
check "dry run exits 0 and names both files" test $? = 0 -a "$(grep -c 'wrote ' "$T/out")" = 2
python3 - "$T/m/pdkv-netns-1p1d-v0.json" "$T/m/pdkv-v1-gen-bn-tp2.json" <<'PY' >"$T/py" 2>&1
import json, sys
fails = 0
def check(what, cond):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += 0 if cond else 1
for path, meta in zip(sys.argv[1:], ["etcd", None]):
    doc = json.load(open(path))
    items = doc["items"]
    kinds = [i["kind"] for i in items]
    svc = [i for i in items if i["kind"] == "Service"]
    pods = {i["metadata"]["labels"]["pdkv/role"]: i for i in items if i["kind"] == "Pod"}
    name = path.rsplit("/", 1)[1][:-5]
    check(f"{name}: a List of ConfigMap, Service, Pods, Job", doc["kind"] == "List" and
          kinds.count("ConfigMap") == 1 and len(svc) == 1 and kinds.count("Job") == 1)
    s = svc[0]
    check(f"{name}: the Service is headless and selects the scenario's Pods",
          s["spec"]["clusterIP"] == "None" and s["spec"]["selector"]["pdkv/scenario"] == name)
    want = {"prefill", "decode", "proxy"} | ({"metadata"} if meta else set())
    check(f"{name}: one Pod per role {sorted(want)}", set(pods) == want)
    for role, p in pods.items():
        c = p["spec"]["containers"][0]
        env = {e["name"]: e for e in c["env"]}
        check(f"{name}/{role}: hostname {role} in subdomain {name}",
              p["spec"]["hostname"] == role and p["spec"]["subdomain"] == name)
        check(f"{name}/{role}: VLLM_HOST_IP and MC_TCP_BIND_ADDRESS are the Pod's IP, once",
              all(env[k].get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") ==
                  "status.podIP" for k in ("VLLM_HOST_IP", "MC_TCP_BIND_ADDRESS")) and
              len(c["env"]) == len(env))
    pre = pods["prefill"]["spec"]["containers"][0]
    cmd = pre["command"]
    check(f"{name}: prefill runs pdkv standin as a producer on 0.0.0.0:8100",
          cmd[:2] == ["pdkv", "standin"] and cmd[cmd.index("--host") + 1] == "0.0.0.0" and
          cmd[cmd.index("--port") + 1] == "8100" and "kv_producer" in " ".join(cmd))
    px = pods["proxy"]["spec"]["containers"][0]["command"]
    check(f"{name}: the proxy reaches prefill and decode by their DNS names",
          px[px.index("--prefill") + 1] == f"http://prefill.{name}:8100" and
          px[px.index("--decode") + 1] == f"http://decode.{name}:8200")
    job = [i for i in items if i["kind"] == "Job"][0]
    jc = job["spec"]["template"]["spec"]["containers"][0]["command"]
    check(f"{name}: the Job runs the checks with pdkv run --external",
          jc[:3] == ["pdkv", "run", "--external"] and f"proxy=http://proxy.{name}:8000" in jc[3])
    cm = [i for i in items if i["kind"] == "ConfigMap"][0]["data"]
    if meta:
        env = {e["name"]: e.get("value") for e in pre["env"]}
        mc = json.loads(cm["mooncake.json"])
        check(f"{name}: V0 mooncake.json in the ConfigMap, metadata at metadata.{name}:2379",
              env.get("MOONCAKE_CONFIG_PATH") == "/etc/pdkv/mooncake.json" and
              mc["metadata_server"] == f"metadata.{name}:2379" and
              mc["prefill_url"].startswith(f"prefill.{name}:"))
    else:
        check(f"{name}: V1 TP=2 keeps -tp 2 and the bootstrap port",
              "-tp" in cmd and cmd[cmd.index("-tp") + 1] == "2" and "8998" in px)
        check(f"{name}: no mooncake.json for V1", "mooncake.json" not in cm)
    check(f"{name}: the scenario itself is in the ConfigMap",
          "scenario.json" in cm and json.loads(cm["scenario.json"])["name"] in name)
sys.exit(1 if fails else 0)
PY
rc=$?
cat "$T/py"
check "manifest structure" test $rc = 0

"$BIN/pdkv-run" --launcher k8s scenarios/18-v1-gen-bn-tp2.json >"$T/e1" 2>&1
check "--launcher k8s without --dry-run: usage error naming --dry-run" \
	sh -c "test $? = 2 && grep -q -- '--dry-run' '$T/e1'"
"$BIN/pdkv-run" --launcher nope scenarios/18-v1-gen-bn-tp2.json >"$T/e2" 2>&1
check "--launcher nope: usage error listing the launchers" \
	sh -c "test $? = 2 && grep -q 'expected ssh, slurm, k8s or local' '$T/e2'"
"$BIN/pdkv-run" --slurm-args "-N 2" scenarios/18-v1-gen-bn-tp2.json >"$T/e3" 2>&1
check "--slurm-args without --launcher slurm: usage error" sh -c "test $? = 2"
"$BIN/pdkv-run" --launcher k8s --dry-run scenarios/18-v1-gen-bn-tp2.json >"$T/stdout" 2>&1
check "no --out: the manifests on stdout (JSON)" python3 -c "import json,sys; json.load(open('$T/stdout'))"
# --launcher slurm outside an allocation, without --slurm-args: a FAIL saying what to do
env -u SLURM_JOB_ID "$BIN/pdkv-run" --launcher slurm --workdir "$T/w" scenarios/18-v1-gen-bn-tp2.json >"$T/e4" 2>&1
check "--launcher slurm with no allocation: FAIL naming SLURM_JOB_ID and --slurm-args" \
	sh -c "test $? = 1 && grep -q 'SLURM_JOB_ID is unset) and no --slurm-args' '$T/e4'"
[ $fails = 0 ] && echo "PASS test_run_k8s" || echo "FAIL test_run_k8s ($fails)"
[ $fails = 0 ]
