/* SPDX-License-Identifier: Apache-2.0 */
/* te_tcp: the TCP transport of docs/tcp.md, client side and ops — peers (lanes in
 * te_tcp_lane.c), submit (slicing, inline send or queue), the transport's ops. The validating
 * server is te_tcp_server.c. */
#include "te_tcp.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"
#include "te_gpu.h"

/* Peer = (host, data port, protocol version); lanes start lazily with the first request. */
static struct tcp_peer *get_peer(struct te_transport *tp, const struct te_segment_desc *d, int *err)
{
	char host[256];
	int rpc_port, port;
	bool v2;
	struct tcp_peer *p = NULL, **np;

	*err = te_engine_peer_rpc(tp->eng, d->name, host, sizeof(host), &rpc_port);
	if (*err)
		return NULL;
	port = d->tcp_data_port > 0 ? d->tcp_data_port : rpc_port + 1;
	v2 = d->tcp_proto_version >= 2 && !tp->proto_v1_only;
	pthread_mutex_lock(&tp->peers_mu);
	for (size_t i = 0; i < tp->npeers; i++) {
		p = tp->peers[i];
		if (p->port == port && p->v2 == v2 && !strcmp(p->host, host))
			goto out;
	}
	p = calloc(1, sizeof(*p));
	np = p ? realloc(tp->peers, (tp->npeers + 1) * sizeof(*np)) : NULL;
	if (!np) {
		free(p);
		p = NULL;
		*err = TE_ERR_MEMORY;
		goto out;
	}
	tp->peers = np;
	p->tp = tp;
	snprintf(p->host, sizeof(p->host), "%s", host);
	p->port = port;
	p->v2 = v2;
	for (int i = 0; i < tp->nlanes; i++) {
		if (te_tcp_lane_start(p, &p->lanes[i]))
			break;
		p->nlanes++;
	}
	if (p->nlanes == 0) {
		free(p);
		p = NULL;
		*err = TE_ERR_MEMORY;
		goto out;
	}
	tp->peers[tp->npeers++] = p;
out:
	pthread_mutex_unlock(&tp->peers_mu);
	return p;
}

static int tcp_submit(struct te_transport *tp, struct te_task *const *tasks, size_t n)
{
	const struct te_segment_desc *last_desc = NULL;
	struct pending {
		struct tcp_lane *lane;
		struct tcp_slice s;
	} stackv[64], *pend;
	struct tcp_slice stacks[64], *sv;
	struct tcp_peer *p = NULL;
	size_t total = 0, m = 0;
	int err = 0;

	/* resolve every peer first so an unreachable rpc_meta fails the call with nothing sent */
	for (size_t i = 0; i < n; i++) {
		if (tasks[i]->peer != last_desc) {
			p = get_peer(tp, tasks[i]->peer, &err);
			if (!p)
				return err;
			last_desc = tasks[i]->peer;
		}
	}
	/* Build every slice first, then hand each lane its share under one lock and one wake-up:
	 * enqueueing one by one lets the woken sender ping-pong on the lock and send tiny groups.
	 */
	for (size_t i = 0; i < n; i++)
		total += (tasks[i]->req.length + TCP_SLICE_MAX - 1) / TCP_SLICE_MAX;
	pend = total <= PD_ARRAY_SIZE(stackv) ? stackv : malloc(total * sizeof(*pend));
	if (!pend)
		return TE_ERR_MEMORY;
	last_desc = NULL;
	for (size_t i = 0; i < n; i++) {
		struct te_task *t = tasks[i];
		uint64_t len = t->req.length, off = 0;
		int nslices = (int)((len + TCP_SLICE_MAX - 1) / TCP_SLICE_MAX);

		if (t->peer != last_desc) {
			p = get_peer(tp, t->peer, &err);
			if (!p) /* cannot happen after the first pass; be safe */
				p = tp->peers[0];
			last_desc = t->peer;
		}
		atomic_store(&t->slice_count, nslices);
		for (int k = 0; k < nslices; k++) {
			struct tcp_slice *s = &pend[m].s;
			pend[m].lane = &p->lanes[atomic_fetch_add(&p->rr, 1) % (unsigned)p->nlanes];
			s->t = t;
			s->op = (uint8_t)t->req.opcode;
			s->local = (char *)t->req.source + off;
			s->raddr = t->req.target_offset + off;
			s->len = len - off < TCP_SLICE_MAX ? len - off : TCP_SLICE_MAX;
			s->seq = 0;
			s->ok = false;
			s->gpu = t->src_gpu;
			off += s->len;
			m++;
		}
	}
	sv = m <= PD_ARRAY_SIZE(stacks) ? stacks : malloc(m * sizeof(*sv));
	if (!sv) {
		for (size_t i = 0; i < m; i++)
			te_task_slice_done(pend[i].s.t, 0, false);
		goto out;
	}
	for (size_t i = 0; i < m; i++) {
		struct tcp_lane *l = pend[i].lane;
		bool gpu = false;
		size_t k = 0;
		if (!l)
			continue;
		for (size_t j = i; j < m; j++) /* the lane's share, in order */
			if (pend[j].lane == l) {
				sv[k] = pend[j].s;
				gpu |= sv[k++].gpu != 0;
				pend[j].lane = NULL;
			}
		/* CUDA memory always goes through the sender thread's staging */
		if (gpu || !te_tcp_lane_send_inline(l, sv, k))
			te_tcp_lane_queue(l, sv, k);
	}
	if (sv != stacks)
		free(sv);
out:
	if (pend != stackv)
		free(pend);
	return 0;
}

/* ---------------------------------------------------------------- ops */
static void tcp_destroy(struct te_transport *tp)
{
	if (!tp)
		return;
	te_tcp_server_stop(tp);
	for (size_t i = 0; i < tp->npeers; i++) {
		for (int k = 0; k < tp->peers[i]->nlanes; k++)
			te_tcp_lane_stop(&tp->peers[i]->lanes[k]);
		free(tp->peers[i]);
	}
	free(tp->peers);
	if (tp->lfd >= 0)
		close(tp->lfd);
	pthread_mutex_destroy(&tp->peers_mu);
	free(tp);
}

/* Lanes per peer: 2, but 1 on small hosts (<= 4 CPUs online), where each lane's sender and
 * receiver threads compete with the caller and the target for the cores and a second lane costs
 * more than it overlaps (2 cores, loopback: 1 MiB write 0.56 -> 0.75 of a plain socket), and 4 on
 * hosts with 16 or more, where batches gain more than one request at a time loses (16 cores,
 * loopback, batches of 32 against 2 lanes: 1 MiB READs 10-11 -> 15-18 GB/s, WRITEs 8.4-8.6 ->
 * 11.7-12.2, 64 KiB unchanged; one 1 MiB WRITE at a time 4.0 -> 3.6). MC_TCP_LANES_PER_PEER
 * (1..16) overrides. */
int te_tcp_lanes_per_peer(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t v;

	if (pd_env_int("MC_TCP_LANES_PER_PEER", &v) == 1) /* 1..16 (TCP_MAX_LANES) */
		return (int)v;
	return ncpu >= 16 ? 4 : ncpu > 4 ? 2 : 1;
}

static int tcp_install(struct te_engine *eng, struct te_transport **out)
{
	struct te_transport *tp = calloc(1, sizeof(*tp));
	const char *e;

	*out = NULL;
	if (!tp)
		return TE_ERR_MEMORY;
	tp->eng = eng;
	tp->lfd = -1;
	pthread_mutex_init(&tp->peers_mu, NULL);
	tp->nlanes = te_tcp_lanes_per_peer();
	e = pd_env_str("MC_TCP_PROTO");
	tp->proto_v1_only = e && !strcmp(e, "1");

	tp->lfd = te_engine_take_data_fd(eng);
	if (tp->lfd < 0) {
		pd_err("tcp: the engine reserved no data port (rpc_port+1)");
		goto fail;
	}
	if (te_tcp_server_start(tp))
		goto fail;
	*out = tp;
	return 0;
fail:
	tcp_destroy(tp);
	return TE_ERR_SOCKET;
}

static int tcp_register(struct te_transport *tp, void *addr, size_t len, const char *location,
                        struct te_buffer_desc *b)
{
	(void)addr;
	(void)len;
	(void)location;
	/* Mooncake's TCP descriptor names every buffer after the server (docs/metadata.md) */
	snprintf(b->name, sizeof(b->name), "%s", te_engine_name(tp->eng));
	b->nkeys = 0;
	return 0;
}

static int tcp_unregister(struct te_transport *tp, void *addr, size_t len)
{
	(void)tp;
	(void)addr;
	(void)len;
	return 0;
}

static int tcp_fill_desc(struct te_transport *tp, struct te_segment_desc *d)
{
	/* rpc_port+1 reaches <=0.3.4 initiators, tcp_data_port >=0.3.5 ones (docs/tcp.md) */
	d->tcp_data_port = te_engine_rpc_port(tp->eng) + 1;
	d->tcp_proto_version = 2;
	return 0;
}

const struct te_transport_ops te_tcp_transport_ops = {
    .name = "tcp",
    .install = tcp_install,
    .register_mem = tcp_register,
    .unregister_mem = tcp_unregister,
    .fill_desc = tcp_fill_desc,
    .submit = tcp_submit,
    .on_connection = NULL,
    .destroy = tcp_destroy,
};
