/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_genb: gen B's side channel — the producer's handler (MooncakeXferMetadata in, a write per
 * ready batch, MooncakeXferResponse CONTINUE / FINISH / ERROR out) and the consumer's DEALER
 * client with its bootstrap /query cache. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "kv1_internal.h"
#include "pd_log.h"
#include "pd_tsan.h"
#include "pd_util.h"

static enum kv1_shape shape_of(const struct kv1_worker *w)
{
	return kv1_shape_of(w->o.gen);
}

static void send_resp(struct kv1_job *j, void *push, const struct kv1_xfer_resp *r)
{
	char *buf;
	size_t len;

	if (kv1_xfer_resp_encode(r, &buf, &len))
		return;
	kv1_job_reply(j, push, buf, len, false);
	free(buf);
}

static void send_error(struct kv1_job *j, void *push, const char *msg)
{
	struct kv1_xfer_resp r = {KV1_ERROR, false, false, NULL, 0, NULL, 0, (char *)msg};

	pd_err("Error processing Mooncake xfer request: %s", msg);
	send_resp(j, push, &r);
}

/* B1 / B2 (send_kv_to_decode @ b745e8b5d, 4d51588e2): _expand_transfer_regions' assertion on
 * the list lengths, then _validate_asymmetric_region_lengths over the regions with kv_block_len
 * = block_len (no kv_block_lens on the wire; pdkv's layout is not blocks-first), homogeneous TP
 * as Bn's check has it. */
static bool lens_match_b12(const struct kv1_worker *w, const struct kv1_xfer_meta *m, char *msg,
                           size_t msz)
{
	size_t n = (size_t)w->o.nbufs;
	struct kv1_region *loc, *rem;
	long *map;
	bool ok;

	if (m->nbases != m->nblock_lens) {
		snprintf(msg, msz,
		         "Mooncake transfer regions require matching numbers of base addresses and "
		         "block lengths, got %zu and %zu.",
		         m->nbases, m->nblock_lens);
		return false;
	}
	if (m->nbases != n) {
		snprintf(msg, msz,
		         "Mooncake asymmetric TP requires matching KV region counts "
		         "between producer and consumer.");
		return false;
	}
	loc = calloc(n + 1, sizeof(*loc));
	rem = calloc(n + 1, sizeof(*rem));
	map = calloc(n + 1, sizeof(*map));
	ok = loc && rem && map;
	for (size_t i = 0; ok && i < n; i++) {
		loc[i].block_len = loc[i].kv_block_len = (int64_t)w->o.block_len;
		rem[i].block_len = rem[i].kv_block_len = m->block_lens[i];
		map[i] = (long)i;
	}
	if (!ok)
		snprintf(msg, msz, "out of memory");
	else
		ok =
		    !kv1_regions_check_lens(loc, n, rem, map, w->o.tp_size, w->o.tp_size, msg, msz);
	free(loc);
	free(rem);
	free(map);
	return ok;
}

static bool lens_match(const struct kv1_worker *w, const struct kv1_xfer_meta *m, char *msg,
                       size_t msz)
{
	if (!cfg_gen_has_block_lens(w->o.gen))
		return true;
	if (!cfg_gen_has_bn(w->o.gen))
		return lens_match_b12(w, m, msg, msz);
	for (size_t i = 0; i < (size_t)w->o.nbufs; i++) {
		int64_t r = i < m->nblock_lens ? m->block_lens[i] : -1;

		if (r != (int64_t)w->o.block_len) {
			snprintf(
			    msg, msz,
			    "Mooncake KV region length mismatch for homogeneous TP at region %zu: "
			    "local block_len %zu, remote %lld",
			    i, w->o.block_len, (long long)r);
			return false;
		}
	}
	return true;
}

struct pend {
	const struct kv1_req_blocks *rb;
	struct kv1_send *s;
	int state; /* 0 pending, 1 taken, 2 done, 3 dropped by P (answered with an error) */
};

/* A decoded handshake and its progress: kept in the job while it is parked. */
struct gb_state {
	struct kv1_xfer_meta m;
	struct pend *p;
	struct kv1_xfer_resp r;
	struct kv1_xregion *xr; /* Bl: the aligned regions (NULL: Bn / B0, buffer by buffer) */
	size_t nxr;
	int need; /* D workers each send entry serves (vLLM's need_send) */
};

/* D asked for no block in any group (a request that only releases P's blocks). */
static bool no_blocks(const struct kv1_req_blocks *rb)
{
	for (size_t k = 0; k < rb->ngroups; k++)
		if (rb->groups[k].n)
			return false;
	return true;
}

/* _build_transfer_params for one request: the copy plan of each KV-cache group, P's list g
 * against D's list g (P having more sends its last ones). 0, or -1 with *emsg vLLM's text. */
static int plan_groups(const struct kv1_worker *w, const struct kv1_send *s,
                       const struct kv1_req_blocks *rb, struct kv1_run **gruns, size_t *gnr,
                       const char **emsg)
{
	size_t ng = s->ng ? s->ng : 1, off = 0;
	size_t one = s->n;
	const size_t *cnt = s->ng ? s->gcnt : &one;

	/* B2 (@ 4d51588e2) and Bl: one list per KV group, as many as P's */
	if (shape_of(w) >= KV1_SHAPE_B2 && !no_blocks(rb) && rb->ngroups != ng) {
		pd_err("req %s: KV group count mismatch: local=%zu, remote=%zu", rb->req_id, ng,
		       rb->ngroups);
		*emsg = "KV group count mismatch";
		return -1;
	}
	for (size_t k = 0; k < ng; k++) {
		const struct kv1_ids *r = k < rb->ngroups ? &rb->groups[k] : &rb->groups[0];

		if (kv1_plan(s->ids + off, cnt[k], r->v, r->n, &gruns[k], &gnr[k]) == -ERANGE) {
			pd_err("req %s: local blocks(%zu) < remote blocks(%zu) in a KV cache group",
			       rb->req_id, cnt[k], r->n);
			*emsg = "P num blocks less than D";
			return -1;
		}
		off += cnt[k];
	}
	return 0;
}

/* Plans and writes one taken request: 0, or -1 with *emsg set. */
static int write_one(struct kv1_worker *w, struct gb_state *g, struct pend *p, const char **emsg)
{
	static _Thread_local char tebuf[96];
	const struct kv1_xfer_meta *m = &g->m;
	struct kv1_run *gruns[KV1_MAX_KV_GROUPS] = {0};
	size_t gnr[KV1_MAX_KV_GROUPS] = {0}, ng = p->s->ng ? p->s->ng : 1;
	int ret = plan_groups(w, p->s, p->rb, gruns, gnr, emsg);

	if (!ret) {
		pd_dbg("Sending kv_caches for request %s (%zu blocks) to %s:%lld", p->rb->req_id,
		       p->s->n, m->remote_hostname, (long long)m->remote_port);
		ret = g->xr ? kv1_write_regions_g(w, m->remote_hostname, m->remote_port, g->xr,
		                                  g->nxr, gruns, gnr, ng)
		            : kv1_write_blocks(w, m->remote_hostname, m->remote_port, m->bases,
		                               m->nbases, gruns[0], gnr[0]);
		if (ret) {
			snprintf(tebuf, sizeof(tebuf), "Mooncake transfer engine returned %d", ret);
			*emsg = tebuf;
		}
	}
	for (size_t k = 0; k < ng; k++)
		free(gruns[k]);
	return ret;
}

/* Writes every taken request; fills ok / err lists (pointers into m). */
static void write_taken(struct kv1_worker *w, struct gb_state *g, struct kv1_xfer_resp *r,
                        const char **emsg)
{
	struct pend *p = g->p;
	size_t n = g->m.nreqs, woken = 0;

	for (size_t i = 0; i < n; i++) {
		int ret;

		if (p[i].state == 3) {
			p[i].state = 2;
			r->err[r->nerr++] = p[i].rb->req_id;
			*emsg = "P side finished the request without sending its KV (its prefill "
			        "failed or ended by a stop token)";
			continue;
		}
		if (p[i].state != 1)
			continue;
		p[i].state = 2;
		ret = write_one(w, g, &p[i], emsg);
		if (ret)
			r->err[r->nerr++] = p[i].rb->req_id;
		else
			r->ok[r->nok++] = p[i].rb->req_id;
		pthread_mutex_lock(&w->mu);
		if (!ret && ++p[i].s->sent < g->need) {
			/* another D worker still reads these blocks (heterogeneous TP) */
			p[i].s->busy = false;
			woken += kv1_park_wake_locked(w, p[i].rb->transfer_id);
		} else {
			kv1_send_remove_locked(w, p[i].s);
		}
		pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->mu);
		p[i].s = NULL;
	}
	if (woken)
		kv1_park_kick(w);
}

/* Takes ready entries (w->mu held); returns how many are still pending. Entries D asks for
 * before P's scheduler saw them are created here, as vLLM does. Entries are looked up by
 * transfer id on every pass: the lock is released in between. */
static size_t take_ready_locked(struct kv1_worker *w, struct pend *p, size_t n, size_t *taken)
{
	size_t left = 0;

	*taken = 0;
	for (size_t i = 0; i < n; i++) {
		struct kv1_send *s;

		if (p[i].state)
			continue;
		s = kv1_send_find_locked(w, p[i].rb->transfer_id);
		if (!s)
			s = kv1_send_add_locked(w, p[i].rb->transfer_id);
		if (s && s->dropped) {
			p[i].state = 3;
			(*taken)++;
		} else if (s && s->ready && !s->busy) {
			s->busy = true;
			p[i].s = s;
			p[i].state = 1;
			(*taken)++;
		} else {
			left++;
		}
	}
	return left;
}

static void kv1_genb_state_free(void *gb)
{
	struct gb_state *g = gb;

	if (!g)
		return;
	kv1_xfer_meta_free(&g->m);
	free(g->xr);
	free(g->p);
	free(g->r.ok);
	free(g->r.err);
	free(g);
}

static bool kv1_genb_waits_on(const struct kv1_job *j, const char *key)
{
	const struct gb_state *g = j->gb;

	for (size_t i = 0; g && i < g->m.nreqs; i++)
		if (!g->p[i].state && !strcmp(g->p[i].rb->transfer_id, key))
			return true;
	return false;
}

static bool kv1_genb_runnable_locked(struct kv1_worker *w, const struct kv1_job *j)
{
	const struct gb_state *g = j->gb;

	for (size_t i = 0; g && i < g->m.nreqs; i++) {
		const struct kv1_send *s;

		if (g->p[i].state)
			continue;
		s = kv1_send_find_locked(w, g->p[i].rb->transfer_id);
		if (s && (s->dropped || (s->ready && !s->busy)))
			return true;
	}
	return false;
}

/* FINISH with every request still pending in err_reqs and msg; entries nobody made ready were
 * only created for this wait and are removed. */
static void finish_pending(struct kv1_job *j, void *sock, const char *msg, bool timeout)
{
	struct kv1_worker *w = j->w;
	struct gb_state *g = j->gb;
	struct kv1_xfer_resp *r = &g->r;
	const char *first = NULL;
	size_t unknown = 0;
	uint64_t quiet;

	r->nok = r->nerr = 0;
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < g->m.nreqs; i++) {
		if (g->p[i].state)
			continue;
		struct kv1_send *s = kv1_send_find_locked(w, g->p[i].rb->transfer_id);

		r->err[r->nerr++] = g->p[i].rb->req_id;
		if (s && !s->ready && !s->dropped && !s->busy) {
			kv1_send_remove_locked(w, s);
			first = first ? first : g->p[i].rb->transfer_id;
			unknown++;
		}
	}
	pthread_mutex_unlock(&w->mu);
	if (timeout && unknown) {
		/* ids this prefill never made ready: a decode that asked the wrong prefill, a
		 * request that never reached it, or a rogue peer */
		atomic_fetch_add(&w->unknown_ids, unknown);
		if (kv1_park_warn_due(w, &quiet))
			pd_warn(
			    "kv1: side channel %s: handshake from %s for %zu transfer id(s) this "
			    "prefill never made ready (first: %s) timed out after %d s; "
			    "answered \"Timeout waiting for P side ready.\" (%llu side-channel "
			    "warnings suppressed in the last second)",
			    w->side_addr, j->peer, unknown, first, w->o.abort_timeout_s,
			    (unsigned long long)quiet);
	}
	r->status = KV1_FINISH;
	r->has_ok = false;
	r->has_err = true;
	r->err_msg = (char *)msg;
	send_resp(j, sock, r);
}

static void kv1_genb_expire(struct kv1_job *j, void *sock)
{
	/* the worker stopping is no timeout: answered the same, not counted or logged */
	finish_pending(j, sock, "Timeout waiting for P side ready.", !atomic_load(&j->w->stop));
	kv1_job_free(j);
}

static void kv1_genb_refuse(struct kv1_job *j, void *sock, const char *msg)
{
	finish_pending(j, sock, msg, false);
	kv1_job_free(j);
}

/* Serves what is ready, answering CONTINUE / FINISH per batch. true: the job was handed to the
 * ROUTER thread to be parked (no longer ours); false: it is finished. */
static bool serve(struct kv1_job *j, void *push)
{
	struct kv1_worker *w = j->w;
	struct gb_state *g = j->gb;
	struct kv1_xfer_resp *r = &g->r;
	const char *emsg;
	size_t left, taken;

	for (;;) {
		pthread_mutex_lock(&w->mu);
		left = take_ready_locked(w, g->p, g->m.nreqs, &taken);
		pthread_mutex_unlock(&w->mu);
		if (!taken && left) {
			/* nothing ready: wait parked, on no thread, until kv1_send_ready /
			 * kv1_send_discard marks one of our ids or the deadline passes */
			if (pd_now_ns() >= j->deadline_ns || atomic_load(&w->stop)) {
				finish_pending(j, push, "Timeout waiting for P side ready.",
				               !atomic_load(&w->stop));
				return false;
			}
			return !kv1_park_request(j, push);
		}
		r->nok = r->nerr = 0;
		emsg = NULL;
		write_taken(w, g, r, &emsg);
		r->status = left ? KV1_CONTINUE : KV1_FINISH;
		r->has_ok = r->nok > 0;
		r->has_err = r->nerr > 0;
		r->err_msg = (char *)emsg;
		send_resp(j, push, r);
		if (!left)
			return false;
	}
}

/* B2 / Bn with KV-cache groups: D's buffers matched by position (those shapes carry no layer
 * names), each region moving its buffer's group (our own group of that buffer). */
static int identity_regions(const struct kv1_worker *w, struct gb_state *g)
{
	size_t n = g->m.nbases < (size_t)w->o.nbufs ? g->m.nbases : (size_t)w->o.nbufs;
	int64_t bl = (int64_t)w->o.block_len;

	g->xr = calloc(n + 1, sizeof(*g->xr));
	if (!g->xr)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		g->xr[i] = (struct kv1_xregion){(int)i, w->grp[i], g->m.bases[i], bl, 0, 0, bl};
	g->nxr = n;
	return 0;
}

/* Decodes and checks the handshake into j->gb. false: answered with ERROR. */
static bool admit(struct kv1_job *j, void *push)
{
	struct kv1_worker *w = j->w;
	struct gb_state *g = calloc(1, sizeof(*g));
	char err[512], msg[600];

	if (!g)
		return false;
	if (kv1_xfer_meta_decode(j->payload, j->len, shape_of(w), &g->m, err, sizeof(err))) {
		free(g);
		atomic_fetch_add(&w->rejected, 1);
		pd_err("%s", err);
		kv1_wire_err_to_msgspec(err, msg, sizeof(msg));
		send_error(j, push, msg);
		return false;
	}
	j->gb = g;
	free(j->payload); /* decoded: a parked handshake keeps only its decoded form */
	j->payload = NULL;
	j->len = 0;
	if (!kv1_genb_paired(w, &g->m, msg, sizeof(msg)) ||
	    (shape_of(w) >= KV1_SHAPE_BL ? kv1_bl_plan(w, &g->m, &g->xr, &g->nxr, msg, sizeof(msg))
	                                 : !lens_match(w, &g->m, msg, sizeof(msg)))) {
		atomic_fetch_add(&w->rejected, 1);
		send_error(j, push, msg);
		return false;
	}
	if (!g->xr && w->o.kv_groups > 1 && identity_regions(w, g))
		return false;
	g->p = calloc(g->m.nreqs ? g->m.nreqs : 1, sizeof(*g->p));
	g->r.ok = calloc(g->m.nreqs + 1, sizeof(char *));
	g->r.err = calloc(g->m.nreqs + 1, sizeof(char *));
	if (!g->p || !g->r.ok || !g->r.err)
		return false;
	for (size_t i = 0; i < g->m.nreqs; i++)
		g->p[i].rb = &g->m.reqs[i];
	/* resolve_need_send: every D rank paired with us reads each entry once, times D's PP
	 * stages when they differ from ours */
	g->need = 1;
	if (w->o.tp_topology) {
		int t[KV1_MAX_TP_TARGETS];

		g->need = kv1_tp_targets(w->o.tp_rank, w->o.tp_size, (int)g->m.remote_tp_size, t,
		                         KV1_MAX_TP_TARGETS);
	}
	/* resolve_need_send: every consumer PP stage pulls every producer stage when the PP
	 * sizes differ (mooncake_connector.py @ 00f4240e) */
	if (shape_of(w) >= KV1_SHAPE_BL && g->m.remote_pp_size > 1 &&
	    g->m.remote_pp_size != kv1_pp_size(&w->o))
		g->need *= (int)g->m.remote_pp_size;
	j->deadline_ns = pd_now_ns() + (uint64_t)w->o.abort_timeout_s * 1000000000ull;
	return true;
}

static void kv1_genb_handle(struct kv1_job *j, void *push)
{
	struct kv1_worker *w = j->w;

	while (j) {
		/* a parked job comes back here with its state when one of its ids is ready */
		if ((j->gb || admit(j, push)) && serve(j, push))
			j = NULL; /* parked: the ROUTER thread owns it now */
		if (j)
			kv1_job_free(j);
		/* this thread's slot goes to the next woken handshake, if any */
		j = kv1_park_pop(w);
	}
}

const struct kv1_park_ops kv1_genb_park_ops = {
    .handle = kv1_genb_handle,
    .state_free = kv1_genb_state_free,
    .waits_on = kv1_genb_waits_on,
    .runnable_locked = kv1_genb_runnable_locked,
    .expire = kv1_genb_expire,
    .refuse = kv1_genb_refuse,
};

/* ------------------------------------------------------------------ consumer */

/* The P tp ranks paired with ours (without TP topology: tp_rank % P.tp; with it vLLM's
 * handshake_target_ranks), their worker_addr from the (cached) /query answer; *naddr of them. */
static int lookup(struct kv1_worker *w, const char *boot, const char *engine_id,
                  char (*addr)[KV1_BOOT_ADDR_MAX + 1], int *naddr, char *err, size_t errsz)
{
	const struct kv1_boot_engine *e = NULL;
	int ret = 0, t[KV1_MAX_PULLS];

	*naddr = 0;
	pthread_mutex_lock(&w->bmu);
	for (int pass = 0; pass < 2 && !e; pass++) {
		if (pass || strcmp(w->boot_cached, boot)) {
			char qerr[512];

			kv1_boot_table_free(&w->boot);
			w->boot_cached[0] = 0;
			if (kv1_boot_query(boot, 5000, &w->boot, qerr, sizeof(qerr))) {
				kv1_set_err(err, errsz,
				            "Failed to connect to bootstrap server %s: %s", boot,
				            qerr);
				ret = -EIO;
				break;
			}
			snprintf(w->boot_cached, sizeof(w->boot_cached), "%s", boot);
		}
		e = kv1_boot_find(&w->boot, engine_id);
	}
	if (!ret && !e) {
		kv1_set_err(err, errsz,
		            "Failed to find remote engine_id %s from bootstrap server %s",
		            engine_id, boot);
		ret = -ENOENT;
	}
	if (!ret && w->o.tp_topology && e->ntp) {
		int n = kv1_tp_targets(w->o.tp_rank, w->o.tp_size, e->ntp, t, KV1_MAX_PULLS);

		if (!n) {
			kv1_set_err(
			    err, errsz,
			    "TP sizes %d (decode) and %d (prefill %s) do not divide one another",
			    w->o.tp_size, e->ntp, engine_id);
			ret = -EINVAL;
		}
		*naddr = n;
	} else if (!ret) {
		t[0] = e->ntp ? w->o.tp_rank % e->ntp : 0;
		*naddr = 1;
	}
	/* PP (receive_kv, mooncake_connector.py @ 00f4240e): our PP size is 1, so a tp rank with
	 * one pp rank 0 is pulled from it alone, else from every pp rank in order (each writes
	 * the layers it owns) */
	int n = 0;

	for (int i = 0; !ret && i < *naddr; i++) {
		if (!e->ntp || t[i] >= e->ntp || !e->npp[t[i]]) {
			kv1_set_err(err, errsz, "bootstrap server %s: engine %s has no tp rank %d",
			            boot, engine_id, t[i]);
			ret = -ENOENT;
			break;
		}
		for (int p = 0; p < KV1_QUERY_MAX_PP; p++) {
			const char *a = e->pp_addr[t[i] * KV1_QUERY_MAX_PP + p];

			if (!a)
				continue;
			if (n == KV1_MAX_PULLS) {
				kv1_set_err(
				    err, errsz,
				    "bootstrap server %s: engine %s: more than %d P workers "
				    "to pull from",
				    boot, engine_id, KV1_MAX_PULLS);
				ret = -E2BIG;
				break;
			}
			snprintf(addr[n++], KV1_BOOT_ADDR_MAX + 1, "%s", a);
		}
	}
	*naddr = ret ? 0 : n;
	pthread_mutex_unlock(&w->bmu);
	return ret;
}

/* err_msg of a failed request that P gives before writing any of it (write_taken,
 * finish_pending): its blocks need no hold. */
static bool never_written(const char *msg)
{
	static const char *const pre[] = {"Timeout waiting for P side ready.",
	                                  "P num blocks less than D", "KV group count mismatch",
	                                  "P side finished the request without sending its KV"};

	for (size_t i = 0; msg && i < sizeof(pre) / sizeof(pre[0]); i++)
		if (!strncmp(msg, pre[i], strlen(pre[i])))
			return true;
	return false;
}

/* Waits for FINISH / ERROR; 0 when req_id is in ok_reqs. Else *hold: 0 when P cannot write the
 * blocks any more, 1 when it answered but a WRITE may be in flight, 2 when it did not answer. */
static int await(struct kv1_worker *w, void *s, const char *req_id, char *err, size_t errsz,
                 int *hold)
{
	bool ok = false;

	*hold = 1;

	for (;;) {
		zmq_msg_t msg;
		struct kv1_xfer_resp r;
		char derr[300];
		int st;

		zmq_msg_init(&msg);
		/* pd_tsan.h: the peer's WRITEs into our blocks came before this reply */
		if (pd_tsan_recv_rc(zmq_msg_recv(&msg, s, 0)) < 0) {
			int e = zmq_errno();

			zmq_msg_close(&msg);
			kv1_set_err(err, errsz, "pulling kv_caches for %s failed: %s", req_id,
			            e == EAGAIN
			                ? "no MooncakeXferResponse within the receive timeout"
			                : zmq_strerror(e));
			*hold = 2;
			if (e == EAGAIN)
				atomic_fetch_add(&w->recv_no_answer, 1);
			return e == EAGAIN ? -ETIMEDOUT : -EIO;
		}
		st = kv1_xfer_resp_decode(zmq_msg_data(&msg), zmq_msg_size(&msg), &r, derr,
		                          sizeof(derr));
		zmq_msg_close(&msg);
		if (st) {
			kv1_set_err(err, errsz, "pulling kv_caches for %s failed: %s", req_id,
			            derr);
			*hold = 2;
			return -EIO;
		}
		for (size_t i = 0; i < r.nok; i++)
			if (!strcmp(r.ok[i], req_id))
				ok = true;
		for (size_t i = 0; i < r.nerr; i++)
			if (!strcmp(r.err[i], req_id)) {
				kv1_set_err(err, errsz,
				            "Error happens during tranfering kvcache for %s: %s",
				            req_id, r.err_msg ? r.err_msg : "(no err_msg)");
				*hold = never_written(r.err_msg) ? 0 : 1;
				if (r.err_msg &&
				    !strcmp(r.err_msg, "Timeout waiting for P side ready."))
					atomic_fetch_add(&w->recv_p_timeouts, 1);
				kv1_xfer_resp_free(&r);
				return -EIO;
			}
		st = r.status;
		if (st == KV1_ERROR)
			kv1_set_err(err, errsz,
			            "Error happens during tranfering kvcache for %s: %s", req_id,
			            r.err_msg ? r.err_msg : "(no err_msg)");
		kv1_xfer_resp_free(&r);
		if (st == KV1_ERROR)
			return -EIO;
		if (st == KV1_FINISH)
			break;
	}
	if (!ok)
		kv1_set_err(err, errsz,
		            "pulling kv_caches for %s failed: FINISH without the request", req_id);
	return ok ? 0 : -EIO;
}

/* One handshake with the P worker at addr: sends buf, awaits its answers. */
static int pull_one(struct kv1_worker *w, const char *addr, const char *buf, size_t len, int tmo,
                    const char *transfer_id, const char *req_id, const int64_t *ids, size_t n,
                    char *err, size_t errsz)
{
	int ret, hold = 0;
	void *s;

	ret = kv1_rhold_room(w, addr, pd_now_ns() + (uint64_t)tmo * 1000000ull, err, errsz);
	if (ret)
		return ret;
	kv1_landed_reset(w, ids, n); /* the hold's early end counts this transfer's bytes only */
	s = kv1_zsock(w, ZMQ_DEALER, tmo);
	PD_TSAN_WIRE_SEND();
	if (!s || zmq_connect(s, addr) || zmq_send(s, buf, len, 0) < 0) {
		kv1_set_err(err, errsz, "MooncakeXferMetadata transfer failed for %s: %s: %s",
		            req_id, addr, zmq_strerror(zmq_errno()));
		ret = -EIO; /* not sent: P never saw the blocks */
	} else {
		ret = await(w, s, req_id, err, errsz, &hold);
		if (ret && hold) {
			char why[160];

			snprintf(why, sizeof(why), "transfer %.64s: %s", transfer_id,
			         ret == -ETIMEDOUT ? "no answer" : "error");
			kv1_rhold_add(w, ids, n, addr, why, hold == 1);
		}
	}
	if (s)
		zmq_close(s);
	return ret;
}

int kv1_recv_b(struct kv1_worker *w, const char *bootstrap_addr, const char *engine_id,
               const char *transfer_id, const char *req_id, const int64_t *ids, size_t n, char *err,
               size_t errsz)
{
	return kv1_recv_b_g(w, bootstrap_addr, engine_id, transfer_id, req_id, ids, n, &n, 1, err,
	                    errsz);
}

/* Bytes a receive of gcnt[g] blocks per group lands: each buffer its group's blocks. */
static uint64_t recv_bytes(const struct kv1_worker *w, const size_t *gcnt, size_t ng)
{
	uint64_t b = 0;

	for (int i = 0; i < w->o.nbufs; i++)
		b += (uint64_t)gcnt[ng > 1 ? w->grp[i] : 0] * w->o.block_len;
	return b;
}

int kv1_recv_b_g(struct kv1_worker *w, const char *bootstrap_addr, const char *engine_id,
                 const char *transfer_id, const char *req_id, const int64_t *ids, size_t n,
                 const size_t *gcnt, size_t ng, char *err, size_t errsz)
{
	uint64_t bases[KV1_MAX_BUFS];
	int64_t lens[KV1_MAX_BUFS];
	struct kv1_ids bl[KV1_MAX_KV_GROUPS];
	struct kv1_req_blocks rb = {(char *)req_id, (char *)transfer_id, bl, ng};
	size_t sum = 0;

	for (size_t g = 0; g < ng && ng <= KV1_MAX_KV_GROUPS; sum += gcnt[g], g++)
		bl[g] = (struct kv1_ids){(int64_t *)ids + sum, gcnt[g]};
	if (!ng || ng > KV1_MAX_KV_GROUPS || sum != n ||
	    (ng > 1 && (shape_of(w) < KV1_SHAPE_B2 || (int)ng != w->o.kv_groups))) {
		kv1_set_err(err, errsz,
		            "kv1: %zu block lists (%zu ids) for a worker with %d KV-cache groups",
		            ng, n, w->o.kv_groups);
		return -EINVAL;
	}
	struct kv1_xfer_meta m;
	char(*addr)[KV1_BOOT_ADDR_MAX + 1] = calloc(KV1_MAX_PULLS, KV1_BOOT_ADDR_MAX + 1);
	char host[128], *buf = NULL;
	int rport = 0, ret, tmo, naddr = 0;
	size_t len;

	if (!addr) {
		kv1_set_err(err, errsz, "out of memory");
		return -ENOMEM;
	}
	ret = lookup(w, bootstrap_addr, engine_id, addr, &naddr, err, errsz);
	if (ret) {
		free(addr);
		return ret;
	}
	for (int i = 0; i < w->o.nbufs; i++) {
		bases[i] = (uint64_t)(uintptr_t)w->bufs[i];
		lens[i] = (int64_t)w->o.block_len;
	}
	pd_split_hostport(w->seg, host, sizeof(host), &rport);
	m = (struct kv1_xfer_meta){.remote_hostname = w->ip,
	                           .remote_port = rport,
	                           .remote_tp_size = w->o.tp_size,
	                           .remote_tp_rank = w->o.tp_rank,
	                           .reqs = &rb,
	                           .nreqs = 1,
	                           .bases = bases,
	                           .nbases = (size_t)w->o.nbufs,
	                           .block_lens = lens,
	                           .nblock_lens = (size_t)w->o.nbufs,
	                           .kv_block_lens = lens,
	                           .nkv_block_lens = (size_t)w->o.nbufs,
	                           .remote_pp_size = 1};
	ret = shape_of(w) >= KV1_SHAPE_BL ? kv1_bl_layers(w, &m) : 0;
	if (ret || kv1_xfer_meta_encode(&m, shape_of(w), &buf, &len)) {
		kv1_set_err(err, errsz, "cannot encode MooncakeXferMetadata");
		kv1_bl_layers_free(&m);
		free(addr);
		return -EINVAL;
	}
	kv1_bl_layers_free(&m);
	pd_dbg("Size of encoded MooncakeXferMetadata: %zu bytes", len);
	tmo = w->o.recv_timeout_ms > 0 ? w->o.recv_timeout_ms
	      : w->o.d_fail_report     ? (w->o.abort_timeout_s + 60) * 1000
	                               : 60000;
	/* one pull per paired P worker (several when P.tp > D.tp, each writing its heads, or
	 * when P runs PP, each stage writing its layers) */
	for (int i = 0; !ret && i < naddr; i++)
		ret = pull_one(w, addr[i], buf, len, tmo, transfer_id, req_id, ids, n, err, errsz);
	if (!ret)
		atomic_fetch_add(&w->bytes_recv, recv_bytes(w, gcnt, ng));
	free(buf);
	free(addr);
	return ret;
}
