/* SPDX-License-Identifier: Apache-2.0 */
/* te_gpu: CUDA device memory for the reference engine without a build dependency on CUDA — the
 * runtime (libcudart) is loaded at run time; "cuda:N" locations, copies and pinned staging. */
#ifndef TE_GPU_H
#define TE_GPU_H

#include <stdbool.h>
#include <stddef.h>

/* Number of CUDA devices (> 0), or 0 with the reason in why ("no CUDA runtime library",
 * "cudaGetDeviceCount: no CUDA-capable device is detected", ...). Loads libcudart once. */
int te_gpu_device_count(char *why, size_t whylen);

/* Location "cuda:N" -> 1 and *dev = N; any other location -> 0 and *dev = -1;
 * "cuda:" followed by no decimal number (or > 1023) -> TE_ERR_INVALID_ARGUMENT. */
int te_gpu_parse_location(const char *location, int *dev);

/* For location "*": the CUDA device whose memory holds p, or -1. Only asks CUDA when a CUDA
 * runtime is already loaded in the process (never loads one itself, so host-only programs pay
 * nothing); -1 for host memory. */
int te_gpu_probe(const void *p);

/* Checks that [p, p+len) is CUDA device memory of device dev: 0, else TE_ERR_DEVICE_NOT_FOUND
 * (no such device) or TE_ERR_INVALID_ARGUMENT (host / other device), reason in why. */
int te_gpu_check_buffer(const void *p, size_t len, int dev, char *why, size_t whylen);

/* cudaMalloc on dev / cudaFree. 0 or TE_ERR_MEMORY / TE_ERR_DEVICE_NOT_FOUND (logged). */
int te_gpu_malloc(int dev, size_t len, void **out);
void te_gpu_free(void *p);
/* Pinned host memory (cudaMallocHost); falls back to plain malloc if pinning fails. */
void *te_gpu_host_alloc(size_t len, bool *pinned);
void te_gpu_host_free(void *p, bool pinned);
/* Synchronous copy in any direction (UVA, cudaMemcpyDefault) with dev current. */
int te_gpu_copy(int dev, void *dst, const void *src, size_t len);
int te_gpu_memset(int dev, void *p, int value, size_t len);
int te_gpu_sync(int dev); /* cudaDeviceSynchronize */

/* Staging for one thread: two pinned buffers of te_gpu_chunk() bytes, a stream and an event
 * per buffer, made on first use for device dev (re-made if the device changes). */
struct te_gpu_stage;
size_t te_gpu_chunk(void); /* PDKV_GPU_CHUNK (64K..64M), default 2 MiB */
int te_gpu_stage_get(struct te_gpu_stage **sp, int dev);
void te_gpu_stage_free(struct te_gpu_stage *s);
char *te_gpu_stage_buf(struct te_gpu_stage *s, int k); /* k = 0 or 1 */
/* The buffer to use next (0, 1, 0, ...): consecutive users of one stage alternate buffers, so the
 * copy queued from one overlaps the socket I/O on the other. */
int te_gpu_stage_next(struct te_gpu_stage *s);
int te_gpu_stage_last(const struct te_gpu_stage *s); /* the one te_gpu_stage_next gave last */
/* Queues a copy on the stage's stream and records buffer k's event after it. */
int te_gpu_stage_copy(struct te_gpu_stage *s, int k, void *dst, const void *src, size_t len);
int te_gpu_stage_wait(struct te_gpu_stage *s, int k); /* buffer k's last copy is done */
int te_gpu_stage_drain(struct te_gpu_stage *s);       /* every queued copy is done */

/* ---- CUDA IPC and asynchronous copies (te_ipc.c, the bench's references) ----
 * Every call below logs what failed and returns 0 or TE_ERR_MEMORY / TE_ERR_DEVICE_NOT_FOUND;
 * the calling thread's current device is restored before it returns. */
#define TE_GPU_IPC_HANDLE_LEN 64 /* sizeof(cudaIpcMemHandle_t) */
/* Device of device memory p (asks CUDA, loading it), -1 for anything else. */
int te_gpu_ptr_device(const void *p);
/* cudaIpcGetMemHandle of the allocation holding p; *base_off = p - the allocation's start
 * (from libcuda's cuMemGetAddressRange; 0 when libcuda is not there to ask). */
int te_gpu_ipc_export(const void *p, unsigned char h[TE_GPU_IPC_HANDLE_LEN], size_t *base_off,
                      char *why, size_t whylen);
/* cudaIpcOpenMemHandle (lazy peer access) with dev current; *out = the allocation's start in
 * this process, *mdev = its device as this process numbers them. Fails (reason in why) for a
 * handle of this very process, of another host, or of a GPU this process cannot see. */
int te_gpu_ipc_open(int dev, const unsigned char h[TE_GPU_IPC_HANDLE_LEN], void **out, int *mdev,
                    char *why, size_t whylen);
void te_gpu_ipc_close(void *p);
/* cudaDeviceCanAccessPeer + cudaDeviceEnablePeerAccess from dev to peer (already enabled is
 * fine); 1 = direct access, 0 = copies between them go through the host. */
int te_gpu_enable_peer(int dev, int peer);
/* A stream of dev that orders after the legacy default stream (cudaStreamCreate), and events
 * (timing off) recorded on streams of their device. */
int te_gpu_stream_new(int dev, void **stream);
void te_gpu_stream_free(int dev, void *stream);
int te_gpu_stream_sync(void *stream);
int te_gpu_event_new(int dev, void **ev);
void te_gpu_event_free(void *ev);
int te_gpu_event_record(void *ev, void *stream);
int te_gpu_event_wait(void *ev); /* cudaEventSynchronize */
/* Queues len bytes on stream (of dev): cudaMemcpyPeerAsync when both ends are device memory of
 * different devices (sdev, ddev >= 0), else cudaMemcpyAsync with cudaMemcpyDefault (UVA). */
int te_gpu_copy_async(int dev, void *dst, int ddev, const void *src, int sdev, size_t len,
                      void *stream);
/* Queues n copies on stream (of dev) in one cudaMemcpyBatchAsync call (CUDA 12.8+, stream
 * order): 0 queued; 1 not done (a runtime without it, PDKV_TE_CUDA_BATCH=0, or the call
 * refused them; then none or some may be queued, and the caller issues each copy itself, which
 * writes the same bytes again). */
int te_gpu_copy_batch_async(int dev, void *const *dst, const void *const *src, const size_t *len,
                            size_t n, void *stream);

#endif
