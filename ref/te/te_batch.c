/* SPDX-License-Identifier: Apache-2.0 */
/* te_batch: batches — ids, validation and start of requests, task status, and the blocking
 * te_transfer_sync on top (docs/engine.md). Ids index a handle table (generation in the high half),
 * so a stale or bogus id is TE_ERR_BAD_BATCH instead of a wild pointer. */
#include "te_engine_priv.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_tsan.h"
#include "pd_util.h"

#define TE_BATCH_MAX_TASKS (1u << 20)

struct te_batch {
	pthread_mutex_t mu; /* serialises submits to this batch */
	size_t cap, count;
	struct te_task *tasks;
	te_land_fn land; /* te_batch_set_land */
	void *land_ud;
	/* te_batch_abandon: out of the slot table, on the table's abandoned list */
	te_release_fn release;
	void *release_ud;
	size_t reap_next; /* the first task not yet seen ended */
	struct te_batch *ab_link;
	struct te_batch_wake wake; /* te_batch_wait */
};

struct te_batch_slot {
	uint32_t gen;
	struct te_batch *b; /* NULL = free */
};

struct te_batch_table {
	pthread_rwlock_t lock; /* read: any use of a batch; write: alloc/free */
	struct te_batch_slot *slots;
	size_t nslots;
	pthread_mutex_t ab_mu; /* the abandoned list (te_batch_abandon) */
	struct te_batch *abandoned;
	size_t nabandoned;
};

int te_batch_table_create(struct te_batch_table **out)
{
	struct te_batch_table *bt = calloc(1, sizeof(*bt));
	pthread_rwlockattr_t at;

	if (!bt)
		return TE_ERR_MEMORY;
	/* writer preference: pollers on other threads must not starve alloc/free */
	pthread_rwlockattr_init(&at);
	pthread_rwlockattr_setkind_np(&at, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&bt->lock, &at);
	pthread_rwlockattr_destroy(&at);
	pthread_mutex_init(&bt->ab_mu, NULL);
	*out = bt;
	return 0;
}

static void batch_free(struct te_batch *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->mu);
	free(b->tasks);
	free(b);
}

void te_batch_table_destroy(struct te_batch_table *bt)
{
	if (!bt)
		return;
	for (size_t i = 0; i < bt->nslots; i++)
		batch_free(bt->slots[i].b);
	/* the transports are stopped: no task can touch an abandoned batch's memory any more */
	while (bt->abandoned) {
		struct te_batch *b = bt->abandoned;

		bt->abandoned = b->ab_link;
		if (b->release)
			b->release(b->release_ud, true);
		batch_free(b);
	}
	free(bt->slots);
	pthread_mutex_destroy(&bt->ab_mu);
	pthread_rwlock_destroy(&bt->lock);
	free(bt);
}

static uint64_t make_id(size_t idx, uint32_t gen)
{
	return ((uint64_t)gen << 32) | (uint64_t)(idx + 1);
}

/* Caller holds bt->lock (either side). */
static struct te_batch *lookup(struct te_batch_table *bt, uint64_t id)
{
	uint64_t idx1 = id & 0xffffffffu;
	uint32_t gen = (uint32_t)(id >> 32);

	if (idx1 == 0 || idx1 > bt->nslots)
		return NULL;
	if (bt->slots[idx1 - 1].gen != gen)
		return NULL;
	return bt->slots[idx1 - 1].b;
}

/* The live batch with that id, the table's read lock held until batch_put; NULL (lock not
 * held) for a stale or made-up id. */
static struct te_batch *batch_get(struct te_engine *eng, uint64_t id)
{
	struct te_batch *b;

	pthread_rwlock_rdlock(&eng->batches->lock);
	b = lookup(eng->batches, id);
	if (!b)
		pthread_rwlock_unlock(&eng->batches->lock);
	return b;
}

static void batch_put(struct te_engine *eng)
{
	pthread_rwlock_unlock(&eng->batches->lock);
}

int te_batch_alloc(struct te_engine *eng, size_t batch_size, uint64_t *batch_id)
{
	struct te_batch_table *bt;
	struct te_batch *b;
	size_t idx;
	int ret = 0;

	if (!eng || !batch_id)
		return TE_ERR_INVALID_ARGUMENT;
	*batch_id = TE_INVALID_BATCH;
	if (batch_size == 0 || batch_size > TE_BATCH_MAX_TASKS) {
		pd_err("te: batch size %zu outside 1..%u", batch_size, TE_BATCH_MAX_TASKS);
		return TE_ERR_INVALID_ARGUMENT;
	}
	bt = eng->batches;
	b = calloc(1, sizeof(*b));
	if (!b)
		return TE_ERR_MEMORY;
	b->tasks = calloc(batch_size, sizeof(*b->tasks));
	if (!b->tasks) {
		free(b);
		return TE_ERR_MEMORY;
	}
	b->cap = batch_size;
	pthread_mutex_init(&b->mu, NULL);

	pthread_rwlock_wrlock(&bt->lock);
	for (idx = 0; idx < bt->nslots; idx++)
		if (!bt->slots[idx].b)
			break;
	if (idx == bt->nslots) {
		size_t n = bt->nslots ? bt->nslots * 2 : 16;
		struct te_batch_slot *ns;
		if (n > 0xffffffffu || !(ns = realloc(bt->slots, n * sizeof(*ns)))) {
			ret = TE_ERR_MEMORY;
			goto out;
		}
		memset(ns + bt->nslots, 0, (n - bt->nslots) * sizeof(*ns));
		bt->slots = ns;
		bt->nslots = n;
	}
	/* Generation 0 never used and never 0xffffffff, so no id equals TE_INVALID_BATCH. */
	bt->slots[idx].gen = bt->slots[idx].gen % 0x7ffffffeu + 1;
	bt->slots[idx].b = b;
	*batch_id = make_id(idx, bt->slots[idx].gen);
	b = NULL;
out:
	pthread_rwlock_unlock(&bt->lock);
	batch_free(b);
	return ret;
}

/* Validates every request before any is started (te.h: all or nothing), then hands the
 * non-empty ones to the transport. */
static int start_tasks(struct te_engine *eng, struct te_task *tasks, size_t n,
                       struct te_batch_wake *wake)
{
	struct te_task *stackv[64], **v = stackv;
	size_t m = 0;
	int ret = 0;

	if (n > PD_ARRAY_SIZE(stackv) && !(v = malloc(n * sizeof(*v))))
		return TE_ERR_MEMORY;
	for (size_t i = 0; i < n; i++) {
		struct te_task *t = &tasks[i];
		const struct te_request *r = &t->req;
		const struct te_segment_desc *peer = NULL;
		const char *segname = NULL;

		if (r->opcode != TE_READ && r->opcode != TE_WRITE) {
			pd_err("te: request %zu: opcode %d is neither READ(0) nor WRITE(1)", i,
			       r->opcode);
			ret = TE_ERR_INVALID_ARGUMENT;
			goto out;
		}
		if (r->target_id == TE_LOCAL_SEGMENT) {
			peer = te_engine_local_desc(eng);
			segname = eng->name;
		} else {
			pthread_mutex_lock(&eng->seg_lock);
			if (r->target_id <= eng->nsegs) {
				peer = eng->segs[r->target_id - 1]->desc;
				segname = eng->segs[r->target_id - 1]->name;
			}
			pthread_mutex_unlock(&eng->seg_lock);
		}
		if (!peer) {
			pd_err("te: request %zu: segment id %llu was never opened", i,
			       (unsigned long long)r->target_id);
			ret = TE_ERR_INVALID_ARGUMENT;
			goto out;
		}
		if (strcmp(peer->protocol, eng->ops->name)) {
			pd_err("te: request %zu: segment %s speaks %s, this engine %s", i, segname,
			       peer->protocol, eng->ops->name);
			ret = TE_ERR_NOT_SUPPORTED_TRANSPORT;
			goto out;
		}
		t->peer = peer;
		if (r->length == 0)
			continue;
		if (!te_engine_local_range_gpu(eng, (uint64_t)(uintptr_t)r->source, r->length,
		                               &t->src_gpu)) {
			pd_err("te: request %zu: source %p+%zu is not inside one registered buffer",
			       i, r->source, r->length);
			ret = TE_ERR_ADDRESS_NOT_REGISTERED;
			goto out;
		}
		if (!te_desc_find_range(peer, r->target_offset, r->length)) {
			/* the descriptor may be stale: re-fetch once, like Mooncake's workers */
			if (r->target_id != TE_LOCAL_SEGMENT && !te_sync_segment(eng, segname)) {
				pthread_mutex_lock(&eng->seg_lock);
				peer = eng->segs[r->target_id - 1]->desc;
				pthread_mutex_unlock(&eng->seg_lock);
				t->peer = peer;
			}
			if (!te_desc_find_range(peer, r->target_offset, r->length)) {
				pd_err("te: request %zu: remote range 0x%llx+%zu is not inside one "
				       "buffer of segment %s",
				       i, (unsigned long long)r->target_offset, r->length, segname);
				ret = TE_ERR_OUT_OF_RANGE;
				goto out;
			}
		}
		v[m++] = t;
	}
	if (m) {
		/* counted open before the transport can end one of them */
		for (size_t i = 0; i < m; i++)
			v[i]->wake = wake;
		atomic_fetch_add(&wake->open, (uint32_t)m);
		ret = eng->ops->submit(eng->tp, v, m);
		if (ret) /* none started */
			atomic_fetch_sub(&wake->open, (uint32_t)m);
	}
	if (!ret)
		for (size_t i = 0; i < n; i++)
			if (tasks[i].req.length == 0)
				atomic_store(&tasks[i].slice_count, 0);
out:
	if (v != stackv)
		free(v);
	return ret;
}

int te_batch_submit(struct te_engine *eng, uint64_t batch_id, const struct te_request *reqs,
                    size_t n)
{
	struct te_batch *b;
	int ret;

	if (!eng || (n && !reqs))
		return TE_ERR_INVALID_ARGUMENT;
	if (!(b = batch_get(eng, batch_id)))
		return TE_ERR_BAD_BATCH;
	pthread_mutex_lock(&b->mu);
	if (n > b->cap - b->count) {
		pd_err("te: submitting %zu requests to a batch with %zu of %zu slots left", n,
		       b->cap - b->count, b->cap);
		ret = TE_ERR_TOO_MANY_REQUESTS;
	} else if (n == 0) {
		ret = 0;
	} else {
		struct te_task *t = b->tasks + b->count;
		uint64_t now = pd_now_ns();
		for (size_t i = 0; i < n; i++) {
			memset(&t[i], 0, sizeof(t[i]));
			t[i].req = reqs[i];
			t[i].submit_ns = now;
			t[i].land = b->land;
			t[i].land_ud = b->land_ud;
			t[i].idx = b->count + i;
			atomic_store(&t[i].slice_count, -1);
		}
		ret = start_tasks(eng, t, n, &b->wake);
		if (!ret)
			b->count += n;
	}
	pthread_mutex_unlock(&b->mu);
	batch_put(eng);
	return ret;
}

int te_batch_set_land(struct te_engine *eng, uint64_t batch_id, te_land_fn fn, void *ud)
{
	struct te_batch *b;
	int ret = 0;

	if (!eng)
		return TE_ERR_INVALID_ARGUMENT;
	if (!(b = batch_get(eng, batch_id)))
		return TE_ERR_BAD_BATCH;
	pthread_mutex_lock(&b->mu);
	if (b->count) { /* tasks already running hold the old hook */
		ret = TE_ERR_BATCH_BUSY;
	} else {
		b->land = fn;
		b->land_ud = ud;
	}
	pthread_mutex_unlock(&b->mu);
	batch_put(eng);
	return ret;
}

static int task_status(struct te_task *t, uint64_t timeout_ns, struct te_task_status *st)
{
	int sc = atomic_load(&t->slice_count);
	int ok = atomic_load(&t->success_slices);
	int bad = atomic_load(&t->failed_slices);

	st->transferred_bytes = atomic_load(&t->transferred);
	if (sc >= 0 && ok + bad >= sc) {
		/* done: the target's accesses to its buffer (an in-process peer's, over loopback)
		 * come before whatever the caller does next */
		PD_TSAN_WIRE_RECV();
		t->observed_done = true;
		return bad ? TE_FAILED : TE_COMPLETED;
	}
	if (timeout_ns && pd_now_ns() - t->submit_ns > timeout_ns)
		return TE_TIMEOUT;
	return ok + bad > 0 ? TE_PENDING : TE_WAITING;
}

int te_batch_status(struct te_engine *eng, uint64_t batch_id, size_t task_id,
                    struct te_task_status *st)
{
	struct te_batch *b;
	size_t count;
	int ret = 0;

	if (!eng || !st)
		return TE_ERR_INVALID_ARGUMENT;
	if (!(b = batch_get(eng, batch_id)))
		return TE_ERR_BAD_BATCH;
	/* count only grows under b->mu; a racing submit makes the new tasks invisible, not torn */
	pthread_mutex_lock(&b->mu);
	count = b->count;
	pthread_mutex_unlock(&b->mu);
	if (task_id >= count)
		ret = TE_ERR_INVALID_ARGUMENT;
	else
		st->status = task_status(&b->tasks[task_id],
		                         (uint64_t)eng->slice_timeout_s * 1000000000ull, st);
	batch_put(eng);
	return ret;
}

void te_batch_wake_task_ended(struct te_batch_wake *w)
{
	uint32_t open = atomic_fetch_sub(&w->open, 1) - 1;

	if (open <= atomic_load(&w->wake_at) && atomic_exchange(&w->armed, 0)) {
		atomic_fetch_add(&w->seq, 1);
		pd_futex_wake((uint32_t *)&w->seq);
	}
}

int te_batch_wait(struct te_engine *eng, uint64_t batch_id, size_t max_open, uint64_t timeout_us)
{
	struct te_batch_wake *w;
	struct te_batch *b;
	uint64_t end;
	int ret = 0;

	if (!eng)
		return TE_ERR_INVALID_ARGUMENT;
	if (!(b = batch_get(eng, batch_id)))
		return TE_ERR_BAD_BATCH;
	w = &b->wake;
	/* set under the table's read lock: te_batch_free / _abandon (write lock) see it */
	if (atomic_exchange(&w->waiting, 1)) {
		batch_put(eng);
		return TE_ERR_BATCH_BUSY;
	}
	batch_put(eng);
	end = pd_now_ns() + timeout_us * 1000ull;
	for (;;) {
		uint32_t seq;
		uint64_t now;

		atomic_store(&w->wake_at, max_open);
		atomic_store(&w->armed, 1);
		seq = atomic_load(&w->seq);
		if (atomic_load(&w->open) <= max_open)
			break;
		now = pd_now_ns();
		if (now >= end) {
			ret = TE_ERR_TIMEOUT;
			break;
		}
		pd_futex_wait((uint32_t *)&w->seq, seq, end - now);
	}
	atomic_store(&w->armed, 0);
	atomic_store(&w->waiting, 0); /* the last touch of b */
	return ret;
}

int te_batch_free(struct te_engine *eng, uint64_t batch_id)
{
	struct te_batch_table *bt;
	struct te_batch *b;
	int ret = 0;

	if (!eng)
		return TE_ERR_INVALID_ARGUMENT;
	bt = eng->batches;
	pthread_rwlock_wrlock(&bt->lock);
	b = lookup(bt, batch_id);
	if (!b) {
		ret = TE_ERR_BAD_BATCH;
		goto out;
	}
	if (atomic_load(&b->wake.waiting)) { /* another thread is in te_batch_wait */
		ret = TE_ERR_BATCH_BUSY;
		goto out;
	}
	for (size_t i = 0; i < b->count; i++) {
		if (!b->tasks[i].observed_done) {
			ret = TE_ERR_BATCH_BUSY;
			goto out;
		}
	}
	bt->slots[(batch_id & 0xffffffffu) - 1].b = NULL;
	batch_free(b);
out:
	pthread_rwlock_unlock(&bt->lock);
	return ret;
}

/* ------------------------------------------------------------------ abandoned batches */
int te_batch_abandon(struct te_engine *eng, uint64_t batch_id, te_release_fn release, void *ud)
{
	struct te_batch_table *bt;
	struct te_batch *b;

	if (!eng)
		return TE_ERR_INVALID_ARGUMENT;
	bt = eng->batches;
	pthread_rwlock_wrlock(&bt->lock);
	b = lookup(bt, batch_id);
	if (b && atomic_load(&b->wake.waiting)) { /* another thread is in te_batch_wait */
		pthread_rwlock_unlock(&bt->lock);
		return TE_ERR_BATCH_BUSY;
	}
	if (b) /* the id is stale from now on; the tasks keep their batch */
		bt->slots[(batch_id & 0xffffffffu) - 1].b = NULL;
	pthread_rwlock_unlock(&bt->lock);
	if (!b)
		return TE_ERR_BAD_BATCH;
	b->release = release;
	b->release_ud = ud;
	b->reap_next = 0;
	pthread_mutex_lock(&bt->ab_mu);
	b->ab_link = bt->abandoned;
	bt->abandoned = b;
	bt->nabandoned++;
	pthread_mutex_unlock(&bt->ab_mu);
	return 0;
}

/* True once every task of b was seen ended (TE_COMPLETED or TE_FAILED; a slice timeout is
 * not an end: the lane may still be inside the task). */
static bool batch_ended(struct te_batch *b)
{
	size_t count;

	pthread_mutex_lock(&b->mu);
	count = b->count;
	pthread_mutex_unlock(&b->mu);
	while (b->reap_next < count) {
		struct te_task_status st = {0, 0};
		int s = task_status(&b->tasks[b->reap_next], 0, &st);

		if (s != TE_COMPLETED && s != TE_FAILED)
			return false;
		b->reap_next++;
	}
	return true;
}

size_t te_batch_reap(struct te_engine *eng)
{
	struct te_batch_table *bt;
	struct te_batch *done = NULL;
	size_t n = 0;

	if (!eng)
		return 0;
	bt = eng->batches;
	pthread_mutex_lock(&bt->ab_mu);
	for (struct te_batch **pp = &bt->abandoned; *pp;) {
		struct te_batch *b = *pp;

		if (!batch_ended(b)) {
			pp = &b->ab_link;
			continue;
		}
		*pp = b->ab_link;
		bt->nabandoned--;
		b->ab_link = done;
		done = b;
	}
	pthread_mutex_unlock(&bt->ab_mu);
	while (done) { /* outside the lock: release may take the caller's locks */
		struct te_batch *b = done;

		done = b->ab_link;
		if (b->release)
			b->release(b->release_ud, false);
		batch_free(b);
		n++;
	}
	return n;
}

size_t te_batch_abandoned(struct te_engine *eng)
{
	size_t n;

	if (!eng)
		return 0;
	pthread_mutex_lock(&eng->batches->ab_mu);
	n = eng->batches->nabandoned;
	pthread_mutex_unlock(&eng->batches->ab_mu);
	return n;
}

/* ---------------------------------------------------------------- one transfer, waited for */
static int transfer_timeout_ms(size_t len)
{
	int64_t s, ms;

	pd_env_int("MC_TRANSFER_TIMEOUT", &s); /* 5..86400 s: s * 1000 fits an int */
	ms = s * 1000 + (int64_t)(len / 1000000);
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

int te_transfer_sync(struct te_engine *eng, int opcode, const char *segment, void *local,
                     uint64_t remote_addr, size_t len, int timeout_ms)
{
	struct te_request r = {opcode, local, 0, remote_addr, len};
	struct te_task_status st = {0, 0};
	uint64_t batch, end;
	long nap_ns = 10000;
	int ret, spins = 0;

	if (!eng || !segment)
		return TE_ERR_INVALID_ARGUMENT;
	ret = te_open_segment(eng, segment, &r.target_id);
	if (ret)
		return ret;
	ret = te_batch_alloc(eng, 1, &batch);
	if (ret)
		return ret;
	ret = te_batch_submit(eng, batch, &r, 1);
	if (ret)
		goto out;
	if (timeout_ms <= 0)
		timeout_ms = transfer_timeout_ms(len);
	end = pd_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		ret = te_batch_status(eng, batch, 0, &st);
		if (ret)
			goto out;
		if (st.status == TE_COMPLETED || st.status == TE_FAILED)
			break;
		if (pd_now_ns() > end) {
			pd_err("te: transfer of %zu bytes to %s timed out after %d ms", len,
			       segment, timeout_ms);
			/* the batch stays allocated (still busy); the engine frees it at destroy */
			return TE_ERR_TIMEOUT;
		}
		/* short transfers end within microseconds; back off to 1 ms for long ones */
		if (++spins < 50) {
			sched_yield();
		} else {
			struct timespec ts = {0, nap_ns};
			nanosleep(&ts, NULL);
			if (nap_ns < 1000000)
				nap_ns *= 2;
		}
	}
	ret = st.status == TE_COMPLETED ? 0 : TE_ERR_ENDPOINT;
out:
	if (te_batch_free(eng, batch))
		pd_warn("te: sync transfer left batch %llx busy", (unsigned long long)batch);
	return ret;
}
