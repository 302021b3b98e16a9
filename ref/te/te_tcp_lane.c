/* SPDX-License-Identifier: Apache-2.0 */
/* te_tcp_lane: one lane of the TCP client (docs/tcp.md) — 24-byte LE headers, pipelined READ/WRITE
 * on a persistent connection, a sender and a receiver thread, inline sends, v2 status frames. */
#include "te_tcp.h"

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pd_log.h"
#include "pd_tsan.h"
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

/* recvmsg(MSG_WAITALL) of an 8-byte status followed by len body bytes; *got = bytes read. Each
 * piece of the body is shown to slice x's landing hook as soon as it is in (still in cache). */
static int recv_status_body(int fd, uint64_t *st, void *body, size_t len, size_t *got,
                            const struct tcp_slice *x)
{
	struct iovec iov[2] = {{st, 8}, {body, len}};
	struct iovec *v = iov;
	size_t cap = pd_sock_recv_chunk();
	int n = 2;

	*got = 0;
	while (n > 0) {
		struct msghdr m = {0};
		struct iovec last = v[n - 1];
		ssize_t r;
		m.msg_iov = v;
		m.msg_iovlen = (size_t)n;
		if (v[n - 1].iov_len > cap) /* the body in pieces (pd_sock_recv_chunk) */
			v[n - 1].iov_len = cap;
		r = pd_recvmsg_spin(fd, &m, MSG_WAITALL); /* the body is on its way */
		v[n - 1] = last;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -EPIPE;
		if (*got + (size_t)r > 8) {
			size_t b0 = *got > 8 ? *got - 8 : 0;

			te_task_landed(x->t, (char *)body + b0, *got + (size_t)r - 8 - b0);
		}
		*got += (size_t)r;
		pd_iov_advance(&v, &n, (size_t)r);
		/* stop early on a reject so its status is reported, not just the EOF */
		if (*got >= 8 && (le64toh(*st) & 0xffffffffu))
			return 0;
	}
	return 0;
}

/* v2 WRITE statuses: as many of the nwrites outstanding as are in, at least one, never past the
 * last of them (a READ's body may follow); *got = bytes (a multiple of 8). The first is waited
 * for with poll, STATUS_WAIT_MS at a time while the socket's SO_RCVLOWAT (lowat) holds the
 * wake-up for several statuses: a slow target must not keep a landed WRITE's status back until
 * the WRITEs after it have landed too (issue 33; test_te_eintr's slow target saw the first
 * status only after 13 of 16 WRITEs of 30 ms each). Read nothing for TCP_IO_TIMEOUT_S: -EAGAIN,
 * as the socket's receive timeout gives. A signal (EINTR, or a short count on resuming from
 * SIGSTOP) is not a lost peer. */
#define STATUS_WAIT_MS 1
static int recv_statuses(int fd, unsigned char *stbuf, size_t nwrites, int lowat, size_t *got)
{
	uint64_t end = pd_now_ns() + TCP_IO_TIMEOUT_S * 1000000000ull;
	int err = 0;
	ssize_t r;

	*got = 0;
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};

		r = recv(fd, stbuf, nwrites * 8, MSG_DONTWAIT);
		if (r > 0)
			break;
		if (r == 0)
			return -EPIPE;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (pd_now_ns() >= end)
			return -EAGAIN;
		if (poll(&p, 1, lowat > 8 ? STATUS_WAIT_MS : 1000) < 0 && errno != EINTR)
			return -errno;
	}
	*got = (size_t)r;
	if (*got % 8) {
		err = pd_read_full(fd, stbuf + *got, 8 - *got % 8);
		*got += 8 - *got % 8;
	}
	return err;
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

/* Sender side (send token held, lane lock not held), between its socket calls: the slices up to
 * and including *last are in the kernel, so WRITEs among them whose statuses came early can end
 * now rather than when the whole call returns. A fresh lane's sender sends everything queued
 * while it connected in one call, and with a slow target a WRITE's status waited for all of it
 * to go out (test_te_eintr's slow target: the first of 16 WRITEs confirmed after the target had
 * seen up to 13). */
static void sent_upto(struct tcp_lane *l, const struct tcp_slice *last)
{
	if (!l->peer->v2)
		return;
	pthread_mutex_lock(&l->mu);
	if (last->seq > l->sent_seq)
		drain_deferred_upto(l, last->seq);
	pthread_mutex_unlock(&l->mu);
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
/* A READ's v2 status word (host order): 0, -EPROTO (not a status) or -ECONNABORTED (the peer
 * rejected it; logged, the server closes after a reject). */
static int read_status(const struct tcp_lane *l, const struct tcp_slice *s, uint64_t v)
{
	if ((v & 0xffffffff00000000ull) != TCP_STATUS_MAGIC)
		return -EPROTO;
	if (v & 0xffffffffu) {
		pd_err("tcp: %s:%d rejected READ 0x%llx+%llu (status %u)", l->peer->host,
		       l->peer->port, (unsigned long long)s->raddr, (unsigned long long)s->len,
		       (unsigned)(v & 0xffffffffu));
		return -ECONNABORTED;
	}
	return 0;
}

/* The receiver waits for WRITE statuses with SO_RCVLOWAT at as many of them as are outstanding,
 * at most STATUS_WAKE_MAX (all of them will come, or the connection ends, which wakes it too);
 * anything else reads at the default, 1. Over loopback the statuses are taken in by the sending
 * thread (the socket's backlog at its release) and each one woke the receiver onto that core: a 1
 * MiB WRITE stream on 2 cores switched sender and receiver every 1 MiB (issue 33). *cur: the
 * socket's present value. */
#define STATUS_WAKE_MAX 16
static void set_lowat(int fd, int *cur, size_t nwrites)
{
	int want = 8 * (int)(nwrites < STATUS_WAKE_MAX ? nwrites : STATUS_WAKE_MAX);
	if (want < 8)
		want = 1;
	if (want == *cur)
		return;
	if (!setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &want, sizeof(want)))
		*cur = want;
}

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
		PD_TSAN_WIRE_RECV(); /* the server's last use of our buffer came before this recv */
		gpu_small = !nwrites && s.gpu && s.len <= te_gpu_chunk();
		if (l->rpend.t && !(gpu_small && l->rpend.gpu == s.gpu))
			rpend_end(l);
		set_lowat(fd, &l->rcv_lowat, nwrites); /* the receiver's own, as fd */

		if (nwrites) {
			/* v2 WRITE statuses: read as many as are outstanding in one call, never
			 * past the last of them (a READ's body may follow). */
			size_t got = 0;

			err = recv_statuses(fd, stbuf, nwrites, l->rcv_lowat, &got);
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
			if (l->peer->v2 && !(err = pd_read_full(fd, &v, 8)))
				err = read_status(l, &s, le64toh(v));
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
				err = recv_status_body(fd, &v, s.local, s.len, &got, &s);
				if (got >= 8) {
					int st = read_status(l, &s, le64toh(v));

					if (st)
						err = st;
				}
			} else {
				err = pd_read_full(fd, s.local, s.len);
				if (!err)
					te_task_landed(s.t, s.local, s.len);
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

/* Sends one group of slices (headers and WRITE bodies in as few sendmsg calls as fit, each at
 * most pd_sock_send_chunk() bytes). */
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
		ret = pd_writev_full_max(l->fd, iov, niov, pd_sock_send_chunk());
		if (ret)
			return ret;
		*sent = i;
		sent_upto(l, &v[i - 1]);
	}
	return 0;
}

/* Header + body bytes of a slice on the wire. */
static uint64_t wire_bytes(const struct tcp_slice *s)
{
	return TCP_HDR_LEN + (s->op == TE_WRITE ? s->len : 0);
}

/* Sends host-memory slices v[*done..n), the first one from byte *off of its header + body;
 * advances *done (slices fully handed to the kernel) and *off. dontwait (an inline submit):
 * without blocking, and at most INLINE_PIECES send pieces, so the submitting thread copies a
 * lane's first 2 MiB and each lane's sender thread the rest, in parallel (loopback takes
 * megabytes per call: a batch of 32 x 1 MiB WRITEs over 4 lanes was otherwise copied mostly by
 * the submitter, and WRITEs did not scale with lanes); else blocks until all is sent.
 * 0 or -errno. */
#define INLINE_PIECES 2
static int send_host(struct tcp_lane *l, int fd, const struct tcp_slice *v, size_t n, size_t *done,
                     uint64_t *off, bool dontwait)
{
	unsigned char hdrs[TCP_IOV_MAX][TCP_HDR_LEN];
	struct iovec iov[TCP_IOV_MAX * 2];
	size_t cap = pd_sock_send_chunk(); /* WRITE bodies in pieces, as READ replies */
	int pieces = 0;

	while (*done < n) {
		size_t i = *done, k, full;
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
		m.msg_iovlen = pd_iov_cap(iov + j, niov - j, cap, &full); /* rebuilt next loop */
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
		if (i > *done && !dontwait) /* inline: the caller ends them under its lock */
			sent_upto(l, &v[i - 1]);
		*done = i;
		*off = adv;
		if (dontwait && ++pieces == INLINE_PIECES)
			return 0;
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
bool te_tcp_lane_send_inline(struct tcp_lane *l, struct tcp_slice *v, size_t n)
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
			char why[512];
			int fd;
			pthread_mutex_unlock(&l->mu);
			fd = te_net_connect_why(l->peer->host, l->peer->port, 5000, why,
			                        sizeof(why));
			pthread_mutex_lock(&l->mu);
			if (fd < 0) {
				pd_err("tcp: cannot reach the peer's data port: %s; failing %zu "
				       "requests",
				       why, vec_len(&work));
				for (size_t i = work.head; i < work.n; i++)
					te_task_slice_done(work.v[i].t, 0, false);
				release_send(l);
				continue;
			}
			te_net_tune_socket(fd);
			te_net_set_timeouts_ms(fd, TCP_IO_TIMEOUT_S * 1000);
			l->fd = fd;
			l->rcv_lowat = 1;
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

void te_tcp_lane_stop(struct tcp_lane *l)
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

int te_tcp_lane_start(struct tcp_peer *p, struct tcp_lane *l)
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

void te_tcp_lane_queue(struct tcp_lane *l, const struct tcp_slice *v, size_t n)
{
	bool was_empty;

	pthread_mutex_lock(&l->mu);
	was_empty = vec_len(&l->sq) == 0;
	for (size_t j = 0; j < n; j++)
		if (vec_push(&l->sq, &v[j]))
			te_task_slice_done(v[j].t, 0, false);
	if (was_empty && vec_len(&l->sq))
		pthread_cond_signal(&l->snd_cv);
	pthread_mutex_unlock(&l->mu);
}
