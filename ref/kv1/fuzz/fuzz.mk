# SPDX-License-Identifier: Apache-2.0
# fuzz targets of the V1 connector (make fuzz): the msgpack messages and the bootstrap /register
FUZZ += fuzz_kv1_wire
fuzz_kv1_wire_SRCS := ref/kv1/fuzz/fuzz_kv1_wire.c
fuzz_kv1_wire_LIBS := kv1 pdhttplim pdcommon
TESTS += replay_fuzz_kv1_wire
replay_fuzz_kv1_wire_SRCS := ref/kv1/fuzz/fuzz_kv1_wire.c ref/common/tests/fuzz_replay.c
replay_fuzz_kv1_wire_LIBS := kv1 pdhttplim pdcommon
