/* SPDX-License-Identifier: Apache-2.0 */
/* bench_gpu: pdkv-bench's --use_vram — buffers from cudaMalloc on --gpu_id (through te_gpu, which
 * loads the CUDA runtime at run time), host<->buffer copies for --check, cudaMemcpy reference. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pd_util.h"
#include "te/te_gpu.h"

int bench_gpu_require(const struct bench_opts *o)
{
	char why[256] = "";
	int n;

	if (!o->use_vram)
		return 0;
	n = te_gpu_device_count(why, sizeof(why));
	if (n <= 0) {
		fprintf(stderr, "pdkv-bench: --use_vram: no CUDA device (%s); skipping\n", why);
		return 77;
	}
	if (o->gpu_id >= n) {
		fprintf(stderr, "pdkv-bench: --gpu_id=%d: %d CUDA device(s) found (0..%d)\n",
		        o->gpu_id, n, n - 1);
		return 2;
	}
	return 0;
}

char *bench_mem_alloc(const struct bench_opts *o, uint64_t len)
{
	void *p = NULL;
	if (o->use_vram)
		return te_gpu_malloc(o->gpu_id, len, &p) ? NULL : p;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void bench_mem_free(const struct bench_opts *o, char *p, uint64_t len)
{
	if (!p)
		return;
	if (o->use_vram)
		te_gpu_free(p);
	else
		munmap(p, len);
}

int bench_mem_put(const struct bench_opts *o, char *dst, const void *src, size_t len)
{
	if (o->use_vram)
		return te_gpu_copy(o->gpu_id, dst, src, len);
	memcpy(dst, src, len);
	return 0;
}

int bench_mem_get(const struct bench_opts *o, void *dst, const char *src, size_t len)
{
	if (o->use_vram)
		return te_gpu_copy(o->gpu_id, dst, src, len);
	memcpy(dst, src, len);
	return 0;
}

int bench_mem_zero(const struct bench_opts *o, char *p, size_t len)
{
	if (o->use_vram)
		return te_gpu_memset(o->gpu_id, p, 0, len);
	memset(p, 0, len);
	return 0;
}

/* batch copies of block bytes, repeated for ~0.3 s; seconds per batch, < 0 on error */
static double time_copies(const struct bench_opts *o, char *dst, const char *src, uint64_t block)
{
	uint64_t t0 = pd_now_ns(), n = 0;
	do {
		for (uint64_t i = 0; i < o->batch; i++)
			if (te_gpu_copy(o->gpu_id, dst + i * block, src + i * block, block))
				return -1;
		n++;
	} while (pd_now_ns() - t0 < 300000000ull);
	return (double)(pd_now_ns() - t0) / 1e9 / (double)n;
}

/* The batch as cudaMemcpyAsync (Peer between devices) on one stream, one sync per batch,
 * repeated for ~0.3 s: what a transport that queues device copies can reach at best. */
static double time_async(const struct bench_opts *o, char *dst, int ddev, const char *src,
                         uint64_t block)
{
	uint64_t t0, n = 0;
	void *s = NULL;
	double secs = -1;

	if (te_gpu_stream_new(o->gpu_id, &s))
		return -1;
	t0 = pd_now_ns();
	do {
		for (uint64_t i = 0; i < o->batch; i++)
			if (te_gpu_copy_async(o->gpu_id, dst + i * block, ddev, src + i * block,
			                      o->gpu_id, block, s))
				goto out;
		if (te_gpu_stream_sync(s))
			goto out;
		n++;
	} while (pd_now_ns() - t0 < 300000000ull);
	secs = (double)(pd_now_ns() - t0) / 1e9 / (double)n;
out:
	te_gpu_stream_free(o->gpu_id, s);
	return secs;
}

static void print_ratio(const struct bench_opts *o, const char *what, const char *ref,
                        uint64_t block, double pdkv_bw, double ref_bw)
{
	printf("# ratio %s/(%s) %s %llu B: %.*f / %.*f %s/s = %.2f\n", what, ref,
	       o->op ? "write" : "read", (unsigned long long)block, o->precision, pdkv_bw,
	       o->precision, ref_bw, o->unit, pdkv_bw / ref_bw);
}

void bench_gpu_reference(const struct bench_opts *o, uint64_t block, double pdkv_bw)
{
	uint64_t bytes = block * o->batch;
	char *d1 = NULL, *d2 = NULL, *d3 = NULL, *h = NULL;
	int tdev = bench_target_gpu(o);
	bool pinned = false, ipc = o->protocol && !strcmp(o->protocol, "nvlink_intra");
	double dd, dh, hd, da;

	if (!o->use_vram)
		return;
	if (te_gpu_malloc(o->gpu_id, bytes, (void **)&d1) ||
	    te_gpu_malloc(o->gpu_id, bytes, (void **)&d2) ||
	    te_gpu_malloc(tdev, bytes, (void **)&d3) || !(h = te_gpu_host_alloc(bytes, &pinned))) {
		fprintf(stderr,
		        "pdkv-bench: cudaMemcpy reference: cannot allocate 3 x %llu bytes\n",
		        (unsigned long long)bytes);
		goto out;
	}
	memset(h, 1, bytes);
	te_gpu_copy(o->gpu_id, d1, h, bytes);
	te_gpu_enable_peer(o->gpu_id, tdev);
	dd = time_copies(o, d2, d1, block);
	dh = time_copies(o, h, d1, block);
	hd = time_copies(o, d2, h, block);
	da = time_async(o, d3, tdev, d1, block);
	if (dd <= 0 || dh <= 0 || hd <= 0 || da <= 0) {
		fprintf(stderr, "pdkv-bench: cudaMemcpy reference failed\n");
		goto out;
	}
	printf("# cudaMemcpy cuda:%d, %llu x %llu B (%s host): D2D %.*f, D2H %.*f, H2D %.*f, "
	       "D2H+H2D one after the other %.*f %s/s\n",
	       o->gpu_id, (unsigned long long)o->batch, (unsigned long long)block,
	       pinned ? "pinned" : "pageable", o->precision, bench_bw(o, bytes, dd), o->precision,
	       bench_bw(o, bytes, dh), o->precision, bench_bw(o, bytes, hd), o->precision,
	       bench_bw(o, bytes, dh + hd), o->unit);
	printf("# cudaMemcpy%sAsync cuda:%d -> cuda:%d, the batch on one stream, one sync per "
	       "batch: %.*f %s/s%s\n",
	       tdev != o->gpu_id ? "Peer" : "", o->gpu_id, tdev, o->precision,
	       bench_bw(o, bytes, da), o->unit,
	       tdev == o->gpu_id ? " (one GPU: same-device D2D stands in for cudaMemcpyPeer)" : "");
	if (pdkv_bw > 0 && ipc)
		print_ratio(o, "pdkv-cuda-ipc",
		            tdev != o->gpu_id ? "cudaMemcpyPeerAsync" : "cudaMemcpyAsync D2D",
		            block, pdkv_bw, bench_bw(o, bytes, da));
	else if (pdkv_bw > 0)
		print_ratio(o, "pdkv-tcp-vram", "cudaMemcpy D2H+H2D", block, pdkv_bw,
		            bench_bw(o, bytes, dh + hd));
	fflush(stdout);
out:
	te_gpu_free(d1);
	te_gpu_free(d2);
	te_gpu_free(d3);
	if (h)
		te_gpu_host_free(h, pinned);
}
