# SPDX-License-Identifier: Apache-2.0
# ref/proxy: pdkv-proxy (library px + thin main) and its tests.
LIBS += px
px_SRCS := $(filter-out ref/proxy/proxy_main.c,$(wildcard ref/proxy/px_*.c))
BINS += pdkv-proxy
pdkv-proxy_SRCS := ref/proxy/proxy_main.c
pdkv-proxy_LIBS := px pdhttplim pdcommon
TESTS += test_proxy_opts test_proxy test_proxy_contracts
test_proxy_opts_SRCS := ref/proxy/tests/test_proxy_opts.c
test_proxy_opts_LIBS := px pdhttplim pdcommon
test_proxy_SRCS := ref/proxy/tests/test_proxy.c ref/proxy/tests/fake_backend.c \
		   ref/proxy/tests/test_client.c ref/proxy/tests/proxy_testenv.c
test_proxy_LIBS := px pdhttplim pdcommon
test_proxy_contracts_SRCS := ref/proxy/tests/test_proxy_contracts.c ref/proxy/tests/fake_backend.c \
			     ref/proxy/tests/test_client.c ref/proxy/tests/proxy_testenv.c
test_proxy_contracts_LIBS := px pdhttplim pdcommon
