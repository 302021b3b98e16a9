/* SPDX-License-Identifier: Apache-2.0 */
/* mdl_gpu: the fake model's keys and values generated on a CUDA device — the same bytes as
 * mdl_kv_compute's, so a stand-in can keep its KV in GPU memory without host copies. */
#ifndef MDL_GPU_H
#define MDL_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes mdl_kv_compute's keys and values of tokens[0..n) for heads [head0, head0+nheads) of
 * a model with `layers` layers and row = head_dim * dtype_bytes bytes per head and position,
 * into device memory keys and values (layers * n * nheads * row bytes each, layout
 * [layer][token][head][row]), on stream (a cudaStream_t; NULL = the default stream) of the
 * current device. Returns 0 once queued, else a cudaError_t (> 0) or -22 (bad arguments).
 * Loaded at run time (dlopen "libmdlgpu.so", dlsym "mdl_gpu_kv_fill"), like libcudart. */
int mdl_gpu_kv_fill(void *keys, void *values, const int64_t *tokens, size_t n, int layers,
                    int nheads, int head0, size_t row, void *stream);
typedef int (*mdl_gpu_kv_fill_fn)(void *, void *, const int64_t *, size_t, int, int, int, size_t,
                                  void *);

#ifdef __cplusplus
}
#endif

#endif
