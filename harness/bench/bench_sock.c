/* bench_sock: the plain-socket baseline — the same batch shape as the engine runs (24-byte
 * request header, WRITE body follows / READ body returns, one ack per WRITE batch) on one
 * blocking TCP connection per thread, with no engine in between. */
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

#include "pd_util.h"

#define OP_READ  0
#define OP_WRITE 1
#define OP_ACK   0x40

struct hdr {
	uint64_t size, off;
	uint8_t op, pad[7];
};

/* I/O is pd_read_full (recv MSG_WAITALL: one wake-up per message, as a competent plain-socket
 * program would do) and pd_writev_full (header + body in one sendmsg). */
struct sconn {
	struct bench_sock_srv *s;
	int fd;
};

static void *sconn_main(void *arg)
{
	struct sconn *c = arg;
	struct bench_sock_srv *s = c->s;
	struct hdr h;

	while (pd_read_full(c->fd, &h, sizeof(h)) == 0) {
		uint8_t op = h.op & ~OP_ACK;
		if (!h.size || h.off > s->len || h.size > s->len - h.off || op > OP_WRITE)
			break; /* the baseline validates too, or the comparison would be unfair */
		if (op == OP_WRITE) {
			if (pd_read_full(c->fd, s->buf + h.off, h.size))
				break;
			if (h.op & OP_ACK) {
				uint64_t ack = 1;
				if (pd_write_full(c->fd, &ack, 8))
					break;
			}
		} else if (pd_write_full(c->fd, s->buf + h.off, h.size)) {
			break;
		}
	}
	close(c->fd);
	free(c);
	return NULL;
}

void *bench_sock_server(void *arg)
{
	struct bench_sock_srv *s = arg;
	while (!s->stop) {
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
struct sthr {
	const struct bench_opts *o;
	const char *host;
	int port, t;
	uint64_t block;
	char *local, *scratch;
	pthread_barrier_t *bar;
	double xfer_s;
	uint64_t batches, transfers, wrong;
	struct bench_lat lat;
	int err;
};

static int sock_batch(struct sthr *th, int fd, int op, char *base, bool record, double *secs)
{
	const struct bench_opts *o = th->o;
	uint64_t n = o->batch, t0 = pd_now_ns();
	struct hdr *h = calloc(n, sizeof(*h));
	int ret = 0;

	if (!h)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		h[i].size = th->block;
		h[i].off = th->block * (i * o->threads + (uint64_t)th->t);
		h[i].op = (uint8_t)op | (op == OP_WRITE && i == n - 1 ? OP_ACK : 0);
	}
	if (op == OP_WRITE) {
		uint64_t ack;
		for (uint64_t i = 0; i < n && !ret; i++) {
			struct iovec iov[2] = {{&h[i], sizeof(h[i])}, {base + h[i].off, th->block}};
			ret = pd_writev_full(fd, iov, 2);
			if (record && !ret)
				bench_lat_add(&th->lat, (double)(pd_now_ns() - t0) / 1e3);
		}
		if (!ret)
			ret = pd_read_full(fd, &ack, 8);
	} else {
		ret = pd_write_full(fd, h, n * sizeof(*h));
		for (uint64_t i = 0; i < n && !ret; i++) {
			ret = pd_read_full(fd, base + h[i].off, th->block);
			if (record && !ret)
				bench_lat_add(&th->lat, (double)(pd_now_ns() - t0) / 1e3);
		}
	}
	*secs = (double)(pd_now_ns() - t0) / 1e9;
	free(h);
	return ret;
}

static void *sthr_main(void *arg)
{
	struct sthr *th = arg;
	const struct bench_opts *o = th->o;
	uint64_t end, iter = 0;
	double s;
	int fd = pd_tcp_connect(th->host, th->port, 5000);

	if (fd < 0) {
		th->err = fd;
		pthread_barrier_wait(th->bar);
		return NULL;
	}
	if (o->check && o->op == OP_READ) {
		for (uint64_t i = 0; i < o->batch; i++) {
			uint64_t off = th->block * (i * o->threads + (uint64_t)th->t);
			bench_fill(th->local + off, off, th->block, 0);
		}
		th->err = sock_batch(th, fd, OP_WRITE, th->local, false, &s);
	}
	if (!th->err)
		th->err = sock_batch(th, fd, o->op, th->local, false, &s);
	pthread_barrier_wait(th->bar);
	end = pd_now_ns() + (uint64_t)(o->duration * 1e9);
	while (!th->err && pd_now_ns() < end) {
		iter++;
		if (o->check)
			for (uint64_t i = 0; i < o->batch; i++) {
				uint64_t off = th->block * (i * o->threads + (uint64_t)th->t);
				if (o->op == OP_WRITE)
					bench_fill(th->local + off, off, th->block, iter);
				else
					memset(th->local + off, 0, th->block);
			}
		th->err = sock_batch(th, fd, o->op, th->local, true, &s);
		if (th->err)
			break;
		th->xfer_s += s;
		th->batches++;
		th->transfers += o->batch;
		if (!o->check)
			continue;
		if (o->op == OP_WRITE &&
		    (th->err = sock_batch(th, fd, OP_READ, th->scratch, false, &s)))
			break;
		for (uint64_t i = 0; i < o->batch; i++) {
			uint64_t off = th->block * (i * o->threads + (uint64_t)th->t);
			th->wrong +=
			    bench_count_wrong((o->op == OP_WRITE ? th->scratch : th->local) + off,
			                      off, th->block, o->op == OP_WRITE ? iter : 0);
		}
	}
	close(fd);
	return NULL;
}

static char *s_local, *s_scratch;
static uint64_t s_cap;

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

int bench_sock_row(const struct bench_opts *o, const char *server, uint64_t block,
                   struct bench_row *row)
{
	struct sthr th[BENCH_MAX_THREADS];
	pthread_t tid[BENCH_MAX_THREADS];
	pthread_barrier_t bar;
	struct bench_lat all = {0};
	uint64_t region = block * o->batch * o->threads, t0;
	char host[256], *local, *scratch;
	int port, err = 0;

	memset(row, 0, sizeof(*row));
	row->kind = "socket";
	row->op = o->op;
	row->block = block;
	row->batch = o->batch;
	row->threads = o->threads;
	if (pd_split_hostport(server, host, sizeof(host), &port)) {
		fprintf(stderr, "pdkv-bench: socket baseline address \"%s\" is not host:port\n",
		        server);
		return 1;
	}
	if (bench_sock_prepare(region))
		return 1;
	local = s_local;
	scratch = s_scratch;
	pthread_barrier_init(&bar, NULL, (unsigned)o->threads);
	t0 = pd_now_ns();
	for (uint64_t t = 0; t < o->threads; t++) {
		th[t] = (struct sthr){.o = o,
		                      .host = host,
		                      .port = port,
		                      .t = (int)t,
		                      .block = block,
		                      .local = local,
		                      .scratch = scratch,
		                      .bar = &bar};
		pthread_create(&tid[t], NULL, sthr_main, &th[t]);
	}
	for (uint64_t t = 0; t < o->threads; t++) {
		pthread_join(tid[t], NULL);
		if (th[t].err && !err)
			err = th[t].err;
		row->batches += th[t].batches;
		row->transfers += th[t].transfers;
		row->wrong += th[t].wrong;
		if (th[t].xfer_s > row->seconds)
			row->seconds = th[t].xfer_s;
		bench_lat_merge(&all, &th[t].lat);
	}
	pthread_barrier_destroy(&bar);
	row->wall = (double)(pd_now_ns() - t0) / 1e9;
	row->bytes = row->transfers * block;
	row->bw = bench_bw(o, row->bytes, row->seconds);
	bench_lat_pct(&all, &row->lat_p50_us, &row->lat_p99_us);
	free(all.v);
	if (err) {
		fprintf(stderr, "pdkv-bench: socket baseline to %s failed: %s\n", server,
		        strerror(-err));
		row->failed = 1;
	}
	return err ? 1 : 0;
}
