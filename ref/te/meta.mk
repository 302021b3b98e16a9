# SPDX-License-Identifier: Apache-2.0
# ref/te metadata part (lib temeta; its sources are listed in module.mk): tests owned by te-meta.
TESTS += test_meta_desc test_meta_conn test_meta_store test_meta_svc
test_meta_desc_SRCS := ref/te/tests/test_meta_desc.c
test_meta_desc_LIBS := temeta pdcommon
test_meta_conn_SRCS := ref/te/tests/test_meta_conn.c
test_meta_conn_LIBS := temeta pdcommon
test_meta_store_SRCS := ref/te/tests/test_meta_store.c
test_meta_store_LIBS := temeta pdtestsvc pdcommon
test_meta_svc_SRCS := ref/te/tests/test_meta_svc.c
test_meta_svc_LIBS := pdtestsvc pdcommon
# metadata_version (Mooncake #3837): reading, writing, the re-read rules, P2P's 0
TESTS += test_meta_version
test_meta_version_SRCS := ref/te/tests/test_meta_version.c
test_meta_version_LIBS := te temeta pdtestsvc pdcommon
