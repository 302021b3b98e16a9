LIBS += pdcommon
pdcommon_SRCS := $(wildcard ref/common/*.c)
TESTS += test_common
test_common_SRCS := ref/common/tests/test_common.c
test_common_LIBS := pdcommon
