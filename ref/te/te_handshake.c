/* SPDX-License-Identifier: Apache-2.0 */
/* te_handshake: the out-of-band handshake socket of docs/handshake.md — frame codec (u64 LE length,
 * type byte, JSON; legacy frames), the server's per-connection exchange (on te_net's accept loop)
 * and the one-shot client. */
#include "te_internal.h"

#include <cJSON.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"

#define HS_SERVER_RCV_TIMEOUT_MS 5000 /* [HEAD] value: a silent peer costs one thread 5 s */
#define HS_EOF_WAIT_MS           1000
#define HS_MAX_CONNS             32

static size_t hs_max_len(size_t max_len)
{
	uint64_t v;

	if (max_len)
		return max_len;
	pd_env_size("MC_HANDSHAKE_MAX_LENGTH", &v); /* 1..128M, default 1M (TE_HS_MAX_FRAME) */
	return (size_t)v;
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

/* The server's whole-frame deadline: PDKV_HS_FRAME_TIMEOUT_MS, default 5000 (Mooncake's receive
 * timeout, which it applies per read call; here it bounds the frame, so a byte every few
 * seconds cannot hold a slot). */
static int hs_frame_timeout_ms(void)
{
	int64_t v;

	pd_env_int("PDKV_HS_FRAME_TIMEOUT_MS", &v); /* default HS_SERVER_RCV_TIMEOUT_MS */
	return (int)v;
}

/* The frame's deadline: the socket's receive timeout, counted once for the whole frame. */
static uint64_t frame_deadline_ns(int fd)
{
	struct timeval tv = {0, 0};
	socklen_t sl = sizeof(tv);
	uint64_t ms;
	if (getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &sl) ||
	    (tv.tv_sec == 0 && tv.tv_usec == 0))
		return 0;
	ms = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
	return pd_now_ns() + ms * 1000000ull;
}

/* Reads n bytes before end_ns (0 = no deadline); 0, -ETIMEDOUT, or another -errno. */
static int read_by(int fd, void *buf, size_t n, uint64_t end_ns)
{
	char *p = buf;
	if (!end_ns)
		return pd_read_full(fd, buf, n);
	while (n) {
		uint64_t now = pd_now_ns();
		struct pollfd pf = {fd, POLLIN, 0};
		ssize_t r;
		int pr;
		if (now >= end_ns)
			return -ETIMEDOUT;
		pr = poll(&pf, 1, (int)((end_ns - now + 999999) / 1000000));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return -errno;
		if (pr == 0)
			return -ETIMEDOUT;
		r = recv(fd, p, n, MSG_DONTWAIT);
		if (r == 0)
			return -ECONNRESET;
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			return -errno;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int frame_read_err(int r, uint64_t end_ns, uint64_t start_ns)
{
	if (r == -ETIMEDOUT)
		pd_warn("handshake: frame not complete within %llu ms (a deadline per frame), "
		        "dropping the connection",
		        (unsigned long long)((end_ns - start_ns) / 1000000));
	return TE_ERR_SOCKET;
}

int te_hs_recv_frame(int fd, int *type, char **json, size_t *len, size_t max_len)
{
	uint64_t flen, start = pd_now_ns(), end = frame_deadline_ns(fd);
	unsigned char first;
	char *buf;
	size_t n, off = 0;
	int r;

	*json = NULL;
	*len = 0;
	max_len = hs_max_len(max_len);
	if ((r = read_by(fd, &flen, 8, end)))
		return frame_read_err(r, end, start);
	flen = le64toh(flen);
	if (flen == 0 || flen > max_len) {
		pd_warn("handshake: frame length %llu outside 1..%zu, dropping connection",
		        (unsigned long long)flen, max_len);
		return TE_ERR_MALFORMED_JSON;
	}
	if ((r = read_by(fd, &first, 1, end)))
		return frame_read_err(r, end, start);
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
	if (n > off && (r = read_by(fd, buf + off, n - off, end))) {
		free(buf);
		return frame_read_err(r, end, start);
	}
	buf[n] = '\0';
	*json = buf;
	*len = n;
	return 0;
}

/* ---------------------------------------------------------------- server */
struct te_hs_server {
	int lfd;
	te_hs_handler handler;
	void *ctx;
	struct te_net_server *net;
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
		r = recv(fd, junk, sizeof(junk), MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (r <= 0)
			break;
	}
}

/* One connection: one frame in, the handler's reply out (te_net_server runs it per connection
 * and closes the socket afterwards). */
static void hs_serve(void *ctx, int fd)
{
	struct te_hs_server *s = ctx;
	char *json = NULL, *reply = NULL;
	size_t len;
	int type, ret;

	te_net_set_timeouts_ms(fd, hs_frame_timeout_ms());
	ret = te_hs_recv_frame(fd, &type, &json, &len, 0);
	if (ret) {
		pd_warn("handshake server: bad or incomplete frame from peer: %s",
		        te_strerror(ret));
		goto out;
	}
	reply = s->handler(s->ctx, type, json, len);
	ret = te_hs_send_frame(fd, type, reply ? reply : "null", reply ? strlen(reply) : 4);
	if (ret)
		pd_warn("handshake server: could not send reply: %s", te_strerror(ret));
	else
		drain_to_eof(fd);
out:
	free(json);
	free(reply);
}

int te_hs_server_start(int bound_fd, int port, te_hs_handler h, void *ctx,
                       struct te_hs_server **out)
{
	struct te_hs_server *s;
	int64_t backlog;

	*out = NULL;
	pd_env_int("MC_HANDSHAKE_LISTEN_BACKLOG", &backlog); /* 1..65535, default 128 */
	s = calloc(1, sizeof(*s));
	if (!s)
		return TE_ERR_MEMORY;
	s->handler = h;
	s->ctx = ctx;
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
	if (te_net_server_start(s->lfd, "handshake server", HS_MAX_CONNS, hs_serve, s, &s->net))
		goto fail;
	*out = s;
	return 0;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	free(s);
	return TE_ERR_SOCKET;
}

void te_hs_server_stop(struct te_hs_server *s)
{
	if (!s)
		return;
	te_net_server_stop(s->net);
	close(s->lfd);
	free(s);
}

/* ---------------------------------------------------------------- client */
static int hs_connect_timeout_ms(void)
{
	int64_t v;

	pd_env_int("MC_HANDSHAKE_CONNECT_TIMEOUT", &v); /* 1..600 s, as the RDMA side reads it */
	return (int)v * 1000;
}

int te_hs_request(const char *host, int port, int type, const char *json, char **reply,
                  int timeout_ms)
{
	char *buf = NULL, why[512];
	size_t len;
	int fd, rtype, ret;
	cJSON *parsed;

	*reply = NULL;
	if (timeout_ms <= 0)
		timeout_ms = 60000;
	fd = te_net_connect_why(host, port, hs_connect_timeout_ms(), why, sizeof(why));
	if (fd < 0) {
		pd_err("handshake: cannot reach the peer: %s", why);
		return fd;
	}
	te_net_set_timeouts_ms(fd, timeout_ms);
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
