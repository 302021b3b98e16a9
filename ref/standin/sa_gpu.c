/* SPDX-License-Identifier: Apache-2.0 */
/* sa_gpu: the stand-in's KV cache in GPU memory (--kv-cache-device cuda[:N]) — the device, the
 * fill kernel (libmdlgpu.so, dlopen'd) writing the fake model's KV straight into the V1 blocks,
 * and the decode's read-back of its blocks; all CUDA through te_gpu's run-time loading. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpu/mdl_gpu.h"
#include "pd_env.h"
#include "pd_log.h"
#include "pd_proc.h"
#include "sa.h"
#include "sa_gpu.h"
#include "te/te_gpu.h"

struct sa_gpu {
	int dev;
	char location[24];
	mdl_gpu_kv_fill_fn fill;
	pthread_mutex_t mu; /* one fill at a time: the scratch rows are shared */
	void *sk, *sv;      /* device scratch, [layer][token][head][row] as the kernel writes it */
	size_t scap;
	void *stream;
};

/* libmdlgpu.so: PDKV_MDLGPU, else beside the binary (build/bin) or in ../lib (build/lib). */
static mdl_gpu_kv_fill_fn load_fill(char *where, size_t wsz, char *err, size_t esz)
{
	const char *env = pd_env_str("PDKV_MDLGPU");
	char cand[3][1100];
	int n = 0;

	if (env && *env)
		snprintf(cand[n++], sizeof(cand[0]), "%s", env);
	snprintf(cand[n++], sizeof(cand[0]), "%s/libmdlgpu.so", pd_self_dir());
	snprintf(cand[n++], sizeof(cand[0]), "%s/../lib/libmdlgpu.so", pd_self_dir());
	err[0] = '\0';
	for (int i = 0; i < n; i++) {
		void *h = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
		void *f;

		if (!h) {
			snprintf(err, esz, "%s", dlerror());
			if (env && *env)
				break; /* an explicit PDKV_MDLGPU is the only one tried */
			continue;
		}
		f = dlsym(h, "mdl_gpu_kv_fill");
		if (f) {
			snprintf(where, wsz, "%.1000s", cand[i]);
			return (mdl_gpu_kv_fill_fn)f;
		}
		snprintf(err, esz, "%.500s has no mdl_gpu_kv_fill", cand[i]);
		dlclose(h);
	}
	return NULL;
}

int sa_gpu_setup(struct sa *s)
{
	const char *d = s->o.kv_cache_device;
	char why[300], where[1100], err[600];
	int ndev, dev = 0;
	struct sa_gpu *g;

	if (!d || !strcmp(d, "cpu"))
		return 0;
	if (!strcmp(d, "cuda"))
		dev = 0;
	else if (te_gpu_parse_location(d, &dev) != 1) {
		fprintf(stderr,
		        "pdkv-standin: error: --kv-cache-device: expected cpu, cuda or cuda:N, "
		        "got \"%s\"\n",
		        d);
		return -1;
	}
	if (s->o.kv_mla) {
		fprintf(stderr,
		        "pdkv-standin: error: --kv-cache-device %s: the GPU KV cache has no "
		        "MLA layout (--kv-mla); drop one of the two\n",
		        d);
		return -1;
	}
	ndev = te_gpu_device_count(why, sizeof(why));
	if (ndev <= 0) {
		fprintf(stderr, "pdkv-standin: error: --kv-cache-device %s: no CUDA device (%s)\n",
		        d, why);
		return -1;
	}
	if (dev >= ndev) {
		fprintf(stderr,
		        "pdkv-standin: error: --kv-cache-device %s: this process sees %d CUDA "
		        "device(s) (CUDA_VISIBLE_DEVICES=%s)\n",
		        d, ndev,
		        pd_env_raw("CUDA_VISIBLE_DEVICES") ? pd_env_raw("CUDA_VISIBLE_DEVICES")
		                                           : "unset");
		return -1;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -1;
	g->fill = load_fill(where, sizeof(where), err, sizeof(err));
	if (!g->fill) {
		fprintf(stderr,
		        "pdkv-standin: error: --kv-cache-device %s: cannot load the GPU fill "
		        "kernel libmdlgpu.so (built where nvcc is; PDKV_MDLGPU=/path overrides): "
		        "%s\n",
		        d, err);
		free(g);
		return -1;
	}
	g->dev = dev;
	snprintf(g->location, sizeof(g->location), "cuda:%d", dev);
	pthread_mutex_init(&g->mu, NULL);
	if (te_gpu_stream_new(dev, &g->stream)) {
		fprintf(stderr,
		        "pdkv-standin: error: --kv-cache-device %s: cudaStreamCreate failed\n", d);
		pthread_mutex_destroy(&g->mu);
		free(g);
		return -1;
	}
	s->gpu = g;
	pd_info(
	    "KV cache in GPU memory: %s (%d CUDA device(s) visible), KV filled on the GPU by %s",
	    g->location, ndev, where);
	return 0;
}

void sa_gpu_teardown(struct sa *s)
{
	struct sa_gpu *g = s->gpu;

	if (!g)
		return;
	te_gpu_free(g->sk);
	te_gpu_free(g->sv);
	te_gpu_stream_free(g->dev, g->stream);
	pthread_mutex_destroy(&g->mu);
	free(g);
	s->gpu = NULL;
}

const char *sa_gpu_location(const struct sa *s)
{
	return s->gpu ? s->gpu->location : NULL;
}

/* Runs of consecutive block ids from b: how many blocks follow blk[b] one by one. */
static size_t run_len(const int64_t *blk, size_t b, size_t nb)
{
	size_t n = 1;

	while (b + n < nb && blk[b + n] == blk[b] + (int64_t)n)
		n++;
	return n;
}

/* Queues the copies between the rank's rows [L][T][hs][D] (k, v: device or host) and its blocks:
 * split buffers, one per (buffer, run of consecutive blocks), not one per block; joined (one
 * buffer per layer, a block = [K rows | V rows], sa_v1_layout.c) one per (block, K or V). The
 * kernel fills the rows as before: only where they go differs. */
static int copy_rows(struct sa *s, struct kv1_worker *w, uint8_t *k, uint8_t *v, size_t T,
                     size_t row, const int64_t *blk, bool to_blocks)
{
	struct sa_gpu *g = s->gpu;
	size_t bs = (size_t)s->o.block_size, nb = (T + bs - 1) / bs;

	for (int l = 0; l < s->o.geom.layers; l++)
		for (size_t b = 0; b < nb;) {
			bool joined = s->kv_layout == SA_KV_JOINED;
			size_t n = joined ? 1 : run_len(blk, b, nb), t0 = b * bs;
			size_t nt = (b + n) * bs > T ? T - t0 : n * bs, len = nt * row;
			size_t off = ((size_t)l * T + t0) * row;
			uint8_t *bk = kv1_block(w, joined ? l : 2 * l, blk[b]),
			        *bv = joined ? bk + bs * row : kv1_block(w, 2 * l + 1, blk[b]);
			int ddev = to_blocks ? g->dev : -1,
			    sdev = g->dev; /* blocks: always device */
			if (te_gpu_copy_async(g->dev, to_blocks ? bk : k + off, ddev,
			                      to_blocks ? k + off : bk, sdev, len, g->stream) ||
			    te_gpu_copy_async(g->dev, to_blocks ? bv : v + off, ddev,
			                      to_blocks ? v + off : bv, sdev, len, g->stream))
				return -EIO;
			b += n;
		}
	return te_gpu_stream_sync(g->stream) ? -EIO : 0;
}

int sa_gpu_fill_blocks(struct sa *s, struct kv1_worker *w, const int64_t *tokens, size_t T,
                       int head0, int nheads, const int64_t *blk)
{
	struct sa_gpu *g = s->gpu;
	const struct mdl_geom *gm = &s->o.geom;
	size_t row = (size_t)nheads * (size_t)gm->head_dim * (size_t)gm->dtype_bytes;
	size_t need = (size_t)gm->layers * T * row, hrow = row / (size_t)nheads;
	int ret = 0, e;

	pthread_mutex_lock(&g->mu);
	if (need > g->scap) {
		te_gpu_free(g->sk);
		te_gpu_free(g->sv);
		g->sk = g->sv = NULL;
		g->scap = 0;
		if (te_gpu_malloc(g->dev, need, &g->sk) || te_gpu_malloc(g->dev, need, &g->sv)) {
			ret = -ENOMEM;
			goto out;
		}
		g->scap = need;
	}
	/* makes dev current in this thread, which libmdlgpu's runtime then uses */
	if (te_gpu_sync(g->dev)) {
		ret = -EIO;
		goto out;
	}
	e = g->fill(g->sk, g->sv, tokens, T, gm->layers, nheads, head0, hrow, NULL);
	if (e) {
		pd_err("mdl_gpu_kv_fill on %s: error %d", g->location, e);
		ret = -EIO;
		goto out;
	}
	ret = copy_rows(s, w, g->sk, g->sv, T, row, blk, true);
out:
	pthread_mutex_unlock(&g->mu);
	return ret;
}

int sa_gpu_read_blocks(struct sa *s, struct kv1_worker *w, uint8_t *keys, uint8_t *values, size_t T,
                       size_t row, const int64_t *blk)
{
	return copy_rows(s, w, keys, values, T, row, blk, false);
}

int sa_gpu_flip(struct sa *s, uint8_t *p, uint8_t mask)
{
	uint8_t b;

	if (te_gpu_copy(s->gpu->dev, &b, p, 1))
		return -EIO;
	b ^= mask;
	return te_gpu_copy(s->gpu->dev, p, &b, 1) ? -EIO : 0;
}
