/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_send: the producer's send table (reqs_need_send) — entries expected, made ready, discarded,
 * waited for, and expired after abort_timeout_s; a ready id wakes the handshakes parked on it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv1_internal.h"
#include "pd_log.h"
#include "pd_util.h"

struct kv1_send *kv1_send_find_locked(struct kv1_worker *w, const char *key)
{
	for (struct kv1_send *s = w->sends; s; s = s->next)
		if (!strcmp(s->key, key))
			return s;
	return NULL;
}

struct kv1_send *kv1_send_add_locked(struct kv1_worker *w, const char *key)
{
	struct kv1_send *s = calloc(1, sizeof(*s));

	if (!s || !(s->key = strdup(key))) {
		free(s);
		return NULL;
	}
	s->next = w->sends;
	w->sends = s;
	return s;
}

void kv1_send_remove_locked(struct kv1_worker *w, struct kv1_send *s)
{
	for (struct kv1_send **p = &w->sends; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	if (s->ids)
		kv1_free(w, s->ids, s->n);
	free(s->ids);
	free(s->key);
	free(s);
}

void kv1_cv_wait_locked(struct kv1_worker *w, uint64_t deadline_ns)
{
	kv1_cond_wait_until(&w->cv, &w->mu, deadline_ns);
}

struct kv1_send *kv1_send_wait_locked(struct kv1_worker *w, const char *key, uint64_t deadline_ns)
{
	for (;;) {
		struct kv1_send *s = kv1_send_find_locked(w, key);

		if (!s)
			return NULL; /* discarded while we waited */
		if (s->ready && !s->busy)
			return s;
		if (atomic_load(&w->stop) || pd_now_ns() >= deadline_ns)
			return NULL;
		kv1_cv_wait_locked(w, deadline_ns);
	}
}

int kv1_send_expect(struct kv1_worker *w, const char *key)
{
	int ret = 0;

	pthread_mutex_lock(&w->mu);
	if (!kv1_send_find_locked(w, key) && !kv1_send_add_locked(w, key))
		ret = -ENOMEM;
	pthread_mutex_unlock(&w->mu);
	return ret;
}

int kv1_send_ready(struct kv1_worker *w, const char *key, const int64_t *ids, size_t n)
{
	return kv1_send_ready_g(w, key, ids, n, &n, 1);
}

int kv1_send_ready_g(struct kv1_worker *w, const char *key, const int64_t *ids, size_t n,
                     const size_t *gcnt, size_t ng)
{
	struct kv1_send *s;
	int64_t *cp = malloc((n ? n : 1) * sizeof(*cp));
	size_t woken;

	size_t sum = 0;

	for (size_t g = 0; g < ng && ng <= KV1_MAX_KV_GROUPS; g++)
		sum += gcnt[g];
	if (!ng || ng > KV1_MAX_KV_GROUPS || sum != n) {
		free(cp);
		kv1_free(w, ids, n);
		return -EINVAL;
	}
	if (!cp)
		return -ENOMEM;
	memcpy(cp, ids, n * sizeof(*cp));
	pthread_mutex_lock(&w->mu);
	s = kv1_send_find_locked(w, key);
	if (!s)
		s = kv1_send_add_locked(w, key);
	if (!s || s->ready) {
		pthread_mutex_unlock(&w->mu);
		if (s) /* issue 34 N3: name the id so a report shows it */
			pd_warn(
			    "kv1: duplicate transfer_id %s: a second request made it ready while "
			    "the first is still pending (the router reused it; vLLM keeps one "
			    "entry per transfer_id, fix PR #49796 open); the second's blocks are "
			    "freed",
			    key);
		kv1_free(w, ids, n);
		free(cp);
		return s ? -EEXIST : -ENOMEM;
	}
	s->ids = cp;
	s->n = n;
	s->ng = ng;
	memcpy(s->gcnt, gcnt, ng * sizeof(*gcnt));
	s->ready = true;
	s->dropped = false;
	s->expire_ns = pd_now_ns() + (uint64_t)w->o.abort_timeout_s * 1000000000ull;
	pthread_cond_broadcast(&w->cv);
	woken = kv1_park_wake_locked(w, key);
	pthread_mutex_unlock(&w->mu);
	if (woken)
		kv1_park_kick(w);
	return 0;
}

void kv1_send_discard(struct kv1_worker *w, const char *key)
{
	struct kv1_send *s;
	size_t woken = 0;

	pthread_mutex_lock(&w->mu);
	s = kv1_send_find_locked(w, key);
	if (!s && cfg_gen_is_b(w->o.gen))
		s = kv1_send_add_locked(w, key);
	if (s && !s->busy && cfg_gen_is_b(w->o.gen)) {
		/* gen B: D's handshake for this transfer id (already waiting, or still to come)
		 * would otherwise wait abort_timeout_s for a push that never comes, holding D's
		 * blocks and its client: keep a marker that answers it with an error at once */
		free(s->ids);
		s->ids = NULL;
		s->n = 0;
		s->ready = false;
		s->dropped = true;
		s->expire_ns = pd_now_ns() + (uint64_t)w->o.abort_timeout_s * 1000000000ull;
		pthread_cond_broadcast(&w->cv);
		woken = kv1_park_wake_locked(w, key);
	} else if (s && !s->busy) {
		kv1_send_remove_locked(w, s);
	}
	pthread_mutex_unlock(&w->mu);
	if (woken)
		kv1_park_kick(w);
}

void kv1_send_reap_expired(struct kv1_worker *w)
{
	uint64_t now = pd_now_ns();

	pthread_mutex_lock(&w->mu);
	for (struct kv1_send *s = w->sends, *nx; s; s = nx) {
		nx = s->next;
		if (s->dropped && !s->busy && now >= s->expire_ns) {
			kv1_send_remove_locked(w, s);
			continue;
		}
		if (!s->ready || s->busy || now < s->expire_ns)
			continue;
		pd_warn("Request %s timed out after %d seconds without being sent. Freeing its "
		        "blocks on the producer side.",
		        s->key, w->o.abort_timeout_s);
		atomic_fetch_add(&w->expired, 1);
		kv1_send_remove_locked(w, s);
	}
	pthread_mutex_unlock(&w->mu);
}
