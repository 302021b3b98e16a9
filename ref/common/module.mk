LIBS += pdcommon
pdcommon_SRCS := $(wildcard ref/common/*.c)
TESTS += test_common
test_common_SRCS := ref/common/tests/test_common.c
test_common_LIBS := pdcommon
TESTS += test_pd_opt
test_pd_opt_SRCS := ref/common/tests/test_pd_opt.c
test_pd_opt_LIBS := pdcommon
