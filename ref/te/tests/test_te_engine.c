/* SPDX-License-Identifier: Apache-2.0 */
/* test_te_engine: in-process engine tests — handshake framing (typed, legacy, oversize),
 * registration and batch misuse codes, status accounting, P2PHANDSHAKE loopback transfers
 * over real TCP sockets, and the C API's return conventions. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "pd_log.h"
#include "pd_util.h"
#include "te/te.h"
#include "te/te_c.h"
#include "te/te_internal.h"

#define BUF (4u << 20)

static struct te_engine *mk(const char *name)
{
	struct te_engine_opts o = {"P2PHANDSHAKE", name, "tcp", NULL};
	struct te_engine *e = NULL;
	int r = te_engine_create(&o, &e);
	if (r)
		fail_msg("te_engine_create(%s): %d %s", name, r, te_strerror(r));
	return e;
}

/* ---------------------------------------------------------------- framing */
static void test_frame_roundtrip(void **state)
{
	int sv[2], type;
	char *json;
	size_t len;
	(void)state;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(te_hs_send_frame(sv[0], TE_HS_METADATA, "{\"a\":1}", 7), 0);
	assert_int_equal(te_hs_recv_frame(sv[1], &type, &json, &len, 0), 0);
	assert_int_equal(type, TE_HS_METADATA);
	assert_int_equal(len, 7);
	assert_string_equal(json, "{\"a\":1}");
	free(json);

	/* wire bytes: u64 LE length (1 + json), then the type byte */
	{
		unsigned char raw[16];
		assert_int_equal(te_hs_send_frame(sv[0], TE_HS_CONNECTION, "{}", 2), 0);
		assert_int_equal(pd_read_full(sv[1], raw, 11), 0);
		assert_int_equal(raw[0], 3);
		for (int i = 1; i < 8; i++)
			assert_int_equal(raw[i], 0);
		assert_int_equal(raw[8], 0);
		assert_memory_equal(raw + 9, "{}", 2);
	}

	/* legacy (pre-0.3.0): length then JSON, no type byte */
	assert_int_equal(te_hs_send_frame(sv[0], TE_HS_LEGACY, "{\"x\":2}", 7), 0);
	assert_int_equal(te_hs_recv_frame(sv[1], &type, &json, &len, 0), 0);
	assert_int_equal(type, TE_HS_LEGACY);
	assert_string_equal(json, "{\"x\":2}");
	free(json);

	/* oversize and zero lengths are refused before any allocation */
	{
		uint64_t big = (1ull << 20) + 1, zero = 0;
		assert_int_equal(write(sv[0], &big, 8), 8);
		assert_int_equal(te_hs_recv_frame(sv[1], &type, &json, &len, 0),
		                 TE_ERR_MALFORMED_JSON);
		assert_null(json);
		big = UINT64_MAX;
		assert_int_equal(write(sv[0], &big, 8), 8);
		assert_int_equal(te_hs_recv_frame(sv[1], &type, &json, &len, 0),
		                 TE_ERR_MALFORMED_JSON);
		assert_int_equal(write(sv[0], &zero, 8), 8);
		assert_int_equal(te_hs_recv_frame(sv[1], &type, &json, &len, 0),
		                 TE_ERR_MALFORMED_JSON);
	}
	/* truncated frame: EOF mid-body */
	{
		uint64_t n = 100;
		assert_int_equal(write(sv[0], &n, 8), 8);
		assert_int_equal(write(sv[0], "\x01{", 2), 2);
		close(sv[0]);
		assert_int_equal(te_hs_recv_frame(sv[1], &type, &json, &len, 0), TE_ERR_SOCKET);
	}
	close(sv[1]);
}

/* ---------------------------------------------------------------- RPC endpoint (docs/engine.md) */
static void test_rpc_endpoint(void **state)
{
	struct te_engine *e;
	char name[64];
	int p;
	(void)state;

	/* both spellings of the range; the data port (rpc+1) stays inside it too */
	setenv("MC_MIN_RPC_PORT", "16400", 1);
	setenv("MC_MAX_RPC_PORT", "16403", 1);
	e = mk("range");
	p = te_engine_rpc_port(e);
	assert_true(p >= 16400 && p + 1 <= 16403);
	te_engine_destroy(e);
	unsetenv("MC_MIN_RPC_PORT");
	unsetenv("MC_MAX_RPC_PORT");
	setenv("MC_MIN_PRC_PORT", "16410", 1);
	setenv("MC_MAX_PRC_PORT", "16413", 1);
	e = mk("range2");
	p = te_engine_rpc_port(e);
	assert_true(p >= 16410 && p <= 16412);
	te_engine_destroy(e);
	unsetenv("MC_MIN_PRC_PORT");
	unsetenv("MC_MAX_PRC_PORT");
	/* default range; P2P rewrites the name to ip:rpc_port */
	e = mk("whatever");
	p = te_engine_rpc_port(e);
	assert_true(p >= 15000 && p <= 17000);
	snprintf(name, sizeof(name), "127.0.0.1:%d", p);
	assert_string_equal(te_engine_name(e), name);
	te_engine_destroy(e);
	/* legacy binding: host:port from the server name. The data port is p + 1, which another
	 * process may hold: a failed start retries with another pair, and the variable is unset
	 * before anything can fail, so later tests never see it. */
	setenv("MC_LEGACY_RPC_PORT_BINDING", "1", 1);
	e = NULL;
	for (int i = 0; i < 8 && !e; i++) {
		struct te_engine_opts o = {"P2PHANDSHAKE", name, "tcp", NULL};
		p = pd_free_port("127.0.0.1");
		snprintf(name, sizeof(name), "127.0.0.1:%d", p);
		if (te_engine_create(&o, &e))
			e = NULL;
	}
	unsetenv("MC_LEGACY_RPC_PORT_BINDING");
	if (!e)
		fail_msg("legacy binding: no engine started on 8 port pairs");
	if (te_engine_rpc_port(e) != p) {
		int got = te_engine_rpc_port(e);
		te_engine_destroy(e);
		fail_msg("legacy binding: rpc port %d, expected %d", got, p);
	}
	te_engine_destroy(e);
}

/* ---------------------------------------------------------------- registration + batches */
static void test_register_misuse(void **state)
{
	struct te_engine *e = mk("reg-test");
	char *buf = malloc(BUF);
	(void)state;

	assert_non_null(e);
	assert_int_equal(te_register(e, buf, BUF / 2, "cpu:0"), 0);
	assert_int_equal(te_register(e, buf + BUF / 4, BUF / 2, "cpu:0"),
	                 TE_ERR_ADDRESS_OVERLAPPED);
	assert_int_equal(te_register(e, buf, 16, "cpu:0"), TE_ERR_ADDRESS_OVERLAPPED);
	assert_int_equal(te_register(e, buf + BUF / 2, BUF / 2, "cpu:0"), 0); /* adjacent: ok */
	assert_int_equal(te_register(e, NULL, 16, "cpu:0"), TE_ERR_INVALID_ARGUMENT);
	assert_int_equal(te_register(e, buf, 0, "cpu:0"), TE_ERR_INVALID_ARGUMENT);
	assert_int_equal(te_unregister(e, buf + 8), TE_ERR_ADDRESS_NOT_REGISTERED);
	assert_true(te_engine_local_range_ok(e, (uint64_t)(uintptr_t)buf, BUF / 2));
	assert_false(te_engine_local_range_ok(e, (uint64_t)(uintptr_t)buf, BUF / 2 + 1));
	assert_false(te_engine_local_range_ok(e, (uint64_t)(uintptr_t)buf + 8, UINT64_MAX - 4));
	assert_int_equal(te_unregister(e, buf), 0);
	assert_int_equal(te_unregister(e, buf), TE_ERR_ADDRESS_NOT_REGISTERED);
	assert_int_equal(te_unregister(e, buf + BUF / 2), 0);
	te_engine_destroy(e);
	free(buf);
}

/* Task i of batch b ends (bounded: 10 s) with status want. */
static void wait_task(struct te_engine *e, uint64_t b, size_t i, int want)
{
	struct te_task_status st;
	uint64_t end = pd_now_ns() + 10000000000ull;
	do {
		assert_int_equal(te_batch_status(e, b, i, &st), 0);
		if (st.status == TE_COMPLETED || st.status == TE_FAILED)
			break;
		pd_sleep_ms(1);
	} while (pd_now_ns() < end);
	if (st.status != want)
		fail_msg("task %zu: status %s, expected %s", i, te_status_name(st.status),
		         te_status_name(want));
}

static void wait_done(struct te_engine *e, uint64_t b, size_t n, int want)
{
	for (size_t i = 0; i < n; i++)
		wait_task(e, b, i, want);
}

static void test_batch_misuse(void **state)
{
	struct te_engine *a = mk("a"), *b = mk("b");
	char *la = malloc(BUF), *lb = malloc(BUF), *unreg = malloc(4096);
	uint64_t seg, batch, rb = 0;
	struct te_task_status st;
	struct te_request r;
	(void)state;

	assert_int_equal(te_register(a, la, BUF, "cpu:0"), 0);
	assert_int_equal(te_register(b, lb, BUF, "cpu:0"), 0);
	rb = (uint64_t)(uintptr_t)lb;
	/* P2P: names were rewritten to ip:rpc_port */
	assert_non_null(strchr(te_engine_name(b), ':'));
	assert_int_equal(te_open_segment(a, te_engine_name(b), &seg), 0);
	assert_true(seg >= 1);
	{
		uint64_t again, self;
		char slash[300];
		snprintf(slash, sizeof(slash), "/%s", te_engine_name(b));
		assert_int_equal(te_open_segment(a, slash, &again), 0);
		assert_int_equal(again, seg);
		assert_int_equal(te_open_segment(a, te_engine_name(a), &self), 0);
		assert_int_equal(self, TE_LOCAL_SEGMENT);
		assert_int_equal(te_open_segment(a, "", &again), TE_ERR_INVALID_ARGUMENT);
		assert_int_equal(again, TE_INVALID_SEGMENT);
		/* nobody listens there: clean error, no hang */
		assert_true(te_open_segment(a, "127.0.0.1:1", &again) < 0);
		assert_true(te_open_segment(a, "no-port-name", &again) < 0);
	}

	/* bogus batch ids */
	assert_int_equal(te_batch_status(a, 12345, 0, &st), TE_ERR_BAD_BATCH);
	assert_int_equal(te_batch_free(a, TE_INVALID_BATCH), TE_ERR_BAD_BATCH);
	assert_int_equal(te_batch_alloc(a, 0, &batch), TE_ERR_INVALID_ARGUMENT);
	assert_int_equal(te_batch_alloc(a, 2, &batch), 0);
	assert_int_equal(te_batch_submit(a, batch ^ (1ull << 40), &r, 0), TE_ERR_BAD_BATCH);

	r = (struct te_request){TE_WRITE, la, seg, rb, 4096};
	/* misuse: unknown segment, unregistered source, remote out of range, bad opcode */
	r.target_id = 99;
	assert_int_equal(te_batch_submit(a, batch, &r, 1), TE_ERR_INVALID_ARGUMENT);
	r.target_id = seg;
	r.source = unreg;
	assert_int_equal(te_batch_submit(a, batch, &r, 1), TE_ERR_ADDRESS_NOT_REGISTERED);
	r.source = la;
	r.target_offset = rb + BUF - 100; /* straddles the end */
	assert_int_equal(te_batch_submit(a, batch, &r, 1), TE_ERR_OUT_OF_RANGE);
	r.target_offset = 4096;
	assert_int_equal(te_batch_submit(a, batch, &r, 1), TE_ERR_OUT_OF_RANGE);
	r.target_offset = rb;
	r.opcode = 7;
	assert_int_equal(te_batch_submit(a, batch, &r, 1), TE_ERR_INVALID_ARGUMENT);
	r.opcode = TE_WRITE;
	/* nothing of the failed calls was counted */
	assert_int_equal(te_batch_status(a, batch, 0, &st), TE_ERR_INVALID_ARGUMENT);

	/* overflow: 2 slots, 3 requests -> nothing submitted */
	{
		struct te_request three[3] = {r, r, r};
		three[1].length = 0; /* zero-length completes locally */
		assert_int_equal(te_batch_submit(a, batch, three, 3), TE_ERR_TOO_MANY_REQUESTS);
		assert_int_equal(te_batch_submit(a, batch, three, 2), 0);
		assert_int_equal(te_batch_submit(a, batch, three, 1), TE_ERR_TOO_MANY_REQUESTS);
	}
	/* free before observing every task -> busy */
	assert_int_equal(te_batch_free(a, batch), TE_ERR_BATCH_BUSY);
	assert_int_equal(te_batch_status(a, batch, 2, &st), TE_ERR_INVALID_ARGUMENT);
	wait_done(a, batch, 2, TE_COMPLETED);
	assert_int_equal(te_batch_status(a, batch, 0, &st), 0);
	assert_int_equal(st.transferred_bytes, 4096);
	assert_int_equal(te_batch_status(a, batch, 1, &st), 0);
	assert_int_equal(st.transferred_bytes, 0);
	assert_int_equal(te_batch_free(a, batch), 0);
	assert_int_equal(te_batch_free(a, batch), TE_ERR_BAD_BATCH); /* stale id */
	te_engine_destroy(a);
	te_engine_destroy(b);
	free(la);
	free(lb);
	free(unreg);
}

/* Moves verified data both ways between two engines (WRITE then READ), many tasks per batch,
 * sizes from 1 byte to 9 MiB (split into several slices over lanes), v2 and v1 wire formats. */
static void run_transfers(struct te_engine *a, struct te_engine *b, char *la, char *lb,
                          size_t bufsz)
{
	static const size_t sizes[] = {1, 24, 4096, 65536, 1 << 20, 9u << 20};
	uint64_t seg;

	assert_int_equal(te_open_segment(a, te_engine_name(b), &seg), 0);
	for (size_t si = 0; si < PD_ARRAY_SIZE(sizes); si++) {
		size_t sz = sizes[si], n = bufsz / sz > 32 ? 32 : bufsz / sz;
		struct te_request r[32];
		uint64_t batch;

		for (size_t i = 0; i < n * sz; i++)
			la[i] = (char)(i * 7 + si);
		memset(lb, 0, n * sz);
		for (size_t i = 0; i < n; i++)
			r[i] = (struct te_request){TE_WRITE, la + i * sz, seg,
			                           (uint64_t)(uintptr_t)(lb + i * sz), sz};
		assert_int_equal(te_batch_alloc(a, n, &batch), 0);
		assert_int_equal(te_batch_submit(a, batch, r, n), 0);
		wait_done(a, batch, n, TE_COMPLETED);
		assert_int_equal(te_batch_free(a, batch), 0);
		/* a v1 WRITE completes when sent, before the target has received it: wait for the
		 * bytes to land, or a READ on another lane (round-robin, 4 lanes on 16 CPUs) may
		 * overtake them (issue 33) */
		for (uint64_t end = pd_now_ns() + 10000000000ull;
		     memcmp(lb, la, n * sz) && pd_now_ns() < end;)
			pd_sleep_ms(1);
		/* then read back to be sure it landed */
		memset(la, 0x5a, n * sz);
		for (size_t i = 0; i < n; i++)
			r[i].opcode = TE_READ;
		assert_int_equal(te_batch_alloc(a, n, &batch), 0);
		assert_int_equal(te_batch_submit(a, batch, r, n), 0);
		wait_done(a, batch, n, TE_COMPLETED);
		assert_int_equal(te_batch_free(a, batch), 0);
		for (size_t i = 0; i < n * sz; i++)
			if (la[i] != (char)(i * 7 + si) || lb[i] != la[i])
				fail_msg("size %zu: byte %zu differs", sz, i);
	}
}

static void test_transfer_p2p(void **state)
{
	size_t bufsz = 32u << 20;
	struct te_engine *a = mk("x"), *b = mk("y");
	char *la = malloc(bufsz), *lb = malloc(bufsz);
	(void)state;

	assert_int_equal(te_register(a, la, bufsz, "cpu:0"), 0);
	assert_int_equal(te_register(b, lb, bufsz, "cpu:0"), 0);
	run_transfers(a, b, la, lb, bufsz);
	/* own segment (id 0) is loopback-capable */
	{
		uint64_t self;
		memset(la, 3, 4096);
		assert_int_equal(te_open_segment(a, te_engine_name(a), &self), 0);
		assert_int_equal(te_transfer_sync(a, TE_WRITE, te_engine_name(a), la,
		                                  (uint64_t)(uintptr_t)(la + 8192), 4096, 5000),
		                 0);
		assert_int_equal(la[8192 + 4095], 3);
	}
	te_engine_destroy(a);
	te_engine_destroy(b);

	setenv("MC_TCP_PROTO", "1", 1);
	a = mk("x1");
	b = mk("y1");
	assert_int_equal(te_register(a, la, bufsz, "cpu:0"), 0);
	assert_int_equal(te_register(b, lb, bufsz, "cpu:0"), 0);
	run_transfers(a, b, la, lb, bufsz);
	te_engine_destroy(a);
	te_engine_destroy(b);
	unsetenv("MC_TCP_PROTO");
	free(la);
	free(lb);
}

/* The remote unregisters its buffer after we cached its descriptor: the submit re-fetches,
 * then refuses; a request the server itself rejects (stale cache) ends FAILED, and the next
 * request on a fresh connection works. */
static void test_stale_remote(void **state)
{
	struct te_engine *a = mk("s1"), *b = mk("s2");
	char *la = malloc(BUF), *lb = malloc(BUF), *lb2 = malloc(BUF);
	struct te_request r;
	uint64_t seg, batch;
	(void)state;

	assert_int_equal(te_register(a, la, BUF, "cpu:0"), 0);
	assert_int_equal(te_register(b, lb, BUF, "cpu:0"), 0);
	assert_int_equal(te_open_segment(a, te_engine_name(b), &seg), 0);
	assert_int_equal(te_unregister(b, lb), 0);
	r = (struct te_request){TE_WRITE, la, seg, (uint64_t)(uintptr_t)lb, 4096};
	assert_int_equal(te_batch_alloc(a, 4, &batch), 0);
	/* the cache still lists lb: accepted here, rejected by the target, FAILED */
	assert_int_equal(te_batch_submit(a, batch, &r, 1), 0);
	wait_task(a, batch, 0, TE_FAILED);
	/* a buffer the cache does not know yet: one re-fetch finds it */
	assert_int_equal(te_register(b, lb2, BUF, "cpu:0"), 0);
	r.target_offset = (uint64_t)(uintptr_t)lb2;
	assert_int_equal(te_batch_submit(a, batch, &r, 1), 0);
	wait_task(a, batch, 1, TE_COMPLETED);
	/* the refreshed cache no longer lists lb: refused at submit */
	r.target_offset = (uint64_t)(uintptr_t)lb;
	assert_int_equal(te_batch_submit(a, batch, &r, 1), TE_ERR_OUT_OF_RANGE);
	r.opcode = TE_READ;
	r.target_offset = (uint64_t)(uintptr_t)lb2 + BUF - 1024;
	r.length = 1024;
	assert_int_equal(te_batch_submit(a, batch, &r, 1), 0);
	wait_task(a, batch, 2, TE_COMPLETED);
	assert_int_equal(te_batch_free(a, batch), 0);
	te_engine_destroy(a);
	te_engine_destroy(b);
	free(la);
	free(lb);
	free(lb2);
}

/* A fake P2P peer: its handshake server hands out a descriptor whose data port is a listening
 * socket nobody accepts on, so a READ gets no answer: TIMEOUT (MC_SLICE_TIMEOUT=1), the batch
 * stays busy, and when the socket goes away the task FAILS. */
static int fake_data_port;
static char fake_name[64];
static char *fake_handler(void *ctx, int type, const char *json, size_t len)
{
	(void)ctx;
	(void)json;
	(void)len;
	if (type != TE_HS_METADATA)
		return NULL;
	return pd_asprintf(
	    "{\"buffers\":[{\"addr\":4096,\"length\":1048576,\"name\":\"%s\"}],"
	    "\"name\":\"%s\",\"protocol\":\"tcp\",\"tcp_data_port\":%d,"
	    "\"tcp_proto_version\":2,\"timestamp\":\"2025-01-01 00:00:00.000000\"}\n",
	    fake_name, fake_name, fake_data_port);
}

static void test_slice_timeout(void **state)
{
	struct te_hs_server *hs;
	struct te_engine *a;
	char *la = malloc(BUF);
	struct te_task_status st;
	struct te_request r;
	uint64_t seg, batch, end;
	int hport = pd_free_port("127.0.0.1"), dfd;
	(void)state;

	dfd = pd_tcp_listen("127.0.0.1", 0, 4);
	assert_true(dfd >= 0);
	{
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		getsockname(dfd, (struct sockaddr *)&ss, &sl);
		fake_data_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	snprintf(fake_name, sizeof(fake_name), "127.0.0.1:%d", hport);
	assert_int_equal(te_hs_server_start(-1, hport, fake_handler, NULL, &hs), 0);
	setenv("MC_SLICE_TIMEOUT", "1", 1);
	a = mk("t1");
	unsetenv("MC_SLICE_TIMEOUT");
	assert_int_equal(te_register(a, la, BUF, "cpu:0"), 0);
	assert_int_equal(te_open_segment(a, fake_name, &seg), 0);
	r = (struct te_request){TE_READ, la, seg, 8192, 4096};
	assert_int_equal(te_batch_alloc(a, 1, &batch), 0);
	assert_int_equal(te_batch_submit(a, batch, &r, 1), 0);
	end = pd_now_ns() + 5000000000ull;
	do {
		assert_int_equal(te_batch_status(a, batch, 0, &st), 0);
		pd_sleep_ms(20);
	} while (st.status != TE_TIMEOUT && pd_now_ns() < end);
	assert_int_equal(st.status, TE_TIMEOUT);
	assert_int_equal(te_batch_free(a, batch), TE_ERR_BATCH_BUSY);
	close(dfd); /* RST to the pending connection */
	wait_task(a, batch, 0, TE_FAILED);
	assert_int_equal(te_batch_free(a, batch), 0);
	te_engine_destroy(a);
	te_hs_server_stop(hs);
	free(la);
}

/* Wire conformance against a scripted peer that looks like Mooncake: the engine's bytes are
 * captured and checked (24-byte header: size LE, addr LE, opcode at byte 16), for a 0.3.3-era
 * descriptor (no tcp_data_port -> dial rpc_port+1, v1: no status frames) and a >=0.3.12 one
 * (tcp_data_port, tcp_proto_version 2 -> opcode | 0x80, "MCTV" status frames). */
static int wire_v2;
static char *wire_handler(void *ctx, int type, const char *json, size_t len)
{
	(void)ctx;
	(void)json;
	(void)len;
	if (type != TE_HS_METADATA)
		return NULL;
	if (wire_v2)
		return pd_asprintf(
		    "{\"buffers\":[{\"addr\":65536,\"length\":1048576,\"name\":\"%s\"}],"
		    "\"name\":\"%s\",\"protocol\":\"tcp\",\"tcp_data_port\":%d,"
		    "\"tcp_proto_version\":2,\"timestamp\":\"x\"}\n",
		    fake_name, fake_name, fake_data_port);
	return pd_asprintf("{\"buffers\":[{\"addr\":65536,\"length\":1048576,\"name\":\"%s\"}],"
	                   "\"name\":\"%s\",\"protocol\":\"tcp\",\"timestamp\":\"x\"}\n",
	                   fake_name, fake_name);
}

static void wire_case(bool v2)
{
	struct te_hs_server *hs;
	struct te_engine *a;
	char *la = malloc(8192);
	struct te_request r;
	uint64_t seg, batch, le;
	unsigned char h[24], body[100];
	int hport, lfd, fd;
	const uint64_t status_ok = 0x4D43545600000000ull;

	/* v1 peers are dialled at rpc_port+1: find a free pair */
	do {
		hport = pd_free_port("127.0.0.1");
		lfd = pd_tcp_listen("127.0.0.1", hport + 1, 4);
	} while (lfd < 0);
	fake_data_port = hport + 1;
	wire_v2 = v2;
	snprintf(fake_name, sizeof(fake_name), "127.0.0.1:%d", hport);
	assert_int_equal(te_hs_server_start(-1, hport, wire_handler, NULL, &hs), 0);
	setenv("MC_TCP_LANES_PER_PEER", "1", 1); /* one connection to script */
	a = mk("wire");
	unsetenv("MC_TCP_LANES_PER_PEER");
	assert_int_equal(te_register(a, la, 8192, "cpu:0"), 0);
	assert_int_equal(te_open_segment(a, fake_name, &seg), 0);
	memset(la, 0x77, 100);
	r = (struct te_request){TE_WRITE, la, seg, 65536 + 4096, 100};
	assert_int_equal(te_batch_alloc(a, 2, &batch), 0);
	assert_int_equal(te_batch_submit(a, batch, &r, 1), 0);
	fd = accept(lfd, NULL, NULL);
	assert_true(fd >= 0);
	{
		struct timeval tv = {5, 0};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	assert_int_equal(pd_read_full(fd, h, 24), 0);
	memcpy(&le, h, 8);
	assert_int_equal(le, 100); /* x86-64: host order is LE */
	memcpy(&le, h + 8, 8);
	assert_int_equal(le, 65536 + 4096);
	assert_int_equal(h[16], v2 ? 0x81 : 0x01);
	assert_int_equal(pd_read_full(fd, body, 100), 0);
	assert_int_equal(body[99], 0x77);
	if (v2)
		assert_int_equal(pd_write_full(fd, &status_ok, 8), 0);
	wait_task(a, batch, 0, TE_COMPLETED);
	/* READ on the same persistent connection */
	r.opcode = TE_READ;
	r.source = la + 4096;
	assert_int_equal(te_batch_submit(a, batch, &r, 1), 0);
	assert_int_equal(pd_read_full(fd, h, 24), 0);
	assert_int_equal(h[16], v2 ? 0x80 : 0x00);
	memset(body, 0x42, sizeof(body));
	if (v2)
		assert_int_equal(pd_write_full(fd, &status_ok, 8), 0);
	assert_int_equal(pd_write_full(fd, body, 100), 0);
	wait_task(a, batch, 1, TE_COMPLETED);
	assert_int_equal(la[4096 + 99], 0x42);
	assert_int_equal(te_batch_free(a, batch), 0);
	te_engine_destroy(a);
	close(fd);
	close(lfd);
	te_hs_server_stop(hs);
	free(la);
}

static void test_wire_conformance(void **state)
{
	(void)state;
	wire_case(false);
	wire_case(true);
}

/* Handshake client against misbehaving servers: wrong reply type, malformed JSON, silence. */
struct raw_srv {
	int lfd;
	int mode; /* 0 wrong type, 1 bad json, 2 silent */
	pthread_t t;
};

static void *raw_srv_main(void *arg)
{
	struct raw_srv *s = arg;
	int fd = accept(s->lfd, NULL, NULL), type;
	char *json;
	size_t len;
	if (fd < 0)
		return NULL;
	if (te_hs_recv_frame(fd, &type, &json, &len, 0) == 0) {
		free(json);
		if (s->mode == 0)
			te_hs_send_frame(fd, TE_HS_CONNECTION, "{}", 2);
		else if (s->mode == 1)
			te_hs_send_frame(fd, type, "{oops", 5);
		else
			pd_sleep_ms(1500);
	}
	close(fd);
	return NULL;
}

static void test_hs_client_rejects(void **state)
{
	static const int want[] = {TE_ERR_SOCKET, TE_ERR_MALFORMED_JSON, TE_ERR_SOCKET};
	(void)state;
	for (int mode = 0; mode < 3; mode++) {
		struct raw_srv s = {pd_tcp_listen("127.0.0.1", 0, 4), mode, 0};
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		char *reply = NULL;
		uint64_t t0 = pd_now_ns();
		assert_true(s.lfd >= 0);
		getsockname(s.lfd, (struct sockaddr *)&sa, &sl);
		pthread_create(&s.t, NULL, raw_srv_main, &s);
		assert_int_equal(te_hs_request("127.0.0.1", ntohs(sa.sin_port), TE_HS_METADATA,
		                               "{}", &reply, 500),
		                 want[mode]);
		assert_null(reply);
		assert_true(pd_now_ns() - t0 < 3000000000ull);
		pthread_join(s.t, NULL);
		close(s.lfd);
	}
}

/* ---------------------------------------------------------------- C API */
static void test_c_api(void **state)
{
	transfer_engine_t a, b;
	char *la = malloc(BUF), *lb = malloc(BUF), name[128];
	struct transfer_request r;
	struct transfer_status st;
	segment_id_t seg;
	batch_id_t batch;
	(void)state;

	a = createTransferEngine("P2PHANDSHAKE", "ca", NULL, 0, 0);
	b = createTransferEngine("P2PHANDSHAKE", "cb", NULL, 0, 0);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(installTransport(a, "tcp", NULL));
	assert_non_null(installTransport(b, "tcp", NULL));
	assert_null(installTransport(a, "rdma", NULL));
	assert_int_equal(registerLocalMemory(a, la, BUF, "cpu:0", 1), 0);
	assert_int_equal(registerLocalMemory(a, la + 16, 16, "cpu:0", 1), -7);
	assert_int_equal(unregisterLocalMemory(a, la + 16), -3);
	assert_int_equal(registerLocalMemory(b, lb, BUF, "cpu:0", 1), 0);
	assert_int_equal(getLocalIpAndPort(b, name, sizeof(name)), 0);
	seg = openSegment(a, name);
	assert_true(seg >= 1);
	assert_int_equal(openSegment(a, "127.0.0.1:1"), -1);
	batch = allocateBatchID(a, 1);
	assert_true(batch != INVALID_BATCH);
	memset(la, 9, 1000);
	r = (struct transfer_request){OPCODE_WRITE, la, seg, (uint64_t)(uintptr_t)lb, 1000};
	assert_int_equal(submitTransfer(a, batch, &r, 1), 0);
	assert_int_equal(submitTransfer(a, batch, &r, 1), 2); /* positive TooManyRequests */
	assert_int_equal(freeBatchID(a, batch), 4);           /* positive BatchBusy, maybe */
	do {
		assert_int_equal(getTransferStatus(a, batch, 0, &st), 0);
	} while (st.status != STATUS_COMPLETED && st.status != STATUS_FAILED);
	assert_int_equal(st.status, STATUS_COMPLETED);
	assert_int_equal(getTransferStatus(a, batch, 1, &st), 1);
	assert_int_equal(freeBatchID(a, batch), 0);
	assert_int_equal(freeBatchID(a, batch), 1);
	destroyTransferEngine(a);
	destroyTransferEngine(b);
	assert_null(createTransferEngine("bogus://x", "n", NULL, 0, 1));
	free(la);
	free(lb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frame_roundtrip),  cmocka_unit_test(test_rpc_endpoint),
	    cmocka_unit_test(test_register_misuse),  cmocka_unit_test(test_batch_misuse),
	    cmocka_unit_test(test_transfer_p2p),     cmocka_unit_test(test_stale_remote),
	    cmocka_unit_test(test_slice_timeout),    cmocka_unit_test(test_hs_client_rejects),
	    cmocka_unit_test(test_wire_conformance), cmocka_unit_test(test_c_api),
	};
	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1);
	return cmocka_run_group_tests_name("te_engine", tests, NULL, NULL);
}
