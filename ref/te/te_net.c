/* SPDX-License-Identifier: Apache-2.0 */
/* te_net: the engine's socket plumbing — connect with a timeout, the local IP rule, socket
 * tuning, and the one accept loop that both the handshake and the TCP data server run on. */
#include "te_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_tcpcc.h"
#include "pd_util.h"

/* Which failure, to what: "connection to H:P refused (nothing listens on that port)" ... */
static void connect_why(char *why, size_t n, const char *host, int port, int err, int timeout_ms)
{
	const char *br = strchr(host, ':') ? "[" : "", *kt = *br ? "]" : "";

	switch (err) {
	case ECONNREFUSED:
		snprintf(why, n, "connection to %s%s%s:%d refused (nothing listens on that port)",
		         br, host, kt, port);
		break;
	case ETIMEDOUT:
		snprintf(why, n,
		         "connection to %s%s%s:%d timed out after %d ms (no answer: host down "
		         "or a firewall dropping it)",
		         br, host, kt, port, timeout_ms);
		break;
	case EHOSTUNREACH:
	case ENETUNREACH:
		snprintf(why, n, "no route to host %s%s%s:%d (%s)", br, host, kt, port,
		         strerror(err));
		break;
	default:
		snprintf(why, n, "connection to %s%s%s:%d failed: %s", br, host, kt, port,
		         strerror(err));
	}
}

int te_net_connect_why(const char *host, int port, int timeout_ms, char *why, size_t whylen)
{
	struct addrinfo hints = {0}, *res = NULL;
	char pbuf[16];
	int fd, gai;

	if (why && whylen)
		why[0] = 0;
	if (!host || !*host || port <= 0 || port > 65535) {
		if (why)
			snprintf(why, whylen, "bad address \"%s\" port %d", host ? host : "", port);
		return TE_ERR_INVALID_ARGUMENT;
	}
	/* resolve first: pd_tcp_connect cannot tell a failed lookup from EHOSTUNREACH */
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(pbuf, sizeof(pbuf), "%d", port);
	gai = getaddrinfo(host, pbuf, &hints, &res);
	if (gai) {
		if (why)
			snprintf(why, whylen, "DNS resolution of \"%.200s\" (port %d) failed: %s",
			         host, port,
			         gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
		return TE_ERR_DNS;
	}
	freeaddrinfo(res);
	/* pd_tcp_connect: non-blocking connect bounded by timeout_ms, then blocking + NODELAY */
	fd = pd_tcp_connect(host, port, timeout_ms);
	if (fd >= 0)
		return fd;
	if (why)
		connect_why(why, whylen, host, port, -fd, timeout_ms);
	return TE_ERR_UNREACHABLE;
}

int te_net_connect(const char *host, int port, int timeout_ms)
{
	return te_net_connect_why(host, port, timeout_ms, NULL, 0);
}

void te_net_local_ip(char *out, size_t len)
{
	const char *e = pd_env_str("MC_TCP_BIND_ADDRESS");
	struct ifaddrs *ifs, *i;

	if (e && *e) {
		snprintf(out, len, "%s", e);
		return;
	}
	snprintf(out, len, "127.0.0.1");
	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		if ((i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP) ||
		    !(i->ifa_flags & IFF_RUNNING))
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out,
		          (socklen_t)len);
		break;
	}
	freeifaddrs(ifs);
}

void te_net_set_timeouts_ms(int fd, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

void te_net_tune_socket(int fd)
{
	int one = 1;
	uint64_t sz;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	pd_sock_congestion(fd); /* PDKV_TCP_CONGESTION, when set (docs/tcp.md) */
	/* Default: leave the kernel's autotuning alone (a fixed SO_SNDBUF disables it and is
	 * capped by wmem_max); PDKV_TCP_SOCKBUF=4M forces a size. */
	if (pd_env_size("PDKV_TCP_SOCKBUF", &sz) == 1) { /* 64K..1G */
		int v = (int)sz;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
}

/* ---------------------------------------------------------------- the shared accept loop */
/* One slot per open connection: its socket, its peer's address (no port) and, while its serve
 * waits between requests (te_net_conn_idle), when that wait began. */
struct net_slot {
	int fd; /* -1 = free: stop() shuts the open ones down */
	unsigned char peer[16];
	_Atomic uint64_t idle_since; /* pd_now_ns() of the idle wait's start, 0 = busy */
};

struct te_net_server {
	int lfd; /* the caller's; not closed here */
	int wake[2];
	pthread_t thr;
	const char *name;
	te_net_serve_fn serve;
	void *ctx;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int max_conns, nconns;
	struct net_slot *slots; /* max_conns */
	uint64_t evicted;
	bool stopping;
};

struct net_conn {
	struct te_net_server *s;
	int fd, slot;
};

static __thread struct net_conn *tl_conn; /* the connection this serve thread runs */

void te_net_conn_idle(bool idle)
{
	struct net_conn *c = tl_conn;
	if (c)
		atomic_store(&c->s->slots[c->slot].idle_since, idle ? pd_now_ns() : 0);
}

static void release_slot(struct te_net_server *s, int slot, int fd)
{
	pthread_mutex_lock(&s->mu);
	s->slots[slot].fd = -1;
	atomic_store(&s->slots[slot].idle_since, 0);
	close(fd);
	s->nconns--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void *conn_main(void *arg)
{
	struct net_conn *c = arg;
	tl_conn = c;
	c->s->serve(c->s->ctx, c->fd);
	tl_conn = NULL;
	release_slot(c->s, c->slot, c->fd);
	free(c);
	return NULL;
}

/* The peer's address without its port (IPv4 as a v4-mapped IPv6 address). */
static void peer_key(const struct sockaddr_storage *ss, unsigned char key[16])
{
	memset(key, 0, 16);
	if (ss->ss_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
}

/* A free slot for fd, or -1 when every slot is busy (or the server is stopping). */
static int take_slot(struct te_net_server *s, int fd, const unsigned char peer[16])
{
	int slot = -1;
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->max_conns && !s->stopping; i++)
		if (s->slots[i].fd < 0) {
			slot = i;
			break;
		}
	if (slot >= 0) {
		s->slots[slot].fd = fd;
		memcpy(s->slots[slot].peer, peer, 16);
		atomic_store(&s->slots[slot].idle_since, 0);
		s->nconns++;
	}
	pthread_mutex_unlock(&s->mu);
	return slot;
}

/* How many open connections come from peer (s->mu held). */
static int peer_count(const struct te_net_server *s, const unsigned char peer[16])
{
	int n = 0;
	for (int i = 0; i < s->max_conns; i++)
		n += s->slots[i].fd >= 0 && !memcmp(s->slots[i].peer, peer, 16);
	return n;
}

/* The table is full and a connection from newp waits (s->mu held): the fair share is the table
 * divided among the peers that hold slots, newp included. The idle connection that has waited
 * longest among the peers holding more than their share is shut down (its serve sees EOF and
 * frees the slot); -1 when there is none, so busy connections and peers within their share are
 * never cut for a newcomer. */
static int evict_over_share(struct te_net_server *s, const unsigned char newp[16])
{
	int npeers = 1, share, victim = -1;
	uint64_t oldest = UINT64_MAX;

	for (int i = 0; i < s->max_conns; i++) {
		bool seen = !memcmp(s->slots[i].peer, newp, 16);
		for (int j = 0; j < i && !seen; j++)
			seen = !memcmp(s->slots[j].peer, s->slots[i].peer, 16);
		npeers += !seen;
	}
	share = s->max_conns / npeers;
	if (share < 1)
		share = 1;
	for (int i = 0; i < s->max_conns; i++) {
		uint64_t t = atomic_load(&s->slots[i].idle_since);
		if (s->slots[i].fd < 0 || t == 0 || t >= oldest)
			continue;
		if (peer_count(s, s->slots[i].peer) > share) {
			oldest = t;
			victim = i;
		}
	}
	if (victim >= 0) {
		shutdown(s->slots[victim].fd, SHUT_RDWR);
		atomic_store(&s->slots[victim].idle_since, 0); /* not picked twice */
		s->evicted++;
	}
	return victim;
}

/* Full table: frees a slot for a connection from peer when fair share allows it, waiting up to
 * 2 s for the evicted connection's serve to return; true when a slot is free. */
static bool make_room(struct te_net_server *s, const unsigned char peer[16])
{
	bool ok = false;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	pthread_mutex_lock(&s->mu);
	if (!s->stopping && evict_over_share(s, peer) >= 0) {
		while (s->nconns >= s->max_conns && !s->stopping)
			if (pthread_cond_timedwait(&s->cv, &s->mu, &until))
				break;
		ok = s->nconns < s->max_conns && !s->stopping;
		if (s->evicted == 1 || s->evicted % 100 == 0)
			pd_warn(
			    "%s: %d connections open; closed an idle one of a peer holding more "
			    "than its share (%llu so far)",
			    s->name, s->max_conns, (unsigned long long)s->evicted);
	}
	pthread_mutex_unlock(&s->mu);
	return ok;
}

static void spawn_conn(struct te_net_server *s, int fd, int slot)
{
	struct net_conn *c = malloc(sizeof(*c));
	pthread_attr_t at;
	pthread_t t;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (c) {
		c->s = s;
		c->fd = fd;
		c->slot = slot;
	}
	if (!c || pthread_create(&t, &at, conn_main, c)) {
		free(c);
		pthread_mutex_lock(&s->mu);
		s->slots[slot].fd = -1;
		s->nconns--;
		pthread_mutex_unlock(&s->mu);
		close(fd);
	}
	pthread_attr_destroy(&at);
}

static void *accept_main(void *arg)
{
	struct te_net_server *s = arg;

	for (;;) {
		struct pollfd p[2] = {{s->lfd, POLLIN, 0}, {s->wake[0], POLLIN, 0}};
		struct sockaddr_storage ss = {0};
		socklen_t sl = sizeof(ss);
		unsigned char peer[16];
		int fd, slot;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				pd_sleep_ms(50);
			continue;
		}
		peer_key(&ss, peer);
		slot = take_slot(s, fd, peer);
		if (slot < 0 && make_room(s, peer))
			slot = take_slot(s, fd, peer);
		if (slot < 0) {
			pd_warn("%s: %d connections open, refusing one", s->name, s->max_conns);
			close(fd);
			continue;
		}
		spawn_conn(s, fd, slot);
	}
	return NULL;
}

/* What start made: the wake pipe (when wake[0] >= 0), the lock, the slots. */
static void server_free(struct te_net_server *s)
{
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->slots);
	free(s);
}

int te_net_server_start(int lfd, const char *name, int max_conns, te_net_serve_fn serve, void *ctx,
                        struct te_net_server **out)
{
	struct te_net_server *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s || !(s->slots = calloc((size_t)max_conns, sizeof(*s->slots)))) {
		free(s);
		return TE_ERR_MEMORY;
	}
	s->lfd = lfd;
	s->name = name;
	s->serve = serve;
	s->ctx = ctx;
	s->max_conns = max_conns;
	for (int i = 0; i < max_conns; i++)
		s->slots[i].fd = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (pipe2(s->wake, O_CLOEXEC)) {
		s->wake[0] = -1;
		goto fail;
	}
	if (pthread_create(&s->thr, NULL, accept_main, s))
		goto fail;
	*out = s;
	return 0;
fail:
	server_free(s);
	return TE_ERR_SOCKET;
}

void te_net_server_stop(struct te_net_server *s)
{
	char b = 1;

	if (!s)
		return;
	if (write(s->wake[1], &b, 1) < 0)
		pd_warn("%s: wake pipe: %s", s->name, strerror(errno));
	pthread_join(s->thr, NULL);
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	for (int i = 0; i < s->max_conns; i++)
		if (s->slots[i].fd >= 0)
			shutdown(s->slots[i].fd, SHUT_RDWR);
	while (s->nconns > 0)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	server_free(s);
}
