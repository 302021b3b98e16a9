# SPDX-License-Identifier: Apache-2.0
LIBS += pdcommon
pdcommon_SRCS := $(wildcard ref/common/*.c)
# pdtestsvc: real etcd / redis-server / pdkv-metaserver on free ports, for tests and the
# scenario runner only (no reference binary links it).
LIBS += pdtestsvc
pdtestsvc_SRCS := $(wildcard ref/common/testsvc/*.c)
TESTS += test_common
test_common_SRCS := ref/common/tests/test_common.c
test_common_LIBS := pdcommon
TESTS += test_pd_opt
test_pd_opt_SRCS := ref/common/tests/test_pd_opt.c
test_pd_opt_LIBS := pdcommon
TESTS += test_pd_buf
test_pd_buf_SRCS := ref/common/tests/test_pd_buf.c
test_pd_buf_LIBS := pdcommon
# pdhttplim: connection limits (total, per client address) for the libmicrohttpd servers
LIBS += pdhttplim
pdhttplim_SRCS := $(wildcard ref/common/httplim/*.c)
TESTS += test_pd_stats
test_pd_stats_SRCS := ref/common/tests/test_pd_stats.c
test_pd_stats_LIBS := pdcommon
TESTS += test_pd_env
test_pd_env_SRCS := ref/common/tests/test_pd_env.c
test_pd_env_LIBS := pdcommon

# --version's commit (pd_version.c): the header harness/bench/bench.mk rewrites at each commit
$(BUILD)/obj/ref/common/pd_version.o: $(BUILD)/gen/pdkv_git.h
$(BUILD)/obj/ref/common/pd_version.o: CFLAGS += -I$(BUILD)/gen
