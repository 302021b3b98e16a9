/* SPDX-License-Identifier: Apache-2.0 */
/* kvc_pool: the managed-buffer allocator behind the pipe (the adaptor's allocateManagedBuffer):
 * one registered region split by a buddy allocator into 8 KiB … 256 MiB power-of-two classes;
 * larger requests, or any request when the region is full, get a dedicated mmap + registration.
 * Bookkeeping lives outside the region (the peer can read the region, it must not steer us).
 * Size: the adaptor registers 2 GiB; pdkv defaults to kv_buffer_size rounded up to a power of
 * two, clamped to 64..512 MiB (kvc_opts.pool_bytes / PDKV_KVC_POOL_BYTES override). In flight on
 * the pipe is about one item (5 tensors until their ACKs), and the region is mmap'd so pages
 * are only backed once used — but RDMA registration pins all of it, hence the clamp.
 * Parked buffers (kvc_pool_alloc_parked) hold tensors that live in registered memory so the pipe
 * sends them without a copy; they have their own cap and always come dedicated (and cached).
 * Tensors may outlive the connector: each one holds a reference and the last one frees. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kvc/kvc_internal.h"
#include "pd_log.h"
#include "pd_tsan.h"
#include "pd_util.h"

struct dedicated {
	void *ptr;
	size_t len;
	bool parked;
	struct dedicated *next;
};

struct kvc_pool {
	pthread_mutex_t mu;
	uint8_t *base;
	size_t region;  /* power of two */
	int max_order;  /* region = MIN_BLOCK << max_order */
	int top_order;  /* largest class served from the region (<= 256 MiB) */
	size_t nblocks; /* region / MIN_BLOCK */
	int32_t *next, *prev;
	int8_t *free_order;  /* order of a free block starting here, -1 otherwise */
	int8_t *alloc_order; /* order of an allocated block starting here, -1 otherwise */
	int32_t heads[32];
	size_t in_use, dedicated_bytes, dedicated_cap; /* dedicated_bytes: in use + cached */
	struct dedicated *ded;                         /* dedicated buffers handed out */
	struct dedicated *cache; /* freed ones kept registered for reuse, newest first */
	size_t cached_bytes, cache_cap;
	size_t parked_bytes, parked_cap; /* parked buffers handed out (not in dedicated_bytes) */
	atomic_int refs;
	kvc_reg_fn reg;
	kvc_unreg_fn unreg;
	void *ctx;
};

static void list_push(struct kvc_pool *p, int order, int32_t i)
{
	p->next[i] = p->heads[order];
	p->prev[i] = -1;
	if (p->heads[order] >= 0)
		p->prev[p->heads[order]] = i;
	p->heads[order] = i;
	p->free_order[i] = (int8_t)order;
}

static void list_del(struct kvc_pool *p, int order, int32_t i)
{
	if (p->prev[i] >= 0)
		p->next[p->prev[i]] = p->next[i];
	else
		p->heads[order] = p->next[i];
	if (p->next[i] >= 0)
		p->prev[p->next[i]] = p->prev[i];
	p->free_order[i] = -1;
}

size_t kvc_pool_default_bytes(double kv_buffer_size)
{
	uint64_t want = KVC_POOL_DEFAULT_MIN, r = KVC_POOL_MIN_BLOCK;
	if (kv_buffer_size > (double)want)
		want = kv_buffer_size >= (double)KVC_POOL_DEFAULT_MAX ? KVC_POOL_DEFAULT_MAX
		                                                      : (uint64_t)kv_buffer_size;
	while (r < want)
		r <<= 1;
	return r;
}

int kvc_pool_create(size_t region_bytes, size_t dedicated_cap, kvc_reg_fn reg, kvc_unreg_fn unreg,
                    void *ctx, struct kvc_pool **out)
{
	struct kvc_pool *p;
	size_t r = KVC_POOL_MIN_BLOCK;
	int order = 0, rc;
	*out = NULL;
	if (region_bytes > (1ull << 40)) {
		pd_err("kvc: pool: region of %zu bytes is too large (max 1 TiB)", region_bytes);
		return KVC_ERR_CONFIG;
	}
	while (r < region_bytes) {
		r <<= 1;
		order++;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return KVC_ERR_ALLOC;
	pthread_mutex_init(&p->mu, NULL);
	p->region = r;
	p->max_order = order;
	p->top_order = order;
	while ((KVC_POOL_MIN_BLOCK << p->top_order) > KVC_POOL_MAX_CLASS)
		p->top_order--;
	p->nblocks = r / KVC_POOL_MIN_BLOCK;
	p->dedicated_cap = dedicated_cap;
	p->cache_cap = r; /* keep at most one region's worth of freed dedicated buffers */
	p->parked_cap = dedicated_cap;
	atomic_init(&p->refs, 1);
	p->reg = reg;
	p->unreg = unreg;
	p->ctx = ctx;
	p->next = malloc(p->nblocks * sizeof(int32_t));
	p->prev = malloc(p->nblocks * sizeof(int32_t));
	p->free_order = malloc(p->nblocks);
	p->alloc_order = malloc(p->nblocks);
	/* mmap: pages are only backed once a block is written (for TCP registration) */
	p->base = mmap(NULL, r, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->base == MAP_FAILED)
		p->base = NULL;
	if (!p->next || !p->prev || !p->free_order || !p->alloc_order || !p->base) {
		pd_err("kvc: pool: cannot allocate a %zu-byte region", r);
		rc = KVC_ERR_ALLOC;
		goto fail;
	}
	memset(p->free_order, -1, p->nblocks);
	memset(p->alloc_order, -1, p->nblocks);
	for (int i = 0; i < 32; i++)
		p->heads[i] = -1;
	/* the region starts as free blocks of the top class */
	for (size_t i = 0; i < p->nblocks; i += (size_t)1 << p->top_order)
		list_push(p, p->top_order, (int32_t)i);
	if (reg && (rc = reg(ctx, p->base, r)) < 0) {
		pd_err("kvc: pool: registering the %zu-byte region failed (%d)", r, rc);
		goto fail;
	}
	*out = p;
	return 0;
fail:
	p->reg = NULL;
	p->unreg = NULL;
	kvc_pool_destroy(p);
	return rc;
}

static void drop_dedicated(struct kvc_pool *p, struct dedicated *d)
{
	if (p->unreg)
		p->unreg(p->ctx, d->ptr);
	munmap(d->ptr, d->len);
	p->dedicated_bytes -= d->len;
	free(d);
}

/* Unregisters cached buffers, oldest first, until want more bytes fit under the cap. */
static void evict_cache(struct kvc_pool *p, size_t want)
{
	while (p->cache && p->dedicated_bytes + want > p->dedicated_cap) {
		struct dedicated **pp = &p->cache;
		while ((*pp)->next)
			pp = &(*pp)->next;
		p->cached_bytes -= (*pp)->len;
		drop_dedicated(p, *pp);
		*pp = NULL;
	}
}

static bool parked_full(const struct kvc_pool *p, size_t len)
{
	return len > p->parked_cap || p->parked_bytes > p->parked_cap - len;
}

/* Registration republishes the segment (a metadata write), so freed dedicated buffers are kept
 * registered (and their pages backed) and reused for a request of len .. 2 x len bytes.
 * parked: counted against parked_cap instead of the pipe's dedicated cap; NULL when full. */
static void *alloc_dedicated(struct kvc_pool *p, size_t len, bool parked)
{
	struct dedicated *d, **best = NULL;
	void *m;
	int rc;
	len = (len + 4095) & ~(size_t)4095;
	if (parked && parked_full(p, len))
		return NULL; /* the caller falls back to malloc'd memory */
	for (struct dedicated **pp = &p->cache; *pp; pp = &(*pp)->next)
		if ((*pp)->len >= len && (*pp)->len / 2 <= len &&
		    (!best || (*pp)->len < (*best)->len))
			best = pp;
	if (best && (!parked || !parked_full(p, (*best)->len))) {
		d = *best;
		*best = d->next;
		p->cached_bytes -= d->len;
		if (parked) {
			p->dedicated_bytes -= d->len;
			p->parked_bytes += d->len;
		}
		goto found;
	}
	if (parked)
		goto map;
	evict_cache(p, len);
	if (len > p->dedicated_cap || p->dedicated_bytes > p->dedicated_cap - len) {
		pd_err(
		    "kvc: Allocation Return Error: %zu bytes would exceed the dedicated-buffer cap "
		    "(%zu of %zu in use)",
		    len, p->dedicated_bytes, p->dedicated_cap);
		return NULL;
	}
map:
	d = calloc(1, sizeof(*d));
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!d || m == MAP_FAILED) {
		pd_err("kvc: Allocation Return Error: mmap of %zu bytes failed", len);
		free(d);
		if (m != MAP_FAILED)
			munmap(m, len);
		return NULL;
	}
	if (p->reg && (rc = p->reg(p->ctx, m, len)) < 0) {
		pd_err("kvc: Allocation Return Error: registering %zu bytes failed (%d)", len, rc);
		munmap(m, len);
		free(d);
		return NULL;
	}
	d->ptr = m;
	d->len = len;
	if (parked)
		p->parked_bytes += len;
	else
		p->dedicated_bytes += len;
found:
	d->parked = parked;
	d->next = p->ded;
	p->ded = d;
	p->in_use += d->len;
	return d->ptr;
}

void kvc_pool_set_cache_cap(struct kvc_pool *p, size_t bytes)
{
	pthread_mutex_lock(&p->mu);
	p->cache_cap = bytes < p->dedicated_cap ? bytes : p->dedicated_cap;
	pthread_mutex_unlock(&p->mu);
}

void *kvc_pool_alloc(struct kvc_pool *p, size_t len)
{
	int order = 0, k;
	int32_t i;
	void *r = NULL;
	if (!p || len == 0)
		return NULL;
	pthread_mutex_lock(&p->mu);
	while ((KVC_POOL_MIN_BLOCK << order) < len && order <= p->top_order)
		order++;
	if (order > p->top_order)
		goto dedicated;
	for (k = order; k <= p->top_order && p->heads[k] < 0; k++)
		;
	if (k > p->top_order)
		goto dedicated; /* region full: the adaptor would add a raw buffer here too */
	i = p->heads[k];
	list_del(p, k, i);
	while (k > order) {
		k--;
		list_push(p, k, i + (1 << k));
	}
	p->alloc_order[i] = (int8_t)order;
	p->in_use += KVC_POOL_MIN_BLOCK << order;
	r = p->base + (size_t)i * KVC_POOL_MIN_BLOCK;
	goto out;
dedicated:
	r = alloc_dedicated(p, len, false);
out:
	pthread_mutex_unlock(&p->mu);
	/* the block's last reader may be our TCP server thread serving a peer's READ, whose
	 * release (after its sendmsg returns) can come after the ACK's acquire: acquiring again
	 * here, as the block changes hands, narrows that window (pd_tsan.h) */
	PD_TSAN_WIRE_RECV();
	return r;
}

void kvc_pool_free(struct kvc_pool *p, void *ptr)
{
	uint8_t *b = ptr;
	int32_t i;
	int order;
	if (!p || !ptr)
		return;
	pthread_mutex_lock(&p->mu);
	if (b >= p->base && b < p->base + p->region) {
		i = (int32_t)((size_t)(b - p->base) / KVC_POOL_MIN_BLOCK);
		order = p->alloc_order[i];
		if (order < 0 || (size_t)(b - p->base) % KVC_POOL_MIN_BLOCK) {
			pd_err("kvc: pool: free of %p which is not an allocated block", ptr);
			goto out;
		}
		p->alloc_order[i] = -1;
		p->in_use -= KVC_POOL_MIN_BLOCK << order;
		while (order < p->top_order) {
			int32_t buddy = i ^ (1 << order);
			if (p->free_order[buddy] != order)
				break;
			list_del(p, order, buddy);
			if (buddy < i)
				i = buddy;
			order++;
		}
		list_push(p, order, i);
		goto out;
	}
	for (struct dedicated **pp = &p->ded; *pp; pp = &(*pp)->next) {
		struct dedicated *d = *pp;
		if (d->ptr != ptr)
			continue;
		*pp = d->next;
		p->in_use -= d->len;
		if (d->parked) { /* once cached it counts as the pipe's, like any cached buffer */
			p->parked_bytes -= d->len;
			p->dedicated_bytes += d->len;
			d->parked = false;
		}
		if (d->len > p->cache_cap || !p->reg) {
			drop_dedicated(p, d);
			goto out;
		}
		d->next = p->cache;
		p->cache = d;
		p->cached_bytes += d->len;
		while (p->cached_bytes > p->cache_cap) {
			struct dedicated **last = &p->cache;
			while ((*last)->next)
				last = &(*last)->next;
			p->cached_bytes -= (*last)->len;
			drop_dedicated(p, *last);
			*last = NULL;
		}
		evict_cache(p, 0); /* a parked buffer just joined the cache: stay under the cap */
		goto out;
	}
	pd_err("kvc: pool: free of unknown buffer %p", ptr);
out:
	pthread_mutex_unlock(&p->mu);
}

void kvc_pool_detach(struct kvc_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->reg = NULL;
	p->unreg = NULL;
	pthread_mutex_unlock(&p->mu);
}

void *kvc_pool_alloc_parked(struct kvc_pool *p, size_t len)
{
	void *r;
	if (!p || len == 0)
		return NULL;
	pthread_mutex_lock(&p->mu);
	r = alloc_dedicated(p, len, true);
	pthread_mutex_unlock(&p->mu);
	return r;
}

void kvc_pool_set_parked_cap(struct kvc_pool *p, size_t bytes)
{
	pthread_mutex_lock(&p->mu);
	p->parked_cap = bytes;
	pthread_mutex_unlock(&p->mu);
}

void kvc_pool_ref(struct kvc_pool *p)
{
	atomic_fetch_add(&p->refs, 1);
}

static void pool_final(struct kvc_pool *p)
{
	for (int l = 0; l < 2; l++) {
		struct dedicated **list = l ? &p->cache : &p->ded;
		while (*list) {
			struct dedicated *d = *list;
			*list = d->next;
			drop_dedicated(p, d);
		}
	}
	if (p->base) {
		if (p->unreg)
			p->unreg(p->ctx, p->base);
		munmap(p->base, p->region);
	}
	free(p->next);
	free(p->prev);
	free(p->free_order);
	free(p->alloc_order);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

void kvc_pool_unref(struct kvc_pool *p)
{
	if (p && atomic_fetch_sub(&p->refs, 1) == 1)
		pool_final(p);
}

void kvc_pool_destroy(struct kvc_pool *p)
{
	kvc_pool_unref(p); /* tensors still holding buffers keep it until they are freed */
}

size_t kvc_pool_region_bytes(const struct kvc_pool *p)
{
	return p ? p->region : 0;
}

size_t kvc_pool_in_use(const struct kvc_pool *p)
{
	return p ? pd_locked_size((pthread_mutex_t *)&p->mu, &p->in_use) : 0;
}
