/* SPDX-License-Identifier: Apache-2.0 */
/* mdl_gpu: mdl_kv_compute's K/V on the GPU — the prefix chain over the tokens on the host (n
 * mixes), then one thread per 8-byte word of every [layer][token][head] row. */
#include "mdl_gpu.h"

#include <cuda_runtime.h>

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL

__host__ __device__ static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* word j of mdl.c's row with seed s (mdl_kv_row_ab): a + j b */
__device__ static inline uint64_t row_word(uint64_t s, uint64_t j)
{
	uint64_t a = mix64(s);

	return a + j * ((a ^ (a >> 29)) * P2 | 1);
}

__global__ static void kv_kernel(uint8_t *keys, uint8_t *values, const uint64_t *pre, size_t n,
                                 int layers, int nheads, int head0, size_t row)
{
	size_t wpr = (row + 7) / 8, total = (size_t)layers * n * (size_t)nheads * wpr;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t j = i % wpr, r = i / wpr, h = r % (size_t)nheads, t = (r / nheads) % n,
		       l = r / nheads / n, off = r * row + j * 8, len = row - j * 8 < 8 ? row - j * 8 : 8;
		uint64_t base = pre[t] ^ ((uint64_t)l << 40) ^ ((uint64_t)(head0 + h) << 20);
		uint64_t k = row_word(base * 2 + 1, j), v = row_word(base * 2 + 2 + P3, j);
		if (len == 8) {
			memcpy(keys + off, &k, 8); /* rows are 8-byte aligned when row % 8 == 0 */
			memcpy(values + off, &v, 8);
		} else {
			for (size_t b = 0; b < len; b++) {
				keys[off + b] = (uint8_t)(k >> (8 * b));
				values[off + b] = (uint8_t)(v >> (8 * b));
			}
		}
	}
}

extern "C" int mdl_gpu_kv_fill(void *keys, void *values, const int64_t *tokens, size_t n,
                               int layers, int nheads, int head0, size_t row, void *stream)
{
	uint64_t prefix = 0x70646b76ULL, *pre = NULL, *dpre = NULL; /* "pdkv", as mdl.c */
	cudaStream_t s = (cudaStream_t)stream;
	cudaError_t e;

	if (!keys || !values || !tokens || !n || layers < 1 || nheads < 1 || head0 < 0 || !row)
		return -22;
	e = cudaMallocHost(&pre, n * sizeof(*pre));
	if (e)
		return (int)e;
	for (size_t t = 0; t < n; t++) {
		prefix = mix64(prefix ^ ((uint64_t)tokens[t] * P2 + t));
		pre[t] = prefix;
	}
	e = cudaMallocAsync(&dpre, n * sizeof(*pre), s);
	if (!e)
		e = cudaMemcpyAsync(dpre, pre, n * sizeof(*pre), cudaMemcpyHostToDevice, s);
	if (!e) {
		kv_kernel<<<1024, 256, 0, s>>>((uint8_t *)keys, (uint8_t *)values, dpre, n, layers,
		                               nheads, head0, row);
		e = cudaGetLastError();
		cudaFreeAsync(dpre, s);
	}
	/* the host prefixes must outlive the queued copy */
	if (!e)
		e = cudaStreamSynchronize(s);
	cudaFreeHost(pre);
	return (int)e;
}
