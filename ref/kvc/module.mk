# SPDX-License-Identifier: Apache-2.0
# kvc: the vLLM V0 MooncakeConnector (MooncakePipe + SimpleBuffer) on pdkv's engine.
# test_kvc_unit needs no engine (frames, tensor blob, pool, SimpleBuffer); test_kvc_e2e runs a
# prefill and a decode connector (and a rogue raw-ZMQ peer) against a real etcd;
# test_kvc_hostile: forged ZMTP sizes, a rogue PULL, decode restarts, a dead decode;
# test_kvc_zcopy: the zero-copy hand-off (registered tensors, in-place receive, arrival hook);
# test_kvc_abandon: READs given up in flight (slow target, stop) keep their buffers held.
LIBS += kvc
kvc_SRCS := $(filter-out ref/kvc/tests/% ref/kvc/fuzz/%,$(wildcard ref/kvc/*.c))
TESTS += test_kvc_unit test_kvc_e2e test_kvc_hostile test_kvc_zcopy test_kvc_abandon
test_kvc_unit_SRCS := ref/kvc/tests/test_kvc_unit.c
test_kvc_unit_LIBS := kvc pdcommon
test_kvc_e2e_SRCS := ref/kvc/tests/test_kvc_e2e.c ref/kvc/tests/kvc_testenv.c
test_kvc_e2e_LIBS := kvc cfg te temeta pdtestsvc pdcommon
test_kvc_hostile_SRCS := ref/kvc/tests/test_kvc_hostile.c ref/kvc/tests/kvc_testenv.c
test_kvc_hostile_LIBS := kvc cfg te temeta pdtestsvc pdcommon
test_kvc_zcopy_SRCS := ref/kvc/tests/test_kvc_zcopy.c ref/kvc/tests/kvc_testenv.c
test_kvc_zcopy_LIBS := kvc cfg te temeta pdtestsvc pdcommon
test_kvc_abandon_SRCS := ref/kvc/tests/test_kvc_abandon.c ref/kvc/tests/kvc_testenv.c \
                         ref/te/tests/te_gate.c
test_kvc_abandon_LIBS := kvc cfg te temeta pdtestsvc pdcommon
