# SPDX-License-Identifier: Apache-2.0
# fuzz targets of the transfer engine (make fuzz): descriptor / rpc_meta JSON, handshake frames,
# the TCP data header's range check
FUZZ += fuzz_te_wire
fuzz_te_wire_SRCS := ref/te/fuzz/fuzz_te_wire.c
fuzz_te_wire_LIBS := te temeta pdcommon
TESTS += replay_fuzz_te_wire
replay_fuzz_te_wire_SRCS := ref/te/fuzz/fuzz_te_wire.c ref/common/tests/fuzz_replay.c
replay_fuzz_te_wire_LIBS := te temeta pdcommon
