# SPDX-License-Identifier: Apache-2.0
# pdkv-run: `pdkv run`, the scenario runner's thin main over harness/lib.
BINS += pdkv-run
pdkv-run_SRCS := harness/run/run_main.c
pdkv-run_LIBS := hr cfg pdtestsvc pdcommon
