# SPDX-License-Identifier: Apache-2.0
# ref/te is three libraries so that each owner's work-in-progress never breaks the others:
#   temeta — descriptors, connection strings, metadata stores (te_desc*.c te_meta*.c te_conn*.c te_json*.c)
#   terdma — the RDMA transport (te_rdma*.c), linked only where RDMA is wanted
#   te     — engine, batches, handshake, TCP transport, C API (everything else in ref/te)
# Test and binary lists for each live in meta.mk, rdma.mk and this file.
TE_META_SRCS := $(wildcard ref/te/te_desc*.c ref/te/te_meta*.c ref/te/te_conn*.c ref/te/te_json*.c)
TE_RDMA_SRCS := $(wildcard ref/te/te_rdma*.c)
LIBS += te temeta
te_SRCS := $(filter-out $(TE_META_SRCS) $(TE_RDMA_SRCS),$(wildcard ref/te/*.c))
temeta_SRCS := $(TE_META_SRCS)
ifneq ($(TE_RDMA_SRCS),)
LIBS += terdma
terdma_SRCS := $(TE_RDMA_SRCS)
endif

# te-core tests (engine, batches, handshake, tcp) and the C API
TESTS += test_te_engine
test_te_engine_SRCS := ref/te/tests/test_te_engine.c
test_te_engine_LIBS := te temeta pdcommon
# te_batch_abandon: memory held until every task of an abandoned batch has ended
TESTS += test_te_abandon
test_te_abandon_SRCS := ref/te/tests/test_te_abandon.c ref/te/tests/te_gate.c
test_te_abandon_LIBS := te temeta pdcommon
# connect errors that say which failure (refused, DNS) and to what host:port
TESTS += test_te_net
test_te_net_SRCS := ref/te/tests/test_te_net.c
test_te_net_LIBS := te temeta pdcommon
TESTS += test_te_tcp
# hostile peers (issue 11): silent/stalled data connections, trickled handshakes, lost keys
TESTS += test_te_hostile
test_te_hostile_SRCS := ref/te/tests/test_te_hostile.c
test_te_hostile_LIBS := te temeta pdtestsvc pdcommon
# signals without SA_RESTART and SIGSTOP mid-transfer (issue 34, N2): EINTR is not a lost peer
TESTS += test_te_eintr
test_te_eintr_SRCS := ref/te/tests/test_te_eintr.c
test_te_eintr_LIBS := te temeta pdcommon
test_te_tcp_SRCS := ref/te/tests/test_te_tcp.c
test_te_tcp_LIBS := te temeta pdtestsvc pdcommon
# CUDA memory over TCP (te_gpu.c loads libcudart at run time); skips (77) without a GPU
TESTS += test_te_gpu
test_te_gpu_SRCS := ref/te/tests/test_te_gpu.c
test_te_gpu_LIBS := te temeta pdcommon
# nvlink_intra (te_ipc.c): the descriptor everywhere; CUDA IPC between two processes (skips 77
# without a GPU)
TESTS += test_te_ipc_desc
test_te_ipc_desc_SRCS := ref/te/tests/test_te_ipc_desc.c
test_te_ipc_desc_LIBS := te temeta pdcommon
TESTS += test_te_ipc
test_te_ipc_SRCS := ref/te/tests/test_te_ipc.c
test_te_ipc_LIBS := te temeta pdcommon
