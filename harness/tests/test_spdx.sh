#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_spdx: every source file git tracks (C, headers, shell, Python, make) names its licence in
# an SPDX line near its top, and LICENSE holds the Apache-2.0 text it names.
set -u
cd "$(dirname "$0")/../.."
missing=$(git ls-files '*.c' '*.h' '*.cu' '*.sh' '*.py' '*.mk' Makefile .ci/run |
	grep -v '^fixtures/' | while read -r f; do
		[ -f "$f" ] && ! head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' && echo "$f"
	done)
[ -z "$missing" ] || { echo "FAIL no SPDX line in: $missing"; exit 1; }
grep -q "Apache License" LICENSE && grep -q "Version 2.0, January 2004" LICENSE ||
	{ echo "FAIL LICENSE is not the Apache-2.0 text"; exit 1; }
echo "ok every source file carries its SPDX line; LICENSE is Apache-2.0"
