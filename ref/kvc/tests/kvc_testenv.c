/* SPDX-License-Identifier: Apache-2.0 */
/* kvc_testenv: the shared fixture of the connector's engine tests (see kvc_testenv.h): etcd,
 * configs with identical URLs, ports below 65000 that are free, items and comparisons. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvc/tests/kvc_testenv.h"
#include "pd_util.h"

struct pd_svc g_etcd;

static bool port_free(int port)
{
	int fd = pd_tcp_listen("127.0.0.1", port, 1);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* B with B, B+9, B+10 and B+100, B+109, B+110 free (identical URLs: decode uses B+100). */
static int pick_base(void)
{
	static const int offs[] = {0, 9, 10, 100, 109, 110};
	for (int tries = 0; tries < 50; tries++) {
		int b = pd_free_port("127.0.0.1");
		bool ok = b > 1024 && b < 65000;
		for (size_t i = 0; ok && i < PD_ARRAY_SIZE(offs); i++)
			ok = port_free(b + offs[i]);
		if (ok)
			return b;
	}
	return -1;
}

void env_init(struct env *e)
{
	memset(e, 0, sizeof(*e));
	e->base = pick_base();
	e->pool = 16 << 20;
	assert_true(e->base > 0);
	snprintf(e->url, sizeof(e->url), "127.0.0.1:%d", e->base);
	e->mc.prefill_url = e->url;
	e->mc.decode_url = e->url; /* identical: the decode end shifts to B+100 */
	e->mc.metadata_server = g_etcd.conn;
	e->mc.protocol = "tcp";
	e->mc.device_name = "";
	e->mc.conn_string = g_etcd.conn;
	e->kp.kv_connector = e->kd.kv_connector = "MooncakeConnector";
	e->kp.kv_role = "kv_producer";
	e->kd.kv_role = "kv_consumer";
	e->kp.kv_rank_set = e->kd.kv_rank_set = true;
	e->kp.kv_rank = 0;
	e->kd.kv_rank = 1;
	e->kp.kv_parallel_size = e->kd.kv_parallel_size = 2;
	e->kp.kv_buffer_size = e->kd.kv_buffer_size = 1e9;
	e->kp.is_producer = true;
	e->kd.is_consumer = true;
}

struct kvc_opts env_opts(struct env *e, bool producer, int fmt, int miss, int miss_wait_ms,
                         int select_timeout_ms)
{
	struct kvc_opts o = {
	    .mc = &e->mc,
	    .kt = producer ? &e->kp : &e->kd,
	    .frame_format = fmt,
	    .miss_mode = miss,
	    .miss_wait_ms = miss_wait_ms,
	    .select_timeout_ms = select_timeout_ms,
	    .zmq_bind_host = "127.0.0.1",
	    .pool_bytes = e->pool,
	    .transfer_timeout_ms = 5000,
	};
	return o;
}

struct kvc *kt_create(const struct kvc_opts *o)
{
	struct kvc *c = NULL;
	int rc = kvc_create(o, &c);
	if (rc)
		fail_msg("kvc_create (%s) failed: %s", o->kt->kv_role ? o->kt->kv_role : "?",
		         kvc_strerror(rc));
	assert_true(kvc_ready(c));
	return c;
}

struct kvc *mk(struct env *e, bool producer, int fmt, int miss, int miss_wait_ms,
               int select_timeout_ms)
{
	struct kvc_opts o = env_opts(e, producer, fmt, miss, miss_wait_ms, select_timeout_ms);
	return kt_create(&o);
}

/* A realistic item; content is a function of seed so a mix-up is visible. */
void make_item(struct kvc_item *it, int64_t seed, int ntok)
{
	int64_t st[1] = {ntok}, skv[4] = {L, ntok, H, D}, sh[2] = {ntok, HID};
	memset(it, 0, sizeof(*it));
	assert_int_equal(kvc_tensor_alloc(&it->tokens, KVC_I64, 1, st), 0);
	assert_int_equal(kvc_tensor_alloc(&it->roi, KVC_BOOL, 1, st), 0);
	assert_int_equal(kvc_tensor_alloc(&it->keys, KVC_BF16, 4, skv), 0);
	assert_int_equal(kvc_tensor_alloc(&it->values, KVC_BF16, 4, skv), 0);
	assert_int_equal(kvc_tensor_alloc(&it->hidden, KVC_BF16, 2, sh), 0);
	for (int i = 0; i < ntok; i++) {
		((int64_t *)it->tokens.data)[i] = seed * 1000 + i;
		((uint8_t *)it->roi.data)[i] = 1;
	}
	uint64_t x = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 1;
	struct kvc_tensor *v[3] = {&it->keys, &it->values, &it->hidden};
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i + 8 <= v[k]->nbytes; i += 8) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			memcpy((uint8_t *)v[k]->data + i, &x, 8);
		}
}

void assert_tensor_eq(const struct kvc_tensor *a, const struct kvc_tensor *b)
{
	assert_int_equal(a->dtype, b->dtype);
	assert_int_equal(a->ndim, b->ndim);
	assert_memory_equal(a->shape, b->shape, sizeof(a->shape));
	assert_int_equal(a->nbytes, b->nbytes);
	assert_memory_equal(a->data, b->data, a->nbytes);
}

void assert_item_eq(const struct kvc_item *a, const struct kvc_item *b)
{
	assert_tensor_eq(&a->tokens, &b->tokens);
	assert_tensor_eq(&a->roi, &b->roi);
	assert_tensor_eq(&a->keys, &b->keys);
	assert_tensor_eq(&a->values, &b->values);
	assert_tensor_eq(&a->hidden, &b->hidden);
}

void wait_acks(struct kvc *c)
{
	struct kvc_stats s;
	for (int i = 0; i < 200; i++) {
		kvc_get_stats(c, &s);
		if (s.pending_acks == 0)
			return;
		pd_sleep_ms(10);
	}
	fail_msg("sends still not ACKed after 2 s");
}

static int env_start_etcd(void)
{
	/* keep the engines' RPC endpoints on loopback, whatever the first interface is */
	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1);
	int rc = pd_svc_start(PD_SVC_ETCD, NULL, NULL, &g_etcd);
	if (rc == -ENOENT) {
		printf("SKIP: etcd not installed\n");
		return 77;
	}
	if (rc) {
		fprintf(stderr, "cannot start etcd: %d\n", rc);
		return 1;
	}
	return 0;
}

int env_run_group(const char *name, const struct CMUnitTest *tests, size_t n)
{
	int rc = env_start_etcd();
	if (rc)
		return rc;
	rc = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	pd_svc_stop(&g_etcd);
	return rc;
}
