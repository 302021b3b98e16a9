/* SPDX-License-Identifier: Apache-2.0 */
/* kvc_mon: watches the two bound (PUSH) side-channel ports through libzmq socket monitors —
 * who connects, who leaves or is dropped (a protocol error or a frame over ZMQ_MAXMSGSIZE),
 * and a second peer on the data port, which would steal round-robined answers (issue 11). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <zmq.h>

#include "kvc/kvc_internal.h"
#include "pd_log.h"
#include "pd_util.h"

#define MON_EVENTS                                                                                 \
	(ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |       \
	 ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)

static const char *port_name(int i)
{
	return i == 0 ? "data PUSH" : "ACK PUSH";
}

static void peer_of(int fd, char *out, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
			port = ntohs(a->sin6_port);
		} else if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
			port = ntohs(a->sin_port);
		}
	}
	snprintf(out, n, "%s:%d", ip, port);
}

/* the table of live peers of one port (fd -> address), so a disconnect can name its peer */
static struct kvc_mon_peer *peer_slot(struct kvc_pipe *p, int i, int fd, bool add)
{
	struct kvc_mon_peer *free_slot = NULL;
	for (int k = 0; k < KVC_MON_PEERS; k++) {
		struct kvc_mon_peer *s = &p->mon_peer[i][k];
		if (s->used && s->fd == fd)
			return s;
		if (!s->used && !free_slot)
			free_slot = s;
	}
	return add ? free_slot : NULL;
}

static void on_event(struct kvc_pipe *p, int i, uint16_t ev, int32_t val)
{
	int port = i == 0 ? p->v0.bind_data_port : p->v0.bind_ack_port;
	struct kvc_mon_peer *s;
	char peer[80] = "?";

	if (ev == ZMQ_EVENT_ACCEPTED) {
		peer_of(val, peer, sizeof(peer));
		p->mon_npeers[i]++;
		s = peer_slot(p, i, val, true);
		if (s) {
			s->used = true;
			s->fd = val;
			s->since = pd_now_ns();
			snprintf(s->name, sizeof(s->name), "%s", peer);
		}
		pd_dbg("kvc: %s port %d: peer %s connected", port_name(i), port, peer);
		if (i == 0 && p->mon_npeers[i] > 1) {
			atomic_fetch_add(&p->extra_peers, 1);
			pd_warn(
			    "kvc: %s port %d: a second peer %s connected (%d now; only the "
			    "consumer %s should): ZMQ round-robins answers between them, so the "
			    "consumer misses some and resynchronises; a rogue or stale ZMQ peer?",
			    port_name(i), port, peer, p->mon_npeers[i], p->v0.remote_url);
		}
		return;
	}
	if (ev == ZMQ_EVENT_DISCONNECTED) {
		double ms = 0;
		s = peer_slot(p, i, val, false);
		if (s) {
			snprintf(peer, sizeof(peer), "%s", s->name);
			ms = (double)(pd_now_ns() - s->since) / 1e6;
			s->used = false;
		}
		if (p->mon_npeers[i] > 0)
			p->mon_npeers[i]--;
		pd_warn("kvc: %s port %d: peer %s disconnected after %.0f ms (it closed, or "
		        "libzmq dropped it for a protocol error such as a frame over the %lld-byte "
		        "ZMQ_MAXMSGSIZE)",
		        port_name(i), port, peer, ms, (long long)p->max_msg);
		return;
	}
	s = peer_slot(p, i, val, false);
	pd_warn("kvc: %s port %d: ZMTP handshake with %s failed (0x%x): not a ZMQ peer of a "
	        "compatible kind",
	        port_name(i), port, s ? s->name : "a peer", (unsigned)val);
}

/* Reads one monitor event (two frames: u16 event + u32 value, then the endpoint). */
static void read_event(struct kvc_pipe *p, int i)
{
	zmq_msg_t m;
	uint8_t b[6];
	bool ok = false;
	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, p->mon[i], ZMQ_DONTWAIT) >= 0 && zmq_msg_size(&m) == 6) {
		memcpy(b, zmq_msg_data(&m), 6);
		ok = true;
	}
	while (zmq_msg_more(&m)) { /* the endpoint frame */
		zmq_msg_close(&m);
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, p->mon[i], ZMQ_DONTWAIT) < 0)
			break;
	}
	zmq_msg_close(&m);
	if (ok) {
		uint16_t ev;
		int32_t val;
		memcpy(&ev, b, 2);
		memcpy(&val, b + 2, 4);
		on_event(p, i, ev, val);
	}
}

static void *mon_main(void *arg)
{
	struct kvc_pipe *p = arg;
	while (!atomic_load(&p->stop)) {
		zmq_pollitem_t it[2] = {{.socket = p->mon[0], .events = ZMQ_POLLIN},
		                        {.socket = p->mon[1], .events = ZMQ_POLLIN}};
		if (zmq_poll(it, 2, 100) <= 0)
			continue;
		for (int i = 0; i < 2; i++)
			if (it[i].revents & ZMQ_POLLIN)
				read_event(p, i);
	}
	return NULL;
}

int kvc_mon_start(struct kvc_pipe *p)
{
	void *socks[2] = {p->data_out, p->ack_out};
	for (int i = 0; i < 2; i++) {
		char a[96];
		snprintf(a, sizeof(a), "inproc://kvc-mon-%p-%d", (void *)p, i);
		if (zmq_socket_monitor(socks[i], a, MON_EVENTS) < 0)
			goto fail;
		p->mon[i] = zmq_socket(p->zctx, ZMQ_PAIR);
		if (!p->mon[i] || zmq_connect(p->mon[i], a) < 0)
			goto fail;
	}
	if (pthread_create(&p->mon_th, NULL, mon_main, p) != 0)
		goto fail;
	p->mon_started = true;
	return 0;
fail:
	pd_err("kvc: cannot monitor the side-channel sockets: %s", zmq_strerror(zmq_errno()));
	return KVC_ERR_CONFIG;
}

void kvc_mon_stop(struct kvc_pipe *p)
{
	void *socks[2] = {p->data_out, p->ack_out};
	if (p->mon_started)
		pthread_join(p->mon_th, NULL); /* p->stop is set */
	p->mon_started = false;
	for (int i = 0; i < 2; i++) {
		if (socks[i])
			zmq_socket_monitor(socks[i], NULL, 0);
		if (p->mon[i]) {
			int zero = 0;
			zmq_setsockopt(p->mon[i], ZMQ_LINGER, &zero, sizeof(zero));
			zmq_close(p->mon[i]);
		}
		p->mon[i] = NULL;
	}
}
