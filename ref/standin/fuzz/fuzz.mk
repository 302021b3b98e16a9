# SPDX-License-Identifier: Apache-2.0
# fuzz targets of the HTTP front ends (make fuzz): the stand-in's completion / chat request
# parse and the proxy's per-contract body edits (sa_req.c is built in; the stand-in has no library)
FUZZ += fuzz_http_body
fuzz_http_body_SRCS := ref/standin/fuzz/fuzz_http_body.c ref/standin/sa_req.c
fuzz_http_body_LIBS := px mdl pdcommon
TESTS += replay_fuzz_http_body
replay_fuzz_http_body_SRCS := ref/standin/fuzz/fuzz_http_body.c ref/standin/sa_req.c \
			      ref/common/tests/fuzz_replay.c
replay_fuzz_http_body_LIBS := px mdl pdcommon
