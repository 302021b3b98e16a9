# SPDX-License-Identifier: Apache-2.0
# fuzz targets of the metaserver (make fuzz): request sequences against its store
FUZZ += fuzz_ms_store
fuzz_ms_store_SRCS := harness/metaserver/fuzz/fuzz_ms_store.c
fuzz_ms_store_LIBS := metaserver pdcommon
TESTS += replay_fuzz_ms_store
replay_fuzz_ms_store_SRCS := harness/metaserver/fuzz/fuzz_ms_store.c ref/common/tests/fuzz_replay.c
replay_fuzz_ms_store_LIBS := metaserver pdcommon
