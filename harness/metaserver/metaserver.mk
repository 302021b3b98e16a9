# SPDX-License-Identifier: Apache-2.0
# pdkv-metaserver: in-memory HTTP metadata server with Mooncake's API (metaserver_main.c: HTTP
# layer; ms_store.c: store and limits; connection limits from ref/common/httplim)
LIBS += metaserver
metaserver_SRCS := harness/metaserver/ms_store.c
BINS += pdkv-metaserver
pdkv-metaserver_SRCS := harness/metaserver/metaserver_main.c
pdkv-metaserver_LIBS := metaserver pdhttplim pdcommon
TESTS += test_metaserver_limits
test_metaserver_limits_SRCS := harness/metaserver/tests/test_metaserver_limits.c
test_metaserver_limits_LIBS := metaserver pdcommon
