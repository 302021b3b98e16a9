/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_park: handshake handler slots, and gen B handshakes parked while their transfer ids are not
 * ready — on no thread, bounded in total and per peer, woken by the send table, expired by the
 * ROUTER thread. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "kv1_internal.h"
#include "pd_env.h"
#include "pd_log.h"
#include "pd_tsan.h"
#include "pd_util.h"

/* ------------------------------------------------------------------ handler slots */

void kv1_job_free(struct kv1_job *j)
{
	if (j->gb)
		j->w->ops->state_free(j->gb);
	free(j->ident);
	free(j->payload);
	free(j);
}

bool kv1_handler_reserve(struct kv1_worker *w)
{
	if (atomic_fetch_add(&w->handlers, 1) < KV1_MAX_HANDLERS)
		return true;
	atomic_fetch_sub(&w->handlers, 1);
	return false;
}

/* The next job for a thread that just finished one: waits for a handed job while fewer than
 * KV1_POOL_KEEP threads wait, at most KV1_POOL_IDLE_MS; NULL: the thread ends. */
static struct kv1_job *pool_next(struct kv1_worker *w)
{
	uint64_t end = pd_now_ns() + (uint64_t)KV1_POOL_IDLE_MS * 1000000ull;
	struct kv1_job *j = NULL;

	pthread_mutex_lock(&w->pmu);
	if (w->pool_idle >= KV1_POOL_KEEP || atomic_load(&w->stop)) {
		pthread_mutex_unlock(&w->pmu);
		return NULL;
	}
	w->pool_idle++;
	while (!w->pq_head && !atomic_load(&w->stop) && pd_now_ns() < end)
		kv1_cond_wait_until(&w->pcv, &w->pmu, end);
	w->pool_idle--;
	/* a job handed to this thread is taken even while stopping: its slot is reserved */
	j = w->pq_head;
	if (j) {
		w->pq_head = j->next;
		if (!w->pq_head)
			w->pq_tail = NULL;
		w->pool_nq--;
		j->next = NULL;
	}
	pthread_mutex_unlock(&w->pmu);
	return j;
}

static void *handler_main(void *arg)
{
	struct kv1_job *j = arg;
	struct kv1_worker *w = j->w;
	void *push = kv1_job_push_open(w);

	while (j) {
		w->ops->handle(j, push);
		atomic_fetch_sub(&w->handlers, 1);
		j = pool_next(w);
	}
	if (push)
		zmq_close(push);
	atomic_fetch_sub(&w->pool_live, 1);
	return NULL;
}

void kv1_handler_spawn(struct kv1_worker *w, struct kv1_job *j)
{
	pthread_attr_t at;
	pthread_t t;

	pthread_mutex_lock(&w->pmu);
	if (w->pool_idle > w->pool_nq) { /* a kept thread waits: hand it j */
		j->next = NULL;
		if (w->pq_tail)
			w->pq_tail->next = j;
		else
			w->pq_head = j;
		w->pq_tail = j;
		w->pool_nq++;
		pthread_cond_signal(&w->pcv);
		pthread_mutex_unlock(&w->pmu);
		return;
	}
	pthread_mutex_unlock(&w->pmu);
	atomic_fetch_add(&w->pool_live, 1);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, handler_main, j)) {
		atomic_fetch_sub(&w->pool_live, 1);
		atomic_fetch_sub(&w->handlers, 1);
		pd_warn("kv1: %s: cannot start a handshake thread; dropping it", w->side_addr);
		kv1_job_free(j);
	} else {
		atomic_fetch_add(&w->pool_started, 1);
	}
	pthread_attr_destroy(&at);
}

void kv1_handler_threads_init(struct kv1_worker *w)
{
	pthread_mutex_init(&w->pmu, NULL);
	pthread_cond_init(&w->pcv, NULL);
}

void kv1_handler_threads_stop(struct kv1_worker *w)
{
	pthread_mutex_lock(&w->pmu);
	pthread_cond_broadcast(&w->pcv);
	pthread_mutex_unlock(&w->pmu);
	/* a waiting thread sees stop within one bounded wait step (100 ms) */
	for (int i = 0; i < 300 && atomic_load(&w->pool_live) > 0; i++)
		pd_sleep_ms(10);
}

void kv1_handler_threads_fini(struct kv1_worker *w)
{
	pthread_mutex_destroy(&w->pmu);
	pthread_cond_destroy(&w->pcv);
}

/* ------------------------------------------------------------------ parking */

/* An ERR row of the pd_env table (1..1000000): unset is def, a bad value refuses. */
static int env_cap(const char *name, int def, int *out, char *err, size_t errsz)
{
	int64_t v;
	int rc = pd_env_int(name, &v);

	*out = rc == 1 ? (int)v : def;
	if (rc < 0) {
		kv1_set_err(err, errsz, "%s", pd_env_error());
		return -1;
	}
	return 0;
}

int kv1_park_init(struct kv1_worker *w, const struct kv1_park_ops *ops, char *err, size_t errsz)
{
	int mib;

	w->ops = ops;
	if (env_cap("PDKV_KV1_MAX_PARKED", KV1_MAX_PARKED, &w->max_parked, err, errsz) ||
	    env_cap("PDKV_KV1_MAX_PARKED_PER_PEER", KV1_MAX_PARKED_PER_PEER, &w->max_parked_peer,
	            err, errsz) ||
	    env_cap("PDKV_KV1_MAX_PARKED_MIB", KV1_MAX_PARKED_MIB, &mib, err, errsz))
		return -1;
	w->max_parked_bytes = (uint64_t)mib << 20;
	return 0;
}

bool kv1_park_warn_due(struct kv1_worker *w, uint64_t *quiet)
{
	uint64_t now = pd_now_ns();
	bool due;

	pthread_mutex_lock(&w->mu);
	due = !w->warn_ns || now - w->warn_ns >= 1000000000ull;
	*quiet = w->warn_quiet;
	if (due) {
		w->warn_ns = now;
		w->warn_quiet = 0;
	} else {
		w->warn_quiet++;
	}
	pthread_mutex_unlock(&w->mu);
	return due;
}

/* The handler hands the job to the ROUTER thread through its own PUSH, after the replies it
 * already sent (CONTINUE): whoever answers next answers after them. */
int kv1_park_request(struct kv1_job *j, void *push)
{
	PD_TSAN_WIRE_SEND(); /* the job itself changes threads through the socket (pd_tsan.h) */
	return push && zmq_send(push, &j, sizeof(j), 0) == (int)sizeof(j) ? 0 : -1;
}

static void wake_append_locked(struct kv1_worker *w, struct kv1_job *j)
{
	j->next = NULL;
	if (w->wake_tail)
		w->wake_tail->next = j;
	else
		w->wake_head = j;
	w->wake_tail = j;
}

static void unpark_locked(struct kv1_worker *w, struct kv1_job *j)
{
	w->nparked--;
	w->parked_bytes -= j->cost;
}

static int peer_count_locked(const struct kv1_worker *w, const char *peer)
{
	int n = 0;

	for (const struct kv1_job *p = w->parked; p; p = p->next)
		n += !strcmp(p->peer, peer);
	return n;
}

/* ROUTER thread: a handler asked to park j. Already runnable: straight back to a handler; over
 * a cap: FINISH with its pending requests in err_reqs, a WARNING (at most one a second) and
 * the rejected counter. */
void kv1_park_admit(struct kv1_worker *w, struct kv1_job *j)
{
	char msg[256];
	int n, cap = 0;
	uint64_t quiet;

	pthread_mutex_lock(&w->mu);
	if (w->ops->runnable_locked(w, j)) {
		wake_append_locked(w, j);
		pthread_mutex_unlock(&w->mu);
		return;
	}
	if (w->nparked >= w->max_parked) {
		cap = w->max_parked;
		snprintf(msg, sizeof(msg),
		         "P side refused to wait: %d handshakes already waiting for P side ready "
		         "(PDKV_KV1_MAX_PARKED=%d)",
		         w->nparked, cap);
	} else if (w->parked_bytes + j->cost > w->max_parked_bytes) {
		cap = (int)(w->max_parked_bytes >> 20);
		snprintf(msg, sizeof(msg),
		         "P side refused to wait: %llu bytes of handshakes already waiting for P "
		         "side ready (PDKV_KV1_MAX_PARKED_MIB=%d)",
		         (unsigned long long)w->parked_bytes, cap);
	} else if ((n = peer_count_locked(w, j->peer)) >= w->max_parked_peer) {
		cap = w->max_parked_peer;
		snprintf(msg, sizeof(msg),
		         "P side refused to wait: %d handshakes from %s already waiting for P side "
		         "ready (PDKV_KV1_MAX_PARKED_PER_PEER=%d)",
		         n, j->peer, cap);
	} else {
		j->next = w->parked;
		w->parked = j;
		w->nparked++;
		w->parked_bytes += j->cost;
		pthread_mutex_unlock(&w->mu);
		return;
	}
	pthread_mutex_unlock(&w->mu);
	atomic_fetch_add(&w->rejected, 1);
	if (kv1_park_warn_due(w, &quiet))
		pd_warn("kv1: side channel %s: handshake from %s refused: %s (%llu side-channel "
		        "warnings suppressed in the last second)",
		        w->side_addr, j->peer, msg, (unsigned long long)quiet);
	w->ops->refuse(j, w->router, msg);
}

size_t kv1_park_wake_locked(struct kv1_worker *w, const char *key)
{
	size_t n = 0;

	for (struct kv1_job **pp = &w->parked; *pp;) {
		struct kv1_job *j = *pp;

		if (!w->ops->waits_on(j, key)) {
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		unpark_locked(w, j);
		wake_append_locked(w, j);
		n++;
	}
	return n;
}

struct kv1_job *kv1_park_pop(struct kv1_worker *w)
{
	struct kv1_job *j;

	if (atomic_load(&w->stop))
		return NULL;
	pthread_mutex_lock(&w->mu);
	j = w->wake_head;
	if (j) {
		w->wake_head = j->next;
		if (!w->wake_head)
			w->wake_tail = NULL;
		j->next = NULL;
	}
	pthread_mutex_unlock(&w->mu);
	return j;
}

void kv1_park_kick(struct kv1_worker *w)
{
	while (!atomic_load(&w->stop)) {
		struct kv1_job *j;

		if (!kv1_handler_reserve(w))
			return;
		j = kv1_park_pop(w);
		if (!j) {
			atomic_fetch_sub(&w->handlers, 1);
			return;
		}
		kv1_handler_spawn(w, j);
	}
}

/* ROUTER thread: answers parked handshakes whose deadline passed (all of them, and the woken
 * ones, when all is set: the worker stops). */
void kv1_park_sweep(struct kv1_worker *w, bool all)
{
	uint64_t now = pd_now_ns();
	struct kv1_job *done = NULL;

	pthread_mutex_lock(&w->mu);
	for (struct kv1_job **pp = &w->parked; *pp;) {
		struct kv1_job *j = *pp;

		if (!all && now < j->deadline_ns) {
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		unpark_locked(w, j);
		j->next = done;
		done = j;
	}
	if (all) {
		for (struct kv1_job *j = w->wake_head, *nx; j; j = nx) {
			nx = j->next;
			j->next = done;
			done = j;
		}
		w->wake_head = w->wake_tail = NULL;
	}
	pthread_mutex_unlock(&w->mu);
	while (done) {
		struct kv1_job *j = done;

		done = j->next;
		w->ops->expire(j, w->router);
	}
}

void kv1_park_free_all(struct kv1_worker *w)
{
	struct kv1_job *l[2] = {w->parked, w->wake_head};

	for (int i = 0; i < 2; i++)
		for (struct kv1_job *j = l[i], *nx; j; j = nx) {
			nx = j->next;
			kv1_job_free(j);
		}
	w->parked = w->wake_head = w->wake_tail = NULL;
	w->nparked = 0;
	w->parked_bytes = 0;
}
