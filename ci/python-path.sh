# SPDX-License-Identifier: Apache-2.0
# Sourced by ci/run-tests.sh and .ci/run. Where python3 is a pyenv shim (a bash script that
# runs `pyenv exec`: ~0.37 s a call, and the tests call python3 hundreds of times), put the
# directory of the interpreter it resolves to first in PATH: the same python3, same modules
# (pydantic for test_pydantic_diff), at ~0.03 s a call. Without pyenv (a bare Debian 12 with
# /usr/bin/python3) nothing changes.
case "$(command -v python3 2>/dev/null)" in
*/shims/python3)
  _pdkv_py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) &&
    [ -x "$_pdkv_py" ] && export PATH="$(dirname "$_pdkv_py"):$PATH"
  unset _pdkv_py
  ;;
esac
