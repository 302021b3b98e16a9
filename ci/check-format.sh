#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CI format gate: every C file git tracks or would add (untracked, not ignored) must already be
# formatted per .clang-format. Lists the files that are not and the command that fixes them;
# exit 1 then, 0 when all are clean.
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null; then
  echo "check-format: $CLANG_FORMAT not found (bash ci/install-deps.sh installs it)" >&2
  exit 1
fi
bad=()
while IFS= read -r f; do
  [ -f "$f" ] || continue # deleted in the work tree, not yet committed
  if ! "$CLANG_FORMAT" --dry-run -Werror "$f" >/dev/null 2>&1; then
    bad+=("$f")
  fi
done < <(git ls-files --cached --others --exclude-standard '*.c' '*.h')
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} file(s) differ from .clang-format:"
  printf '  %s\n' "${bad[@]}"
  echo "fix with: clang-format -i ${bad[*]}   (or: make format)"
  exit 1
fi
echo "check-format: $(git ls-files --cached --others --exclude-standard '*.c' '*.h' | wc -l) files clean"
