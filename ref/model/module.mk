# SPDX-License-Identifier: Apache-2.0
# ref/model: the deterministic fake model (lib mdl) used by pdkv-standin.
LIBS += mdl
mdl_SRCS := $(filter-out ref/model/tests/%,$(wildcard ref/model/*.c))
TESTS += test_mdl
test_mdl_SRCS := ref/model/tests/test_mdl.c
test_mdl_LIBS := mdl pdcommon
