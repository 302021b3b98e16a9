#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_pyjson_diff.sh: differential test of pdkv's Python-json reader against the real CPython
# json.load on 200 (PDKV_PYJSON_N) mutated mooncake.json files — every exception text must match byte for byte.
# One python3 process drives it (a few seconds). SKIPs (77) when python3 is not installed.
set -u
B=${PDKV_BIN:-build/bin}
PY=$(command -v python3) || { echo "SKIP: python3 not installed"; exit 77; }
dir=$(mktemp -d /tmp/pdkv-pyjson.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$PY" - "$dir" "$B/pdkv-config" <<'PY'  # not exec: the EXIT trap must remove $dir
import json, os, random, subprocess, sys
N = int(os.environ.get('PDKV_PYJSON_N', '200'))
random.seed(int(os.environ.get('PDKV_PYJSON_SEED', '20261130')))
d, pdkv = sys.argv[1], sys.argv[2]
base = ['{"prefill_url": "10.0.0.1:13003", "decode_url": "10.0.0.2:13003",\n "metadata_server": "etcd://10.0.0.2:2379", "protocol": "rdma", "device_name": "mlx5_0"}',
        '[1, 2.5e3, -0, {"a": [true, false, null]}]', '"s\\u00e9\\ud83d\\ude00"', 'NaN', '{"k": -Infinity}']
alpha = ['{', '}', '[', ']', '"', ',', ':', '0', '7', '-', '+', '.', 'e', ' ', '\n', '\t', '\r', '\\',
         'u', 'n', 'N', '/', '\x00', '\x1f', '\xff', '\xc3', '\xa9', '\xef\xbb\xbf']
fails = 0
for i in range(N):
    s = bytearray(random.choice(base).encode())
    for _ in range(random.randint(1, 4)):
        pos = random.randint(0, len(s))
        ins = random.choice(alpha).encode('latin-1')
        op = random.randint(0, 2)
        if op == 0: s[pos:pos] = ins
        elif op == 1 and s: del s[min(pos, len(s) - 1)]
        elif s: s[min(pos, len(s) - 1):min(pos, len(s) - 1) + 1] = ins
    p = os.path.join(d, f'c{i:03d}.json')
    open(p, 'wb').write(bytes(s))
    try:
        json.load(open(p, encoding='utf-8'))
        want = None
    except json.JSONDecodeError as e:
        want = 'json.decoder.JSONDecodeError: ' + str(e)
    except Exception as e:
        want = type(e).__name__ + ': ' + str(e)
    out = subprocess.run([pdkv, 'check', '--mooncake-config', p, '--json'], capture_output=True).stdout
    got = json.loads(out)['vllm']['error']
    # a file Python parses may still fail later in vLLM (missing keys, ...): compare parse errors only
    if want is None and got and got.split(':')[0] in ('json.decoder.JSONDecodeError', 'UnicodeDecodeError', 'RecursionError'):
        pass
    elif want is None:
        continue
    if got != want:
        fails += 1
        if fails <= 5:
            print(f'MISMATCH {bytes(s)[:100]!r}\n  python: {want}\n  pdkv:   {got}')
print(f'test_pyjson_diff: {N} files, {fails} mismatches against Python {sys.version.split()[0]}')
sys.exit(1 if fails else 0)
PY
