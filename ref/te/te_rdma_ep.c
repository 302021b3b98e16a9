/* SPDX-License-Identifier: Apache-2.0 */
/* te_rdma_ep: RDMA endpoints — RC QPs per (local NIC, peer NIC path), QP state changes with the
 * attributes of docs/rdma.md, and both sides of the Connection handshake of docs/handshake.md. */
#include "te_rdma.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"

static int qp_to_init(struct te_rdma_ctx *c, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT,
	    .pkey_index = 0,
	    .port_num = c->port,
	    .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
	                       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
	};

	return ibv_modify_qp(qp, &a,
	                     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int qp_to_rts(struct te_rdma_ctx *c, struct ibv_qp *qp, uint32_t dqpn,
                     const union ibv_gid *dgid, uint16_t dlid, char *errbuf, size_t errlen)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = c->path_mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = (uint8_t)c->max_rd_atomic;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = (uint8_t)c->gid_index;
	a.ah_attr.grh.hop_limit = 16;
	a.ah_attr.dlid = dlid;
	a.ah_attr.sl = 0;
	a.ah_attr.port_num = c->port;
	rc = ibv_modify_qp(qp, &a,
	                   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	                       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc) {
		snprintf(errbuf, errlen, "%s: QP %u -> RTR (peer QP %u) failed: %s", c->name,
		         qp->qp_num, dqpn, strerror(rc));
		return TE_ERR_ENDPOINT;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = (uint8_t)c->max_rd_atomic;
	rc = ibv_modify_qp(qp, &a,
	                   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	                       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc) {
		snprintf(errbuf, errlen, "%s: QP %u -> RTS failed: %s", c->name, qp->qp_num,
		         strerror(rc));
		return TE_ERR_ENDPOINT;
	}
	return 0;
}

void te_rdma_ep_free(struct te_rdma_ep *ep)
{
	if (!ep)
		return;
	for (int i = 0; i < ep->nqp; i++)
		if (ep->qp[i])
			ibv_destroy_qp(ep->qp[i]);
	free(ep);
}

static struct te_rdma_ep *ep_new(struct te_rdma_ctx *c, const char *peer_path, char *errbuf,
                                 size_t errlen)
{
	const struct te_rdma_cfg *cfg = &c->tr->cfg;
	struct te_rdma_ep *ep = calloc(1, sizeof(*ep));

	if (!ep) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	ep->c = c;
	snprintf(ep->peer_path, sizeof(ep->peer_path), "%s", peer_path);
	for (int i = 0; i < cfg->num_qp_per_ep; i++) {
		struct ibv_qp_init_attr ia = {
		    .send_cq = c->cq,
		    .recv_cq = c->cq,
		    .qp_type = IBV_QPT_RC,
		    .sq_sig_all = 0,
		    .cap = {.max_send_wr = (uint32_t)cfg->max_wr,
		            .max_recv_wr = (uint32_t)cfg->max_wr,
		            .max_send_sge = (uint32_t)cfg->max_sge,
		            .max_recv_sge = (uint32_t)cfg->max_sge,
		            .max_inline_data = (uint32_t)cfg->max_inline},
		};

		ep->qp[i] = ibv_create_qp(c->pd, &ia);
		if (!ep->qp[i] || qp_to_init(c, ep->qp[i])) {
			snprintf(errbuf, errlen, "%s: cannot create/init RC QP %d of %d: %s",
			         c->name, i, cfg->num_qp_per_ep, strerror(errno));
			ep->nqp = i + (ep->qp[i] != NULL);
			te_rdma_ep_free(ep);
			return NULL;
		}
		ep->nqp = i + 1;
	}
	return ep;
}

/* Peer GID/LID of device dev_name in segment srv's descriptor (own contexts for ourselves). */
static int peer_addr(struct te_rdma *tr, const char *srv, const char *dev_name, union ibv_gid *gid,
                     uint16_t *lid, char gid_str[48])
{
	const struct te_segment_desc *d = NULL;

	if (!strcmp(srv, te_engine_name(tr->eng))) {
		for (int i = 0; i < tr->nctx; i++)
			if (!strcmp(tr->ctxs[i].name, dev_name)) {
				*gid = tr->ctxs[i].gid;
				*lid = tr->ctxs[i].lid;
				memcpy(gid_str, tr->ctxs[i].gid_str, 48);
				return 0;
			}
		return TE_ERR_DEVICE_NOT_FOUND;
	}
	for (int pass = 0; pass < 2; pass++) {
		if (pass && te_sync_segment(tr->eng, srv))
			break;
		if (te_engine_peer_desc(tr->eng, srv, &d) || !d)
			continue;
		for (int i = 0; i < d->ndevices; i++)
			if (!strcmp(d->devices[i].name, dev_name)) {
				*lid = d->devices[i].lid;
				snprintf(gid_str, 48, "%s", d->devices[i].gid);
				return te_rdma_gid_parse(d->devices[i].gid, gid);
			}
	}
	return TE_ERR_DEVICE_NOT_FOUND;
}

static int ep_connect_qps(struct te_rdma_ep *ep, const uint32_t *qpn, const union ibv_gid *gid,
                          uint16_t lid, char *errbuf, size_t errlen)
{
	for (int i = 0; i < ep->nqp; i++) {
		int rc = qp_to_rts(ep->c, ep->qp[i], qpn[i], gid, lid, errbuf, errlen);

		if (rc)
			return rc;
	}
	ep->state = EP_CONNECTED;
	return 0;
}

/* Our side of a Connection frame on context c for endpoint ep (NULL: a rejection). */
static char *hs_json(struct te_rdma_ctx *c, const char *local_path, const char *peer_path,
                     struct te_rdma_ep *ep, const char *reply_msg, bool ready_ack)
{
	struct te_rdma_hs h;

	memset(&h, 0, sizeof(h));
	snprintf(h.local_path, sizeof(h.local_path), "%s", local_path);
	snprintf(h.peer_path, sizeof(h.peer_path), "%s", peer_path);
	snprintf(h.reply_msg, sizeof(h.reply_msg), "%s", reply_msg);
	if (c) {
		snprintf(h.gid, sizeof(h.gid), "%s", c->gid_str);
		h.lid = c->lid;
	}
	for (int i = 0; ep && i < ep->nqp; i++)
		h.qpn[h.nqpn++] = ep->qp[i]->qp_num;
	h.ready_ack = ready_ack;
	return te_rdma_hs_encode(&h, te_compat_rdma_hs_current());
}

static struct te_rdma_ep *ep_find(struct te_rdma_ctx *c, const char *peer_path)
{
	for (struct te_rdma_ep *e = c->eps; e; e = e->next)
		if (e->state == EP_CONNECTED && !strcmp(e->peer_path, peer_path))
			return e;
	return NULL;
}

void te_rdma_ep_kill(struct te_rdma_ep *ep)
{
	struct te_rdma_ctx *c = ep->c;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	for (struct te_rdma_ep **pp = &c->eps; *pp; pp = &(*pp)->next)
		if (*pp == ep) {
			*pp = ep->next;
			break;
		}
	ep->state = EP_DEAD;
	for (int i = 0; i < ep->nqp; i++)
		ibv_modify_qp(ep->qp[i], &a, IBV_QP_STATE);
	ep->next = c->dead;
	c->dead = ep;
}

/* Inserts a connected endpoint, retiring any older one for the same peer path. */
static void ep_publish(struct te_rdma_ctx *c, struct te_rdma_ep *ep)
{
	struct te_rdma_ep *old;

	pthread_mutex_lock(&c->mu);
	while ((old = ep_find(c, ep->peer_path)))
		te_rdma_ep_kill(old);
	ep->next = c->eps;
	c->eps = ep;
	pthread_mutex_unlock(&c->mu);
}

static int send_ready_ack(struct te_rdma_ctx *c, struct te_rdma_ep *ep, const char *host, int port,
                          const char *local_path, const char *peer_path, char *errbuf,
                          size_t errlen)
{
	char *req = hs_json(c, local_path, peer_path, ep, "", true), *reply = NULL;
	struct te_rdma_hs hs;
	int rc =
	    req ? te_hs_request(host, port, TE_HS_CONNECTION, req, &reply, c->tr->cfg.hs_timeout_ms)
	        : TE_ERR_MEMORY;

	if (!rc && (te_rdma_hs_parse(reply, strlen(reply), &hs) || hs.reply_msg[0])) {
		snprintf(errbuf, errlen, "%s rejected our RDMA ready ACK: %s", peer_path,
		         hs.reply_msg[0] ? hs.reply_msg : "malformed reply");
		rc = TE_ERR_REJECT_HANDSHAKE;
	} else if (rc) {
		snprintf(errbuf, errlen, "sending the RDMA ready ACK to %s failed: %s", peer_path,
		         te_strerror(rc));
	}
	free(req);
	free(reply);
	return rc;
}

struct te_rdma_ep *te_rdma_ep_get(struct te_rdma_ctx *c, const struct te_segment_desc *peer,
                                  int peer_dev, char *errbuf, size_t errlen)
{
	struct te_rdma *tr = c->tr;
	char peer_path[TE_NAME_MAX + 72], local_path[TE_NAME_MAX + 72];
	char host[256];
	uint32_t qpn[TE_RDMA_MAX_QP_PER_EP];
	struct te_rdma_hs hs;
	char *req = NULL, *reply = NULL;
	struct te_rdma_ep *ep;
	union ibv_gid gid;
	uint16_t lid;
	int port = 0, rc;

	snprintf(peer_path, sizeof(peer_path), "%s@%s", peer->name, peer->devices[peer_dev].name);
	snprintf(local_path, sizeof(local_path), "%s@%s", te_engine_name(tr->eng), c->name);
	pthread_mutex_lock(&c->mu);
	ep = ep_find(c, peer_path);
	pthread_mutex_unlock(&c->mu);
	if (ep)
		return ep;

	ep = ep_new(c, peer_path, errbuf, errlen);
	if (!ep)
		return NULL;
	if (te_rdma_gid_parse(peer->devices[peer_dev].gid, &gid)) {
		snprintf(errbuf, errlen, "peer %s publishes a malformed GID \"%s\"", peer_path,
		         peer->devices[peer_dev].gid);
		goto fail;
	}
	lid = peer->devices[peer_dev].lid;
	snprintf(ep->peer_gid, sizeof(ep->peer_gid), "%s", peer->devices[peer_dev].gid);
	if (!strcmp(peer_path, local_path)) {
		/* loopback: the endpoint's QPs talk to themselves, no handshake (as Mooncake) */
		for (int i = 0; i < ep->nqp; i++)
			qpn[i] = ep->qp[i]->qp_num;
		if (ep_connect_qps(ep, qpn, &gid, lid, errbuf, errlen))
			goto fail;
		ep_publish(c, ep);
		return ep;
	}
	rc = te_engine_peer_rpc(tr->eng, peer->name, host, sizeof(host), &port);
	if (rc) {
		snprintf(errbuf, errlen, "no rpc_meta for peer %s: %s", peer->name,
		         te_strerror(rc));
		goto fail;
	}
	req = hs_json(c, local_path, peer_path, ep, "", false);
	rc = te_hs_request(host, port, TE_HS_CONNECTION, req, &reply, tr->cfg.hs_timeout_ms);
	if (rc) {
		snprintf(errbuf, errlen, "Connection handshake with %s at %s:%d failed: %s",
		         peer_path, host, port, te_strerror(rc));
		goto fail;
	}
	rc = te_rdma_hs_parse(reply, strlen(reply), &hs);
	if (rc || strcmp(hs.local_path, peer_path) || strcmp(hs.peer_path, local_path) ||
	    hs.reply_msg[0]) {
		snprintf(errbuf, errlen, "%s rejected the Connection handshake: %s", peer_path,
		         rc                ? "malformed or null reply"
		         : hs.reply_msg[0] ? hs.reply_msg
		                           : "NIC paths do not match");
		goto fail;
	}
	if (hs.nqpn != ep->nqp) {
		snprintf(errbuf, errlen,
		         "%s replied with %d QPs, we have %d (MC_NUM_QP_PER_EP must "
		         "match on both sides)",
		         peer_path, hs.nqpn, ep->nqp);
		goto fail;
	}
	if (ep_connect_qps(ep, hs.qpn, &gid, lid, errbuf, errlen))
		goto fail;
	memcpy(ep->peer_qpn, hs.qpn, sizeof(ep->peer_qpn));
	/* a peer that announced ready_ack (0.3.12+) holds its posts until we confirm our QPs are
	 * in RTS: one more Connection frame, the same one with ready_ack true */
	if (hs.ready_ack_supported && te_compat_rdma_hs_current() &&
	    send_ready_ack(c, ep, host, port, local_path, peer_path, errbuf, errlen))
		goto fail;
	pd_dbg("rdma: connected %s -> %s (%d QPs)", local_path, peer_path, ep->nqp);
	free(req);
	free(reply);
	ep_publish(c, ep);
	return ep;
fail:
	free(req);
	free(reply);
	te_rdma_ep_free(ep);
	return NULL;
}

/* The active side's ready ACK (0.3.12+): its QPs are in RTS. pdkv's passive endpoint posts
 * from the moment it replied, so the ACK only has to match a live endpoint. */
static char *on_ready_ack(struct te_rdma_ctx *c, const struct te_rdma_hs *h)
{
	struct te_rdma_ep *ep;
	const char *err = NULL;

	pthread_mutex_lock(&c->mu);
	ep = ep_find(c, h->local_path);
	if (!ep)
		err = "Received RDMA ready ACK for unconnected endpoint";
	else if (h->nqpn != ep->nqp ||
	         memcmp(ep->peer_qpn, h->qpn, sizeof(uint32_t) * (size_t)ep->nqp))
		err = "Received stale RDMA ready ACK with mismatched peer QP numbers";
	pthread_mutex_unlock(&c->mu);
	if (err)
		pd_warn("rdma: %s from %s", err, h->local_path);
	return hs_json(c, h->peer_path, h->local_path, err ? NULL : ep, err ? err : "", false);
}

char *te_rdma_on_connection(struct te_rdma *tr, const char *json, size_t len)
{
	char err[700] = "", gid_str[48] = "", srv[TE_NAME_MAX], *out;
	struct te_rdma_ctx *c = NULL;
	struct te_rdma_ep *ep = NULL;
	const char *dev, *at;
	struct te_rdma_hs h;
	union ibv_gid gid;
	uint16_t lid = 0;

	if (te_rdma_hs_parse(json, len, &h)) {
		pd_warn("rdma: malformed Connection handshake frame ignored");
		return NULL; /* -> "null": the requester sees a rejected handshake */
	}
	dev = strchr(h.peer_path, '@');
	at = strchr(h.local_path, '@');
	if (!dev || !at || (size_t)(at - h.local_path) >= sizeof(srv)) {
		snprintf(err, sizeof(err), "malformed NIC path (want <server>@<device>)");
		goto reply;
	}
	dev++;
	snprintf(srv, sizeof(srv), "%.*s", (int)(at - h.local_path), h.local_path);
	for (int i = 0; i < tr->nctx; i++)
		if (!strcmp(tr->ctxs[i].name, dev))
			c = &tr->ctxs[i];
	if (!c) {
		snprintf(err, sizeof(err), "no local RDMA device %s", dev);
		goto reply;
	}
	if (h.ready_ack)
		return on_ready_ack(c, &h);
	if (h.nqpn != tr->cfg.num_qp_per_ep) {
		snprintf(err, sizeof(err),
		         "QP count mismatch: peer has %d, local has %d "
		         "(MC_NUM_QP_PER_EP)",
		         h.nqpn, tr->cfg.num_qp_per_ep);
		goto reply;
	}
	/* the GID sent inline (current form) saves fetching the initiator's descriptor */
	if (h.has_gid && !te_rdma_gid_parse(h.gid, &gid)) {
		lid = h.lid;
		snprintf(gid_str, sizeof(gid_str), "%s", h.gid);
	} else if (peer_addr(tr, srv, at + 1, &gid, &lid, gid_str)) {
		snprintf(err, sizeof(err), "cannot find device %s in segment %s's descriptor",
		         at + 1, srv);
		goto reply;
	}
	ep = ep_new(c, h.local_path, err, sizeof(err));
	if (!ep)
		goto reply;
	snprintf(ep->peer_gid, sizeof(ep->peer_gid), "%s", gid_str);
	memcpy(ep->peer_qpn, h.qpn, sizeof(ep->peer_qpn));
	if (ep_connect_qps(ep, h.qpn, &gid, lid, err, sizeof(err))) {
		te_rdma_ep_free(ep);
		ep = NULL;
		goto reply;
	}
	/* QPs are in RTS before we reply (docs/handshake.md); the reply swaps the paths */
	out = hs_json(c, h.peer_path, h.local_path, ep, "", false);
	ep_publish(c, ep);
	pd_dbg("rdma: accepted %s -> %s (%d QPs%s)", h.local_path, h.peer_path, h.nqpn,
	       h.has_gid ? ", GID inline" : "");
	return out;
reply:
	pd_warn("rdma: Connection handshake from %s to %s rejected: %s", h.local_path, h.peer_path,
	        err);
	return hs_json(c, h.peer_path, h.local_path, NULL, err, false); /* reply_msg: the reason */
}
