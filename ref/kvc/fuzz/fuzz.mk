# SPDX-License-Identifier: Apache-2.0
# fuzz targets of kvc (make fuzz): side-channel frames and the tensor blob
FUZZ += fuzz_kvc_frames
fuzz_kvc_frames_SRCS := ref/kvc/fuzz/fuzz_kvc_frames.c
fuzz_kvc_frames_LIBS := kvc pdcommon
TESTS += replay_fuzz_kvc_frames
replay_fuzz_kvc_frames_SRCS := ref/kvc/fuzz/fuzz_kvc_frames.c ref/common/tests/fuzz_replay.c
replay_fuzz_kvc_frames_LIBS := kvc pdcommon
