/* SPDX-License-Identifier: Apache-2.0 */
/* test_te_tcp: two real processes — a forked target and this initiator — moving verified data
 * over TCP with P2PHANDSHAKE and with real etcd / redis / pdkv-metaserver stores (keys checked
 * while up and gone after shutdown or SIGTERM); hostile raw peers against the data and
 * handshake ports (target survives and keeps serving); metadata store down -> clean error. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pd_log.h"
#include "testsvc/pd_svc.h"
#include "pd_util.h"
#include "te/te.h"
#include "te/te_internal.h"

#define TBUF (8u << 20)

struct child {
	pid_t pid;
	int ctl; /* closing it tells the target to shut down */
	char name[256];
	uint64_t addr;
	int rpc_port;
};

static uint8_t pat(uint64_t i)
{
	return (uint8_t)(i * 131 + (i >> 9));
}

/* Forks a target engine: registers TBUF bytes of pattern, reports "name addr rpc_port",
 * waits for EOF on its control pipe (or a signal), then shuts down cleanly. */
static int start_target(const char *conn, const char *name, bool sig_cleanup, struct child *c)
{
	int up[2], down[2];
	char line[512] = "";
	size_t n = 0;

	memset(c, 0, sizeof(*c));
	if (pipe(up) || pipe(down))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		struct te_engine_opts o = {conn, name, "tcp", NULL};
		struct te_engine *e = NULL;
		char *buf = malloc(TBUF), b;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(up[0]);
		close(down[1]);
		for (uint64_t i = 0; i < TBUF; i++)
			buf[i] = (char)pat(i);
		if (te_engine_create(&o, &e) || te_register(e, buf, TBUF, "cpu:0") ||
		    (sig_cleanup && te_engine_install_signal_cleanup(e))) {
			dprintf(up[1], "ERR\n");
			_exit(1);
		}
		dprintf(up[1], "%s %llu %d\n", te_engine_name(e),
		        (unsigned long long)(uintptr_t)buf, te_engine_rpc_port(e));
		/* poll, not a bare read: ThreadSanitizer runs a signal handler only when its thread
		 * leaves a non-blocking interceptor, and read() is not one it treats as blocking */
		for (;;) {
			struct pollfd p = {down[0], POLLIN, 0};
			if (poll(&p, 1, -1) < 0 && errno == EINTR)
				continue;
			if (read(down[0], &b, 1) <= 0)
				break;
		}
		te_engine_destroy(e);
		free(buf);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	c->ctl = down[1];
	while (n < sizeof(line) - 1) {
		struct pollfd p = {up[0], POLLIN, 0};
		ssize_t r;
		if (poll(&p, 1, 15000) != 1)
			break;
		r = read(up[0], line + n, sizeof(line) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (memchr(line, '\n', n))
			break;
	}
	close(up[0]);
	{
		unsigned long long a = 0;
		if (sscanf(line, "%255s %llu %d", c->name, &a, &c->rpc_port) != 3)
			return -1;
		c->addr = a;
	}
	return 0;
}

/* Clean stop: EOF on the control pipe; returns the exit status. */
static int stop_target(struct child *c)
{
	int st = -1;
	close(c->ctl);
	for (int i = 0; i < 500; i++) {
		if (waitpid(c->pid, &st, WNOHANG) == c->pid)
			return st;
		pd_sleep_ms(20);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &st, 0);
	return -1;
}

static struct te_engine *mk(const char *conn, const char *name)
{
	struct te_engine_opts o = {conn, name, "tcp", NULL};
	struct te_engine *e = NULL;
	int r = te_engine_create(&o, &e);
	if (r)
		fail_msg("te_engine_create(%s, %s): %s", conn, name, te_strerror(r));
	return e;
}

static void wait_all(struct te_engine *e, uint64_t b, size_t n, int want)
{
	for (size_t i = 0; i < n; i++) {
		struct te_task_status st = {0, 0};
		uint64_t end = pd_now_ns() + 15000000000ull;
		while (pd_now_ns() < end) {
			assert_int_equal(te_batch_status(e, b, i, &st), 0);
			if (st.status == TE_COMPLETED || st.status == TE_FAILED)
				break;
			pd_sleep_ms(1);
		}
		if (st.status != want)
			fail_msg("task %zu: %s, expected %s", i, te_status_name(st.status),
			         te_status_name(want));
	}
}

/* What a batch's landing hook saw (te_batch_set_land), per task. */
#define LAND_TASKS 4
struct land_seen {
	pthread_mutex_t mu;
	char *base; /* the local buffer the READs land in */
	size_t blk; /* bytes per task */
	uint64_t
	    next[LAND_TASKS]; /* the offset the next piece must start at (in order per slice) */
	size_t calls[LAND_TASKS], bad;
	pthread_t caller;
};

static void land_cb(void *ud, size_t task, uint64_t off, const void *data, size_t len)
{
	struct land_seen *s = ud;
	const uint8_t *d = data;
	size_t at = task * s->blk + off, bad = 0;

	/* the bytes are there already, at the request's address + off */
	if (task >= LAND_TASKS || off + len > s->blk || d != (uint8_t *)s->base + at ||
	    pthread_equal(pthread_self(), s->caller))
		bad++;
	for (size_t i = 0; !bad && i < len; i++)
		bad += d[i] != pat(at + i);
	pthread_mutex_lock(&s->mu);
	if (task < LAND_TASKS) {
		bad += off != s->next[task];
		s->next[task] = off + len;
		s->calls[task]++;
	}
	s->bad += bad;
	pthread_mutex_unlock(&s->mu);
}

/* READs into a batch with a landing hook: every byte shown once, in order, on a lane's thread,
 * after it landed; a WRITE batch's hook is never called; the hook is set before submitting. */
static void check_land(struct te_engine *e, uint64_t seg, struct child *c, char *l)
{
	struct land_seen s = {.base = l, .blk = 2u << 20, .caller = pthread_self()};
	struct te_request r[LAND_TASKS];
	uint64_t b;

	pthread_mutex_init(&s.mu, NULL);
	memset(l, 0, TBUF);
	for (int i = 0; i < LAND_TASKS; i++)
		r[i] = (struct te_request){TE_READ, l + i * s.blk, seg, c->addr + i * s.blk, s.blk};
	assert_int_equal(te_batch_set_land(e, 12345, land_cb, &s), TE_ERR_BAD_BATCH);
	assert_int_equal(te_batch_alloc(e, 2 * LAND_TASKS, &b), 0);
	assert_int_equal(te_batch_set_land(e, b, land_cb, &s), 0);
	assert_int_equal(te_batch_submit(e, b, r, LAND_TASKS), 0);
	assert_int_equal(te_batch_set_land(e, b, NULL, NULL), TE_ERR_BATCH_BUSY);
	wait_all(e, b, LAND_TASKS, TE_COMPLETED);
	pthread_mutex_lock(&s.mu);
	assert_int_equal(s.bad, 0);
	for (int i = 0; i < LAND_TASKS; i++) {
		assert_int_equal(s.next[i], s.blk);
		assert_true(s.calls[i] >= 1);
	}
	pthread_mutex_unlock(&s.mu);
	/* WRITEs land at the peer: the hook stays quiet */
	for (int i = 0; i < LAND_TASKS; i++)
		r[i].opcode = TE_WRITE;
	memset(s.calls, 0, sizeof(s.calls));
	assert_int_equal(te_batch_submit(e, b, r, LAND_TASKS), 0);
	wait_all(e, b, 2 * LAND_TASKS, TE_COMPLETED);
	for (int i = 0; i < LAND_TASKS; i++)
		assert_int_equal(s.calls[i], 0);
	assert_int_equal(te_batch_free(e, b), 0);
	pthread_mutex_destroy(&s.mu);
}

/* READ the target's pattern, WRITE a new one, READ it back: every byte checked. */
static void exchange(struct te_engine *e, struct child *c)
{
	char *l = malloc(TBUF);
	uint64_t seg, b;
	struct te_request r[16];
	size_t blk = TBUF / 16;

	assert_int_equal(te_register(e, l, TBUF, "cpu:0"), 0);
	assert_int_equal(te_open_segment(e, c->name, &seg), 0);
	check_land(e, seg, c, l);
	memset(l, 0, TBUF);
	for (int i = 0; i < 16; i++)
		r[i] = (struct te_request){TE_READ, l + i * blk, seg, c->addr + i * blk, blk};
	assert_int_equal(te_batch_alloc(e, 48, &b), 0);
	assert_int_equal(te_batch_submit(e, b, r, 16), 0);
	wait_all(e, b, 16, TE_COMPLETED);
	for (uint64_t i = 0; i < TBUF; i++)
		if ((uint8_t)l[i] != pat(i))
			fail_msg("READ: byte %llu is %u, expected %u", (unsigned long long)i,
			         (uint8_t)l[i], pat(i));
	for (uint64_t i = 0; i < TBUF; i++)
		l[i] = (char)(pat(i) ^ 0xa5);
	for (int i = 0; i < 16; i++)
		r[i].opcode = TE_WRITE;
	assert_int_equal(te_batch_submit(e, b, r, 16), 0);
	wait_all(e, b, 32, TE_COMPLETED);
	memset(l, 0, TBUF);
	for (int i = 0; i < 16; i++)
		r[i].opcode = TE_READ;
	assert_int_equal(te_batch_submit(e, b, r, 16), 0);
	wait_all(e, b, 48, TE_COMPLETED);
	assert_int_equal(te_batch_free(e, b), 0);
	for (uint64_t i = 0; i < TBUF; i++)
		if ((uint8_t)l[i] != (uint8_t)(pat(i) ^ 0xa5))
			fail_msg("WRITE+READ: byte %llu differs", (unsigned long long)i);
	/* put the target's pattern back for the next exchange */
	for (uint64_t i = 0; i < TBUF; i++)
		l[i] = (char)pat(i);
	assert_int_equal(te_transfer_sync(e, TE_WRITE, c->name, l, c->addr, TBUF, 10000), 0);
	assert_int_equal(te_unregister(e, l), 0);
	free(l);
}

static void test_p2p_two_processes(void **state)
{
	struct child c;
	struct te_engine *e;
	(void)state;

	assert_int_equal(start_target("P2PHANDSHAKE", "ignored:1", false, &c), 0);
	e = mk("P2PHANDSHAKE", "init");
	exchange(e, &c);
	/* v1 wire format as well */
	setenv("MC_TCP_PROTO", "1", 1);
	te_engine_destroy(e);
	e = mk("P2PHANDSHAKE", "init");
	exchange(e, &c);
	unsetenv("MC_TCP_PROTO");
	te_engine_destroy(e);
	assert_int_equal(stop_target(&c), 0);
}

/* The child initiator of test_write_pieces: WRITEs of sizes that put the 5000-byte send cuts
 * inside headers and bodies alike, then READs them back; twice per wire version, so the first
 * round goes through the lane's sender thread (the lane connects) and the second is sent
 * inline by the submitting thread. 0 when every byte came back. */
static int write_pieces_child(struct child *c)
{
	static const size_t sz[] = {1,    23,    24,    25,   4975,  4976,
	                            4999, 5000,  5001,  9999, 70001, (1u << 20) + 7,
	                            3,    65536, 250001};
	enum { N = sizeof(sz) / sizeof(sz[0]) };
	struct te_request r[N];
	char *l = malloc(TBUF);
	uint64_t seg, b, off;
	int bad = 0;

	for (int v = 0; v < 2 && !bad; v++) {
		struct te_engine_opts o = {"P2PHANDSHAKE", "pieces", "tcp", NULL};
		struct te_engine *e = NULL;

		/* v1 WRITEs end when sent and the target is another process: one lane, so the
		 * target serves each READ after the WRITE before it (round-robin lanes would let a
		 * READ overtake the WRITE of its range on another lane, issue 33) */
		if (v) {
			setenv("MC_TCP_PROTO", "1", 1);
			setenv("MC_TCP_LANES_PER_PEER", "1", 1);
		}
		int cr = !l || te_engine_create(&o, &e);

		unsetenv("MC_TCP_PROTO");
		unsetenv("MC_TCP_LANES_PER_PEER");
		if (cr || te_register(e, l, TBUF, "cpu:0") || te_open_segment(e, c->name, &seg) ||
		    te_batch_alloc(e, 4 * N, &b))
			return 2;
		for (int round = 0; round < 2 && !bad; round++) {
			uint8_t x = (uint8_t)(0x3c + 2 * v + round);

			off = 0;
			for (int i = 0; i < N; i++) {
				r[i] = (struct te_request){TE_WRITE, l + off, seg, c->addr + off,
				                           sz[i]};
				off += sz[i];
			}
			for (uint64_t i = 0; i < off; i++)
				l[i] = (char)(pat(i) ^ x);
			if (te_batch_submit(e, b, r, N))
				return 3;
			wait_all(e, b, (size_t)(2 * round + 1) * N, TE_COMPLETED);
			memset(l, 0, off);
			for (int i = 0; i < N; i++)
				r[i].opcode = TE_READ;
			if (te_batch_submit(e, b, r, N))
				return 4;
			wait_all(e, b, (size_t)(2 * round + 2) * N, TE_COMPLETED);
			for (uint64_t i = 0; i < off && !bad; i++)
				if ((uint8_t)l[i] != (uint8_t)(pat(i) ^ x)) {
					fprintf(
					    stderr,
					    "proto v%d round %d: byte %llu differs after WRITE + "
					    "READ\n",
					    2 - v, round, (unsigned long long)i);
					bad = 5;
				}
		}
		te_batch_free(e, b);
		te_engine_destroy(e);
	}
	free(l);
	return bad;
}

/* WRITE headers and bodies go to sendmsg at most PDKV_TCP_SEND_CHUNK bytes at a time: with a
 * 5000-byte cap, in both wire versions, every byte still lands where it was sent (the cap is
 * read once per process, so the initiator is this program run afresh with its own
 * environment: main's --write-pieces-child). */
static void test_write_pieces(void **state)
{
	struct child c;
	pid_t pid;
	int st = -1;
	(void)state;

	assert_int_equal(start_target("P2PHANDSHAKE", "ignored:1", false, &c), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char addr[32];

		snprintf(addr, sizeof(addr), "%llu", (unsigned long long)c.addr);
		setenv("PDKV_TCP_SEND_CHUNK", "5000", 1);
		execl("/proc/self/exe", "test_te_tcp", "--write-pieces-child", c.name, addr,
		      (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail_msg("the initiator with 5000-byte sends failed (status 0x%x)", st);
	assert_int_equal(stop_target(&c), 0);
}

/* ---------------------------------------------------------------- hostile peers */
static int raw_connect(int port)
{
	int fd = pd_tcp_connect("127.0.0.1", port, 2000);
	struct timeval tv = {3, 0};
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* The server must close the connection at once (EOF, maybe after a v2 status frame). */
static void expect_closed(int fd, bool v2_reject)
{
	unsigned char b[16];
	ssize_t r = recv(fd, b, sizeof(b), MSG_WAITALL);
	if (v2_reject) {
		uint64_t v;
		assert_int_equal(r, 8);
		memcpy(&v, b, 8);
		assert_true(v == 0x4D43545600000001ull);
		r = recv(fd, b, sizeof(b), 0);
	}
	if (r != 0 && !(r < 0 && errno == ECONNRESET))
		fail_msg("expected the server to close the connection, recv returned %zd (%s)", r,
		         r < 0 ? strerror(errno) : "data");
	close(fd);
}

static void send_hdr(int fd, uint64_t size, uint64_t addr, uint8_t op)
{
	unsigned char h[24] = {0};
	memcpy(h, &size, 8);
	memcpy(h + 8, &addr, 8);
	h[16] = op;
	assert_int_equal(send(fd, h, 24, MSG_NOSIGNAL), 24);
}

/* Entries in /proc/<pid>/<what> (fd or task): the target's open files or threads. */
static int proc_count(pid_t pid, const char *what)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	return pd_dir_count(path);
}

/* A peer that opens one TCP connection per request (Mooncake without
 * MC_TCP_ENABLE_CONNECTION_POOL=1), 10,000 times: every request is served, and once the peer
 * is done the target holds no more fds or threads than before it started. */
static void test_conn_per_request(void **state)
{
	struct child c;
	int dport, fds0, thr0, fds = 0, thr = 0;
	(void)state;

	assert_int_equal(start_target("P2PHANDSHAKE", "churn", false, &c), 0);
	dport = c.rpc_port + 1;
	fds0 = proc_count(c.pid, "fd");
	thr0 = proc_count(c.pid, "task");
	assert_true(fds0 > 0 && thr0 > 0);
	for (int i = 0; i < 10000; i++) {
		unsigned char b[64];
		uint64_t off = (uint64_t)(i % 1000) * 64;
		int fd = raw_connect(dport);
		send_hdr(fd, sizeof(b), c.addr + off, 0);
		if (recv(fd, b, sizeof(b), MSG_WAITALL) != (ssize_t)sizeof(b))
			fail_msg("request %d on its own connection: short or no answer", i);
		for (size_t k = 0; k < sizeof(b); k++)
			if (b[k] != pat(off + k))
				fail_msg("request %d: byte %zu wrong", i, k);
		close(fd);
	}
	/* the server threads end at each peer's EOF; give the last ones up to 10 s */
	for (int t = 0; t < 100; t++) {
		fds = proc_count(c.pid, "fd");
		thr = proc_count(c.pid, "task");
		if (fds <= fds0 && thr <= thr0)
			break;
		pd_sleep_ms(100);
	}
	printf("  10000 connections: target fds %d -> %d, threads %d -> %d\n", fds0, fds, thr0,
	       thr);
	assert_true(fds <= fds0);
	assert_true(thr <= thr0);
	stop_target(&c);
}

static void test_hostile_peers(void **state)
{
	struct child c;
	struct te_engine *e;
	int dport, fd, st;
	(void)state;

	assert_int_equal(start_target("P2PHANDSHAKE", "victim", false, &c), 0);
	dport = c.rpc_port + 1;

	/* out of range, both opcodes, v1 and v2 */
	fd = raw_connect(dport);
	send_hdr(fd, 4096, 0x1000, 1);
	expect_closed(fd, false);
	fd = raw_connect(dport);
	send_hdr(fd, 4096, 0x1000, 0 | 0x80);
	expect_closed(fd, true);
	/* straddling the end of the buffer; size that wraps; zero size; bad opcode */
	fd = raw_connect(dport);
	send_hdr(fd, 8192, c.addr + TBUF - 4096, 1);
	expect_closed(fd, false);
	fd = raw_connect(dport);
	send_hdr(fd, UINT64_MAX - 8, c.addr + 16, 0);
	expect_closed(fd, false);
	fd = raw_connect(dport);
	send_hdr(fd, 0, c.addr, 1);
	expect_closed(fd, false);
	fd = raw_connect(dport);
	send_hdr(fd, 16, c.addr, 5);
	expect_closed(fd, false);
	/* truncated header, then EOF */
	fd = raw_connect(dport);
	assert_int_equal(send(fd, "0123456789", 10, MSG_NOSIGNAL), 10);
	shutdown(fd, SHUT_WR);
	expect_closed(fd, false);
	/* a valid request first, then garbage on the same (persistent) connection */
	fd = raw_connect(dport);
	send_hdr(fd, 16, c.addr, 0);
	{
		unsigned char b[16];
		assert_int_equal(recv(fd, b, 16, MSG_WAITALL), 16);
		for (int i = 0; i < 16; i++)
			assert_int_equal(b[i], pat((uint64_t)i));
	}
	send_hdr(fd, 16, 0xdeadbeef000, 0);
	expect_closed(fd, false);

	/* handshake port: oversize length, zero length, truncated, malformed JSON, legacy */
	fd = raw_connect(c.rpc_port);
	{
		uint64_t big = 1ull << 40;
		assert_int_equal(send(fd, &big, 8, MSG_NOSIGNAL), 8);
		expect_closed(fd, false);
	}
	fd = raw_connect(c.rpc_port);
	{
		uint64_t z = 0;
		assert_int_equal(send(fd, &z, 8, MSG_NOSIGNAL), 8);
		expect_closed(fd, false);
	}
	fd = raw_connect(c.rpc_port);
	{
		uint64_t n = 1000;
		assert_int_equal(send(fd, &n, 8, MSG_NOSIGNAL), 8);
		assert_int_equal(send(fd, "\x01{", 2, MSG_NOSIGNAL), 2);
		shutdown(fd, SHUT_WR);
		expect_closed(fd, false);
	}
	{
		char *reply = NULL, host[64];
		snprintf(host, sizeof(host), "127.0.0.1");
		/* junk JSON in a metadata request: still answered with the descriptor */
		assert_int_equal(
		    te_hs_request(host, c.rpc_port, TE_HS_METADATA, "{{{not json", &reply, 3000),
		    0);
		assert_non_null(strstr(reply, "\"protocol\":\"tcp\""));
		free(reply);
		/* connection request to a tcp engine: answered "null" */
		assert_int_equal(
		    te_hs_request(host, c.rpc_port, TE_HS_CONNECTION, "{}", &reply, 3000), 0);
		assert_string_equal(reply, "null");
		free(reply);
		/* legacy frame (no type byte) goes the connection path too */
		fd = raw_connect(c.rpc_port);
		assert_int_equal(te_hs_send_frame(fd, TE_HS_LEGACY, "{\"a\":1}", 7), 0);
		{
			int type;
			size_t len;
			char *json;
			assert_int_equal(te_hs_recv_frame(fd, &type, &json, &len, 0), 0);
			assert_int_equal(type, TE_HS_LEGACY);
			assert_string_equal(json, "null");
			free(json);
		}
		close(fd);
	}
	/* a silent handshake client must not block the others */
	fd = raw_connect(c.rpc_port);
	{
		char *reply = NULL;
		uint64_t t0 = pd_now_ns();
		assert_int_equal(
		    te_hs_request("127.0.0.1", c.rpc_port, TE_HS_METADATA, "{}", &reply, 3000), 0);
		assert_true(pd_now_ns() - t0 < 2000000000ull);
		free(reply);
	}
	close(fd);

	/* the target is alive and still serves verified data */
	assert_int_equal(waitpid(c.pid, &st, WNOHANG), 0);
	e = mk("P2PHANDSHAKE", "after");
	exchange(e, &c);
	te_engine_destroy(e);
	assert_int_equal(stop_target(&c), 0);
}

/* ---------------------------------------------------------------- metadata backends */
static void check_key(struct te_meta *m, const char *key, bool want, const char *needle)
{
	char *v = NULL;
	int r = te_meta_get(m, key, &v);
	if (want) {
		if (r)
			fail_msg("key %s: %s", key, te_strerror(r));
		if (needle && !strstr(v, needle))
			fail_msg("key %s: %s lacks %s", key, v, needle);
		/* "\n"-terminated as Mooncake's FastWriter, except on HTTP: the newest release
		 * (the default) writes none there */
		assert_true((v[strlen(v) - 1] == '\n') == (te_meta_kind(m) != TE_META_HTTP));
	} else if (r != TE_ERR_NOT_FOUND) {
		fail_msg("key %s should be gone, got %d %s", key, r, v ? v : "");
	}
	free(v);
}

static void backend_case(enum pd_svc_kind kind)
{
	struct pd_svc svc;
	struct child c;
	struct te_engine *e;
	struct te_meta *m = NULL;
	char err[256], *segkey, *rpckey, needle[64], tname[64];
	int r = pd_svc_start(kind, "127.0.0.1", NULL, &svc), st;

	if (r == -ENOENT) {
		print_message("SKIP %s: server binary not installed\n", pd_svc_kind_name(kind));
		return;
	}
	assert_int_equal(r, 0);
	snprintf(tname, sizeof(tname), "tgt-%s-%d:1", pd_svc_kind_name(kind), (int)getpid());
	assert_int_equal(start_target(svc.conn, tname, false, &c), 0);
	assert_string_equal(c.name, tname);
	assert_int_equal(te_meta_open(svc.conn, &m, err, sizeof(err)), 0);
	segkey = te_meta_segment_key(tname);
	rpckey = te_meta_rpc_key(tname);
	snprintf(needle, sizeof(needle), "\"tcp_data_port\":%d", c.rpc_port + 1);
	check_key(m, segkey, true, needle);
	check_key(m, segkey, true, "\"tcp_proto_version\":2");
	snprintf(needle, sizeof(needle), "\"rpc_port\":%d}", c.rpc_port);
	check_key(m, rpckey, true, needle);

	e = mk(svc.conn, "init-engine");
	exchange(e, &c);
	te_engine_destroy(e);
	/* the initiator removed its own keys too */
	{
		char *k = te_meta_rpc_key("init-engine");
		check_key(m, k, false, NULL);
		free(k);
	}
	assert_int_equal(stop_target(&c), 0);
	check_key(m, segkey, false, NULL);
	check_key(m, rpckey, false, NULL);

	/* SIGTERM with te_engine_install_signal_cleanup: keys removed, process dies by it */
	assert_int_equal(start_target(svc.conn, tname, true, &c), 0);
	check_key(m, segkey, true, NULL);
	kill(c.pid, SIGTERM);
	assert_int_equal(waitpid(c.pid, &st, 0), c.pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	close(c.ctl);
	check_key(m, segkey, false, NULL);
	check_key(m, rpckey, false, NULL);

	free(segkey);
	free(rpckey);
	te_meta_close(m);
	pd_svc_stop(&svc);

	/* the store is down now: engine creation fails cleanly and quickly */
	{
		struct te_engine_opts o = {svc.conn, "late", "tcp", NULL};
		struct te_engine *x = NULL;
		uint64_t t0 = pd_now_ns();
		r = te_engine_create(&o, &x);
		assert_true(r < 0);
		assert_null(x);
		assert_true(pd_now_ns() - t0 < 15000000000ull);
	}
}

static void test_etcd(void **state)
{
	(void)state;
	backend_case(PD_SVC_ETCD);
}

static void test_redis(void **state)
{
	(void)state;
	backend_case(PD_SVC_REDIS);
}

static void test_http(void **state)
{
	(void)state;
	backend_case(PD_SVC_METASERVER);
}

static void test_store_down(void **state)
{
	static const char *conns[] = {"etcd://127.0.0.1:%d", "127.0.0.1:%d", "redis://127.0.0.1:%d",
	                              "http://127.0.0.1:%d/metadata"};
	(void)state;
	for (size_t i = 0; i < PD_ARRAY_SIZE(conns); i++) {
		char conn[128];
		struct te_engine_opts o = {conn, "nobody", "tcp", NULL};
		struct te_engine *x = NULL;
		uint64_t t0 = pd_now_ns();
		int r;
		snprintf(conn, sizeof(conn), conns[i], pd_free_port("127.0.0.1"));
		r = te_engine_create(&o, &x);
		if (r >= 0 || x)
			fail_msg("%s: engine created against a dead store", conn);
		if (pd_now_ns() - t0 > 15000000000ull)
			fail_msg("%s: took %.1f s to fail", conn, (double)(pd_now_ns() - t0) / 1e9);
	}
	{
		struct te_engine_opts o = {"zookeeper://x:1", "n", "tcp", NULL};
		struct te_engine *x = NULL;
		assert_true(te_engine_create(&o, &x) < 0);
	}
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--write-pieces-child")) {
		struct child c = {.addr = strtoull(argv[3], NULL, 10)};

		snprintf(c.name, sizeof(c.name), "%s", argv[2]);
		setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1);
		if (pd_sock_send_chunk() != 5000) {
			fprintf(stderr, "PDKV_TCP_SEND_CHUNK=5000 gave a cap of %zu\n",
			        pd_sock_send_chunk());
			return 6;
		}
		return write_pieces_child(&c);
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_p2p_two_processes),
	    cmocka_unit_test(test_write_pieces),
	    cmocka_unit_test(test_hostile_peers),
	    cmocka_unit_test(test_conn_per_request),
	    cmocka_unit_test(test_store_down),
	    cmocka_unit_test(test_etcd),
	    cmocka_unit_test(test_redis),
	    cmocka_unit_test(test_http),
	};
	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1);
	signal(SIGPIPE, SIG_IGN);
	if (getenv("TE_TCP_ONLY"))
		cmocka_set_test_filter(getenv("TE_TCP_ONLY"));
	return cmocka_run_group_tests_name("te_tcp", tests, NULL, NULL);
}
