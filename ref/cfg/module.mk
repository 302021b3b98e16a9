# SPDX-License-Identifier: Apache-2.0
# ref/cfg: config parsing library (mooncake.json, --kv-transfer-config, env), V0 pipe ports and
# the port planner; tests run every fixture under fixtures/config/.
LIBS += cfg
cfg_SRCS := $(filter-out ref/cfg/tests/%,$(wildcard ref/cfg/*.c))
TESTS += test_cfg_pipe
test_cfg_pipe_SRCS := ref/cfg/tests/test_cfg_pipe.c
test_cfg_pipe_LIBS := cfg pdcommon
TESTS += test_cfg_robust
test_cfg_robust_SRCS := ref/cfg/tests/test_cfg_robust.c
test_cfg_robust_LIBS := cfg pdcommon
TESTS += test_cfg_vllm
test_cfg_vllm_SRCS := ref/cfg/tests/test_cfg_vllm.c
test_cfg_vllm_LIBS := cfg pdcommon
TESTS += test_cfg_release
test_cfg_release_SRCS := ref/cfg/tests/test_cfg_release.c
test_cfg_release_LIBS := cfg pdcommon
