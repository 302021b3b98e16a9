/* SPDX-License-Identifier: Apache-2.0 */
/* sa_gpu: the stand-in's KV cache in GPU memory (--kv-cache-device cuda[:N]): setup, the fill
 * kernel into the V1 blocks, the decode's read-back. Without the flag none of it is used. */
#ifndef SA_GPU_H
#define SA_GPU_H

#include <stddef.h>
#include <stdint.h>

struct sa;
struct kv1_worker;

/* --kv-cache-device: nothing for cpu / unset; for cuda[:N] checks the device, loads
 * libmdlgpu.so and sets s->gpu. -1 with a startup error naming the flag printed. */
int sa_gpu_setup(struct sa *s);
void sa_gpu_teardown(struct sa *s);
/* "cuda:N" where the KV blocks live, or NULL (host memory). */
const char *sa_gpu_location(const struct sa *s);
/* Writes the fake model's keys and values of tokens[0..T) for heads [head0, head0+nheads) on the
 * GPU, straight into the worker's blocks blk (ceil(T / block_size) ids). 0 or -errno. */
int sa_gpu_fill_blocks(struct sa *s, struct kv1_worker *w, const int64_t *tokens, size_t T,
                       int head0, int nheads, const int64_t *blk);
/* Copies the blocks back to host rows keys/values [L][T][row] (cudaMemcpy D2H). 0 or -EIO. */
int sa_gpu_read_blocks(struct sa *s, struct kv1_worker *w, uint8_t *keys, uint8_t *values, size_t T,
                       size_t row, const int64_t *blk);
/* XORs mask into one byte of device memory (the corrupt fault). */
int sa_gpu_flip(struct sa *s, uint8_t *p, uint8_t mask);

#endif
