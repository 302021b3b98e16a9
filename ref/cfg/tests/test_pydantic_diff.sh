#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_pydantic_diff.sh: differential test of pdkv's --kv-transfer-config coercion against real
# pydantic v2 driving a replica of vLLM V0's KVTransferConfig (docs/vllm-v0.md): same
# accept/reject, same error lines (input_value excepted). SKIPs (77) without python3+pydantic 2.
set -u
B=${PDKV_BIN:-build/bin}
PY=$(command -v python3) || { echo "SKIP: python3 not installed"; exit 77; }
"$PY" -c 'import pydantic, sys; sys.exit(0 if pydantic.VERSION.startswith("2") else 1)' 2>/dev/null ||
	{ echo "SKIP: pydantic 2 not installed"; exit 77; }
exec "$PY" - "$B/pdkv-config" <<'PY'
import json, random, re, subprocess, sys
from typing import Optional
from pydantic import BaseModel, ValidationError
class KVTransferConfig(BaseModel):
    kv_connector: Optional[str] = None
    kv_buffer_device: Optional[str] = "cuda"
    kv_buffer_size: float = 1e9
    kv_role: Optional[str] = None
    kv_rank: Optional[int] = None
    kv_parallel_size: int = 1
    kv_ip: str = "127.0.0.1"
    kv_port: int = 14579
    def model_post_init(self, __context):
        if self.kv_role is not None and self.kv_role not in ["kv_producer", "kv_consumer", "kv_both"]:
            raise ValueError(f"Unsupported kv_role: {self.kv_role}. Supported roles are `kv_producer`, `kv_consumer`, and `kv_both`")
        if self.kv_connector is not None and self.kv_role is None:
            raise ValueError("Please specify kv_disagg_role when kv_connector is set, supported roles are `kv_producer`, `kv_consumer`, and `kv_both`")
random.seed(5)
vals = ['0', '1', '-1', '1.0', '1.5', '"1"', '"1.0"', '"1.5"', '" 2 "', '"1_0"', '"3."', '"0x3"', 'true',
        'false', 'null', '[]', '{}', '1e30', '2e9', '"2e9"', '"abc"', '"inf"', '"1_000"', 'NaN',
        'Infinity', '99999999999999999999', '"kv_producer"', '"kv_consumer"', '"kv_both"',
        '"KV_BOTH"', '"MooncakeConnector"', '""', '-0', '1.0000000000000002']
keys = ['kv_connector', 'kv_buffer_device', 'kv_buffer_size', 'kv_role', 'kv_rank',
        'kv_parallel_size', 'kv_ip', 'kv_port', 'other']
cases = []
for i in range(300):
    n = random.randint(0, 4)
    cases.append('{' + ','.join(f'"{random.choice(keys)}":{random.choice(vals)}' for _ in range(n)) + '}')
def strip(m):
    return re.sub(r', input_value=.*?(?=\]$|, input_type)|, input_type=[a-z]+', '', m)
fails = rejected = 0
for c in cases:
    try:
        KVTransferConfig.model_validate_json(c)
        want = None
    except ValidationError as e:
        rejected += 1
        want = '; '.join(('.'.join(map(str, x['loc'])) + ': ' if x['loc'] else '') + f"{x['msg']} [type={x['type']}]" for x in e.errors())
    out = json.loads(subprocess.run([sys.argv[1], 'check', '--kv-transfer-config', c, '--json'],
                                    capture_output=True, env={}).stdout)
    err = out['vllm']['error'] or ''
    got = None
    if 'invalid from_cli value' in err:
        d = [x['message'] for x in out['diagnostics'] if 'validation error' in x['message']]
        got = d[0].split('KVTransferConfig: ', 1)[1] if d else '?'
        got = '; '.join(strip(p) for p in got.split('; '))
    if want != got:
        fails += 1
        if fails <= 5:
            print(f'MISMATCH {c}\n  pydantic: {want}\n  pdkv:     {got}')
print(f'test_pydantic_diff: {len(cases)} configs ({rejected} rejected by pydantic), {fails} mismatches')
sys.exit(1 if fails else 0)
PY
