/* SPDX-License-Identifier: Apache-2.0 */
/* bench_sock: the plain-socket baseline — the same batch shape as the engine runs (24-byte
 * request header, WRITE body follows / READ body returns, one ack per WRITE batch) on as many
 * blocking TCP connections as the engine opens lanes (one thread each; for a one-thread engine
 * row in lockstep: a batch ends when its last connection's part does, as the engine's ends with
 * its slowest lane), no engine in between. */
#include "bench.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_tsan.h"
#include "pd_tcpcc.h"
#include "pd_util.h"
#include "te/te.h"

#define OP_READ  BENCH_READ
#define OP_WRITE BENCH_WRITE
#define OP_ACK   0x40

struct hdr {
	uint64_t size, off;
	uint8_t op, pad[7];
};

/* I/O is pd_read_full (recv MSG_WAITALL: one wake-up per message, as a competent plain-socket
 * program would do, in the same 256 KiB pieces as the engine's TCP transport; bodies polled
 * first, pd_read_full_spin, as the engine receives them) and
 * pd_writev_full_max (header + body, at most pd_sock_send_chunk() per sendmsg, as the engine
 * sends READ replies and WRITE bodies). */
struct sconn {
	struct bench_sock_srv *s;
	int fd;
};

static void *sconn_main(void *arg)
{
	struct sconn *c = arg;
	struct bench_sock_srv *s = c->s;
	struct hdr h;

	/* the buffer is shared with the engine's TCP server; the initiator orders the two by its
	 * requests, through sockets: annotated for TSan (pd_tsan.h) */
	while (pd_tsan_recv_rc(pd_read_full(c->fd, &h, sizeof(h))) == 0) {
		uint8_t op = h.op & ~OP_ACK;
		if (!h.size || h.off > s->len || h.size > s->len - h.off || op > OP_WRITE)
			break; /* the baseline validates too, or the comparison would be unfair */
		if (op == OP_WRITE) {
			if (pd_read_full_spin(c->fd, s->buf + h.off, h.size))
				break;
			if (h.op & OP_ACK) {
				uint64_t ack = 1;
				PD_TSAN_WIRE_SEND();
				if (pd_write_full(c->fd, &ack, 8))
					break;
			}
		} else {
			struct iovec body = {s->buf + h.off, h.size};
			/* READ replies in the engine server's pieces (pd_sock_send_chunk) */
			if (pd_writev_full_max(c->fd, &body, 1, pd_sock_send_chunk()))
				break;
		}
		PD_TSAN_WIRE_SEND();
	}
	close(c->fd);
	free(c);
	return NULL;
}

void *bench_sock_server(void *arg)
{
	struct bench_sock_srv *s = arg;
	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) { /* main sets it on SIGTERM */
		struct pollfd p = {s->lfd, POLLIN, 0};
		struct sconn *c;
		pthread_t t;
		int fd, one = 1;
		if (poll(&p, 1, 200) <= 0)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pd_sock_congestion(fd); /* as the engine's data sockets (PDKV_TCP_CONGESTION) */
		c = malloc(sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->s = s;
		c->fd = fd;
		if (pthread_create(&t, NULL, sconn_main, c)) {
			close(fd);
			free(c);
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

/* ---------------------------------------------------------------- initiator */
struct sock_thr {
	int fd;
	long lag_ms; /* PDKV_TEST_SOCK_LAG_MS on the first connection (tests only), else 0 */
};

static int sock_batch(struct bench_thread *th, int op, char *base, bool record, double *secs)
{
	const struct bench_opts *o = th->o;
	const struct bench_sock_ctx *c = th->ctx;
	const struct sock_thr *p = th->priv;
	int fd = p->fd;
	uint64_t n = o->batch, t0 = pd_now_ns();
	struct hdr *h = calloc(n, sizeof(*h));
	int ret = 0;

	if (!h)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		h[i].size = th->block;
		h[i].off = c->roff + th->block * (i * o->threads + (uint64_t)th->t);
		h[i].op = (uint8_t)op | (op == OP_WRITE && i == n - 1 ? OP_ACK : 0);
	}
	if (op == OP_WRITE) {
		uint64_t ack;
		for (uint64_t i = 0; i < n && !ret; i++) {
			struct iovec iov[2] = {{&h[i], sizeof(h[i])},
			                       {base + h[i].off - c->roff, th->block}};
			ret = pd_writev_full_max(fd, iov, 2, pd_sock_send_chunk());
			if (record && !ret)
				bench_lat_add(&th->lat, (double)(pd_now_ns() - t0) / 1e3);
		}
		if (!ret)
			ret = pd_read_full(fd, &ack, 8);
	} else {
		ret = pd_write_full(fd, h, n * sizeof(*h));
		for (uint64_t i = 0; i < n && !ret; i++) {
			ret = pd_read_full_spin(fd, base + h[i].off - c->roff, th->block);
			if (record && !ret)
				bench_lat_add(&th->lat, (double)(pd_now_ns() - t0) / 1e3);
		}
	}
	if (record && p->lag_ms)
		pd_sleep_ms((int)p->lag_ms);
	*secs = (double)(pd_now_ns() - t0) / 1e9;
	free(h);
	return ret;
}

static char *s_local, *s_scratch;
static uint64_t s_cap;
static int s_connects; /* connections opened, for bench_row.conns */

/* Buffers are kept across rows (like the engine's registered ones) and touched here, before
 * any row, so first-touch page faults are in no row's CPU time. */
int bench_sock_prepare(uint64_t region)
{
	if (region <= s_cap)
		return 0;
	if (s_local) {
		munmap(s_local, s_cap);
		munmap(s_scratch, s_cap);
	}
	s_cap = region;
	s_local = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	s_scratch = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s_local == MAP_FAILED || s_scratch == MAP_FAILED) {
		fprintf(stderr, "pdkv-bench: cannot map 2 x %llu bytes\n",
		        (unsigned long long)region);
		s_local = s_scratch = NULL;
		s_cap = 0;
		return 1;
	}
	memset(s_local, 0, region);
	memset(s_scratch, 0, region);
	return 0;
}

static int sock_thread_init(struct bench_thread *th)
{
	const struct bench_sock_ctx *c = th->ctx;
	struct sock_thr *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	th->priv = p;
	if (th->t == 0) {
		/* PDKV_TEST_SOCK_LAG_MS (test only, never set in production): the first
		 * connection's part of every timed batch takes that much longer, so a test can see
		 * that the row's batch waits for its slowest connection
		 * (test_bench_lanes.sh). 1..1000; else 0. */
		int64_t lag;
		pd_env_int("PDKV_TEST_SOCK_LAG_MS", &lag);
		p->lag_ms = (long)lag;
	}
	th->local = s_local + c->loff;
	th->scratch = s_scratch + c->loff;
	p->fd = pd_tcp_connect(c->host, c->port, 5000);
	if (p->fd >= 0)
		pd_sock_congestion(p->fd);
	if (p->fd >= 0)
		__atomic_add_fetch(&s_connects, 1, __ATOMIC_RELAXED);
	return p->fd < 0 ? p->fd : 0;
}

static void sock_thread_fini(struct bench_thread *th)
{
	struct sock_thr *p = th->priv;
	if (p && p->fd >= 0)
		close(p->fd);
	free(p);
}

const struct bench_backend bench_sock_backend = {
    .kind = "socket",
    .err_memory = -ENOMEM,
    .thread_init = sock_thread_init,
    .thread_fini = sock_thread_fini,
    .batch = sock_batch,
};

int bench_sock_ctx_init(struct bench_sock_ctx *c, const char *server, uint64_t roff, uint64_t loff)
{
	memset(c, 0, sizeof(*c));
	c->roff = roff;
	c->loff = loff;
	if (!server || pd_split_hostport(server, c->host, sizeof(c->host), &c->port)) {
		fprintf(stderr, "pdkv-bench: socket baseline address \"%s\" is not host:port\n",
		        server ? server : "-");
		return 1;
	}
	return 0;
}

int bench_sock_conns(const struct bench_opts *o)
{
	uint64_t want = o->batch * o->threads;
	int c;

	if (o->protocol && strcmp(o->protocol, "tcp"))
		return (int)o->threads; /* the engine's TCP lanes do not apply */
	c = te_tcp_lanes_per_peer();
	while (c > 1 && want % (uint64_t)c)
		c--;
	return c;
}

bool bench_sock_lockstep(const struct bench_opts *o)
{
	return o->threads == 1 && bench_sock_conns(o) > 1;
}

int bench_sock_row(const struct bench_opts *o, const char *server, uint64_t block,
                   struct bench_row *row)
{
	struct bench_sock_ctx c;
	struct bench_opts so = *o;
	struct bench_lane lane = {.be = &bench_sock_backend, .ctx = &c, .o = &so, .block = block};
	int err, n0, conns = bench_sock_conns(o);

	if (bench_sock_ctx_init(&c, server, 0, 0)) {
		bench_row_init(row, "socket", o, block);
		return 1;
	}
	if (bench_sock_prepare(block * o->batch * o->threads))
		return 1;
	/* as many connections as the engine's lanes (iperf3 -P): one per thread, the same
	 * transfers in flight in all (batch x threads), the same region covered */
	so.batch = o->batch * o->threads / (uint64_t)conns;
	so.threads = (uint64_t)conns;
	/* one engine thread: its batch spans the lanes and ends with the slowest, so the
	 * connections carry one batch together; more: each engine thread's batches run free */
	lane.lockstep = bench_sock_lockstep(o);
	n0 = __atomic_load_n(&s_connects, __ATOMIC_RELAXED);
	err = bench_run_lanes(&lane, 1);
	*row = lane.row;
	row->conns = __atomic_load_n(&s_connects, __ATOMIC_RELAXED) - n0;
	row->batch = o->batch;
	row->threads = o->threads;
	row->batches = row->transfers / o->batch; /* in o's batches, as the engine's rows */
	if (err) {
		fprintf(stderr, "pdkv-bench: socket baseline to %s failed: %s\n", server,
		        strerror(-err));
		row->failed = 1;
	}
	return err ? 1 : 0;
}
