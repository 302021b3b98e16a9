# SPDX-License-Identifier: Apache-2.0
# pdkv-interop (`pdkv interop`, `make test-interop`): the interop tier against a user's own
# Mooncake transfer_engine_bench. Not in .ci/run: CI has no Mooncake (its NOTRUN path is tested).
BINS += pdkv-interop
pdkv-interop_SRCS := harness/interop/interop_main.c
pdkv-interop_LIBS := te temeta pdtestsvc pdcommon
