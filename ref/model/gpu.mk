# SPDX-License-Identifier: Apache-2.0
# ref/model/gpu: the fake model's KV on a CUDA device (libmdlgpu.so), built only where nvcc is
# (pdkv itself never links CUDA: users dlopen the library). Its test skips (77) without a GPU.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifneq ($(NVCC),)
MDLGPU_SO := $(BUILD)/lib/libmdlgpu.so
all: $(MDLGPU_SO)
$(MDLGPU_SO): ref/model/gpu/mdl_gpu.cu ref/model/gpu/mdl_gpu.h
	@mkdir -p $(@D)
	$(NVCC) -O2 -shared -Xcompiler -fPIC -gencode=arch=compute_90,code=sm_90 \
	  -gencode=arch=compute_80,code=compute_80 -cudart static -o $@ $<
TESTS += test_gpu_fill
test_gpu_fill_SRCS := ref/model/tests/test_gpu_fill.c
test_gpu_fill_LIBS := mdl te temeta pdcommon
$(BUILD)/tests/test_gpu_fill: $(MDLGPU_SO)
endif
