/* SPDX-License-Identifier: Apache-2.0 */
/* te_tcp_server: the TCP transport's data server (docs/tcp.md) — one thread per persistent
 * connection (te_net's accept loop), every request validated against registered memory
 * before a byte moves. */
#include "te_tcp.h"

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_tsan.h"
#include "pd_util.h"
#include "te_gpu.h"
#include "te_inspect.h"

static _Atomic(te_test_read_fn) test_read_hook;  /* te_test_set_read_hook */
static _Atomic(te_test_read_fn) test_write_hook; /* te_test_set_write_hook */

void te_test_set_read_hook(te_test_read_fn fn)
{
	atomic_store(&test_read_hook, fn);
}

void te_test_set_write_hook(te_test_read_fn fn)
{
	atomic_store(&test_write_hook, fn);
}

/* v2 statuses are coalesced: they wait while more requests are already queued on the socket
 * and go out (in one send) before the server would block, before a READ reply, when full, or
 * once the WRITEs they confirm reach SRV_PENDING_BYTES. Pipelined 64 KiB WRITEs then cost one
 * small segment per burst, not per request; a server that reads slower than its peer sends (a
 * starved core) still confirms each WRITE within a MiB of it (issue 33: statuses waited for 64
 * WRITEs, tens of MB at that speed, and batches timed out with their bytes landed). */
#define SRV_PENDING_MAX   64
#define SRV_PENDING_BYTES (1u << 20)
struct srv_out {
	uint64_t st[SRV_PENDING_MAX];
	int n;
	uint64_t bytes; /* WRITE bytes the pending statuses confirm */
	/* WRITEs into CUDA memory leave their last copy queued; their statuses (queued here) go
	 * out only after the stage's stream has drained, so "OK" still means "applied" */
	bool gpu_pending;
	struct te_gpu_stage **stage;
};

static int drain_gpu(struct srv_out *o)
{
	if (!o->gpu_pending)
		return 0;
	o->gpu_pending = false;
	return te_gpu_stage_drain(*o->stage) ? -EIO : 0;
}

static int flush_status(int fd, struct srv_out *o)
{
	struct iovec iov = {o->st, (size_t)o->n * 8};
	int r = drain_gpu(o);
	PD_TSAN_WIRE_SEND(); /* the WRITEs these statuses confirm are in the buffer (pd_tsan.h) */
	if (!r && o->n)
		r = pd_writev_full(fd, &iov, 1);
	o->n = 0;
	o->bytes = 0;
	return r;
}

static int queue_status(int fd, struct srv_out *o, uint32_t code, uint64_t size)
{
	o->st[o->n++] = htole64(TCP_STATUS_MAGIC | code);
	o->bytes += size;
	return o->n == SRV_PENDING_MAX || o->bytes >= SRV_PENDING_BYTES ? flush_status(fd, o) : 0;
}

/* Buffered request input: headers that arrive together (pipelined READs) are parsed from one
 * recv; WRITE body bytes that came along are copied out, the rest lands straight in place. */
#define SRV_INBUF 4096
struct srv_in {
	unsigned char b[SRV_INBUF];
	size_t pos, len;
	uint64_t nreq; /* requests served on this connection */
};

/* How long the server waits before giving up on a header: a connection's first header and
 * any started header get hdr_ms (a silent connection cannot hold a slot forever); between
 * requests, a persistent connection may stay idle for idle_ms (0 = forever). */
static int srv_wait_ms(struct te_transport *tp, struct srv_in *in, size_t have, uint64_t t0,
                       bool *idle)
{
	uint64_t spent_ms = (pd_now_ns() - t0) / 1000000, lim_ms, left;
	*idle = have == 0 && in->nreq > 0;
	if (*idle && tp->idle_timeout_ms == 0)
		return 1000;
	lim_ms = (uint64_t)(*idle ? tp->idle_timeout_ms : tp->hdr_timeout_ms);
	if (spent_ms >= lim_ms)
		return 0;
	left = lim_ms - spent_ms;
	return left < 1000 ? (int)left : 1000; /* wake each second to see a stop */
}

static int srv_header_timeout(struct te_transport *tp, struct srv_in *in, size_t have, bool idle)
{
	if (idle)
		pd_info("tcp server: data connection idle for %d s after %llu requests "
		        "(PDKV_TCP_IDLE_TIMEOUT_S); closing it",
		        tp->idle_timeout_ms / 1000, (unsigned long long)in->nreq);
	else
		pd_warn("tcp server: %s within %d ms (PDKV_TCP_HEADER_TIMEOUT_MS; %zu of %d header "
		        "bytes after %llu requests); closing the connection",
		        in->nreq ? "request header not complete" : "no request on a new connection",
		        tp->hdr_timeout_ms, have, TCP_HDR_LEN, (unsigned long long)in->nreq);
	return -ETIMEDOUT;
}

/* Reads a header; 1 = clean EOF between requests, 0 = got one, <0 = error/truncated/deadline.
 * Pending statuses are flushed before the call could block. */
static int srv_read_header(struct te_transport *tp, int fd, unsigned char *h, struct srv_in *in,
                           struct srv_out *o)
{
	uint64_t t0 = pd_now_ns(); /* the wait (idle or for the header) started here */
	size_t started = in->len - in->pos;
	bool marked = false; /* told te_net this connection waits idle (fair share, D4) */

	while (in->len - in->pos < TCP_HDR_LEN) {
		size_t have = in->len - in->pos;
		ssize_t r;
		memmove(in->b, in->b + in->pos, have);
		in->pos = 0;
		in->len = have;
		if (have && !started) { /* a header began after an idle wait: its own deadline */
			started = have;
			t0 = pd_now_ns();
		}
		if (!o->n) {
			struct pollfd p = {fd, POLLIN, 0};
			bool idle;
			int ms = srv_wait_ms(tp, in, have, t0, &idle), pr;
			if (ms == 0)
				return srv_header_timeout(tp, in, have, idle);
			if (!have && !marked) {
				te_net_conn_idle(true);
				marked = true;
			}
			pr = poll(&p, 1, ms);
			if (pr == 0 && atomic_load(&tp->stopping))
				return have ? -EPROTO : 1;
			if (pr == 0 || (pr < 0 && errno == EINTR))
				continue;
		}
		r = recv(fd, in->b + have, SRV_INBUF - have, MSG_DONTWAIT);
		if (r > 0) {
			if (marked)
				te_net_conn_idle(false);
			marked = false;
			in->len += (size_t)r;
			continue;
		}
		if (r == 0)
			return have ? -EPROTO : 1;
		if (errno == EINTR)
			continue;
		if ((errno == EAGAIN || errno == EWOULDBLOCK) && o->n) {
			if (flush_status(fd, o))
				return -EPIPE;
			continue;
		}
		if ((errno == EAGAIN || errno == EWOULDBLOCK) && !atomic_load(&tp->stopping))
			continue;
		return have ? -EPROTO : -errno;
	}
	memcpy(h, in->b + in->pos, TCP_HDR_LEN);
	in->pos += TCP_HDR_LEN;
	return 0;
}

/* A WRITE's body into host memory: what is buffered, then the rest, received up to each multiple
 * of pd_sock_recv_chunk() from the body's start; each such piece is reported landed
 * (te_engine_landed) as soon as it is in, so a user can work on it while it is still in this
 * core's cache. Pieces start at multiples of the cap (256 KiB) from the WRITE's start, so a
 * user's rows stay whole in them. */
static int srv_read_body(struct te_engine *eng, int fd, struct srv_in *in, char *dst, uint64_t size)
{
	size_t have = in->len - in->pos, take = have < size ? have : (size_t)size,
	       cap = pd_sock_recv_chunk();
	uint64_t done = take, shown = 0;

	memcpy(dst, in->b + in->pos, take);
	in->pos += take;
	for (;;) {
		uint64_t edge = (done / cap + 1) * cap; /* cap > 0 (pd_sock_recv_chunk) */
		size_t n = (size_t)((edge < size ? edge : size) - done);
		int r;

		if (done > shown && (done == size || done % cap == 0)) {
			te_engine_landed(eng, (uint64_t)(uintptr_t)(dst + shown), done - shown);
			shown = done;
		}
		if (done == size)
			return 0;
		if ((r = pd_read_full_spin(fd, dst + done, n))) /* the body follows its header */
			return r;
		done += n;
	}
}

/* WRITE into CUDA memory: bytes already buffered, then the rest, through staging; the last
 * copy stays queued (flush_status drains it before the status goes out). */
static int srv_read_body_gpu(int fd, struct srv_in *in, struct srv_out *o, int dev, char *dst,
                             uint64_t size)
{
	size_t have = in->len - in->pos, take = have < size ? have : (size_t)size;
	int r = te_tcp_gpu_recv(o->stage, dev, fd, in->b + in->pos, take, dst, size, false);
	in->pos += take;
	o->gpu_pending = true;
	return r;
}

/* A READ prefetched into a staging buffer while the previous reply was going out. */
struct srv_prefetch {
	bool valid;
	uint64_t addr, size;
	int k;
};

/* READ of one staging chunk or less from CUDA memory: iov[0..k) (statuses) and the body go out
 * in one call. If the next request is already buffered and is such a READ too, its copy is
 * queued first, so it runs while this reply is being sent. */
static int srv_send_gpu_small(struct te_transport *tp, int fd, struct srv_in *in, struct srv_out *o,
                              struct srv_prefetch *pf, int dev, uint64_t addr, uint64_t size,
                              struct iovec *iov, int k)
{
	struct te_gpu_stage **sp = o->stage;
	int bk;

	if (pf->valid && pf->addr == addr && pf->size == size) {
		bk = pf->k;
	} else {
		if (te_gpu_stage_get(sp, dev))
			return -EIO;
		bk = te_gpu_stage_next(*sp);
		if (te_gpu_stage_copy(*sp, bk, te_gpu_stage_buf(*sp, bk),
		                      (const void *)(uintptr_t)addr, size))
			return -EIO;
	}
	pf->valid = false;
	if (in->len - in->pos >= TCP_HDR_LEN) {
		const unsigned char *h = in->b + in->pos;
		uint64_t s2, a2;
		int g2 = 0;
		memcpy(&s2, h, 8);
		memcpy(&a2, h + 8, 8);
		s2 = le64toh(s2);
		a2 = le64toh(a2);
		if ((h[16] & ~TCP_OP_V2) == TE_READ && s2 <= te_gpu_chunk() &&
		    te_engine_local_range_gpu(tp->eng, a2, s2, &g2) && g2 == dev + 1) {
			int nk = te_gpu_stage_next(*sp);
			if (te_gpu_stage_copy(*sp, nk, te_gpu_stage_buf(*sp, nk),
			                      (const void *)(uintptr_t)a2, s2))
				return -EIO;
			*pf = (struct srv_prefetch){true, a2, s2, nk};
		}
	}
	if (te_gpu_stage_wait(*sp, bk))
		return -EIO;
	iov[k].iov_base = te_gpu_stage_buf(*sp, bk);
	iov[k++].iov_len = size;
	return pd_writev_full(fd, iov, k);
}

/* One persistent connection, request after request until EOF or an error (te_net_server runs it
 * on its own thread and closes the socket afterwards). */
static void srv_serve(void *ctx, int fd)
{
	struct te_transport *tp = ctx;
	struct te_gpu_stage *stage = NULL; /* made on the first request for CUDA memory */
	struct srv_out out = {.n = 0, .bytes = 0, .gpu_pending = false, .stage = &stage};
	struct srv_prefetch pf = {.valid = false};
	struct srv_in *in = malloc(sizeof(*in));

	te_net_tune_socket(fd);
	te_net_set_timeouts_ms(fd, TCP_IO_TIMEOUT_S * 1000);
	if (in) {
		in->pos = in->len = 0;
		in->nreq = 0;
	}
	for (; in;) {
		unsigned char h[TCP_HDR_LEN] = {0};
		uint64_t size, addr;
		uint8_t op;
		bool v2;
		int gpu = 0, r = srv_read_header(tp, fd, h, in, &out);

		PD_TSAN_WIRE_RECV(); /* the owner's writes to the buffer came before this request */
		if (r == 1)
			break;
		if (r < 0) {
			if (r == -EPROTO)
				pd_warn("tcp server: truncated request header after %llu requests, "
				        "closing the connection",
				        (unsigned long long)in->nreq);
			break;
		}
		memcpy(&size, h, 8);
		memcpy(&addr, h + 8, 8);
		size = le64toh(size);
		addr = le64toh(addr);
		v2 = h[16] & TCP_OP_V2;
		op = h[16] & ~TCP_OP_V2;
		if ((op != TE_READ && op != TE_WRITE) ||
		    !te_engine_local_range_gpu(tp->eng, addr, size, &gpu)) {
			pd_warn(
			    "tcp server: rejected %s 0x%llx+%llu (opcode 0x%02x): not inside one "
			    "registered buffer; closing the connection",
			    op == TE_WRITE ? "WRITE" : "READ", (unsigned long long)addr,
			    (unsigned long long)size, h[16]);
			if (v2) {
				out.st[out.n++] = htole64(TCP_STATUS_MAGIC | 1);
				flush_status(fd, &out);
			}
			break;
		}
		if (op == TE_WRITE) {
			te_test_read_fn hook = gpu ? NULL : atomic_load(&test_write_hook);

			if (hook)
				hook(addr, size);
			if (gpu)
				r = srv_read_body_gpu(fd, in, &out, gpu - 1,
				                      (char *)(uintptr_t)addr, size);
			else
				r = srv_read_body(tp->eng, fd, in, (char *)(uintptr_t)addr, size);
			if (!r && v2)
				r = queue_status(fd, &out, 0, size);
		} else {
			/* earlier statuses, this one and the body in one sendmsg */
			struct iovec iov[2];
			int k = 0;
			/* the statuses of WRITEs still being copied to the GPU go out here too */
			if (drain_gpu(&out)) {
				r = -EIO;
				goto failed;
			}
			if (v2)
				out.st[out.n++] = htole64(TCP_STATUS_MAGIC);
			if (out.n) {
				iov[k].iov_base = out.st;
				iov[k++].iov_len = (size_t)out.n * 8;
			}
			out.n = 0;
			out.bytes = 0;
			if (gpu && size <= te_gpu_chunk()) {
				r = srv_send_gpu_small(tp, fd, in, &out, &pf, gpu - 1, addr, size,
				                       iov, k);
			} else if (gpu) {
				r = te_tcp_gpu_send(&stage, gpu - 1, fd, iov, k,
				                    (const char *)(uintptr_t)addr, size);
			} else {
				te_test_read_fn hook = atomic_load(&test_read_hook);
				if (hook)
					hook(addr, size);
				iov[k].iov_base = (void *)(uintptr_t)addr;
				iov[k++].iov_len = size;
				PD_TSAN_WIRE_SEND(); /* for the statuses of earlier WRITEs */
				r = pd_writev_full_max(fd, iov, k, pd_sock_send_chunk());
			}
		}
	failed:
		if (r) {
			pd_warn("tcp server: %s of %llu bytes failed: %s; closing the connection",
			        op == TE_WRITE ? "receiving a WRITE" : "sending a READ",
			        (unsigned long long)size, strerror(-r));
			break;
		}
		in->nreq++;
		PD_TSAN_WIRE_SEND(); /* this request's buffer accesses come before what the peer
		                        does next */
	}
	flush_status(fd, &out);
	free(in);
	te_gpu_stage_free(stage);
}

/* An INT row of the pd_env table (range and default are the row's; a bad value warns). */
static int env_int(const char *name)
{
	int64_t v;

	pd_env_int(name, &v);
	return (int)v;
}

int te_tcp_server_start(struct te_transport *tp)
{
	tp->hdr_timeout_ms = env_int("PDKV_TCP_HEADER_TIMEOUT_MS");
	tp->idle_timeout_ms = env_int("PDKV_TCP_IDLE_TIMEOUT_S") * 1000;
	if (listen(tp->lfd, 128)) {
		pd_err("tcp: listen on data port %d failed: %s", te_engine_rpc_port(tp->eng) + 1,
		       strerror(errno));
		return TE_ERR_SOCKET;
	}
	return te_net_server_start(tp->lfd, "tcp server", TCP_MAX_SERVER_CONNS, srv_serve, tp,
	                           &tp->srv);
}

void te_tcp_server_stop(struct te_transport *tp)
{
	/* idle connections see it at their next receive timeout; the rest are shut down */
	atomic_store(&tp->stopping, true);
	te_net_server_stop(tp->srv);
	tp->srv = NULL;
}
