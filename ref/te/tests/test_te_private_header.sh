#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# te_internal.h is the engine's private header: only ref/te may include it (tools use
# te_inspect.h). Fails with the offending files.
set -u
cd "$(dirname "$0")/../../.."
bad=$(git grep -lE '#include *"(te/)?te_(internal|engine_priv|tcp|rdma)\.h"' -- '*.c' '*.h' |
      grep -v '^ref/te/' || true)
if [ -n "$bad" ]; then
  echo "FAIL: files outside ref/te include the engine's private headers:"
  echo "$bad"
  exit 1
fi
echo "ok: no file outside ref/te includes te_internal.h, te_engine_priv.h, te_tcp.h or te_rdma.h"
