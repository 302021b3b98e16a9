#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fuzz-smoke: every libFuzzer target (make fuzz) for FUZZ_SECONDS (default 30) each, FUZZ_JOBS
# (default 2) targets at once; exit non-zero on a crash (the input lands in
# build-fuzz/crash/<target>/: add it to fixtures/fuzz/<target>/regress). The clang build is made
# with -j2, as .ci/run makes the main one.
set -u
cd "$(dirname "$0")/.."
command -v "${FUZZ_CC:-clang-14}" >/dev/null || { echo "SKIP: ${FUZZ_CC:-clang-14} not installed"; exit 77; }
exec nice make -j2 --no-print-directory fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-30}" FUZZ_JOBS="${FUZZ_JOBS:-2}"
