# SPDX-License-Identifier: Apache-2.0
# fuzz targets of cfg (make fuzz): --kv-transfer-config and mooncake.json
FUZZ += fuzz_cfg
fuzz_cfg_SRCS := ref/cfg/fuzz/fuzz_cfg.c
fuzz_cfg_LIBS := cfg pdcommon
TESTS += replay_fuzz_cfg
replay_fuzz_cfg_SRCS := ref/cfg/fuzz/fuzz_cfg.c ref/common/tests/fuzz_replay.c
replay_fuzz_cfg_LIBS := cfg pdcommon
