/* SPDX-License-Identifier: Apache-2.0 */
/* kvc_sbuf: SimpleBuffer's producer-side state (docs/vllm-v0.md) — the deque of cloned items,
 * kv_buffer_size byte accounting and back pressure, prefix matching and vLLM's search order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvc/kvc_internal.h"
#include "pd_log.h"
#include "pd_util.h"

int kvc_sbuf_init(struct kvc_sbuf *b, uint64_t threshold, int rule)
{
	pthread_condattr_t ca;
	memset(b, 0, sizeof(*b));
	if (rule < KVC_OVERFLOW_NEW_ESCAPE || rule > KVC_OVERFLOW_OLD) {
		pd_err("kvc: overflow_rule %d unknown (expected 0 new+escape, 1 new, 2 old)", rule);
		return KVC_ERR_CONFIG;
	}
	pthread_mutex_init(&b->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cv, &ca);
	pthread_condattr_destroy(&ca);
	b->threshold = threshold;
	b->rule = rule;
	return 0;
}

void kvc_sbuf_destroy(struct kvc_sbuf *b)
{
	while (b->head) {
		struct kvc_sbuf_node *n = b->head;
		b->head = n->next;
		kvc_item_free(&n->it);
		free(n);
	}
	b->tail = NULL;
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
}

void kvc_sbuf_close(struct kvc_sbuf *b)
{
	pthread_mutex_lock(&b->mu);
	b->closed = true;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

/* One wait; -ETIMEDOUT once the deadline passed (has_deadline false = no deadline). */
static int wait_cv(struct kvc_sbuf *b, bool has_deadline, const struct timespec *dl)
{
	if (!has_deadline)
		return pthread_cond_wait(&b->cv, &b->mu) ? -EINVAL : 0;
	return pthread_cond_timedwait(&b->cv, &b->mu, dl) == ETIMEDOUT ? -ETIMEDOUT : 0;
}

static bool must_wait(const struct kvc_sbuf *b, uint64_t item)
{
	switch (b->rule) {
	case KVC_OVERFLOW_OLD:
		return b->bytes > b->threshold;
	case KVC_OVERFLOW_NEW:
		return b->bytes + item > b->threshold;
	default: /* NEW_ESCAPE: an oversize item still fits into an empty buffer */
		if (b->n == 0)
			return false;
		return b->bytes + item > b->threshold;
	}
}

static int valid_item(const struct kvc_item *it)
{
	const struct kvc_tensor *v[5] = {&it->tokens, &it->roi, &it->keys, &it->values,
	                                 &it->hidden};
	for (int i = 0; i < 5; i++)
		if (kvc_tensor_check(v[i]) < 0)
			return KVC_ERR_PROTOCOL;
	if (it->tokens.dtype != KVC_I64 || it->tokens.ndim != 1 || it->roi.dtype != KVC_BOOL ||
	    it->roi.ndim != 1 || it->roi.shape[0] != it->tokens.shape[0])
		return KVC_ERR_PROTOCOL;
	return 0;
}

int kvc_sbuf_insert(struct kvc_sbuf *b, const struct kvc_item *it, int timeout_ms)
{
	return kvc_sbuf_insert_ex(b, (struct kvc_item *)it, timeout_ms, false);
}

/* move_kv: keys, values and hidden move into the buffer (no copy); *it's are zeroed on 0 */
int kvc_sbuf_insert_ex(struct kvc_sbuf *b, struct kvc_item *it, int timeout_ms, bool move_kv)
{
	struct kvc_sbuf_node *n;
	struct timespec dl;
	uint64_t sz;
	bool warned = false;
	int rc = 0;
	if (valid_item(it) < 0) {
		pd_err("kvc: insert: item needs tokens int64 [T] and roi bool [T] and consistent "
		       "tensors (tokens dtype %d ndim %d, roi dtype %d ndim %d)",
		       it->tokens.dtype, it->tokens.ndim, it->roi.dtype, it->roi.ndim);
		return KVC_ERR_PROTOCOL;
	}
	sz = kvc_item_nbytes(it);
	/* clone outside the lock: the copy of a large KV item takes a while */
	uint64_t t_clone = pd_now_ns();

	n = calloc(1, sizeof(*n));
	if (!n)
		return KVC_ERR_ALLOC;
	if (move_kv) {
		n->it.keys = it->keys;
		n->it.values = it->values;
		n->it.hidden = it->hidden;
	}
	if (kvc_tensor_clone(&n->it.tokens, &it->tokens) ||
	    kvc_tensor_clone(&n->it.roi, &it->roi) ||
	    (!move_kv && (kvc_tensor_clone(&n->it.keys, &it->keys) ||
	                  kvc_tensor_clone(&n->it.values, &it->values) ||
	                  kvc_tensor_clone(&n->it.hidden, &it->hidden)))) {
		rc = KVC_ERR_ALLOC;
		goto fail;
	}
	n->bytes = sz;
	pd_dbg("kvc: insert: %llu bytes cloned in %.1f ms", (unsigned long long)sz,
	       (double)(pd_now_ns() - t_clone) / 1e6);
	if (timeout_ms > 0)
		pd_deadline_in(&dl, CLOCK_MONOTONIC, timeout_ms);
	pthread_mutex_lock(&b->mu);
	while (!b->closed && must_wait(b, sz)) {
		if (!warned) {
			pd_dbg("kvc: insert: buffer holds %llu of %llu bytes, item %llu: waiting",
			       (unsigned long long)b->bytes, (unsigned long long)b->threshold,
			       (unsigned long long)sz);
			warned = true;
		}
		if (wait_cv(b, timeout_ms > 0, &dl) == -ETIMEDOUT && must_wait(b, sz)) {
			rc = KVC_ERR_TIMEOUT;
			break;
		}
	}
	if (b->closed)
		rc = KVC_ERR_CLOSED;
	if (rc) {
		pd_warn(
		    "kvc: insert of %llu bytes gave up: %s (buffer %llu of %llu bytes, %llu items)",
		    (unsigned long long)sz, kvc_strerror(rc), (unsigned long long)b->bytes,
		    (unsigned long long)b->threshold, (unsigned long long)b->n);
		pthread_mutex_unlock(&b->mu);
		goto fail;
	}
	if (sz > b->threshold)
		pd_warn(
		    "kvc: item of %llu bytes exceeds kv_buffer_size %llu; accepted into an empty "
		    "buffer (vLLM BUF-new would block forever)",
		    (unsigned long long)sz, (unsigned long long)b->threshold);
	n->prev = b->tail;
	if (b->tail)
		b->tail->next = n;
	else
		b->head = n;
	b->tail = n;
	b->n++;
	b->bytes += sz;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	if (move_kv) {
		memset(&it->keys, 0, sizeof(it->keys));
		memset(&it->values, 0, sizeof(it->values));
		memset(&it->hidden, 0, sizeof(it->hidden));
	}
	return 0;
fail:
	if (move_kv) { /* still the caller's */
		memset(&n->it.keys, 0, sizeof(n->it.keys));
		memset(&n->it.values, 0, sizeof(n->it.values));
		memset(&n->it.hidden, 0, sizeof(n->it.hidden));
	}
	kvc_item_free(&n->it);
	free(n);
	return rc;
}

size_t kvc_match_len(const int64_t *st, const uint8_t *sroi, size_t sn, const int64_t *rt,
                     const uint8_t *rroi, size_t rn)
{
	size_t i = 0, j = 0, m = 0;
	/* walk both roi-masked sequences in step: equal prefix over the shorter one */
	for (;;) {
		while (i < sn && sroi && !sroi[i])
			i++;
		while (j < rn && rroi && !rroi[j])
			j++;
		if (i >= sn || j >= rn)
			return m;
		if (st[i] != rt[j])
			return 0;
		m++;
		i++;
		j++;
	}
}

static size_t node_match(const struct kvc_sbuf_node *n, const int64_t *qt, const uint8_t *qroi,
                         size_t qn)
{
	return kvc_match_len(n->it.tokens.data, n->it.roi.data, (size_t)n->it.tokens.shape[0], qt,
	                     qroi, qn);
}

/* deque.rotate(1): the last item becomes the first */
static void rotate(struct kvc_sbuf *b)
{
	struct kvc_sbuf_node *t = b->tail;
	if (!t || t == b->head)
		return;
	b->tail = t->prev;
	b->tail->next = NULL;
	t->prev = NULL;
	t->next = b->head;
	b->head->prev = t;
	b->head = t;
}

int kvc_sbuf_take(struct kvc_sbuf *b, const int64_t *qt, const uint8_t *qroi, size_t qn,
                  int wait_ms, struct kvc_item *out)
{
	struct kvc_sbuf_node *n = NULL;
	struct timespec dl;
	bool logged = false;
	int rc = KVC_MISS;
	memset(out, 0, sizeof(*out));
	if (wait_ms > 0)
		pd_deadline_in(&dl, CLOCK_MONOTONIC, wait_ms);
	pthread_mutex_lock(&b->mu);
	for (;;) {
		for (uint64_t k = 0; k < b->n; k++) {
			if (node_match(b->head, qt, qroi, qn) > 0) {
				n = b->head;
				break;
			}
			rotate(b);
		}
		if (n || b->closed || wait_ms == 0)
			break;
		if (!logged) {
			pd_dbg("kvc: KV transfer buffer is not available. Waiting...");
			logged = true;
		}
		if (wait_cv(b, wait_ms > 0, &dl) == -ETIMEDOUT)
			wait_ms = 0; /* one last search, then answer the miss */
	}
	if (n) {
		b->head = n->next;
		if (b->head)
			b->head->prev = NULL;
		else
			b->tail = NULL;
		b->n--;
		b->bytes -= n->bytes;
		*out = n->it;
		free(n);
		rc = 0;
		pthread_cond_broadcast(&b->cv); /* room for a waiting insert */
	} else if (b->closed) {
		rc = KVC_ERR_CLOSED;
	}
	pthread_mutex_unlock(&b->mu);
	return rc;
}

void kvc_sbuf_usage(struct kvc_sbuf *b, uint64_t *bytes, uint64_t *items)
{
	pthread_mutex_lock(&b->mu);
	*bytes = b->bytes;
	*items = b->n;
	pthread_mutex_unlock(&b->mu);
}
