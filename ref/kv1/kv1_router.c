/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_router: the producer's side channel — the ROUTER socket and its thread: handshakes to
 * handler threads (queued past KV1_MAX_HANDLERS), their replies back out, the periodic sweeps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "kv1_internal.h"
#include "pd_log.h"
#include "pd_tsan.h"
#include "pd_util.h"

int kv1_job_reply(struct kv1_job *j, void *push, const void *body, size_t len, bool delim)
{
	if (!push)
		return -EIO;
	PD_TSAN_WIRE_SEND(); /* pd_tsan.h: the requester uses the blocks after this reply */
	if (zmq_send(push, j->ident, j->ident_len, ZMQ_SNDMORE) < 0 ||
	    (delim && zmq_send(push, "", 0, ZMQ_SNDMORE) < 0) || zmq_send(push, body, len, 0) < 0)
		return -EIO;
	return 0;
}

/* Receives one whole multipart message; frames beyond max are dropped (the caller then rejects
 * the message by its frame count). */
static int recv_frames(void *s, zmq_msg_t *m, int max, int *n)
{
	int more = 1;

	*n = 0;
	while (more) {
		zmq_msg_t t;

		zmq_msg_init(&t);
		if (pd_tsan_recv_rc(zmq_msg_recv(&t, s, ZMQ_DONTWAIT)) < 0) {
			zmq_msg_close(&t);
			return -1;
		}
		more = zmq_msg_more(&t);
		if (*n < max)
			m[(*n)++] = t;
		else
			zmq_msg_close(&t); /* too many frames: dropped, message rejected below */
	}
	return 0;
}

/* Hands woken (parked, now ready) handshakes, then queued ones, to handler threads while fewer
 * than KV1_MAX_HANDLERS run. */
static void start_pending(struct kv1_worker *w)
{
	kv1_park_kick(w);
	while (w->pend_head && kv1_handler_reserve(w)) {
		struct kv1_job *j = w->pend_head;

		w->pend_head = j->next;
		if (!w->pend_head)
			w->pend_tail = NULL;
		w->npend--;
		j->next = NULL;
		kv1_handler_spawn(w, j);
	}
}

static void dispatch(struct kv1_worker *w, zmq_msg_t *m, int n)
{
	bool a = w->o.gen == CFG_GEN_A;
	int want = a ? 3 : 2;
	struct kv1_job *j;

	if (n != want || (a && zmq_msg_size(&m[1]) != 0)) {
		atomic_fetch_add(&w->rejected, 1);
		pd_warn("kv1: side channel %s: dropped a message of %d frames (expected %s)",
		        w->side_addr, n, a ? "identity, empty, payload" : "identity, payload");
		return;
	}
	if (w->npend >= KV1_MAX_PENDING) {
		pd_warn("kv1: %d handshakes in progress and %d queued on %s; refusing one (the "
		        "decode will time out and apply its kv_load_failure_policy)",
		        KV1_MAX_HANDLERS, w->npend, w->side_addr);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return;
	j->w = w;
	j->ident_len = zmq_msg_size(&m[0]);
	j->ident = malloc(j->ident_len + 1);
	j->len = j->cost = zmq_msg_size(&m[n - 1]);
	j->payload = malloc(j->len + 1);
	if (!j->ident || !j->payload)
		goto fail;
	memcpy(j->ident, zmq_msg_data(&m[0]), j->ident_len);
	memcpy(j->payload, zmq_msg_data(&m[n - 1]), j->len);
	{
		const char *pa = zmq_msg_gets(&m[n - 1], "Peer-Address");

		snprintf(j->peer, sizeof(j->peer), "%s", pa ? pa : "?");
	}
	atomic_fetch_add(&w->handshakes, 1);
	/* beyond KV1_MAX_HANDLERS a handshake waits its turn instead of being lost: a decode
	 * whose request got no answer would only learn of it after its receive timeout */
	if (w->pend_tail)
		w->pend_tail->next = j;
	else
		w->pend_head = j;
	w->pend_tail = j;
	w->npend++;
	start_pending(w);
	return;
fail:
	kv1_job_free(j);
}

/* Forwards handlers' replies to the ROUTER; takes the handshakes they park. */
static void pump_pull(struct kv1_worker *w, void *pull)
{
	zmq_msg_t m[4];
	struct kv1_job *pj;
	int n;

	if (recv_frames(pull, m, 4, &n))
		return;
	if (n == 1 && zmq_msg_size(&m[0]) == sizeof(pj)) {
		/* a gen B handler parks its handshake (kv1_park_request) */
		memcpy(&pj, zmq_msg_data(&m[0]), sizeof(pj));
		zmq_msg_close(&m[0]);
		kv1_park_admit(w, pj);
		return;
	}
	PD_TSAN_WIRE_SEND();
	for (int i = 0; i < n; i++) {
		zmq_msg_send(&m[i], w->router, i + 1 < n ? ZMQ_SNDMORE : 0);
		zmq_msg_close(&m[i]);
	}
}

static void *router_main(void *arg)
{
	struct kv1_worker *w = arg;
	void *pull = kv1_zsock(w, ZMQ_PULL, 0);

	if (!pull || zmq_bind(pull, w->inproc)) {
		pd_err("kv1: inproc %s: %s", w->inproc, zmq_strerror(zmq_errno()));
		return NULL;
	}
	while (!atomic_load(&w->stop)) {
		zmq_pollitem_t it[2] = {{w->router, 0, ZMQ_POLLIN, 0}, {pull, 0, ZMQ_POLLIN, 0}};
		zmq_msg_t m[4];
		int n;

		if (zmq_poll(it, 2, 100) < 0 && zmq_errno() != EINTR)
			break;
		if (it[0].revents & ZMQ_POLLIN && !recv_frames(w->router, m, 4, &n)) {
			dispatch(w, m, n);
			for (int i = 0; i < n; i++)
				zmq_msg_close(&m[i]);
		}
		if (it[1].revents & ZMQ_POLLIN)
			pump_pull(w, pull);
		start_pending(w);
		kv1_park_sweep(w, false);
		kv1_send_reap_expired(w);
		kv1_hold_reap(w);
	}
	/* stopping: the last replies and park requests of running handlers (which no longer
	 * park), then every parked handshake gets its timeout answer */
	for (uint64_t end = pd_now_ns() + 3000000000ull;
	     atomic_load(&w->handlers) > 0 && pd_now_ns() < end;) {
		zmq_pollitem_t it = {pull, 0, ZMQ_POLLIN, 0};

		if (zmq_poll(&it, 1, 10) > 0)
			pump_pull(w, pull);
	}
	for (zmq_pollitem_t it = {pull, 0, ZMQ_POLLIN, 0}; zmq_poll(&it, 1, 0) > 0;)
		pump_pull(w, pull);
	kv1_park_sweep(w, true);
	while (w->pend_head) {
		struct kv1_job *j = w->pend_head;
		w->pend_head = j->next;
		kv1_job_free(j);
	}
	w->pend_tail = NULL;
	w->npend = 0;
	zmq_close(pull);
	return NULL;
}

int kv1_router_start(struct kv1_worker *w, char *err, size_t errsz)
{
	char ep[160];
	size_t len = sizeof(w->side_addr);

	w->router = kv1_zsock(w, ZMQ_ROUTER, 0);
	if (!w->router) {
		kv1_set_err(err, errsz, "zmq_socket(ROUTER): %s", zmq_strerror(zmq_errno()));
		return -1;
	}
	if (w->o.gen == CFG_GEN_A) {
		w->side_port = w->o.base_port + w->o.dp_index * w->o.tp_size + w->o.tp_rank;
		snprintf(ep, sizeof(ep), "tcp://%s:%d", w->ip, w->side_port);
	} else {
		snprintf(ep, sizeof(ep), "tcp://%s:*", w->ip);
	}
	if (zmq_bind(w->router, ep)) {
		kv1_set_err(err, errsz, "side channel ROUTER bind %s: %s%s", ep,
		            zmq_strerror(zmq_errno()),
		            w->o.gen == CFG_GEN_A ? " (gen A port = VLLM_MOONCAKE_BOOTSTRAP_PORT + "
		                                    "dp*tp + tp_rank)"
		                                  : "");
		return -1;
	}
	zmq_getsockopt(w->router, ZMQ_LAST_ENDPOINT, w->side_addr, &len);
	if (w->o.gen != CFG_GEN_A) {
		const char *c = strrchr(w->side_addr, ':');

		w->side_port = c ? atoi(c + 1) : 0;
	}
	snprintf(w->inproc, sizeof(w->inproc), "inproc://kv1-%p", (void *)w);
	if (pthread_create(&w->thr, NULL, router_main, w)) {
		kv1_set_err(err, errsz, "cannot start the side-channel thread");
		return -1;
	}
	w->thr_started = true;
	return 0;
}
