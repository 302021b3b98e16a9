# SPDX-License-Identifier: Apache-2.0
# pdkv-vllm-drift (`pdkv vllm-drift`): reads a vLLM tree with harness/drift/vllm_extract.py and
# compares it with pdkv's model (ref/cfg/cfg_model.c, cfg_drift*.c); a thin main.
BINS += pdkv-vllm-drift
pdkv-vllm-drift_SRCS := harness/drift/drift_main.c
pdkv-vllm-drift_LIBS := cfg pdcommon
TESTS += test_vllm_drift_cmp
test_vllm_drift_cmp_SRCS := harness/drift/tests/test_vllm_drift_cmp.c
test_vllm_drift_cmp_LIBS := cfg pdcommon
