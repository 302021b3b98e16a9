# SPDX-License-Identifier: Apache-2.0
# ref/kv1: the vLLM V1 MooncakeConnector (gen A ZMQ side channel, gen B bootstrap server and
# ROUTER/DEALER side channel) on pdkv's engine, with the msgpack wire of msgspec.
LIBS += kv1
kv1_SRCS := $(filter-out ref/kv1/tests/%,$(wildcard ref/kv1/*.c))
TESTS += test_kv1_wire
test_kv1_wire_SRCS := ref/kv1/tests/test_kv1_wire.c
test_kv1_wire_LIBS := kv1 pdhttplim pdcommon
TESTS += test_kv1_boot
test_kv1_boot_SRCS := ref/kv1/tests/test_kv1_boot.c
test_kv1_boot_LIBS := kv1 pdhttplim pdcommon
TESTS += test_kv1_xfer
test_kv1_xfer_SRCS := ref/kv1/tests/test_kv1_xfer.c ref/kv1/tests/kv1_testlib.c
test_kv1_xfer_LIBS = kv1 pdhttplim te temeta pdcommon
TESTS += test_kv1_pp
test_kv1_pp_SRCS := ref/kv1/tests/test_kv1_pp.c ref/kv1/tests/kv1_testlib.c
test_kv1_pp_LIBS = kv1 pdhttplim te temeta pdcommon
TESTS += test_kv1_park
test_kv1_park_SRCS := ref/kv1/tests/test_kv1_park.c ref/kv1/tests/kv1_testlib.c
test_kv1_park_LIBS = kv1 pdhttplim te temeta pdcommon
TESTS += test_kv1_abandon
test_kv1_abandon_SRCS := ref/kv1/tests/test_kv1_abandon.c ref/kv1/tests/kv1_testlib.c ref/te/tests/te_gate.c
test_kv1_abandon_LIBS = kv1 pdhttplim te temeta pdcommon
TESTS += test_kv1_rhold
test_kv1_rhold_SRCS := ref/kv1/tests/test_kv1_rhold.c ref/kv1/tests/kv1_testlib.c ref/te/tests/te_gate.c
test_kv1_rhold_LIBS = kv1 pdhttplim te temeta pdcommon
TESTS += test_kv1_regions
test_kv1_regions_SRCS := ref/kv1/tests/test_kv1_regions.c
test_kv1_regions_LIBS = kv1 pdhttplim te temeta pdcommon
TESTS += test_kv1_wire_shapes
test_kv1_wire_shapes_SRCS := ref/kv1/tests/test_kv1_wire_shapes.c
test_kv1_wire_shapes_LIBS := kv1 pdhttplim pdcommon
TESTS += test_kv1_hostile
test_kv1_hostile_SRCS := ref/kv1/tests/test_kv1_hostile.c ref/kv1/tests/kv1_testlib.c
test_kv1_hostile_LIBS = kv1 pdhttplim cfg te temeta pdcommon
TESTS += test_kv1_groups
test_kv1_groups_SRCS := ref/kv1/tests/test_kv1_groups.c ref/kv1/tests/kv1_testlib.c
test_kv1_groups_LIBS = kv1 pdhttplim te temeta pdcommon
