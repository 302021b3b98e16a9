# SPDX-License-Identifier: Apache-2.0
BINS += pdkv
pdkv_SRCS := harness/pdkv.c
pdkv_LIBS := pdcommon
# "vllm" per side (a rolling upgrade's mixed deployment): parser, contract, each stand-in's argv
TESTS += test_hr_sides
test_hr_sides_SRCS := harness/tests/test_hr_sides.c harness/tests/scenario_fixture.c
test_hr_sides_LIBS := hr cfg pdtestsvc pdcommon
