/* te_handshake: the out-of-band handshake socket of spec §3 — frame codec (u64 LE length, type
 * byte, JSON; legacy frames), the accept loop that serves peers, and the one-shot client. */
#include "te_internal.h"

#include <arpa/inet.h>
#include <cJSON.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pd_log.h"
#include "pd_util.h"

#define HS_SERVER_RCV_TIMEOUT_MS 5000 /* [HEAD] value: a silent peer costs one thread 5 s */
#define HS_EOF_WAIT_MS           1000
#define HS_MAX_CONNS             32

static size_t hs_max_len(size_t max_len)
{
	const char *e;
	uint64_t v;

	if (max_len)
		return max_len;
	e = getenv("MC_HANDSHAKE_MAX_LENGTH");
	if (e && !pd_parse_size(e, &v) && v >= 1 && v <= (128ull << 20))
		return (size_t)v;
	return TE_HS_MAX_FRAME;
}

static void set_timeouts(int fd, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int te_hs_send_frame(int fd, int type, const char *json, size_t len)
{
	unsigned char hdr[9];
	size_t hlen = 8;
	uint64_t flen = len;

	if (type != TE_HS_LEGACY) {
		if (type < 0 || type > 3)
			return TE_ERR_INVALID_ARGUMENT;
		flen = len + 1;
		hdr[8] = (unsigned char)type;
		hlen = 9;
	}
	flen = htole64(flen);
	memcpy(hdr, &flen, 8);
	if (pd_write_full(fd, hdr, hlen) || (len && pd_write_full(fd, json, len)))
		return TE_ERR_SOCKET;
	return 0;
}

int te_hs_recv_frame(int fd, int *type, char **json, size_t *len, size_t max_len)
{
	uint64_t flen;
	unsigned char first;
	char *buf;
	size_t n, off = 0;

	*json = NULL;
	*len = 0;
	max_len = hs_max_len(max_len);
	if (pd_read_full(fd, &flen, 8))
		return TE_ERR_SOCKET;
	flen = le64toh(flen);
	if (flen == 0 || flen > max_len) {
		pd_warn("handshake: frame length %llu outside 1..%zu, dropping connection",
		        (unsigned long long)flen, max_len);
		return TE_ERR_MALFORMED_JSON;
	}
	if (pd_read_full(fd, &first, 1))
		return TE_ERR_SOCKET;
	/* Types are 0..3; anything larger is the first JSON byte of a pre-0.3.0 frame. */
	if (first > 3) {
		*type = TE_HS_LEGACY;
		n = (size_t)flen;
	} else {
		*type = first;
		n = (size_t)flen - 1;
	}
	buf = malloc(n + 1);
	if (!buf)
		return TE_ERR_MEMORY;
	if (*type == TE_HS_LEGACY)
		buf[off++] = (char)first;
	if (n > off && pd_read_full(fd, buf + off, n - off)) {
		free(buf);
		return TE_ERR_SOCKET;
	}
	buf[n] = '\0';
	*json = buf;
	*len = n;
	return 0;
}

int te_net_connect(const char *host, int port, int timeout_ms)
{
	int fd;

	if (!host || !*host || port <= 0 || port > 65535)
		return TE_ERR_INVALID_ARGUMENT;
	/* pd_tcp_connect: non-blocking connect bounded by timeout_ms, then blocking + NODELAY */
	fd = pd_tcp_connect(host, port, timeout_ms);
	if (fd >= 0)
		return fd;
	return fd == -EHOSTUNREACH ? TE_ERR_DNS : TE_ERR_UNREACHABLE;
}

void te_net_local_ip(char *out, size_t len)
{
	const char *e = getenv("MC_TCP_BIND_ADDRESS");
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

/* ---------------------------------------------------------------- server */
struct te_hs_server {
	int lfd;
	int wake[2];
	pthread_t thr;
	te_hs_handler handler;
	void *ctx;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int nconns;
	int conn_fds[HS_MAX_CONNS];
	bool stopping;
};

struct hs_conn {
	struct te_hs_server *s;
	int fd;
	int slot;
};

/* After the reply: shutdown(WR), then read until EOF (bounded) so the peer sees the whole
 * reply before our RST could reach it. */
static void drain_to_eof(int fd)
{
	char junk[256];
	uint64_t end = pd_now_ns() + HS_EOF_WAIT_MS * 1000000ull;
	shutdown(fd, SHUT_WR);
	while (pd_now_ns() < end) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t r;
		if (poll(&p, 1, 100) <= 0)
			continue;
		r = recv(fd, junk, sizeof(junk), 0);
		if (r <= 0)
			break;
	}
}

static void *hs_conn_main(void *arg)
{
	struct hs_conn *c = arg;
	struct te_hs_server *s = c->s;
	char *json = NULL, *reply = NULL;
	size_t len;
	int type, ret;

	set_timeouts(c->fd, HS_SERVER_RCV_TIMEOUT_MS);
	ret = te_hs_recv_frame(c->fd, &type, &json, &len, 0);
	if (ret) {
		pd_warn("handshake server: bad or incomplete frame from peer: %s",
		        te_strerror(ret));
		goto out;
	}
	reply = s->handler(s->ctx, type, json, len);
	ret = te_hs_send_frame(c->fd, type, reply ? reply : "null", reply ? strlen(reply) : 4);
	if (ret)
		pd_warn("handshake server: could not send reply: %s", te_strerror(ret));
	else
		drain_to_eof(c->fd);
out:
	free(json);
	free(reply);
	pthread_mutex_lock(&s->mu);
	s->conn_fds[c->slot] = -1;
	close(c->fd);
	s->nconns--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	free(c);
	return NULL;
}

static void *hs_accept_main(void *arg)
{
	struct te_hs_server *s = arg;

	for (;;) {
		struct pollfd p[2] = {{s->lfd, POLLIN, 0}, {s->wake[0], POLLIN, 0}};
		struct hs_conn *c;
		pthread_t t;
		pthread_attr_t at;
		int fd, slot = -1;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				pd_sleep_ms(50);
			continue;
		}
		pthread_mutex_lock(&s->mu);
		for (int i = 0; i < HS_MAX_CONNS && !s->stopping; i++)
			if (s->conn_fds[i] < 0) {
				slot = i;
				break;
			}
		if (slot >= 0) {
			s->conn_fds[slot] = fd;
			s->nconns++;
		}
		pthread_mutex_unlock(&s->mu);
		if (slot < 0) {
			pd_warn("handshake server: %d connections busy, refusing one",
			        HS_MAX_CONNS);
			close(fd);
			continue;
		}
		c = malloc(sizeof(*c));
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (c) {
			c->s = s;
			c->fd = fd;
			c->slot = slot;
		}
		if (!c || pthread_create(&t, &at, hs_conn_main, c)) {
			free(c);
			pthread_mutex_lock(&s->mu);
			s->conn_fds[slot] = -1;
			s->nconns--;
			pthread_mutex_unlock(&s->mu);
			close(fd);
		}
		pthread_attr_destroy(&at);
	}
	return NULL;
}

int te_hs_server_start(int bound_fd, int port, te_hs_handler h, void *ctx,
                       struct te_hs_server **out)
{
	struct te_hs_server *s;
	const char *e = getenv("MC_HANDSHAKE_LISTEN_BACKLOG");
	int64_t backlog = 128;

	*out = NULL;
	if (e && (pd_parse_i64(e, &backlog) || backlog < 1 || backlog > 65535))
		backlog = 128;
	s = calloc(1, sizeof(*s));
	if (!s)
		return TE_ERR_MEMORY;
	s->handler = h;
	s->ctx = ctx;
	s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	for (int i = 0; i < HS_MAX_CONNS; i++)
		s->conn_fds[i] = -1;
	if (bound_fd >= 0) {
		s->lfd = bound_fd;
		if (listen(s->lfd, (int)backlog)) {
			pd_err("handshake server: listen on the rpc socket failed: %s",
			       strerror(errno));
			goto fail;
		}
	} else {
		s->lfd = pd_tcp_listen(NULL, port, (int)backlog);
		if (s->lfd < 0) {
			pd_err("handshake server: cannot listen on port %d: %s", port,
			       strerror(-s->lfd));
			goto fail;
		}
	}
	if (pipe2(s->wake, O_CLOEXEC))
		goto fail;
	if (pthread_create(&s->thr, NULL, hs_accept_main, s))
		goto fail;
	*out = s;
	return 0;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	return TE_ERR_SOCKET;
}

void te_hs_server_stop(struct te_hs_server *s)
{
	char b = 1;

	if (!s)
		return;
	if (write(s->wake[1], &b, 1) < 0)
		pd_warn("handshake server: wake pipe: %s", strerror(errno));
	pthread_join(s->thr, NULL);
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	for (int i = 0; i < HS_MAX_CONNS; i++)
		if (s->conn_fds[i] >= 0)
			shutdown(s->conn_fds[i], SHUT_RDWR);
	while (s->nconns > 0)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	close(s->lfd);
	close(s->wake[0]);
	close(s->wake[1]);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

/* ---------------------------------------------------------------- client */
static int hs_connect_timeout_ms(void)
{
	const char *e = getenv("MC_HANDSHAKE_CONNECT_TIMEOUT");
	int64_t v;
	if (e && !pd_parse_i64(e, &v) && v > 0 && v < 3600)
		return (int)v * 1000;
	return 5000;
}

int te_hs_request(const char *host, int port, int type, const char *json, char **reply,
                  int timeout_ms)
{
	char *buf = NULL;
	size_t len;
	int fd, rtype, ret;
	cJSON *parsed;

	*reply = NULL;
	if (timeout_ms <= 0)
		timeout_ms = 60000;
	fd = te_net_connect(host, port, hs_connect_timeout_ms());
	if (fd < 0) {
		pd_err("handshake: cannot connect to %s:%d: %s", host, port, te_strerror(fd));
		return fd;
	}
	set_timeouts(fd, timeout_ms);
	ret = te_hs_send_frame(fd, type, json ? json : "", json ? strlen(json) : 0);
	if (ret) {
		pd_err("handshake: send to %s:%d failed", host, port);
		goto out;
	}
	ret = te_hs_recv_frame(fd, &rtype, &buf, &len, 0);
	if (ret) {
		pd_err("handshake: no valid reply from %s:%d: %s", host, port, te_strerror(ret));
		goto out;
	}
	if (rtype != type) {
		pd_err("handshake: %s:%d replied with frame type %d to a type %d request", host,
		       port, rtype, type);
		ret = TE_ERR_SOCKET;
		goto out;
	}
	parsed = cJSON_ParseWithLength(buf, len);
	if (!parsed) {
		pd_err("handshake: %s:%d replied with malformed JSON (%zu bytes)", host, port, len);
		ret = TE_ERR_MALFORMED_JSON;
		goto out;
	}
	cJSON_Delete(parsed);
	*reply = buf;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return ret;
}
