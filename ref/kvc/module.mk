# kvc: the vLLM V0 MooncakeConnector (MooncakePipe + SimpleBuffer) on pdkv's engine.
# test_kvc_unit needs no engine (frames, tensor blob, pool, SimpleBuffer); test_kvc_e2e runs a
# prefill and a decode connector (and a rogue raw-ZMQ peer) against a real etcd.
LIBS += kvc
kvc_SRCS := $(filter-out ref/kvc/tests/%,$(wildcard ref/kvc/*.c))
TESTS += test_kvc_unit test_kvc_e2e
test_kvc_unit_SRCS := ref/kvc/tests/test_kvc_unit.c
test_kvc_unit_LIBS := kvc pdcommon
test_kvc_e2e_SRCS := ref/kvc/tests/test_kvc_e2e.c
test_kvc_e2e_LIBS := kvc cfg te temeta pdtestsvc pdcommon
