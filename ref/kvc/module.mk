# kvc: the vLLM V0 MooncakeConnector (MooncakePipe + SimpleBuffer) on pdkv's engine.
# two connectors against a real etcd.
LIBS += kvc
kvc_SRCS := $(filter-out ref/kvc/tests/%,$(wildcard ref/kvc/*.c))
TESTS += test_kvc_unit
test_kvc_unit_SRCS := ref/kvc/tests/test_kvc_unit.c
test_kvc_unit_LIBS := kvc pdcommon
