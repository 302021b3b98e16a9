#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ci/rxe/rdma-accept.sh two-host --dry-run: the plan "target on B through ssh, initiator here,
# perftest beside it" from hosts.txt, without touching the network; and its usage errors.
# (The real two-host run over ssh is test_hosts' test_rdma_accept_two_host.)
set -u
cd "$(dirname "$0")/../.." || exit 1
T=$(mktemp -d /tmp/pdkv-accept-dry.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
printf '# test\nhostA 192.0.2.10\nhostB pdkv@192.0.2.11 port=2222 pdkv=/opt/pdkv/bin/pdkv NCCL_IB_HCA=mlx5_1\n' >"$T/hosts.txt"

out=$(bash ci/rxe/rdma-accept.sh two-host --hosts="$T/hosts.txt" --target_host=hostB \
	--target_devices=mlx5_1 --device_name=mlx5_0 --ip=192.0.2.10 --compare-perftest --dry-run 2>&1)
rc=$?
[ $rc = 0 ] || fail "dry-run rc $rc: $out"
for want in "+ ssh pdkv@192.0.2.11:" "setsid nohup env NCCL_IB_HCA=mlx5_1 MC_TCP_BIND_ADDRESS=192.0.2.11 /opt/pdkv/bin/pdkv bench --mode=target" \
	"--device_name=mlx5_1" "--protocol=rdma" "--compare-perftest" "echo pdkv-pid=\$!" \
	"+ here: env MC_TCP_BIND_ADDRESS=192.0.2.10" "--mode=initiator" "--device_name=mlx5_0" \
	"--perftest_host=192.0.2.11" "--segment_id=SEGMENT-PRINTED-BY-THE-TARGET"; do
	case $out in *"$want"*) ;; *) fail "dry-run lacks \"$want\": $out" ;; esac
done

out=$(bash ci/rxe/rdma-accept.sh two-host --hosts="$T/hosts.txt" --target_host=hostC \
	--target_devices=x --device_name=y --dry-run 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *'"hostC" is not in'* ]] || fail "unknown host: rc $rc: $out"
out=$(bash ci/rxe/rdma-accept.sh two-host --hosts="$T/hosts.txt" --target_host=hostB --device_name=y --dry-run 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *"needs --hosts, --target_host and --target_devices"* ]] || fail "usage: rc $rc: $out"
printf 'hostB -oProxyCommand=x\n' >"$T/bad.txt"
out=$(bash ci/rxe/rdma-accept.sh two-host --hosts="$T/bad.txt" --target_host=hostB --target_devices=x --device_name=y --dry-run 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *"expected NAME [USER@]ADDRESS"* ]] || fail "ssh option as address: rc $rc: $out"
echo "PASS: rdma-accept two-host dry-run: plan and usage errors"
