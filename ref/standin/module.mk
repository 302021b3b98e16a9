# SPDX-License-Identifier: Apache-2.0
# ref/standin: pdkv-standin, the vLLM stand-in (OpenAI HTTP on the fake model + V0 connector).
# The list is recursive (=) so that libraries from modules included after this one (ref/te,
# terdma when the RDMA transport is built) are seen.
BINS += pdkv-standin
pdkv-standin_SRCS := $(filter-out ref/standin/tests/%,$(wildcard ref/standin/*.c))
pdkv-standin_LIBS = mdl kvc kv1 cfg $(filter te temeta terdma,$(LIBS)) pdhttplim pdcommon
TESTS += test_sa_kv
test_sa_kv_SRCS := ref/standin/tests/test_sa_kv.c ref/standin/sa_kv.c ref/standin/sa_v0hash.c \
	ref/standin/sa_kvdiff.c
test_sa_kv_LIBS := mdl pdcommon
TESTS += test_sa_layout
test_sa_layout_SRCS := ref/standin/tests/test_sa_layout.c ref/standin/sa_v1_layout.c
test_sa_layout_LIBS = kv1 pdhttplim cfg te temeta pdcommon
TESTS += test_sa_hyb
test_sa_hyb_SRCS := ref/standin/tests/test_sa_hyb.c ref/standin/sa_v1_hyb.c ref/standin/sa_kv.c
test_sa_hyb_LIBS = kv1 mdl pdhttplim cfg te temeta pdcommon
