/* SPDX-License-Identifier: Apache-2.0 */
/* Hostile-peer and fault tests of the V0 connector (issue 11 D1, D2, D3, D10): raw TCP peers
 * with forged ZMTP frame sizes, a rogue ZMQ PULL stealing answers, a graceful decode restart
 * and a dead decode with a small kv_buffer_size. Real libzmq, real etcd, loopback only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "kvc/tests/kvc_testenv.h"
#include "pd_log.h"
#include "pd_util.h"

/* Reads (and drops) what the peer sends until it closes: true when it closed or reset the
 * connection within ms, false when it was still open. */
static bool closed_within(int fd, int ms)
{
	uint64_t end = pd_now_ns() + (uint64_t)ms * 1000000ull;
	char buf[4096];
	while (pd_now_ns() < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 50) <= 0)
			continue;
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
	return false;
}

/* ZMTP 2.0 as a PULL peer: signature, revision 1, socket type PULL (7), an empty identity
 * frame, then the header of a long frame announcing `size` bytes: 23 bytes in all. */
static size_t zmtp2_oversize(uint8_t *b, uint64_t size)
{
	size_t n = 0;
	b[n++] = 0xff;
	memset(b + n, 0, 7);
	n += 7;
	b[n++] = 0x01;
	b[n++] = 0x7f;
	b[n++] = 0x01; /* revision: ZMTP 2.0 */
	b[n++] = 0x07; /* PULL */
	b[n++] = 0x00; /* identity: flags, length 0 */
	b[n++] = 0x00;
	b[n++] = 0x02; /* long frame */
	kvc_u64be_put(b + n, size);
	return n + 8;
}

/* A hit moves the item byte-exactly: the pipe still works. */
static void expect_hit(struct kvc *p, struct kvc *d, int64_t seed)
{
	struct kvc_item it, got;
	make_item(&it, seed, 16);
	assert_int_equal(kvc_insert(p, &it), 0);
	assert_int_equal(kvc_drop_select(d, it.tokens.data, 16, &got), KVC_OK);
	assert_item_eq(&got, &it);
	kvc_item_free(&got);
	kvc_item_free(&it);
}

/* D1: a raw TCP peer on each PUSH port announces a 2^62-byte and a 1 GiB frame (then sends
 * 4 MiB of it). Every side-channel socket has ZMQ_MAXMSGSIZE, so libzmq drops the peer at
 * the header: nothing is allocated, the connection closes, the pipe keeps working. Before:
 * abort under ASan (2^62) / 1 GiB buffered per connection. The PUSH ports bind the
 * configured host by default, not every address. */
static void test_oversize_frame_on_push_ports(void **state)
{
	struct env e;
	struct kvc *p, *d;
	struct kvc_opts o;
	uint8_t b[64];
	static const uint64_t sizes[] = {1ull << 62, 1ull << 30};
	(void)state;
	env_init(&e);
	o = env_opts(&e, true, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 5000);
	o.zmq_bind_host = NULL; /* the default: the own URL's host */
	p = kt_create(&o);
	d = mk(&e, false, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 5000);
	for (int port = e.base + 9; port <= e.base + 10; port++)
		for (size_t k = 0; k < PD_ARRAY_SIZE(sizes); k++) {
			int fd = pd_tcp_connect("127.0.0.1", port, 2000);
			assert_true(fd >= 0);
			size_t n = zmtp2_oversize(b, sizes[k]);
			assert_int_equal(pd_write_full(fd, b, n), 0);
			if (sizes[k] < (1ull << 40)) { /* feed part of the announced frame */
				static uint8_t chunk[1 << 16];
				for (int i = 0; i < 64; i++)
					if (send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL) < 0)
						break;
			}
			if (!closed_within(fd, 5000))
				fail_msg("port %d kept a peer that announced a %llu-byte frame",
				         port, (unsigned long long)sizes[k]);
			close(fd);
		}
	expect_hit(p, d, 31);
	/* bound to 127.0.0.1 only: the same port on 127.0.0.2 is still free */
	int fd = pd_tcp_listen("127.0.0.2", e.base + 9, 1);
	if (fd < 0)
		fail_msg("data PUSH port %d is bound on every address (%s)", e.base + 9,
		         strerror(-fd));
	close(fd);
	kvc_destroy(d);
	kvc_destroy(p);
}

/* D2: a rogue ZMQ PULL on prefill's data PUSH port takes part of the answers while it is
 * connected. After it leaves, the consumer resynchronises (WARNING, stats.resyncs) and the
 * next select is a hit again. Before: every later select timed out, forever. */
static void test_rogue_pull_on_data_port(void **state)
{
	struct env e;
	struct kvc *p, *d;
	struct kvc_item it, got;
	struct kvc_stats ds;
	char a[64];
	int zero = 0, rc, took = 0;
	(void)state;
	env_init(&e);
	p = mk(&e, true, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 5000);
	d = mk(&e, false, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 3000);
	expect_hit(p, d, 40);
	void *ctx = zmq_ctx_new(), *rogue = zmq_socket(ctx, ZMQ_PULL);
	zmq_setsockopt(rogue, ZMQ_LINGER, &zero, sizeof(zero));
	snprintf(a, sizeof(a), "tcp://127.0.0.1:%d", e.base + 9);
	assert_int_equal(zmq_connect(rogue, a), 0);
	pd_sleep_ms(300); /* let the connection come up before the answers go out */
	make_item(&it, 41, 16);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(kvc_insert(p, &it), 0);
		rc = kvc_drop_select(d, it.tokens.data, 16, &got);
		kvc_item_free(&got);
		print_message("    select with the rogue connected: %s\n", kvc_strerror(rc));
	}
	for (;;) { /* the rogue really took frames */
		zmq_pollitem_t pi = {.socket = rogue, .events = ZMQ_POLLIN};
		uint8_t b[128];
		if (zmq_poll(&pi, 1, took ? 0 : 2000) <= 0)
			break;
		if (zmq_recv(rogue, b, sizeof(b), ZMQ_DONTWAIT) < 0)
			break;
		took++;
	}
	print_message("    the rogue took %d frame(s)\n", took);
	assert_true(took > 0);
	zmq_close(rogue);
	zmq_ctx_term(ctx);
	kvc_item_free(&it);
	/* recovery: within 3 selects one is a hit with the right bytes */
	rc = -1;
	for (int i = 0; i < 3 && rc != KVC_OK; i++) {
		make_item(&it, 50 + i, 16);
		assert_int_equal(kvc_insert(p, &it), 0);
		rc = kvc_drop_select(d, it.tokens.data, 16, &got);
		print_message("    select %d after the rogue left: %s\n", i + 1, kvc_strerror(rc));
		if (rc == KVC_OK)
			assert_item_eq(&got, &it);
		kvc_item_free(&got);
		kvc_item_free(&it);
	}
	assert_int_equal(rc, KVC_OK);
	kvc_get_stats(d, &ds);
	assert_true(ds.resyncs >= 1);
	expect_hit(p, d, 60);
	kvc_destroy(d);
	kvc_destroy(p);
}

/* D3: decode stops gracefully (end signal) and starts again on the same ports: prefill's
 * drop_select handler keeps serving. Before: the handler exited on the end signal and every
 * later select timed out until prefill restarted. */
static void test_graceful_decode_restart(void **state)
{
	struct env e;
	struct kvc *p, *d;
	(void)state;
	env_init(&e);
	p = mk(&e, true, KVC_FRAME_U64BE, KVC_MISS_OLD, 0, 5000);
	d = mk(&e, false, KVC_FRAME_U64BE, KVC_MISS_OLD, 0, 5000);
	expect_hit(p, d, 70);
	for (int round = 0; round < 2; round++) {
		kvc_destroy(d); /* sends the end signal */
		d = mk(&e, false, KVC_FRAME_U64BE, KVC_MISS_OLD, 0, 5000);
		expect_hit(p, d, 71 + round);
	}
	kvc_destroy(d);
	kvc_destroy(p);
}

struct ins {
	struct kvc *p;
	struct kvc_item *it;
	int rc;
	atomic_bool done;
};

static void *ins_main(void *arg)
{
	struct ins *in = arg;
	in->rc = kvc_insert(in->p, in->it);
	atomic_store(&in->done, true);
	return NULL;
}

/* D10: decode is gone and kv_buffer_size is small: an insert that finds the buffer full
 * waits a bounded time (default 5 s), then fails with KVC_ERR_TIMEOUT and a WARNING. Before:
 * it waited until the connector was destroyed. */
static void test_full_buffer_without_consumer(void **state)
{
	struct env e;
	struct kvc *p;
	struct kvc_item a, b;
	struct kvc_stats ps;
	struct ins in;
	pthread_t th;
	(void)state;
	env_init(&e);
	e.kp.kv_buffer_size = 1e6; /* one 16-token item (~0.6 MB) fits, two do not */
	p = mk(&e, true, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 5000);
	make_item(&a, 80, 16);
	make_item(&b, 81, 16);
	assert_int_equal(kvc_insert(p, &a), 0);
	in = (struct ins){.p = p, .it = &b};
	pthread_create(&th, NULL, ins_main, &in);
	for (int i = 0; i < 300 && !atomic_load(&in.done); i++) /* 30 s at most */
		pd_sleep_ms(100);
	bool returned = atomic_load(&in.done);
	kvc_get_stats(p, &ps);
	kvc_destroy(p); /* unblocks a still-waiting insert */
	pthread_join(th, NULL);
	if (!returned)
		fail_msg("insert into a full buffer still blocked after 30 s");
	assert_int_equal(in.rc, KVC_ERR_TIMEOUT);
	assert_int_equal(ps.insert_timeouts, 1);
	kvc_item_free(&a);
	kvc_item_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_oversize_frame_on_push_ports),
	    cmocka_unit_test(test_rogue_pull_on_data_port),
	    cmocka_unit_test(test_graceful_decode_restart),
	    cmocka_unit_test(test_full_buffer_without_consumer),
	};
	return env_run_tests(tests);
}
