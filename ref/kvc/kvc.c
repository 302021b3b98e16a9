/* SPDX-License-Identifier: Apache-2.0 */
/* kvc: the V0 SimpleConnector on top of the pipe — producer insert + drop_select_handler thread,
 * consumer drop_select (signal, tokens, roi out; 5 tensors back), stats and orderly shutdown. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvc/kvc_internal.h"
#include "te/te.h"
#include "pd_log.h"
#include "pd_util.h"

#define END_SIGNAL_MS  300
#define FLUSH_MS       500
#define INSERT_WAIT_MS 5000 /* default bound on a back-pressure wait (vLLM: none) */
#define STALE_WAIT_MS  1000 /* most a select waits for owed late answers before resyncing */
#define PEER_GONE_MS   1000 /* after an end signal: wait this long for the last ACKs */

struct kvc {
	struct kvc_pipe pipe;
	struct kvc_sbuf sbuf;
	bool producer;
	int miss_mode, select_timeout_ms, insert_timeout_ms, miss_wait_ms;
	atomic_bool ready, closing;
	/* consumer: one drop_select at a time, as vLLM's single transport thread serializes them */
	pthread_mutex_t select_mu;
	int stale;   /* responses the producer still owes to an abandoned drop_select */
	bool desync; /* a query went out half-sent: the pipe's tensor order is lost */
	pthread_mutex_t start_mu;
	pthread_t handler;
	bool handler_started;
	atomic_uint_fast64_t hits, misses;
	atomic_uint_fast64_t resyncs, insert_timeouts;
};

static bool role_is_producer(const struct cfg_kv_transfer *kt)
{
	if (kt->kv_role)
		return strcmp(kt->kv_role, "kv_producer") == 0 ||
		       strcmp(kt->kv_role, "kv_both") == 0;
	return kt->is_producer;
}

static int bool_to_float(const struct kvc_tensor *in, struct kvc_tensor *out)
{
	int rc = kvc_tensor_alloc(out, KVC_F32, in->ndim, in->shape);
	const uint8_t *b = in->data;
	float *f = out->data;
	if (rc)
		return rc;
	for (size_t i = 0; i < in->nbytes; i++)
		f[i] = b[i] ? 1.0f : 0.0f;
	return 0;
}

/* roi comes back as float; vLLM converts with `> 0.5` */
static int float_to_bool(const struct kvc_tensor *in, struct kvc_tensor *out)
{
	int rc = kvc_tensor_alloc(out, KVC_BOOL, in->ndim, in->shape);
	const float *f = in->data;
	uint8_t *b = out->data;
	if (rc)
		return rc;
	for (size_t i = 0; i < out->nbytes; i++)
		b[i] = f[i] > 0.5f;
	return 0;
}

static bool is_1d(const struct kvc_tensor *t, int dtype)
{
	return !kvc_tensor_is_none(t) && t->dtype == dtype && t->ndim == 1;
}

/* Sends the 5 answer tensors; keys, values and hidden move out of *it (no copy when they sit
 * in registered memory, kvc_tensor_alloc_buf); the caller frees what is left. */
static void send_item(struct kvc *c, struct kvc_item *it)
{
	struct kvc_tensor roi_f = {0};
	struct kvc_tensor *v[5] = {NULL, NULL, NULL, NULL, NULL};
	if (it) {
		if (bool_to_float(&it->roi, &roi_f)) {
			pd_err("kvc: drop_select_handler: cannot convert roi; answering a miss");
			it = NULL;
		} else {
			v[0] = &it->tokens;
			v[1] = &roi_f;
			v[2] = &it->keys;
			v[3] = &it->values;
			v[4] = &it->hidden;
		}
	}
	for (int i = 0; i < 5; i++) {
		int rc = i >= 2 && v[i] ? kvc_pipe_send_move(&c->pipe, v[i], 0, &c->closing)
		                        : kvc_pipe_send(&c->pipe, v[i], 0, &c->closing);
		if (rc) {
			if (rc != KVC_ERR_CLOSED)
				pd_err("kvc: drop_select_handler: sending tensor %d of 5: %s",
				       i + 1, kvc_strerror(rc));
			break;
		}
	}
	kvc_tensor_free(&roi_f);
}

static void *handler_main(void *arg)
{
	struct kvc *c = arg;
	while (!atomic_load(&c->closing)) {
		struct kvc_tensor q[3] = {0};
		struct kvc_tensor roi = {0};
		struct kvc_item it;
		int rc = 0, r, wait;
		bool bad = false;
		for (int i = 0; i < 3; i++) {
			r = kvc_pipe_recv(&c->pipe, &q[i], 0, &c->closing);
			if (r == KVC_ERR_CLOSED)
				goto out;
			if (r) {
				pd_err(
				    "kvc: drop_select_handler: receiving query tensor %d of 3: %s",
				    i + 1, kvc_strerror(r));
				bad = true;
			}
			if (i == 0 && !r && kvc_tensor_is_none(&q[0]))
				goto end_signal;
		}
		if (!bad && (!is_1d(&q[1], KVC_I64) || !is_1d(&q[2], KVC_F32) ||
		             q[1].shape[0] != q[2].shape[0])) {
			pd_err(
			    "kvc: drop_select_handler: query needs tokens int64 [T] and roi float "
			    "[T]; got dtypes %d/%d ndims %d/%d",
			    q[1].dtype, q[2].dtype, q[1].ndim, q[2].ndim);
			bad = true;
		}
		if (bad) {
			rc = KVC_MISS;
		} else if (float_to_bool(&q[2], &roi)) {
			rc = KVC_MISS;
		} else {
			wait = c->miss_mode == KVC_MISS_OLD
			           ? 0
			           : (c->miss_wait_ms > 0 ? c->miss_wait_ms : -1);
			rc = kvc_sbuf_take(&c->sbuf, q[1].data, roi.data, (size_t)q[1].shape[0],
			                   wait, &it);
		}
		for (int i = 0; i < 3; i++)
			kvc_tensor_free(&q[i]);
		kvc_tensor_free(&roi);
		if (rc == KVC_ERR_CLOSED)
			break;
		if (rc == 0) {
			atomic_fetch_add(&c->hits, 1);
			send_item(c, &it);
			kvc_item_free(&it);
		} else {
			atomic_fetch_add(&c->misses, 1);
			pd_dbg("kvc: drop_select_handler: no match; answering 5 x None");
			send_item(c, NULL);
		}
		continue;
	end_signal:
		/* vLLM's handler exits here and never comes back, so a decode restarted
		 * gracefully finds no handler; pdkv keeps serving the next consumer */
		{
			size_t n = kvc_pipe_forget_peer(&c->pipe, PEER_GONE_MS);
			pd_info(
			    "kvc: drop_select_handler: end signal from %s (the consumer shut "
			    "down); %zu unACKed answer buffer(s) released; waiting for the next "
			    "consumer",
			    c->pipe.v0.remote_url, n);
		}
		continue;
	out:
		for (int i = 0; i < 3; i++)
			kvc_tensor_free(&q[i]);
		break;
	}
	return NULL;
}

int kvc_create(const struct kvc_opts *o, struct kvc **out)
{
	struct kvc *c;
	int rc;
	*out = NULL;
	if (!o || !o->mc || !o->kt) {
		pd_err("kvc: kvc_create needs the mooncake.json and kv-transfer-config");
		return KVC_ERR_CONFIG;
	}
	if (o->frame_format != KVC_FRAME_PICKLE && o->frame_format != KVC_FRAME_U64BE) {
		pd_err("kvc: frame_format %d unknown (0 pickle, 1 u64be)", o->frame_format);
		return KVC_ERR_CONFIG;
	}
	if (o->miss_mode != KVC_MISS_OLD && o->miss_mode != KVC_MISS_NEW) {
		pd_err("kvc: miss_mode %d unknown (0 old: 5 x None, 1 new: wait)", o->miss_mode);
		return KVC_ERR_CONFIG;
	}
	if (!isfinite(o->kt->kv_buffer_size) || o->kt->kv_buffer_size < 0 ||
	    o->kt->kv_buffer_size > 1e15) {
		pd_err("kvc: kv-transfer-config: kv_buffer_size %g is not a byte count",
		       o->kt->kv_buffer_size);
		return KVC_ERR_CONFIG;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return KVC_ERR_ALLOC;
	c->producer = role_is_producer(o->kt);
	c->miss_mode = o->miss_mode;
	c->select_timeout_ms = o->select_timeout_ms;
	c->insert_timeout_ms = o->insert_timeout_ms == 0  ? INSERT_WAIT_MS
	                       : o->insert_timeout_ms < 0 ? 0
	                                                  : o->insert_timeout_ms;
	c->miss_wait_ms = o->miss_wait_ms;
	pthread_mutex_init(&c->select_mu, NULL);
	pthread_mutex_init(&c->start_mu, NULL);
	rc = kvc_sbuf_init(&c->sbuf, (uint64_t)o->kt->kv_buffer_size, o->overflow_rule);
	if (rc) {
		free(c);
		return rc;
	}
	rc = kvc_pipe_open(&c->pipe, o);
	if (rc) {
		kvc_sbuf_destroy(&c->sbuf);
		free(c);
		return rc;
	}
	atomic_store(&c->ready, true);
	*out = c;
	return 0;
}

void kvc_destroy(struct kvc *c)
{
	if (!c)
		return;
	atomic_store(&c->ready, false);
	atomic_store(&c->closing, true);
	if (c->producer) {
		kvc_sbuf_close(&c->sbuf);
		pthread_mutex_lock(&c->start_mu);
		if (c->handler_started)
			pthread_join(c->handler, NULL);
		c->handler_started = false;
		pthread_mutex_unlock(&c->start_mu);
		/* let the consumer finish reading what we already pushed */
		kvc_pipe_flush(&c->pipe, FLUSH_MS);
	} else {
		/* any running drop_select sees `closing` within one poll slice and returns */
		pthread_mutex_lock(&c->select_mu);
		if (!c->desync) {
			/* SimpleBuffer.close(): the end signal (None) so the peer's handler exits
			 */
			if (kvc_pipe_send(&c->pipe, NULL, END_SIGNAL_MS, NULL) == 0)
				kvc_pipe_flush(&c->pipe, FLUSH_MS);
		}
		pthread_mutex_unlock(&c->select_mu);
	}
	kvc_pipe_close(&c->pipe);
	kvc_sbuf_destroy(&c->sbuf);
	pthread_mutex_destroy(&c->select_mu);
	pthread_mutex_destroy(&c->start_mu);
	free(c);
}

bool kvc_ready(const struct kvc *c)
{
	/* the engine's metadata store must answer too: a peer started now could not find us */
	return c && atomic_load(&c->ready) && te_engine_meta_ok(c->pipe.eng);
}

static int insert(struct kvc *c, struct kvc_item *it, bool move_kv);

int kvc_insert(struct kvc *c, const struct kvc_item *it)
{
	return insert(c, (struct kvc_item *)it, false);
}

int kvc_insert_move_kv(struct kvc *c, struct kvc_item *it)
{
	return insert(c, it, true);
}

static int insert(struct kvc *c, struct kvc_item *it, bool move_kv)
{
	int rc;
	if (!c || !it)
		return KVC_ERR_CONFIG;
	if (!c->producer) {
		pd_err(
		    "kvc: insert on a consumer (kv_role is not kv_producer/kv_both): vLLM builds "
		    "no producer buffer here");
		return KVC_ERR_CONFIG;
	}
	if (atomic_load(&c->closing))
		return KVC_ERR_CLOSED;
	rc = kvc_sbuf_insert_ex(&c->sbuf, it, c->insert_timeout_ms, move_kv);
	if (rc == KVC_ERR_TIMEOUT) {
		uint64_t bytes, items;
		kvc_sbuf_usage(&c->sbuf, &bytes, &items);
		atomic_fetch_add(&c->insert_timeouts, 1);
		pd_warn(
		    "kvc: insert: the producer buffer stayed full for %d ms (%llu bytes in %llu "
		    "item(s), kv_buffer_size %llu): the consumer %s is not taking items (decode "
		    "down or not selecting?); this item is not offered",
		    c->insert_timeout_ms, (unsigned long long)bytes, (unsigned long long)items,
		    (unsigned long long)c->sbuf.threshold, c->pipe.v0.remote_url);
	}
	if (rc)
		return rc;
	pthread_mutex_lock(&c->start_mu);
	if (!c->handler_started && !atomic_load(&c->closing)) {
		if (pthread_create(&c->handler, NULL, handler_main, c) == 0)
			c->handler_started = true;
		else
			pd_err("kvc: cannot start the drop_select_handler thread");
	}
	pthread_mutex_unlock(&c->start_mu);
	return c->handler_started ? 0 : KVC_ERR_CONFIG;
}

int kvc_tensor_alloc_buf(struct kvc *c, struct kvc_tensor *t, int dtype, int ndim,
                         const int64_t *shape)
{
	int rc;
	if (!c || !t)
		return KVC_ERR_CONFIG;
	rc = kvc_tensor_alloc_in(c->pipe.pool, t, dtype, ndim, shape);
	if (rc != KVC_ERR_ALLOC)
		return rc;
	pd_dbg("kvc: registered memory for items is used up (parked_bytes); this tensor is "
	       "malloc'd and will be copied when sent");
	return kvc_tensor_alloc(t, dtype, ndim, shape);
}

/* ms to pass to the pipe: 0 = no deadline; -1 = already past */
static int ms_left(uint64_t dl)
{
	uint64_t now;
	if (!dl)
		return 0;
	now = pd_now_ns();
	if (now >= dl)
		return -1;
	return (int)((dl - now) / 1000000) + 1;
}

static int recv_bounded(struct kvc *c, struct kvc_tensor *t, uint64_t dl)
{
	int ms = ms_left(dl);
	if (ms < 0)
		return KVC_ERR_TIMEOUT;
	return kvc_pipe_recv(&c->pipe, t, ms, &c->closing);
}

static int send_bounded(struct kvc *c, const struct kvc_tensor *t, uint64_t dl)
{
	int ms = ms_left(dl);
	if (ms < 0)
		return KVC_ERR_TIMEOUT;
	return kvc_pipe_send(&c->pipe, t, ms, &c->closing);
}

/* Late answers to an abandoned select: read, ACK, drop. When they do not come within
 * STALE_WAIT_MS (at most half the select's budget) they were lost — taken by another peer on
 * the producer's data port, or the producer restarted — and waiting longer would fail every
 * later select: count them lost and go on. Answers that still come late are caught by
 * answer_fits(). */
static int drain_stale(struct kvc *c, uint64_t dl)
{
	int cap = STALE_WAIT_MS;
	uint64_t sdl;
	if (c->select_timeout_ms > 0 && c->select_timeout_ms / 2 < cap)
		cap = c->select_timeout_ms / 2;
	sdl = pd_now_ns() + (uint64_t)cap * 1000000ull;
	if (dl && dl < sdl)
		sdl = dl;
	while (c->stale > 0) {
		struct kvc_tensor t;
		int rc = recv_bounded(c, &t, sdl);
		if (rc == KVC_ERR_CLOSED)
			return rc;
		if (rc == KVC_ERR_TIMEOUT) {
			atomic_fetch_add(&c->resyncs, 1);
			pd_warn(
			    "kvc: drop_select: %d answer tensor(s) owed by %s did not come within "
			    "%d ms (another ZMQ peer on its data port took them, or it restarted); "
			    "counting them lost and resynchronising the pipe",
			    c->stale, c->pipe.v0.remote_url, cap);
			c->stale = 0;
			return 0;
		}
		kvc_tensor_free(&t);
		c->stale--;
		if (c->stale == 0)
			pd_warn(
			    "kvc: drop_select: discarded the late answer to an earlier timed-out "
			    "select");
	}
	return 0;
}

/* Reads and drops whatever is left in the pipe until it is quiet for quiet_ms (or dl). */
static int drain_quiet(struct kvc *c, uint64_t dl, int quiet_ms)
{
	int n = 0;
	for (;;) {
		struct kvc_tensor t;
		uint64_t qdl = pd_now_ns() + (uint64_t)quiet_ms * 1000000ull;
		if (dl && dl < qdl)
			qdl = dl;
		if (recv_bounded(c, &t, qdl))
			return n;
		kvc_tensor_free(&t);
		n++;
	}
}

/* Does this 5-tensor answer belong to the query for q[n]? A miss is 5 x None; a hit is
 * tokens i64 [T] sharing a prefix with the query, roi float [T], keys and values alike. */
static bool answer_fits(const struct kvc_tensor *r, const int64_t *q, size_t n)
{
	if (kvc_tensor_is_none(&r[0])) {
		for (int i = 1; i < 5; i++)
			if (!kvc_tensor_is_none(&r[i]))
				return false;
		return true;
	}
	if (!is_1d(&r[0], KVC_I64) || !is_1d(&r[1], KVC_F32) || r[0].shape[0] != r[1].shape[0])
		return false;
	struct kvc_tensor roi = {0};
	if (float_to_bool(&r[1], &roi))
		return false;
	size_t m = kvc_match_len(r[0].data, roi.data, (size_t)r[0].shape[0], q, NULL, n);
	kvc_tensor_free(&roi);
	if (m == 0)
		return false;
	return !kvc_tensor_is_none(&r[2]) && !kvc_tensor_is_none(&r[3]) &&
	       r[2].dtype == r[3].dtype && r[2].ndim == r[3].ndim &&
	       memcmp(r[2].shape, r[3].shape, sizeof(r[2].shape)) == 0;
}

static int select_locked(struct kvc *c, const int64_t *tokens, size_t n, struct kvc_item *out,
                         kvc_arrive_fn fn, kvc_piece_fn pfn, void *ud)
{
	uint64_t dl = c->select_timeout_ms > 0
	                  ? pd_now_ns() + (uint64_t)c->select_timeout_ms * 1000000ull
	                  : 0;
	int64_t zero = 0, shape[1] = {(int64_t)n};
	struct kvc_tensor sig = {
	    .dtype = KVC_I64, .ndim = 1, .shape = {1}, .data = &zero, .nbytes = 8};
	struct kvc_tensor tok = {.dtype = KVC_I64,
	                         .ndim = 1,
	                         .shape = {(int64_t)n},
	                         .data = (void *)tokens,
	                         .nbytes = n * 8};
	struct kvc_tensor roi = {0}, r[5] = {0};
	bool arrived = false;
	uint64_t t0 = pd_now_ns(), tq = 0, tr[5] = {0};
	int rc;

	if (c->desync) {
		pd_err("kvc: drop_select: the pipe lost its tensor order after a half-sent query; "
		       "restart the connector");
		return KVC_ERR_PROTOCOL;
	}
	rc = drain_stale(c, dl);
	if (rc)
		return rc;
	rc = kvc_tensor_alloc(&roi, KVC_F32, 1, shape);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		((float *)roi.data)[i] = 1.0f;
	rc = send_bounded(c, &sig, dl);
	if (rc)
		goto out;
	if ((rc = send_bounded(c, &tok, dl)) || (rc = send_bounded(c, &roi, dl))) {
		c->desync = true;
		pd_err("kvc: drop_select: query half-sent (%s); the pipe is out of step",
		       kvc_strerror(rc));
		goto out;
	}
	tq = pd_now_ns();
	c->pipe.piece_n = 5;
	for (int i = 0; i < 5; i++) {
		c->pipe.piece_fn = pfn;
		c->pipe.piece_ud = ud;
		c->pipe.piece_i = i;
		rc = recv_bounded(c, &r[i], dl);
		c->pipe.piece_fn = NULL;
		tr[i] = pd_now_ns();
		if (rc) {
			c->stale += 5 - i - (rc == KVC_ERR_TIMEOUT || rc == KVC_ERR_CLOSED ? 0 : 1);
			goto out;
		}
		if (fn) { /* the caller may start checking it while the next one is read */
			fn(ud, i, &r[i]);
			arrived = true;
		}
	}
	if (!answer_fits(r, tokens, n)) {
		int dropped = drain_quiet(c, dl, 200);
		atomic_fetch_add(&c->resyncs, 1);
		atomic_fetch_add(&c->pipe.protocol_errors, 1);
		pd_warn(
		    "kvc: drop_select: the answer from %s does not fit the query (%s; another "
		    "ZMQ peer took part of the answers, or it answers an older query): "
		    "discarded it and %d more tensor(s), resynchronised; this select recomputes",
		    c->pipe.v0.remote_url,
		    kvc_tensor_is_none(&r[0]) ? "a miss mixed with tensors"
		                              : "tokens/roi/keys/values out of step",
		    dropped);
		rc = KVC_ERR_PROTOCOL;
		goto out;
	}
	if (kvc_tensor_is_none(&r[0])) {
		atomic_fetch_add(&c->misses, 1);
		rc = KVC_MISS;
		goto out;
	}
	if (!is_1d(&r[0], KVC_I64) || !is_1d(&r[1], KVC_F32) || r[0].shape[0] != r[1].shape[0]) {
		pd_err("kvc: drop_select: answer needs tokens int64 [T] and roi float [T]; got "
		       "dtypes %d/%d ndims %d/%d",
		       r[0].dtype, r[1].dtype, r[0].ndim, r[1].ndim);
		atomic_fetch_add(&c->pipe.protocol_errors, 1);
		rc = KVC_ERR_PROTOCOL;
		goto out;
	}
	rc = float_to_bool(&r[1], &out->roi);
	if (rc)
		goto out;
	out->tokens = r[0];
	out->keys = r[2];
	out->values = r[3];
	out->hidden = r[4];
	memset(&r[0], 0, sizeof(r[0]));
	for (int i = 2; i < 5; i++)
		memset(&r[i], 0, sizeof(r[i]));
	atomic_fetch_add(&c->hits, 1);
	rc = KVC_OK;
	pd_dbg("kvc: drop_select of %zu tokens: query sent %.2f ms, then tokens %.2f, roi %.2f, "
	       "keys %.2f, values %.2f, hidden %.2f ms",
	       n, (double)(tq - t0) / 1e6, (double)(tr[0] - tq) / 1e6,
	       (double)(tr[1] - tr[0]) / 1e6, (double)(tr[2] - tr[1]) / 1e6,
	       (double)(tr[3] - tr[2]) / 1e6, (double)(tr[4] - tr[3]) / 1e6);
out:
	/* a READ still ahead (of a later answer, or left by a failed one) shows ud nothing more */
	c->pipe.piece_n = 0;
	if (c->pipe.ahead.on)
		kvc_read_land_off(&c->pipe.ahead.rd);
	if (arrived)
		fn(ud, -1, NULL); /* before any tensor it saw is freed */
	for (int i = 0; i < 5; i++)
		kvc_tensor_free(&r[i]);
	kvc_tensor_free(&roi);
	return rc;
}

int kvc_drop_select(struct kvc *c, const int64_t *tokens, size_t ntokens, struct kvc_item *out)
{
	return kvc_drop_select_cb(c, tokens, ntokens, out, NULL, NULL);
}

int kvc_drop_select_cb(struct kvc *c, const int64_t *tokens, size_t ntokens, struct kvc_item *out,
                       kvc_arrive_fn fn, void *ud)
{
	return kvc_drop_select_pieces(c, tokens, ntokens, out, fn, NULL, ud);
}

int kvc_drop_select_pieces(struct kvc *c, const int64_t *tokens, size_t ntokens,
                           struct kvc_item *out, kvc_arrive_fn fn, kvc_piece_fn pfn, void *ud)
{
	int rc;
	if (out)
		memset(out, 0, sizeof(*out));
	if (!c || !out || (!tokens && ntokens))
		return KVC_ERR_CONFIG;
	if (c->producer) {
		pd_err(
		    "kvc: drop_select on a producer: Please initialize the consumer buffer before "
		    "calling select. (kv_role %s builds only the producer buffer)",
		    "kv_producer/kv_both");
		return KVC_ERR_CONFIG;
	}
	pthread_mutex_lock(&c->select_mu);
	rc = atomic_load(&c->closing) ? KVC_ERR_CLOSED
	                              : select_locked(c, tokens, ntokens, out, fn, pfn, ud);
	pthread_mutex_unlock(&c->select_mu);
	if (rc < 0)
		kvc_item_free(out);
	return rc;
}

void kvc_get_stats(const struct kvc *cc, struct kvc_stats *s)
{
	struct kvc *c = (struct kvc *)cc;
	memset(s, 0, sizeof(*s));
	if (!c)
		return;
	s->bytes_sent = atomic_load(&c->pipe.bytes_sent);
	s->bytes_received = atomic_load(&c->pipe.bytes_received);
	s->transfers = atomic_load(&c->pipe.transfers);
	s->transfer_failures = atomic_load(&c->pipe.transfer_failures);
	kvc_sbuf_usage(&c->sbuf, &s->buffer_bytes, &s->buffer_items);
	s->hits = atomic_load(&c->hits);
	s->misses = atomic_load(&c->misses);
	s->protocol_errors = atomic_load(&c->pipe.protocol_errors);
	s->alloc_failures = atomic_load(&c->pipe.alloc_failures);
	s->pool_bytes_in_use = kvc_pool_in_use(c->pipe.pool);
	s->resyncs = atomic_load(&c->resyncs);
	s->insert_timeouts = atomic_load(&c->insert_timeouts);
	s->extra_peers = atomic_load(&c->pipe.extra_peers);
	s->reads_abandoned = atomic_load(&c->pipe.reads_abandoned);
	s->reads_abandoned_held = kvc_read_quar_count(&c->pipe);
	s->reads_refused = atomic_load(&c->pipe.reads_refused);
	s->reads_ahead = atomic_load(&c->pipe.reads_ahead);
	pthread_mutex_lock(&c->pipe.ack_mu);
	s->pending_acks = c->pipe.ack_n;
	pthread_mutex_unlock(&c->pipe.ack_mu);
}

const char *kvc_own_url(const struct kvc *c)
{
	return c ? c->pipe.v0.own_url : "";
}

const char *kvc_remote_url(const struct kvc *c)
{
	return c ? c->pipe.v0.remote_url : "";
}
