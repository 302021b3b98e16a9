# ref/te RDMA transport (lib terdma, sources listed in module.mk): tests owned by rdma.
# test_rdma_* skip (exit 77) on hosts without an RDMA device; ci/rxe/run-rxe-tier.sh runs them
# inside the Soft-RoCE guest.
TESTS += test_rdma_engine
test_rdma_engine_SRCS := ref/te/tests/test_rdma_engine.c
test_rdma_engine_LIBS := te temeta terdma pdcommon
# te_engine.c holds only a weak reference to te_rdma_transport_ops, which does not pull an
# archive member: -u makes every binary that links lib terdma (bench, stand-in, tests) get the
# RDMA transport; binaries without terdma are unaffected.
LDFLAGS += -Wl,-u,te_rdma_transport_ops
