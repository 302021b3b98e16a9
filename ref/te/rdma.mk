# SPDX-License-Identifier: Apache-2.0
# ref/te RDMA transport (lib terdma, sources listed in module.mk): tests owned by rdma.
# test_rdma_* skip (exit 77) on hosts without an RDMA device; ci/rxe/run-rxe-tier.sh runs them
# inside the Soft-RoCE guest.
TESTS += test_rdma_engine test_rdma_wire
test_rdma_wire_SRCS := ref/te/tests/test_rdma_wire.c
test_rdma_wire_LIBS := terdma te temeta pdcommon
test_rdma_engine_SRCS := ref/te/tests/test_rdma_engine.c
test_rdma_engine_LIBS := te temeta terdma pdcommon
# te_engine.c holds only a weak reference to te_rdma_transport_ops, which does not pull an
# archive member: every binary and test that links lib terdma also gets te_rdma_link.c, whose
# strong reference does. (This file is included last, after every module has declared its own.)
TE_RDMA_LINK_SRC := ref/te/rdma_link/te_rdma_link.c
$(foreach b,$(BINS) $(TESTS),$(if $(filter terdma,$(if $($(b)_LIBS),$($(b)_LIBS),$(LIBS))),\
  $(eval $(b)_SRCS += $(TE_RDMA_LINK_SRC))))
