/* SPDX-License-Identifier: Apache-2.0 */
/* test_meta_version: Mooncake #3837's "metadata_version" — read from any peer, written with
 * PDKV_MOONCAKE_VERSION >= 0.3.13, the stale / same-version rules on a re-read through a real
 * redis, and the P2P handshake's legacy version 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"
#include "te/te.h"
#include "te/te_internal.h"
#include "testsvc/pd_svc.h"

#define BUF (1u << 20)

/* a TCP descriptor as a #3837 publisher writes it (FastWriter: keys sorted) */
static const char mc3837[] =
    "{\"buffers\":[{\"addr\":139887353266176,\"length\":4194304,\"name\":\"10.0.0.5:15002\"}],"
    "\"metadata_version\":1788000000123456,\"name\":\"10.0.0.5:15002\",\"protocol\":\"tcp\","
    "\"tcp_data_port\":15003,\"tcp_proto_version\":2,\"timestamp\":\"2026-09-03 "
    "10:20:30.123456\"}\n";

static struct te_segment_desc *decode_ok(const char *json)
{
	struct te_segment_desc *d = NULL;
	char err[256] = "";
	if (te_desc_decode(json, strlen(json), &d, err, sizeof(err)))
		fail_msg("decode failed: %s\ninput: %s", err, json);
	return d;
}

static void test_read_and_write(void **state)
{
	struct te_segment_desc *d;
	char *enc;
	(void)state;
	d = decode_ok(mc3837);
	assert_true(d->metadata_version == 1788000000123456ull);
	assert_int_equal(d->nbuffers, 1);
	/* written back byte for byte when emulating a release with #3837 */
	setenv("PDKV_MOONCAKE_VERSION", "0.3.13", 1);
	enc = te_desc_encode(d);
	assert_string_equal(enc, mc3837);
	free(enc);
	/* the default (no tagged release has it yet) and older releases leave it out */
	setenv("PDKV_MOONCAKE_VERSION", "0.3.12.post1", 1);
	enc = te_desc_encode(d);
	assert_null(strstr(enc, "metadata_version"));
	free(enc);
	unsetenv("PDKV_MOONCAKE_VERSION");
	assert_false(te_compat_metadata_version());
	enc = te_desc_encode(d);
	assert_null(strstr(enc, "metadata_version"));
	free(enc);
	te_desc_free(d);
	/* the largest u64 is kept exact; a version of 0 (P2P) too */
	d = decode_ok(
	    "{\"metadata_version\":18446744073709551615,\"name\":\"a\",\"protocol\":\"tcp\"}");
	assert_true(d->metadata_version == UINT64_MAX);
	te_desc_free(d);
	d = decode_ok("{\"metadata_version\":0,\"name\":\"a\",\"protocol\":\"tcp\"}");
	assert_true(d->metadata_version == 0);
	te_desc_free(d);
	static const char *const bad[] = {
	    "{\"metadata_version\":-1,\"name\":\"a\",\"protocol\":\"tcp\"}",
	    "{\"metadata_version\":1.5,\"name\":\"a\",\"protocol\":\"tcp\"}",
	    "{\"metadata_version\":\"17\",\"name\":\"a\",\"protocol\":\"tcp\"}",
	    "{\"metadata_version\":18446744073709551616,\"name\":\"a\",\"protocol\":\"tcp\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256] = "";
		d = NULL;
		assert_int_equal(te_desc_decode(bad[i], strlen(bad[i]), &d, err, sizeof(err)),
		                 TE_ERR_MALFORMED_JSON);
		assert_non_null(strstr(err, "metadata_version"));
	}
}

static void test_rpcmeta(void **state)
{
	char host[64], err[128] = "", *s;
	int port = 0;
	(void)state;
	setenv("PDKV_MOONCAKE_VERSION", "0.3.13", 1);
	s = te_rpcmeta_encode("10.0.0.2", 15423, 1788000000000001ull);
	unsetenv("PDKV_MOONCAKE_VERSION");
	assert_string_equal(s, "{\"ip_or_host_name\":\"10.0.0.2\",\"metadata_version\":"
	                       "1788000000000001,\"rpc_port\":15423}\n");
	assert_int_equal(
	    te_rpcmeta_decode(s, strlen(s), host, sizeof(host), &port, err, sizeof(err)), 0);
	assert_int_equal(port, 15423);
	free(s);
	s = te_rpcmeta_encode("10.0.0.2", 15423, 5);
	assert_string_equal(s, "{\"ip_or_host_name\":\"10.0.0.2\",\"rpc_port\":15423}\n");
	free(s);
	const char *bad = "{\"ip_or_host_name\":\"h\",\"metadata_version\":true,\"rpc_port\":1}";
	assert_int_equal(
	    te_rpcmeta_decode(bad, strlen(bad), host, sizeof(host), &port, err, sizeof(err)),
	    TE_ERR_MALFORMED_JSON);
	assert_non_null(strstr(err, "metadata_version"));
}

static void test_rules(void **state)
{
	struct te_buffer_desc b1 = {.name = "n", .addr = 4096, .length = 4096};
	struct te_buffer_desc b2 = {.name = "n", .addr = 8192, .length = 4096};
	struct te_segment_desc a = {
	    .name = "s", .protocol = "tcp", .timestamp = "t1", .nbuffers = 1, .buffers = &b1};
	struct te_segment_desc b = a;
	uint64_t v1, v2;
	(void)state;
	v1 = te_desc_next_version();
	v2 = te_desc_next_version();
	assert_true(v2 > v1);
	assert_true(v1 > 1700000000000000ull); /* wall-clock microseconds (2023+) */
	/* unversioned on either side: always taken */
	assert_int_equal(te_desc_version_check(&a, &b), 1);
	a.metadata_version = 10;
	assert_int_equal(te_desc_version_check(&a, &b), 1);
	b.metadata_version = 11;
	assert_int_equal(te_desc_version_check(&a, &b), 1);
	b.metadata_version = 9;
	assert_int_equal(te_desc_version_check(&a, &b), -1);
	b.metadata_version = 10;
	snprintf(b.timestamp, sizeof(b.timestamp), "t2"); /* the timestamp is not content */
	assert_int_equal(te_desc_version_check(&a, &b), 0);
	b.buffers = &b2;
	assert_int_equal(te_desc_version_check(&a, &b), -2);
}

/* P2P: the handshake's descriptor carries the legacy 0, also when emulating 0.3.13 */
static void test_p2p_zero(void **state)
{
	struct te_engine_opts oa = {"P2PHANDSHAKE", "va", "tcp", NULL};
	struct te_engine_opts ob = {"P2PHANDSHAKE", "vb", "tcp", NULL};
	struct te_engine *a = NULL, *b = NULL;
	const struct te_segment_desc *pd = NULL;
	char *la = malloc(BUF), *json;
	uint64_t seg;
	(void)state;
	setenv("PDKV_MOONCAKE_VERSION", "0.3.13", 1);
	assert_int_equal(te_engine_create(&oa, &a), 0);
	assert_int_equal(te_engine_create(&ob, &b), 0);
	assert_int_equal(te_register(a, la, BUF, "cpu:0"), 0);
	json = te_engine_local_desc_json(a);
	assert_non_null(strstr(json, "\"metadata_version\":0,"));
	free(json);
	assert_int_equal(te_open_segment(b, te_engine_name(a), &seg), 0);
	assert_int_equal(te_engine_peer_desc(b, te_engine_name(a), &pd), 0);
	assert_true(pd->metadata_version == 0);
	assert_int_equal(pd->nbuffers, 1);
	/* re-reads at version 0 are always taken */
	assert_int_equal(te_unregister(a, la), 0);
	assert_int_equal(te_sync_segment(b, te_engine_name(a)), 0);
	assert_int_equal(te_engine_peer_desc(b, te_engine_name(a), &pd), 0);
	assert_int_equal(pd->nbuffers, 0);
	unsetenv("PDKV_MOONCAKE_VERSION");
	te_engine_destroy(b);
	te_engine_destroy(a);
	free(la);
}

static int cached_buffers(struct te_engine *e, const char *name, uint64_t *version)
{
	const struct te_segment_desc *pd = NULL;
	assert_int_equal(te_engine_peer_desc(e, name, &pd), 0);
	*version = pd->metadata_version;
	return pd->nbuffers;
}

/* a store: the published keys carry the version; a re-read applies #3837's rules */
static void test_store_rules(void **state)
{
	struct pd_svc svc;
	struct te_engine *a = NULL, *b = NULL;
	struct te_meta *m = NULL;
	struct te_segment_desc *d;
	char err[256] = "", *val = NULL, *key, *rkey, *forged;
	char *la = malloc(BUF);
	uint64_t seg, v, v0;
	int ret = pd_svc_start(PD_SVC_REDIS, NULL, NULL, &svc);
	(void)state;
	if (ret == -ENOENT) {
		free(la);
		skip();
	}
	assert_int_equal(ret, 0);
	setenv("PDKV_MOONCAKE_VERSION", "0.3.13", 1);
	struct te_engine_opts oa = {svc.conn, "store-a", "tcp", NULL};
	struct te_engine_opts ob = {svc.conn, "store-b", "tcp", NULL};
	assert_int_equal(te_engine_create(&oa, &a), 0);
	assert_int_equal(te_engine_create(&ob, &b), 0);
	assert_int_equal(te_register(a, la, BUF, "cpu:0"), 0);
	assert_int_equal(te_meta_open(svc.conn, &m, err, sizeof(err)), 0);
	key = te_meta_segment_key("store-a");
	rkey = te_meta_rpc_key("store-a");
	assert_int_equal(te_meta_get(m, rkey, &val), 0);
	assert_non_null(strstr(val, "\"metadata_version\":"));
	free(val);
	assert_int_equal(te_meta_get(m, key, &val), 0);
	d = decode_ok(val);
	free(val);
	v0 = d->metadata_version;
	assert_true(v0 > 1700000000000000ull);
	assert_int_equal(te_open_segment(b, "store-a", &seg), 0);
	assert_int_equal(cached_buffers(b, "store-a", &v), 1);
	assert_true(v == v0);
	/* stale (older version, no buffers): refused, the cache keeps its buffer */
	d->nbuffers = 0;
	d->metadata_version = v0 - 1;
	forged = te_desc_encode(d);
	assert_int_equal(te_meta_put(m, key, forged), 0);
	free(forged);
	assert_int_equal(te_sync_segment(b, "store-a"), 0);
	assert_int_equal(cached_buffers(b, "store-a", &v), 1);
	/* same version, other content: refused too */
	d->metadata_version = v0;
	forged = te_desc_encode(d);
	assert_int_equal(te_meta_put(m, key, forged), 0);
	free(forged);
	assert_int_equal(te_sync_segment(b, "store-a"), 0);
	assert_int_equal(cached_buffers(b, "store-a", &v), 1);
	/* a real publish (unregister) bumps the version: taken */
	assert_int_equal(te_unregister(a, la), 0);
	assert_int_equal(te_sync_segment(b, "store-a"), 0);
	assert_int_equal(cached_buffers(b, "store-a", &v), 0);
	assert_true(v > v0);
	unsetenv("PDKV_MOONCAKE_VERSION");
	te_desc_free(d);
	free(key);
	free(rkey);
	te_meta_close(m);
	te_engine_destroy(b);
	te_engine_destroy(a);
	pd_svc_stop(&svc);
	free(la);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_and_write), cmocka_unit_test(test_rpcmeta),
	    cmocka_unit_test(test_rules),          cmocka_unit_test(test_p2p_zero),
	    cmocka_unit_test(test_store_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
