/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_gena: gen A's side channel — the producer's handshake handler (MooncakeAgentMetadata in,
 * one engine WRITE batch, raw trans_done / trans_error out) and the consumer's REQ client. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "kv1_internal.h"
#include "pd_log.h"
#include "pd_tsan.h"
#include "pd_util.h"

/* Returns true when every known request was written. Unknown ids are skipped as vLLM does. */
static bool push_all(struct kv1_worker *w, const struct kv1_agent_meta *m)
{
	struct kv1_send **taken = calloc(m->nreq ? m->nreq : 1, sizeof(*taken));
	struct kv1_run *all = NULL;
	size_t nall = 0;
	bool ok = taken != NULL;
	uint64_t deadline = pd_now_ns() + (uint64_t)w->o.abort_timeout_s * 1000000000ull;

	for (size_t i = 0; ok && i < m->nreq; i++) {
		struct kv1_send *s;
		struct kv1_run *runs;
		size_t nr;

		pthread_mutex_lock(&w->mu);
		s = kv1_send_find_locked(w, m->request_ids[i]);
		if (!s) {
			pthread_mutex_unlock(&w->mu);
			/* vLLM gen A: a warning and nothing written, yet the reply is trans_done
			 * (the hazard pdkv's runner must catch). */
			pd_warn("Request %s not found in reqs_need_send", m->request_ids[i]);
			atomic_fetch_add(&w->unknown_ids, 1);
			continue;
		}
		/* P waits for its own prefill before writing. */
		s = kv1_send_wait_locked(w, m->request_ids[i], deadline);
		if (!s) {
			pthread_mutex_unlock(&w->mu);
			pd_err(
			    "Error processing Mooncake handshake: request %s not ready after %d s",
			    m->request_ids[i], w->o.abort_timeout_s);
			ok = false;
			break;
		}
		s->busy = true;
		taken[i] = s;
		pthread_mutex_unlock(&w->mu);
		if (kv1_plan(s->ids, s->n, m->block_ids[i].v, m->block_ids[i].n, &runs, &nr)) {
			pd_err(
			    "Error processing Mooncake handshake: request %s: P has %zu blocks, D "
			    "asked for %zu",
			    s->key, s->n, m->block_ids[i].n);
			ok = false;
			break;
		}
		struct kv1_run *na = realloc(all, (nall + nr + 1) * sizeof(*na));

		if (!na) {
			free(runs);
			ok = false;
			break;
		}
		all = na;
		memcpy(all + nall, runs, nr * sizeof(*runs));
		nall += nr;
		free(runs);
		pd_dbg("Sending kv_caches for request %s (%zu blocks) to %s:%lld", s->key,
		       m->block_ids[i].n, m->remote_hostname, (long long)m->remote_port);
	}
	if (ok && nall) {
		int ret = kv1_write_blocks(w, m->remote_hostname, m->remote_port, m->bases,
		                           m->nbases, all, nall);

		if (ret) {
			pd_err("Error in batch_transfer_sync_write: %d (%s)", ret,
			       te_strerror(ret));
			ok = false;
		}
	}
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; taken && i < m->nreq; i++)
		if (taken[i]) {
			if (ok) {
				kv1_send_remove_locked(w, taken[i]); /* done: blocks freed */
			} else {
				taken[i]->busy = false;
			}
		}
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	free(taken);
	free(all);
	return ok;
}

static void kv1_gena_handle(struct kv1_job *j, void *push)
{
	struct kv1_worker *w = j->w;
	struct kv1_agent_meta m;
	char err[512];
	bool ok = false;

	if (kv1_agent_meta_decode(j->payload, j->len, &m, err, sizeof(err))) {
		atomic_fetch_add(&w->rejected, 1);
		pd_err("Error processing Mooncake handshake: %s", err);
	} else if (m.nblock_ids != m.nreq) {
		atomic_fetch_add(&w->rejected, 1);
		pd_err("Error processing Mooncake handshake: %zu request ids but %zu block lists",
		       m.nreq, m.nblock_ids);
		kv1_agent_meta_free(&m);
	} else {
		ok = push_all(w, &m);
		kv1_agent_meta_free(&m);
	}
	if (ok)
		kv1_job_reply(j, push, KV1_TRANS_DONE, strlen(KV1_TRANS_DONE), true);
	else
		kv1_job_reply(j, push, KV1_TRANS_ERROR, strlen(KV1_TRANS_ERROR), true);
	free(j->ident);
	free(j->payload);
	free(j);
}

const struct kv1_park_ops kv1_gena_park_ops = {.handle = kv1_gena_handle}; /* gen A never parks */

int kv1_recv_a(struct kv1_worker *w, const char *host, int port, const char *req_id,
               const int64_t *ids, size_t n, char *err, size_t errsz)
{
	char *rid = (char *)req_id, *buf = NULL, ep[300], reply[64], why[160];
	uint64_t bases[KV1_MAX_BUFS];
	struct kv1_ids bl = {(int64_t *)ids, n};
	int64_t rport;
	struct kv1_agent_meta m;
	void *s = NULL;
	size_t len;
	int ret, got, tmo;

	for (int i = 0; i < w->o.nbufs; i++)
		bases[i] = (uint64_t)(uintptr_t)w->bufs[i];
	if (pd_split_hostport(w->seg, ep, sizeof(ep), &got))
		got = 0;
	rport = got;
	m = (struct kv1_agent_meta){w->ip, rport, &rid, 1, bases, (size_t)w->o.nbufs, &bl, 1};
	if (kv1_agent_meta_encode(&m, &buf, &len)) {
		kv1_set_err(err, errsz, "cannot encode MooncakeAgentMetadata");
		return -EINVAL;
	}
	pd_dbg("Size of encoded MooncakeAgentMetadata: %zu bytes", len);
	snprintf(ep, sizeof(ep), "tcp://%s:%d", host, port + w->o.tp_rank);
	tmo = w->o.recv_timeout_ms > 0 ? w->o.recv_timeout_ms : 60000;
	ret = kv1_rhold_room(w, ep, pd_now_ns() + (uint64_t)tmo * 1000000ull, err, errsz);
	if (ret)
		goto out;
	kv1_landed_reset(w, ids, n); /* the hold's early end counts this transfer's bytes only */
	s = kv1_zsock(w, ZMQ_REQ, tmo);
	PD_TSAN_WIRE_SEND(); /* pd_tsan.h: the peer acts on our buffers after this */
	if (!s || zmq_connect(s, ep) || zmq_send(s, buf, len, 0) < 0) {
		kv1_set_err(err, errsz, "MooncakeAgentMetadata transfer failed for %s: %s: %s",
		            req_id, ep, zmq_strerror(zmq_errno()));
		ret = -EIO; /* not sent: P never saw the blocks */
		goto out;
	}
	got = pd_tsan_recv_rc(zmq_recv(s, reply, sizeof(reply), 0));
	if (got < 0) {
		int e = zmq_errno();

		kv1_set_err(err, errsz, "MooncakeAgentMetadata transfer failed for %s: %s: %s",
		            req_id, ep,
		            e == EAGAIN ? "Resource temporarily unavailable (no reply "
		                          "within the receive timeout)"
		                        : zmq_strerror(e));
		ret = e == EAGAIN ? -ETIMEDOUT : -EIO;
		/* no answer: P may still wait for its prefill, then WRITE */
		snprintf(why, sizeof(why), "request %.64s: %s", req_id,
		         ret == -ETIMEDOUT ? "no reply" : zmq_strerror(e));
		kv1_rhold_add(w, ids, n, ep, why, false);
		goto out;
	}
	if ((size_t)got == strlen(KV1_TRANS_DONE) && !memcmp(reply, KV1_TRANS_DONE, (size_t)got)) {
		atomic_fetch_add(&w->bytes_recv,
		                 (uint64_t)n * w->o.block_len * (uint64_t)w->o.nbufs);
		ret = 0;
	} else {
		kv1_set_err(
		    err, errsz,
		    "Error happens during tranfering kvcache for %s, see logs in prefiller.",
		    req_id);
		ret = -EIO;
		/* trans_error: P's WRITE may have been given up in flight */
		snprintf(why, sizeof(why), "request %.64s: trans_error", req_id);
		kv1_rhold_add(w, ids, n, ep, why, true);
	}
out:
	if (s)
		zmq_close(s);
	free(buf);
	return ret;
}
