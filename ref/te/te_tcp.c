/* te_tcp: the TCP transport of spec §4, client side and ops — 24-byte LE header, READ/WRITE,
 * persistent pipelined connections (lanes per peer, each with a sender and a receiver thread;
 * submit sends inline when the lane is idle), optional v2 "MCTV" status frames. The validating
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

#include "pd_log.h"
#include "pd_util.h"
#include "te_gpu.h"

/* ---------------------------------------------------------------- helpers */
static int vec_push(struct slice_vec *q, const struct tcp_slice *s)
{
	if (q->n == q->cap) {
		size_t nc = q->cap ? q->cap * 2 : 256;
		struct tcp_slice *p;
		if (q->head) { /* compact before growing */
			memmove(q->v, q->v + q->head, (q->n - q->head) * sizeof(*q->v));
			q->n -= q->head;
			q->head = 0;
			if (q->n < q->cap)
				goto put;
		}
		p = realloc(q->v, nc * sizeof(*p));
		if (!p)
			return TE_ERR_MEMORY;
		q->v = p;
		q->cap = nc;
	}
put:
	q->v[q->n++] = *s;
	return 0;
}

static size_t vec_len(const struct slice_vec *q)
{
	return q->n - q->head;
}

void te_tcp_set_io_timeout(int fd, int secs)
{
	struct timeval tv = {secs, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

void te_tcp_tune_socket(int fd)
{
	const char *e = getenv("PDKV_TCP_SOCKBUF");
	int one = 1;
	uint64_t sz;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Default: leave the kernel's autotuning alone (a fixed SO_SNDBUF disables it and is
	 * capped by wmem_max); PDKV_TCP_SOCKBUF=4M forces a size. */
	if (e && !pd_parse_size(e, &sz) && sz >= 65536 && sz <= (1ull << 30)) {
		int v = (int)sz;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
}

int te_tcp_recv_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t r = recv(fd, p, len, MSG_WAITALL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EPIPE;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/* recvmsg(MSG_WAITALL) of an 8-byte status followed by len body bytes; *got = bytes read. */
static int recv_status_body(int fd, uint64_t *st, void *body, size_t len, size_t *got)
{
	struct iovec iov[2] = {{st, 8}, {body, len}};
	struct iovec *v = iov;
	int n = 2;

	*got = 0;
	while (n > 0) {
		struct msghdr m = {0};
		ssize_t r;
		m.msg_iov = v;
		m.msg_iovlen = (size_t)n;
		r = recvmsg(fd, &m, MSG_WAITALL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -EPIPE;
		*got += (size_t)r;
		while (n > 0 && (size_t)r >= v->iov_len) {
			r -= (ssize_t)v->iov_len;
			v++;
			n--;
		}
		if (n > 0) {
			v->iov_base = (char *)v->iov_base + r;
			v->iov_len -= (size_t)r;
		}
		/* stop early on a reject so its status is reported, not just the EOF */
		if (*got >= 8 && (le64toh(*st) & 0xffffffffu))
			return 0;
	}
	return 0;
}

int te_tcp_send_iov(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		struct msghdr m = {0};
		ssize_t w;
		m.msg_iov = iov;
		m.msg_iovlen = (size_t)n;
		w = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static void put_header(unsigned char h[TCP_HDR_LEN], uint64_t size, uint64_t addr, uint8_t op)
{
	uint64_t s = htole64(size), a = htole64(addr);
	memcpy(h, &s, 8);
	memcpy(h + 8, &a, 8);
	h[16] = op;
	memset(h + 17, 0, 7);
}

/* ---------------------------------------------------------------- client lanes */
static bool expects_reply(const struct tcp_lane *l, const struct tcp_slice *s)
{
	return s->op == TE_READ || l->peer->v2;
}

/* Ends a slice from the receiver side (lane lock held), or defers a WRITE whose body the
 * sender may still be handing to the kernel (see tcp_lane.deferred). */
static void end_or_defer(struct tcp_lane *l, struct tcp_slice *x, bool ok)
{
	if (x->op == TE_WRITE && x->seq > l->sent_seq) {
		struct tcp_slice d = *x;
		d.ok = ok;
		if (!vec_push(&l->deferred, &d))
			return;
		/* out of memory: cannot defer; ending it now is still correct on the wire */
	}
	te_task_slice_done(x->t, ok ? x->len : 0, ok);
}

/* Sender side (send token held), lane lock held, after its socket call returned: every slice
 * up to seq upto is out of our hands, so deferred WRITEs up to it can end. */
static void drain_deferred_upto(struct tcp_lane *l, uint64_t upto)
{
	size_t keep = 0;

	l->sent_seq = upto;
	for (size_t i = l->deferred.head; i < l->deferred.n; i++) {
		struct tcp_slice *x = &l->deferred.v[i];
		if (x->seq > upto)
			l->deferred.v[keep++] = *x;
		else
			te_task_slice_done(x->t, x->ok ? x->len : 0, x->ok);
	}
	l->deferred.n = keep;
	l->deferred.head = 0;
}

/* ... after everything queued so far has been handed to the kernel (or abandoned) */
static void drain_deferred(struct tcp_lane *l)
{
	drain_deferred_upto(l, l->next_seq);
}

/* Receiver: ends the READ into CUDA memory whose copy was left queued (see tcp_lane.rpend). */
static void rpend_end(struct tcp_lane *l)
{
	bool ok;
	if (!l->rpend.t)
		return;
	ok = !te_gpu_stage_wait(l->rcv_stage, l->rpend_k);
	te_task_slice_done(l->rpend.t, ok ? l->rpend.len : 0, ok);
	l->rpend.t = NULL;
}

/* Receiver: consumes responses in wire order (v2 status frames, READ bodies). */
static void *lane_rcv_main(void *arg)
{
	struct tcp_lane *l = arg;
	unsigned char stbuf[TCP_IOV_MAX * 8];

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct tcp_slice s;
		size_t nwrites = 0;
		int fd, err = 0;
		bool gpu_small;

		while (!l->stop && (vec_len(&l->iq) == 0 || l->broken)) {
			if (l->rpend.t) {
				rpend_end(l); /* nothing to overlap with: end it before waiting */
				continue;
			}
			if (l->broken && !l->rcv_parked) {
				for (size_t i = l->iq.head; i < l->iq.n; i++)
					end_or_defer(l, &l->iq.v[i], false);
				l->iq.n = l->iq.head = 0;
				l->rcv_parked = true;
				pthread_cond_broadcast(&l->snd_cv);
			}
			pthread_cond_wait(&l->rcv_cv, &l->mu);
		}
		if (l->stop)
			break;
		s = l->iq.v[l->iq.head];
		fd = l->fd;
		if (l->peer->v2 && s.op == TE_WRITE)
			while (nwrites < TCP_IOV_MAX && l->iq.head + nwrites < l->iq.n &&
			       l->iq.v[l->iq.head + nwrites].op == TE_WRITE)
				nwrites++;
		pthread_mutex_unlock(&l->mu);
		gpu_small = !nwrites && s.gpu && s.len <= te_gpu_chunk();
		if (l->rpend.t && !(gpu_small && l->rpend.gpu == s.gpu))
			rpend_end(l);

		if (nwrites) {
			/* v2 WRITE statuses: read as many as are outstanding in one call, never
			 * past the last of them (a READ's body may follow). */
			ssize_t r = recv(fd, stbuf, 8, MSG_WAITALL);
			size_t got = r > 0 ? (size_t)r : 0;
			if (r == 8 && nwrites > 1) {
				ssize_t r2 = recv(fd, stbuf + 8, (nwrites - 1) * 8, MSG_DONTWAIT);
				if (r2 > 0)
					got += (size_t)r2;
				if (got % 8) {
					err = te_tcp_recv_full(fd, stbuf + got, 8 - got % 8);
					got += 8 - got % 8;
				}
			} else if (r != 8) {
				err = r == 0 ? -EPIPE : -errno;
			}
			pthread_mutex_lock(&l->mu);
			for (size_t i = 0; !err && i < got / 8; i++) {
				uint64_t v;
				struct tcp_slice *x = &l->iq.v[l->iq.head];
				memcpy(&v, stbuf + i * 8, 8);
				v = le64toh(v);
				if ((v & 0xffffffff00000000ull) != TCP_STATUS_MAGIC) {
					err = -EPROTO;
					break;
				}
				end_or_defer(l, x, (v & 0xffffffffu) == 0);
				l->iq.head++;
				if ((v & 0xffffffffu) != 0) {
					pd_err("tcp: %s:%d rejected WRITE 0x%llx+%llu (status %u)",
					       l->peer->host, l->peer->port,
					       (unsigned long long)x->raddr,
					       (unsigned long long)x->len,
					       (unsigned)(v & 0xffffffffu));
					err = -ECONNABORTED; /* the server closes after a reject */
				}
			}
		} else if (s.gpu) {
			/* into CUDA memory: the v2 status first, then the body through staging */
			uint64_t v = 0;
			if (l->peer->v2 && !(err = te_tcp_recv_full(fd, &v, 8))) {
				v = le64toh(v);
				if ((v & 0xffffffff00000000ull) != TCP_STATUS_MAGIC) {
					err = -EPROTO;
				} else if (v & 0xffffffffu) {
					pd_err("tcp: %s:%d rejected READ 0x%llx+%llu (status %u)",
					       l->peer->host, l->peer->port,
					       (unsigned long long)s.raddr,
					       (unsigned long long)s.len,
					       (unsigned)(v & 0xffffffffu));
					err = -ECONNABORTED;
				}
			}
			if (!err)
				err = te_tcp_gpu_recv(&l->rcv_stage, s.gpu - 1, fd, NULL, 0,
				                      s.local, s.len, !gpu_small);
			rpend_end(l); /* the previous one's copy ran during this recv */
			pthread_mutex_lock(&l->mu);
			if (!err) {
				if (gpu_small) {
					l->rpend = s;
					l->rpend_k = te_gpu_stage_last(l->rcv_stage);
				} else {
					te_task_slice_done(s.t, s.len, true);
				}
				l->iq.head++;
			}
		} else {
			if (l->peer->v2) {
				/* status and body in one call; a reject (status != 0) is followed
				 * by the server closing, so the body part then ends in EOF */
				uint64_t v = 0;
				size_t got = 0;
				err = recv_status_body(fd, &v, s.local, s.len, &got);
				v = le64toh(v);
				if (got >= 8 && (v & 0xffffffff00000000ull) != TCP_STATUS_MAGIC) {
					err = -EPROTO;
				} else if (got >= 8 && (v & 0xffffffffu)) {
					pd_err("tcp: %s:%d rejected READ 0x%llx+%llu (status %u)",
					       l->peer->host, l->peer->port,
					       (unsigned long long)s.raddr,
					       (unsigned long long)s.len,
					       (unsigned)(v & 0xffffffffu));
					err = -ECONNABORTED;
				}
			} else {
				err = te_tcp_recv_full(fd, s.local, s.len);
			}
			pthread_mutex_lock(&l->mu);
			if (!err) {
				te_task_slice_done(s.t, s.len, true);
				l->iq.head++;
			}
		}
		if (l->iq.head == l->iq.n)
			l->iq.head = l->iq.n = 0;
		if (err && !l->broken) {
			if (err != -ECONNABORTED)
				pd_err("tcp: connection to %s:%d lost while receiving: %s",
				       l->peer->host, l->peer->port, strerror(-err));
			l->broken = true;
			shutdown(fd, SHUT_RDWR);
			pthread_cond_broadcast(&l->snd_cv);
		}
	}
	rpend_end(l);
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* Sends one group of slices (headers and WRITE bodies in as few sendmsg calls as fit). */
static int send_group(struct tcp_lane *l, struct tcp_slice *v, size_t n, size_t *sent)
{
	unsigned char hdrs[TCP_IOV_MAX][TCP_HDR_LEN];
	struct iovec iov[TCP_IOV_MAX * 2];
	size_t i = 0;
	int ret = 0;

	*sent = 0;
	while (i < n) {
		size_t first = i, bytes = 0, staged = 0;
		int niov = 0, sgpu = 0, sk = 0;
		for (; i < n && i - first < TCP_IOV_MAX && (i == first || bytes < TCP_GROUP_BYTES);
		     i++) {
			uint8_t op = v[i].op | (l->peer->v2 ? TCP_OP_V2 : 0);
			char *body = v[i].local;
			put_header(hdrs[i - first], v[i].len, v[i].raddr, op);
			if (v[i].op == TE_WRITE && v[i].gpu) {
				/* CUDA source: small bodies are copied into one staging buffer and
				 * go out with the group; a larger one is sent alone, pipelined */
				if (v[i].len > te_gpu_chunk() - staged ||
				    (sgpu && sgpu != v[i].gpu)) {
					struct iovec h = {hdrs[0], TCP_HDR_LEN};
					if (i > first)
						break;
					ret = te_tcp_gpu_send(&l->snd_stage, v[i].gpu - 1, l->fd,
					                      &h, 1, body, v[i].len);
					if (ret)
						return ret;
					*sent = ++i;
					break;
				}
				if (te_gpu_stage_get(&l->snd_stage, v[i].gpu - 1))
					return -EIO;
				if (!staged)
					sk = te_gpu_stage_next(l->snd_stage);
				body = te_gpu_stage_buf(l->snd_stage, sk) + staged;
				if (te_gpu_stage_copy(l->snd_stage, sk, body, v[i].local, v[i].len))
					return -EIO;
				staged += v[i].len;
				sgpu = v[i].gpu;
			}
			iov[niov].iov_base = hdrs[i - first];
			iov[niov++].iov_len = TCP_HDR_LEN;
			if (v[i].op == TE_WRITE) {
				iov[niov].iov_base = body;
				iov[niov++].iov_len = v[i].len;
				bytes += v[i].len;
			}
		}
		if (!niov)
			continue;
		if (staged && te_gpu_stage_wait(l->snd_stage, sk))
			return -EIO;
		ret = te_tcp_send_iov(l->fd, iov, niov);
		if (ret)
			return ret;
		*sent = i;
	}
	return 0;
}

/* Header + body bytes of a slice on the wire. */
static uint64_t wire_bytes(const struct tcp_slice *s)
{
	return TCP_HDR_LEN + (s->op == TE_WRITE ? s->len : 0);
}

/* Sends host-memory slices v[*done..n), the first one from byte *off of its header + body;
 * advances *done (slices fully handed to the kernel) and *off. dontwait: returns 0 when the
 * socket buffer is full (*done < n then), else blocks until all is sent. 0 or -errno. */
static int send_host(struct tcp_lane *l, int fd, const struct tcp_slice *v, size_t n, size_t *done,
                     uint64_t *off, bool dontwait)
{
	unsigned char hdrs[TCP_IOV_MAX][TCP_HDR_LEN];
	struct iovec iov[TCP_IOV_MAX * 2];

	while (*done < n) {
		size_t i = *done, k;
		uint64_t skip = *off, adv;
		struct msghdr m = {0};
		int niov = 0, j = 0;
		ssize_t w;

		for (k = i; k < n && k - i < TCP_IOV_MAX; k++) {
			put_header(hdrs[k - i], v[k].len, v[k].raddr,
			           v[k].op | (l->peer->v2 ? TCP_OP_V2 : 0));
			iov[niov].iov_base = hdrs[k - i];
			iov[niov++].iov_len = TCP_HDR_LEN;
			if (v[k].op == TE_WRITE) {
				iov[niov].iov_base = v[k].local;
				iov[niov++].iov_len = v[k].len;
			}
		}
		while (skip && skip >= iov[j].iov_len)
			skip -= iov[j++].iov_len;
		iov[j].iov_base = (char *)iov[j].iov_base + skip;
		iov[j].iov_len -= skip;
		m.msg_iov = iov + j;
		m.msg_iovlen = (size_t)(niov - j);
		w = sendmsg(fd, &m, MSG_NOSIGNAL | (dontwait ? MSG_DONTWAIT : 0));
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (dontwait && (errno == EAGAIN || errno == EWOULDBLOCK))
				return 0;
			return -errno;
		}
		adv = *off + (uint64_t)w;
		while (i < n && adv >= wire_bytes(&v[i]))
			adv -= wire_bytes(&v[i++]);
		*done = i;
		*off = adv;
	}
	return 0;
}

/* The send token holder, after its socket calls: v1 WRITEs (no reply) end once their bytes are
 * in the socket (as Mooncake), the others in [done, n) that were not sent fail. */
static void end_unreplied(struct tcp_lane *l, const struct tcp_slice *v, size_t n, size_t done)
{
	for (size_t i = 0; i < n; i++)
		if (!expects_reply(l, &v[i]))
			te_task_slice_done(v[i].t, i < done ? v[i].len : 0, i < done);
}

static void send_failed(struct tcp_lane *l, int err)
{
	if (err && !l->broken) {
		pd_err("tcp: connection to %s:%d lost while sending: %s", l->peer->host,
		       l->peer->port, strerror(-err));
		l->broken = true;
		shutdown(l->fd, SHUT_RDWR);
	}
}

/* Lock held, send token taken: numbers the slices in wire order and queues those that expect a
 * response for the receiver (before their headers go out). Returns how many may be sent (on
 * out of memory, the rest fail unsent). */
static size_t sequence(struct tcp_lane *l, struct tcp_slice *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i].seq = ++l->next_seq;
	for (size_t i = 0; i < n; i++)
		if (expects_reply(l, &v[i]) && vec_push(&l->iq, &v[i])) {
			for (size_t j = i; j < n; j++)
				te_task_slice_done(v[j].t, 0, false);
			n = i;
			break;
		}
	pthread_cond_signal(&l->rcv_cv);
	return n;
}

/* Send token given back (lock held): the sender thread may have work it could not start. */
static void release_send(struct tcp_lane *l)
{
	l->sending = false;
	if (l->broken || vec_len(&l->sq) || vec_len(&l->resume))
		pthread_cond_signal(&l->snd_cv);
}

/* Inline submit (caller's thread, no hand-off): if the lane's send side is free and connected,
 * sends v[0..n) (host memory) without blocking; what the socket does not take now is left in
 * l->resume for the sender thread, which sends it before anything queued later. Returns false
 * (nothing done) when the caller must queue the slices instead. */
static bool lane_send_inline(struct tcp_lane *l, struct tcp_slice *v, size_t n)
{
	size_t done = 0;
	uint64_t off = 0;
	int fd, err;

	pthread_mutex_lock(&l->mu);
	if (l->sending || l->broken || l->stop || l->fd < 0 || vec_len(&l->sq) ||
	    vec_len(&l->resume)) {
		pthread_mutex_unlock(&l->mu);
		return false;
	}
	l->sending = true;
	n = sequence(l, v, n);
	fd = l->fd;
	pthread_mutex_unlock(&l->mu);

	err = send_host(l, fd, v, n, &done, &off, true);
	for (size_t i = 0; i < done; i++) /* sent: v1 WRITEs end */
		if (!expects_reply(l, &v[i]))
			te_task_slice_done(v[i].t, v[i].len, true);
	pthread_mutex_lock(&l->mu);
	for (size_t i = done; !err && i < n; i++)
		if (vec_push(&l->resume, &v[i]))
			err = -ENOMEM;
	if (err) {
		l->resume.n = l->resume.head = 0;
		end_unreplied(l, v + done, n - done, 0); /* replied ones fail from iq */
		drain_deferred(l);
		send_failed(l, err);
	} else {
		l->resume_off = off;
		drain_deferred_upto(l, done ? v[done - 1].seq : l->sent_seq);
	}
	release_send(l);
	pthread_mutex_unlock(&l->mu);
	return true;
}

static void *lane_snd_main(void *arg)
{
	struct tcp_lane *l = arg;
	struct slice_vec work = {0};

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct slice_vec tmp;
		size_t sent = 0, n;
		uint64_t off;
		bool resume;
		int err;

		while (!l->stop && (l->sending || (!l->broken && vec_len(&l->sq) == 0 &&
		                                   vec_len(&l->resume) == 0)))
			pthread_cond_wait(&l->snd_cv, &l->mu);
		if (l->stop)
			break;
		if (l->broken) {
			/* a hand-off's unsent rest: the replied ones fail from iq, these here */
			end_unreplied(l, l->resume.v + l->resume.head, vec_len(&l->resume), 0);
			l->resume.n = l->resume.head = 0;
			pthread_cond_broadcast(&l->rcv_cv);
			while (!l->rcv_parked && !l->stop)
				pthread_cond_wait(&l->snd_cv, &l->mu);
			if (l->fd >= 0)
				close(l->fd);
			l->fd = -1;
			l->broken = l->rcv_parked = false;
			drain_deferred(l); /* nothing of this lane is being sent */
			continue;
		}
		l->sending = true;
		/* take the whole queue (an inline submit's rest first: it is already numbered,
		 * queued for the receiver and partly on the wire); leave an empty buffer behind */
		resume = vec_len(&l->resume) > 0;
		if (resume) {
			tmp = l->resume;
			l->resume = work;
			off = l->resume_off;
		} else {
			tmp = l->sq;
			l->sq = work;
			off = 0;
		}
		work = tmp;
		if (resume)
			l->resume.n = l->resume.head = 0;
		else
			l->sq.n = l->sq.head = 0;
		if (l->fd < 0) {
			int fd;
			pthread_mutex_unlock(&l->mu);
			fd = te_net_connect(l->peer->host, l->peer->port, 5000);
			pthread_mutex_lock(&l->mu);
			if (fd < 0) {
				pd_err("tcp: cannot connect to %s:%d: %s; failing %zu requests",
				       l->peer->host, l->peer->port, te_strerror(fd),
				       vec_len(&work));
				for (size_t i = work.head; i < work.n; i++)
					te_task_slice_done(work.v[i].t, 0, false);
				release_send(l);
				continue;
			}
			te_tcp_tune_socket(fd);
			te_tcp_set_io_timeout(fd, TCP_IO_TIMEOUT_S);
			l->fd = fd;
		}
		/* responses are matched in wire order, so queue them before the headers go out */
		n = resume ? vec_len(&work) : sequence(l, work.v + work.head, vec_len(&work));
		pthread_mutex_unlock(&l->mu);

		if (resume) /* host memory only (inline submits take no CUDA slices) */
			err = send_host(l, l->fd, work.v + work.head, n, &sent, &off, false);
		else
			err = send_group(l, work.v + work.head, n, &sent);
		end_unreplied(l, work.v + work.head, n, sent);
		pthread_mutex_lock(&l->mu);
		drain_deferred(l);
		send_failed(l, err);
		release_send(l);
	}
	pthread_mutex_unlock(&l->mu);
	free(work.v);
	return NULL;
}

static void lane_stop(struct tcp_lane *l)
{
	if (!l->started)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	if (l->fd >= 0)
		shutdown(l->fd, SHUT_RDWR);
	pthread_cond_broadcast(&l->snd_cv);
	pthread_cond_broadcast(&l->rcv_cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->snd, NULL);
	pthread_join(l->rcv, NULL);
	/* abandoned work ends FAILED so no batch stays busy forever */
	for (size_t i = l->sq.head; i < l->sq.n; i++)
		te_task_slice_done(l->sq.v[i].t, 0, false);
	for (size_t i = l->iq.head; i < l->iq.n; i++)
		te_task_slice_done(l->iq.v[i].t, 0, false);
	end_unreplied(l, l->resume.v + l->resume.head, vec_len(&l->resume), 0);
	drain_deferred(l);
	if (l->fd >= 0)
		close(l->fd);
	free(l->sq.v);
	free(l->iq.v);
	free(l->deferred.v);
	free(l->resume.v);
	te_gpu_stage_free(l->snd_stage);
	te_gpu_stage_free(l->rcv_stage);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->snd_cv);
	pthread_cond_destroy(&l->rcv_cv);
}

static int lane_start(struct tcp_peer *p, struct tcp_lane *l)
{
	l->peer = p;
	l->fd = -1;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->snd_cv, NULL);
	pthread_cond_init(&l->rcv_cv, NULL);
	if (pthread_create(&l->snd, NULL, lane_snd_main, l))
		goto fail;
	if (pthread_create(&l->rcv, NULL, lane_rcv_main, l)) {
		pthread_mutex_lock(&l->mu);
		l->stop = true;
		pthread_cond_broadcast(&l->snd_cv);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->snd, NULL);
		goto fail;
	}
	l->started = true;
	return 0;
fail:
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->snd_cv);
	pthread_cond_destroy(&l->rcv_cv);
	return TE_ERR_MEMORY;
}

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
		if (lane_start(p, &p->lanes[i]))
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
		bool was_empty, gpu = false;
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
		if (!gpu && lane_send_inline(l, sv, k))
			continue;
		pthread_mutex_lock(&l->mu);
		was_empty = vec_len(&l->sq) == 0;
		for (size_t j = 0; j < k; j++)
			if (vec_push(&l->sq, &sv[j]))
				te_task_slice_done(sv[j].t, 0, false);
		if (was_empty && vec_len(&l->sq))
			pthread_cond_signal(&l->snd_cv);
		pthread_mutex_unlock(&l->mu);
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
			lane_stop(&tp->peers[i]->lanes[k]);
		free(tp->peers[i]);
	}
	free(tp->peers);
	if (tp->lfd >= 0)
		close(tp->lfd);
	if (tp->wake[0] >= 0) {
		close(tp->wake[0]);
		close(tp->wake[1]);
	}
	pthread_mutex_destroy(&tp->peers_mu);
	pthread_mutex_destroy(&tp->srv_mu);
	pthread_cond_destroy(&tp->srv_cv);
	free(tp);
}

static int tcp_install(struct te_engine *eng, struct te_transport **out)
{
	struct te_transport *tp = calloc(1, sizeof(*tp));
	const char *e;
	int64_t v;

	*out = NULL;
	if (!tp)
		return TE_ERR_MEMORY;
	tp->eng = eng;
	tp->lfd = tp->wake[0] = tp->wake[1] = -1;
	pthread_mutex_init(&tp->peers_mu, NULL);
	pthread_mutex_init(&tp->srv_mu, NULL);
	pthread_cond_init(&tp->srv_cv, NULL);
	for (int i = 0; i < TCP_MAX_SERVER_CONNS; i++)
		tp->conn_fds[i] = -1;
	/* Lanes per peer: 2, but 1 on small hosts (<= 4 CPUs online), where each lane's sender
	 * and receiver threads compete with the caller and the target for the cores and a second
	 * lane costs more than it overlaps (2 cores, loopback: 1 MiB write 0.56 -> 0.75 of a plain
	 * socket). MC_TCP_LANES_PER_PEER (1..16) overrides. */
	tp->nlanes = sysconf(_SC_NPROCESSORS_ONLN) > 4 ? 2 : 1;
	e = getenv("MC_TCP_LANES_PER_PEER");
	if (e && !pd_parse_i64(e, &v) && v >= 1 && v <= TCP_MAX_LANES)
		tp->nlanes = (int)v;
	e = getenv("MC_TCP_PROTO");
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
	/* Mooncake's TCP descriptor names every buffer after the server (§2.2) */
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
	/* rpc_port+1 reaches <=0.3.4 initiators, tcp_data_port >=0.3.5 ones (§4.2) */
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
