/* SPDX-License-Identifier: Apache-2.0 */
/* te_rdma: the RDMA transport (te_rdma_transport_ops) — registration, descriptor fields
 * (devices, keys, priority matrix), slicing, one worker per device posting one-sided
 * READ/WRITE and polling the CQ, retries over fresh endpoints (docs/rdma.md). */
#include "te_rdma.h"
#include "te_rdma_stats.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pd_log.h"
#include "pd_util.h"
#include "te_engine_priv.h"

/* ---------------------------------------------------------------- registration */

static int rdma_register(struct te_transport *t, void *addr, size_t len, const char *location,
                         struct te_buffer_desc *b)
{
	struct te_rdma *tr = (struct te_rdma *)t;
	struct te_rdma_mr *m;
	int rc = te_rdma_reg(tr, addr, len, &m);

	if (rc)
		return rc;
	pthread_rwlock_wrlock(&tr->mr_lock);
	m->next = tr->mrs;
	tr->mrs = m;
	pthread_rwlock_unlock(&tr->mr_lock);
	if (!b->name[0])
		snprintf(b->name, sizeof(b->name), "%s", location ? location : "cpu:0");
	b->nkeys = tr->nctx;
	for (int i = 0; i < tr->nctx; i++) {
		b->lkey[i] = m->mr[i]->lkey;
		b->rkey[i] = m->mr[i]->rkey;
	}
	return 0;
}

static int rdma_unregister(struct te_transport *t, void *addr, size_t len)
{
	struct te_rdma *tr = (struct te_rdma *)t;
	struct te_rdma_mr *m = NULL;

	(void)len;
	pthread_rwlock_wrlock(&tr->mr_lock);
	for (struct te_rdma_mr **pp = &tr->mrs; *pp; pp = &(*pp)->next)
		if ((*pp)->addr == (uintptr_t)addr) {
			m = *pp;
			*pp = m->next;
			break;
		}
	pthread_rwlock_unlock(&tr->mr_lock);
	if (!m)
		return TE_ERR_ADDRESS_NOT_REGISTERED;
	te_rdma_dereg(m);
	return 0;
}

/* Copies the per-context lkeys of the MR holding [addr, addr+len). */
static int local_keys(struct te_rdma *tr, uintptr_t addr, size_t len, uint32_t *lkey)
{
	int rc = TE_ERR_ADDRESS_NOT_REGISTERED;

	pthread_rwlock_rdlock(&tr->mr_lock);
	for (struct te_rdma_mr *m = tr->mrs; m; m = m->next)
		if (addr >= m->addr && len <= m->len && addr - m->addr <= m->len - len) {
			for (int i = 0; i < tr->nctx; i++)
				lkey[i] = m->mr[i]->lkey;
			rc = 0;
			break;
		}
	pthread_rwlock_unlock(&tr->mr_lock);
	return rc;
}

/* ---------------------------------------------------------------- descriptor */

static int rdma_fill_desc(struct te_transport *t, struct te_segment_desc *d)
{
	struct te_rdma *tr = (struct te_rdma *)t;
	DIR *dir = opendir("/sys/devices/system/node");
	const char *nic[TE_MAX_DEVICES], **extra = NULL;
	int numa[TE_MAX_DEVICES], node[256], nnode = 0;
	struct dirent *de;

	d->ndevices = tr->nctx;
	for (int i = 0; i < tr->nctx; i++) {
		snprintf(d->devices[i].name, sizeof(d->devices[i].name), "%s", tr->ctxs[i].name);
		d->devices[i].lid = tr->ctxs[i].lid;
		memcpy(d->devices[i].gid, tr->ctxs[i].gid_str, sizeof(d->devices[i].gid));
		nic[i] = tr->ctxs[i].name;
		numa[i] = tr->ctxs[i].numa;
	}
	while (dir && (de = readdir(dir)) && nnode < (int)PD_ARRAY_SIZE(node))
		if (!strncmp(de->d_name, "node", 4) && de->d_name[4] >= '0' && de->d_name[4] <= '9')
			node[nnode++] = atoi(de->d_name + 4);
	if (dir)
		closedir(dir);
	if (d->nbuffers > 0 && !(extra = calloc((size_t)d->nbuffers, sizeof(*extra))))
		return TE_ERR_MEMORY;
	for (int i = 0; i < d->nbuffers; i++)
		extra[i] = d->buffers[i].name;
	free(d->priority_matrix);
	d->priority_matrix =
	    te_rdma_matrix_json(nic, numa, tr->nctx, node, nnode, extra, d->nbuffers);
	free(extra);
	return d->priority_matrix ? 0 : TE_ERR_MEMORY;
}

/* Remote NIC candidates for buffer location loc from the peer's matrix (preferred, else
 * available), as indices into peer->devices (the safe reading rule of docs/rdma.md). */
static int remote_candidates(const struct te_segment_desc *p, const char *loc, uint8_t *cand)
{
	cJSON *m = p->priority_matrix ? cJSON_Parse(p->priority_matrix) : NULL;
	cJSON *e = m ? cJSON_GetObjectItem(m, loc) : NULL, *it;
	int n = 0;

	if (!e && m)
		e = cJSON_GetObjectItem(m, "*");
	for (int list = 0; list < 2 && n == 0 && cJSON_IsArray(e); list++)
		cJSON_ArrayForEach(it, cJSON_GetArrayItem(e, list))
		{
			const char *name = cJSON_GetStringValue(it);

			for (int i = 0; name && i < p->ndevices && n < TE_MAX_DEVICES; i++)
				if (!strcmp(p->devices[i].name, name))
					cand[n++] = (uint8_t)i;
		}
	cJSON_Delete(m);
	for (int i = 0; n == 0 && i < p->ndevices; i++)
		cand[i] = (uint8_t)i;
	return n ? n : p->ndevices;
}

/* ---------------------------------------------------------------- slices and workers */

static void enqueue(struct te_rdma_ctx *c, struct te_rdma_slice *s)
{
	s->next = NULL;
	pthread_mutex_lock(&c->mu);
	if (c->q_tail)
		c->q_tail->next = s;
	else
		c->q_head = s;
	c->q_tail = s;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* The first context from start on whose port is up (start itself when every one is down). */
static int pick_ctx(struct te_rdma *tr, unsigned start)
{
	for (int k = 0; k < tr->nctx; k++) {
		int i = (int)((start + (unsigned)k) % (unsigned)tr->nctx);

		if (!atomic_load(&tr->ctxs[i].down))
			return i;
	}
	return (int)(start % (unsigned)tr->nctx);
}

/* s leaves context `from` for another (its device went down, or an attempt failed there) */
static void slice_move(struct te_rdma *tr, struct te_rdma_slice *s, int from, int to)
{
	if (to != from) {
		atomic_fetch_add(&tr->ctxs[from].st_moved_out, 1);
		s->moved_from = from;
	}
	s->lctx = to;
	enqueue(&tr->ctxs[to], s);
}

static void slice_end(struct te_rdma_slice *s, bool ok)
{
	te_task_slice_done(s->task, ok ? s->len : 0, ok);
	free(s);
}

/* A failed attempt: retry on the next (local, remote) NIC pair, or fail after MC_RETRY_CNT. */
static void slice_retry(struct te_rdma *tr, struct te_rdma_slice *s, const char *why)
{
	const struct te_segment_desc *p = s->task->peer;
	struct te_rdma_ctx *c = &tr->ctxs[s->lctx];

	s->ep = NULL;
	if (++s->retries >= tr->cfg.retry_cnt) {
		const char *hint =
		    s->last_wc == IBV_WC_REM_ACCESS_ERR || s->last_wc == IBV_WC_REM_INV_REQ_ERR
		        ? "the peer rejected the remote key/range: its buffer was unregistered or "
		          "re-registered since its descriptor was fetched (te_sync_segment / "
		          "reopen)"
		        : "check that the two NICs reach each other (ping the GIDs' IPv4 "
		          "addresses, "
		          "same subnet/VLAN, MTU, MC_GID_INDEX on both sides)";

		if (atomic_load(&s->task->failed_slices) == 0)
			pd_err("rdma: transfer of %u bytes %s %s failed after %d attempts: %s "
			       "(local %s GID %s, peer %s@%s GID %s); %s",
			       s->len, s->task->req.opcode == TE_READ ? "from" : "to", p->name,
			       s->retries, why, c->name, c->gid_str, p->name,
			       p->devices[s->rdev].name, p->devices[s->rdev].gid, hint);
		slice_end(s, false);
		return;
	}
	pd_dbg("rdma: slice retry %d: %s", s->retries, why);
	slice_move(tr, s, s->lctx, pick_ctx(tr, (unsigned)s->lctx + 1));
}

/* Posts s on ep; false if the endpoint has no free send slot (caller keeps s queued). */
static int post_slice(struct te_rdma_ctx *c, struct te_rdma_ep *ep, struct te_rdma_slice *s,
                      char *why, size_t whylen)
{
	const struct te_rdma_cfg *cfg = &c->tr->cfg;
	struct ibv_sge sge = {.addr = s->local, .length = s->len, .lkey = s->lkey[c->index]};
	struct ibv_send_wr wr = {0}, *bad;
	int q = -1, rc;

	for (int k = 0; k < ep->nqp; k++) {
		int i = (int)((ep->rr + k) % ep->nqp);

		if (ep->qp_outstanding[i] < cfg->max_wr) {
			q = i;
			break;
		}
	}
	if (q < 0)
		return 1;
	ep->rr++;
	wr.wr_id = (uintptr_t)s;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = s->task->req.opcode == TE_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = s->remote;
	wr.wr.rdma.rkey = s->rb->rkey[s->rdev];
	rc = ibv_post_send(ep->qp[q], &wr, &bad);
	if (rc) {
		snprintf(why, whylen, "ibv_post_send on %s: %s", c->name, strerror(rc));
		return -1;
	}
	if (ep->outstanding == 0)
		ep->progress_ns = pd_now_ns();
	s->ep = ep;
	s->qp_idx = q;
	ep->qp_outstanding[q]++;
	ep->outstanding++;
	c->outstanding++;
	return 0;
}

static void free_dead(struct te_rdma_ctx *c, bool all)
{
	for (struct te_rdma_ep **pp = &c->dead; *pp;) {
		struct te_rdma_ep *ep = *pp;

		if (ep->outstanding == 0 || all) {
			*pp = ep->next;
			te_rdma_ep_free(ep);
		} else {
			pp = &ep->next;
		}
	}
}

/* Rails (docs/rdma.md): when some but not all of the remote candidates sit in this device's
 * IPv4 subnet, the slice goes to those (multi-rail fabrics: NIC i reaches the peer's NIC i, not
 * necessarily the others; ib_write_bw per device pair measures the same). After a failure on
 * every local device the other candidates are tried too. -1 = no rail rule applies. */
static int rail_pick(struct te_rdma_ctx *c, const struct te_rdma_slice *s)
{
	const struct te_segment_desc *p = s->task->peer;
	int same[TE_MAX_DEVICES], ns = 0;

	if (!c->mask4 || s->retries >= c->tr->nctx)
		return -1;
	for (int k = 0; k < s->ncand; k++) {
		union ibv_gid g;
		uint32_t ip;

		if (te_rdma_gid_parse(p->devices[s->cand[k]].gid, &g) || g.raw[10] != 0xff ||
		    g.raw[11] != 0xff)
			return -1; /* not IPv4-mapped: no subnet to compare */
		ip = (uint32_t)g.raw[12] << 24 | (uint32_t)g.raw[13] << 16 |
		     (uint32_t)g.raw[14] << 8 | g.raw[15];
		if ((ip & c->mask4) == (c->ip4 & c->mask4))
			same[ns++] = s->cand[k];
	}
	if (ns == 0 || ns == s->ncand)
		return -1;
	return same[(s->idx + (unsigned)s->retries) % (unsigned)ns];
}

/* This device's IPv4 from its GID and the netmask of the interface holding that address. */
static void rail_init(struct te_rdma_ctx *c)
{
	struct ifaddrs *ifa = NULL;
	const uint8_t *r = c->gid.raw;

	if (r[10] != 0xff || r[11] != 0xff || getifaddrs(&ifa))
		return;
	c->ip4 = (uint32_t)r[12] << 24 | (uint32_t)r[13] << 16 | (uint32_t)r[14] << 8 | r[15];
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_netmask)
			continue;
		if (ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr) == c->ip4) {
			c->mask4 = ntohl(((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr);
			break;
		}
	}
	freeifaddrs(ifa);
}

/* Posts what fits from *pending, in order, stopping at the first slice that has no free send
 * slot (the rest wait for completions); returns how many were posted or ended. */
static int post_pending(struct te_rdma_ctx *c, struct te_rdma_slice **pending)
{
	struct te_rdma *tr = c->tr;
	const struct te_segment_desc *last_peer = NULL;
	struct te_rdma_ep *ep = NULL;
	struct te_rdma_slice *s;
	int last_rdev = -1, done = 0;
	char why[512];

	while ((s = *pending) && c->outstanding < c->cq_depth) {
		int rc = 1;

		s->rdev = rail_pick(c, s);
		if (s->rdev < 0)
			s->rdev = s->cand[(s->idx + (unsigned)s->retries) % s->ncand];
		if (!ep || s->task->peer != last_peer || s->rdev != last_rdev) {
			ep = te_rdma_ep_get(c, s->task->peer, s->rdev, why, sizeof(why));
			last_peer = s->task->peer;
			last_rdev = s->rdev;
		}
		if (!ep) {
			*pending = s->next;
			done++;
			slice_retry(tr, s, why);
			continue;
		}
		pthread_mutex_lock(&c->mu);
		if (ep->state == EP_CONNECTED)
			rc = post_slice(c, ep, s, why, sizeof(why));
		else
			rc = -1, snprintf(why, sizeof(why), "endpoint %s was reset", ep->peer_path);
		if (rc == 0 && tr->cfg.fault_reset &&
		    ++c->posted % (unsigned)tr->cfg.fault_reset == 0) {
			pd_info("rdma: %s -> %s: resetting the endpoint after WR %lu "
			        "(PDKV_RDMA_FAULT_RESET=%d)",
			        c->name, ep->peer_path, c->posted, tr->cfg.fault_reset);
			te_rdma_ep_kill(ep); /* its WRs come back flushed and are retried */
			ep = NULL;           /* the next slice handshakes a fresh one */
		}
		pthread_mutex_unlock(&c->mu);
		if (rc > 0)
			break; /* endpoint full: wait for completions */
		*pending = s->next;
		done++;
		if (rc < 0) {
			ep = NULL;
			slice_retry(tr, s, why);
		}
	}
	return done;
}

static int poll_cq(struct te_rdma_ctx *c)
{
	struct ibv_wc wc[64];
	int n = ibv_poll_cq(c->cq, 64, wc);

	for (int i = 0; i < n; i++) {
		struct te_rdma_slice *s = (struct te_rdma_slice *)(uintptr_t)wc[i].wr_id;
		struct te_rdma_ep *ep = s->ep;
		char why[256];

		pthread_mutex_lock(&c->mu);
		ep->qp_outstanding[s->qp_idx]--;
		ep->outstanding--;
		ep->progress_ns = pd_now_ns();
		c->outstanding--;
		if (wc[i].status != IBV_WC_SUCCESS && ep->state == EP_CONNECTED) {
			/* tear the endpoint down; the next attempt handshakes a fresh one */
			pd_warn("rdma: %s -> %s: completion error %s (vendor 0x%x); resetting the "
			        "endpoint",
			        c->name, ep->peer_path, ibv_wc_status_str(wc[i].status),
			        wc[i].vendor_err);
			te_rdma_ep_kill(ep);
		}
		pthread_mutex_unlock(&c->mu);
		if (wc[i].status == IBV_WC_SUCCESS) {
			atomic_fetch_add(&c->st_bytes, s->len);
			atomic_fetch_add(&c->st_slices, 1);
			if (s->moved_from >= 0 && s->moved_from != c->index)
				atomic_fetch_add(&c->st_moved_in, 1);
			slice_end(s, true);
		} else {
			snprintf(why, sizeof(why), "completion status %s",
			         ibv_wc_status_str(wc[i].status));
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				s->last_wc = wc[i].status;
			slice_retry(c->tr, s, why);
		}
	}
	return n < 0 ? 0 : n;
}

/* Sleeps up to 1 ms for a completion event (new slices wait at most that long). Spinning
 * instead starves the NIC's own processing on small hosts (Soft-RoCE runs in the kernel). */
static void wait_cq(struct te_rdma_ctx *c)
{
	struct pollfd pfd = {.fd = c->chan->fd, .events = POLLIN};
	struct ibv_cq *cq;
	void *cq_ctx;

	if (!c->cq_armed) {
		if (ibv_req_notify_cq(c->cq, 0))
			return;
		c->cq_armed = 1;
		return; /* the caller polls once more: a completion may predate the arming */
	}
	if (poll(&pfd, 1, 1) == 1 && ibv_get_cq_event(c->chan, &cq, &cq_ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		c->cq_armed = 0;
	}
}

/* Resets endpoints whose WRs made no progress for cfg.stall_ms (checked every 100 ms). */
static void check_stalls(struct te_rdma_ctx *c)
{
	uint64_t now = pd_now_ns(), lim = (uint64_t)c->tr->cfg.stall_ms * 1000000ull;

	if (c->outstanding == 0 || now - c->stall_scan_ns < 100000000ull)
		return;
	c->stall_scan_ns = now;
	pthread_mutex_lock(&c->mu);
	for (struct te_rdma_ep *ep = c->eps, *next; ep; ep = next) {
		next = ep->next;
		if (ep->outstanding > 0 && now - ep->progress_ns > lim) {
			pd_warn(
			    "rdma: %s -> %s: %d WRs without a completion for %d s (peer gone?); "
			    "resetting the endpoint",
			    c->name, ep->peer_path, ep->outstanding, c->tr->cfg.stall_ms / 1000);
			te_rdma_ep_kill(ep);
		}
	}
	pthread_mutex_unlock(&c->mu);
}

/* Every 100 ms: is the port still ACTIVE? Going down: the endpoints are reset (their WRs come
 * back flushed and are retried on another device); while down, the queued slices move to the
 * other devices and new slices skip this one until its port is ACTIVE again. */
static void check_port(struct te_rdma_ctx *c, struct te_rdma_slice **pending)
{
	struct te_rdma *tr = c->tr;
	uint64_t now = pd_now_ns();

	if (tr->nctx < 2)
		return;
	if (now - c->port_scan_ns >= 100000000ull) {
		struct ibv_port_attr pa;
		bool down, was;

		c->port_scan_ns = now;
		down = ibv_query_port(c->ctx, c->port, &pa) == 0 && pa.state != IBV_PORT_ACTIVE;
		was = atomic_exchange(&c->down, down);
		if (down && !was) {
			pd_warn("rdma: %s port %d is %s: its slices move to the other devices",
			        c->name, c->port, ibv_port_state_str(pa.state));
			pthread_mutex_lock(&c->mu);
			while (c->eps)
				te_rdma_ep_kill(c->eps); /* flushed WRs are retried elsewhere */
			pthread_mutex_unlock(&c->mu);
		} else if (!down && was) {
			pd_info("rdma: %s port %d is ACTIVE again: it takes new slices", c->name,
			        c->port);
		}
	}
	if (!atomic_load(&c->down) || pick_ctx(tr, (unsigned)c->index + 1) == c->index)
		return; /* up, or every device down: the slices stay (and retry or fail here) */
	for (;;) {
		struct te_rdma_slice *s = *pending;
		if (s) {
			*pending = s->next;
		} else {
			pthread_mutex_lock(&c->mu);
			if ((s = c->q_head) && !(c->q_head = s->next))
				c->q_tail = NULL;
			pthread_mutex_unlock(&c->mu);
			if (!s)
				break;
		}
		slice_move(tr, s, c->index, pick_ctx(tr, (unsigned)c->index + 1));
	}
}

static void *worker_main(void *arg)
{
	struct te_rdma_ctx *c = arg;
	struct te_rdma_slice *pending = NULL, **tail;
	int idle = 0;

	rail_init(c);

	for (;;) {
		pthread_mutex_lock(&c->mu);
		free_dead(c, false);
		if (!c->stop && !pending && !c->q_head && c->outstanding == 0) {
			struct timespec ts;

			if (c->tr->cfg.busy_poll) { /* PDKV_RDMA_BUSY_POLL: no sleep, no wake-up */
				pthread_mutex_unlock(&c->mu);
				sched_yield();
				pthread_mutex_lock(&c->mu);
			} else {
				pd_deadline_in(&ts, CLOCK_REALTIME, 100);
				pthread_cond_timedwait(&c->cv, &c->mu, &ts);
			}
		}
		if (c->stop) {
			pthread_mutex_unlock(&c->mu);
			break;
		}
		for (tail = &pending; *tail; tail = &(*tail)->next)
			;
		*tail = c->q_head;
		c->q_head = c->q_tail = NULL;
		pthread_mutex_unlock(&c->mu);

		check_stalls(c);
		check_port(c, &pending);
		if (post_pending(c, &pending) + poll_cq(c) > 0) {
			idle = 0;
		} else if (c->tr->cfg.busy_poll) {
			sched_yield();
		} else if (++idle > 16) {
			wait_cq(
			    c); /* WRs in flight: sleep until a completion, leave the CPU to rxe */
			idle = 0;
		}
	}
	/* stopping: end what is queued; WRs in flight are flushed by the QPs' ERR state */
	while (pending) {
		struct te_rdma_slice *s = pending;

		pending = s->next;
		slice_end(s, false);
	}
	pthread_mutex_lock(&c->mu);
	while (c->eps)
		te_rdma_ep_kill(c->eps);
	pthread_mutex_unlock(&c->mu);
	for (int spin = 0; c->outstanding > 0 && spin < 20000; spin++)
		if (!poll_cq(c))
			sched_yield();
	return NULL;
}

/* ---------------------------------------------------------------- submit */

static int rdma_submit(struct te_transport *t, struct te_task *const *tasks, size_t n)
{
	struct te_rdma *tr = (struct te_rdma *)t;
	const size_t ss = tr->cfg.slice_size;
	struct te_rdma_slice **lists;
	int rc = 0;

	lists = calloc(n ? n : 1, sizeof(*lists));
	if (!lists)
		return TE_ERR_MEMORY;
	/* validate and build every slice first: on error nothing has started */
	for (size_t i = 0; i < n && !rc; i++) {
		const struct te_request *r = &tasks[i]->req;
		const struct te_segment_desc *p = tasks[i]->peer;
		const struct te_buffer_desc *rb;
		uint32_t lkey[TE_MAX_DEVICES] = {0};
		uint8_t cand[TE_MAX_DEVICES];
		int ncand;

		if (!p || p->ndevices <= 0) {
			pd_err("rdma: segment %s publishes no RDMA devices", p ? p->name : "?");
			rc = TE_ERR_INVALID_ARGUMENT;
			break;
		}
		rb = te_desc_find_range(p, r->target_offset, r->length);
		if (!rb) {
			pd_err(
			    "rdma: remote range [0x%llx, +%zu) is not inside one buffer of segment "
			    "%s; not posted",
			    (unsigned long long)r->target_offset, r->length, p->name);
			rc = TE_ERR_OUT_OF_RANGE;
			break;
		}
		if (rb->nkeys != p->ndevices) {
			pd_err("rdma: segment %s buffer 0x%llx has %d rkeys for %d devices",
			       p->name, (unsigned long long)rb->addr, rb->nkeys, p->ndevices);
			rc = TE_ERR_INVALID_ARGUMENT;
			break;
		}
		rc = local_keys(tr, (uintptr_t)r->source, r->length, lkey);
		if (rc) {
			pd_err("rdma: local range [%p, +%zu) is not inside one registered buffer",
			       r->source, r->length);
			break;
		}
		ncand = remote_candidates(p, rb->name, cand);
		for (size_t off = 0; off < r->length; off += ss) {
			struct te_rdma_slice *s = calloc(1, sizeof(*s));

			if (!s) {
				rc = TE_ERR_MEMORY;
				break;
			}
			s->task = tasks[i];
			s->rb = rb;
			s->idx = (unsigned)(off / ss);
			s->local = (uintptr_t)r->source + off;
			s->remote = r->target_offset + off;
			s->len = (uint32_t)(r->length - off < ss ? r->length - off : ss);
			s->moved_from = -1;
			s->ncand = (uint8_t)ncand;
			s->last_wc = -1;
			memcpy(s->cand, cand, sizeof(cand));
			memcpy(s->lkey, lkey, sizeof(lkey));
			s->next = lists[i];
			lists[i] = s;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct te_rdma_slice *s = lists[i], *rev = NULL, *next;
		int cnt = 0;

		for (; s; s = next) { /* back to ascending order */
			next = s->next;
			s->next = rev;
			rev = s;
			cnt++;
		}
		if (rc) {
			for (s = rev; s; s = next) {
				next = s->next;
				free(s);
			}
			continue;
		}
		atomic_store(&tasks[i]->slice_count, cnt);
		for (s = rev; s; s = next) {
			next = s->next;
			s->lctx = pick_ctx(tr, __atomic_fetch_add(&tr->rr, 1, __ATOMIC_RELAXED));
			enqueue(&tr->ctxs[s->lctx], s);
		}
	}
	free(lists);
	return rc;
}

/* ---------------------------------------------------------------- install / destroy */

static void rdma_destroy(struct te_transport *t)
{
	struct te_rdma *tr = (struct te_rdma *)t;

	if (!tr)
		return;
	for (int i = 0; i < tr->nctx; i++) {
		struct te_rdma_ctx *c = &tr->ctxs[i];

		if (!c->worker_started)
			continue;
		pthread_mutex_lock(&c->mu);
		c->stop = true;
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->worker, NULL);
	}
	for (int i = 0; i < tr->nctx; i++) {
		struct te_rdma_ctx *c = &tr->ctxs[i];

		while (c->q_head) { /* slices retried onto a stopped worker */
			struct te_rdma_slice *s = c->q_head;

			c->q_head = s->next;
			slice_end(s, false);
		}
		while (c->eps)
			te_rdma_ep_kill(c->eps);
		free_dead(c, true);
	}
	while (tr->mrs) {
		struct te_rdma_mr *m = tr->mrs;

		tr->mrs = m->next;
		te_rdma_dereg(m);
	}
	for (int i = 0; i < tr->nctx; i++) {
		te_rdma_close_ctx(&tr->ctxs[i]);
		pthread_mutex_destroy(&tr->ctxs[i].mu);
		pthread_cond_destroy(&tr->ctxs[i].cv);
	}
	pthread_rwlock_destroy(&tr->mr_lock);
	free(tr);
}

static int rdma_install(struct te_engine *eng, struct te_transport **out)
{
	struct te_rdma *tr = calloc(1, sizeof(*tr));
	int rc;

	if (!tr)
		return TE_ERR_MEMORY;
	tr->eng = eng;
	pthread_rwlock_init(&tr->mr_lock, NULL);
	te_rdma_cfg_load(&tr->cfg);
	rc = te_rdma_open_devices(tr, te_engine_device_names(eng));
	for (int i = 0; !rc && i < tr->nctx; i++) {
		rc = pthread_create(&tr->ctxs[i].worker, NULL, worker_main, &tr->ctxs[i]);
		if (rc) {
			pd_err("rdma: cannot start the worker for %s: %s", tr->ctxs[i].name,
			       strerror(rc));
			rc = TE_ERR_CONTEXT;
		} else {
			tr->ctxs[i].worker_started = true;
		}
	}
	if (rc) {
		rdma_destroy((struct te_transport *)tr);
		return rc;
	}
	*out = (struct te_transport *)tr;
	return 0;
}

static char *rdma_on_connection(struct te_transport *t, const char *json, size_t len)
{
	return te_rdma_on_connection((struct te_rdma *)t, json, len);
}

const struct te_transport_ops te_rdma_transport_ops = {
    .name = "rdma",
    .install = rdma_install,
    .register_mem = rdma_register,
    .unregister_mem = rdma_unregister,
    .fill_desc = rdma_fill_desc,
    .submit = rdma_submit,
    .on_connection = rdma_on_connection,
    .destroy = rdma_destroy,
};

/* te_rdma_stats.h */
int te_rdma_device_stats(struct te_engine *eng, struct te_rdma_dev_stat *out, int max)
{
	struct te_rdma *tr;
	int n = 0;

	if (!eng || eng->ops != &te_rdma_transport_ops || !eng->tp)
		return 0;
	tr = (struct te_rdma *)eng->tp;
	for (int i = 0; i < tr->nctx && n < max; i++, n++) {
		struct te_rdma_ctx *c = &tr->ctxs[i];

		snprintf(out[n].name, sizeof(out[n].name), "%s", c->name);
		out[n].bytes = atomic_load(&c->st_bytes);
		out[n].slices = atomic_load(&c->st_slices);
		out[n].moved_in = atomic_load(&c->st_moved_in);
		out[n].moved_out = atomic_load(&c->st_moved_out);
		out[n].down = atomic_load(&c->down);
	}
	return n;
}
