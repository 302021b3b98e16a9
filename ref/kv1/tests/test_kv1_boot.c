/* SPDX-License-Identifier: Apache-2.0 */
/* The gen B bootstrap server over real loopback HTTP: exact bodies and status codes of
 * /register and /query, both re-register rules, 422 on malformed bodies, the body limit, and the
 * client's bounded retries against a port nobody listens on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "kv1/kv1_boot.h"
#include "pd_util.h"

struct rb {
	char p[1 << 16];
	size_t n;
};

static size_t wr(char *d, size_t sz, size_t n, void *ud)
{
	struct rb *b = ud;
	size_t k = sz * n;

	if (b->n + k >= sizeof(b->p))
		return 0;
	memcpy(b->p + b->n, d, k);
	b->n += k;
	b->p[b->n] = 0;
	return k;
}

static long call(int port, const char *path, const char *post, struct rb *b)
{
	CURL *c = curl_easy_init();
	char url[128];
	long st = 0;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");

	b->n = 0;
	b->p[0] = 0;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (post)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return st;
}

static void test_server(enum kv1_shape shape)
{
	struct kv1_boot *b;
	int port = 0;
	struct rb r;
	char base[64], err[512];
	struct kv1_boot_table t;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, shape, &b, &port), 0);
	assert_true(port > 0);
	snprintf(base, sizeof(base), "http://127.0.0.1:%d", port);
	assert_int_equal(call(port, "/query", NULL, &r), 200);
	assert_string_equal(r.p, "{}");
	assert_int_equal(call(port, "/register",
	                      "{\"engine_id\":\"e0\",\"dp_rank\":0,\"tp_rank\":0,\"pp_rank\":0,"
	                      "\"addr\":\"tcp://10.0.0.1:50001\"}",
	                      &r),
	                 200);
	assert_string_equal(r.p, "{\"status\":\"ok\"}");
	assert_int_equal(kv1_boot_register(base, "e0", 0, 1, 0, "tcp://10.0.0.1:50002", shape, 2000,
	                                   err, sizeof(err)),
	                 0);
	assert_int_equal(kv1_boot_register(base, "e1", 1, 0, 0, "tcp://10.0.0.1:50003", shape, 2000,
	                                   err, sizeof(err)),
	                 0);
	assert_int_equal(call(port, "/query", NULL, &r), 200);
	assert_string_equal(r.p,
	                    "{\"0\":{\"engine_id\":\"e0\",\"worker_addr\":{\"0\":{\"0\":\"tcp://"
	                    "10.0.0.1:50001\"},\"1\":{\"0\":\"tcp://10.0.0.1:50002\"}}},\"1\":{"
	                    "\"engine_id\":\"e1\",\"worker_addr\":{\"0\":{\"0\":\"tcp://"
	                    "10.0.0.1:50003\"}}}}");
	/* another engine id on dp 0 */
	assert_int_equal(call(port, "/register",
	                      "{\"engine_id\":\"eX\",\"dp_rank\":0,\"tp_rank\":2,\"pp_rank\":0,"
	                      "\"addr\":\"tcp://h:1\"}",
	                      &r),
	                 400);
	assert_string_equal(
	    r.p, "{\"detail\":\"Engine ID mismatch for dp_rank=0: expected e0, got eX\"}");
	/* same worker, other address: 400 in both shapes */
	assert_int_equal(call(port, "/register",
	                      "{\"engine_id\":\"e0\",\"dp_rank\":0,\"tp_rank\":0,\"pp_rank\":0,"
	                      "\"addr\":\"tcp://10.0.0.1:59999\"}",
	                      &r),
	                 400);
	assert_string_equal(r.p, "{\"detail\":\"Worker with dp_rank=0, tp_rank=0, pp_rank=0 is "
	                         "already registered at tcp://10.0.0.1:50001, but still want to "
	                         "register at tcp://10.0.0.1:59999\"}");
	/* identical re-registration: Bn 200, B0 400 */
	assert_int_equal(call(port, "/register",
	                      "{\"engine_id\":\"e0\",\"dp_rank\":0,\"tp_rank\":0,\"pp_rank\":0,"
	                      "\"addr\":\"tcp://10.0.0.1:50001\"}",
	                      &r),
	                 shape == KV1_SHAPE_BN ? 200 : 400);
	assert_int_equal(kv1_boot_register(base, "e0", 0, 0, 0, "tcp://10.0.0.1:50001", shape, 2000,
	                                   err, sizeof(err)),
	                 shape == KV1_SHAPE_BN ? 0 : -1);
	if (shape == KV1_SHAPE_B0)
		assert_non_null(strstr(err, "HTTP 400"));
	/* malformed bodies: 422 */
	assert_int_equal(call(port, "/register", "{not json", &r), 422);
	assert_non_null(strstr(r.p, "\"json_invalid\""));
	assert_int_equal(call(port, "/register",
	                      "{\"engine_id\":\"e0\",\"dp_rank\":0,\"tp_rank\":0,\"pp_rank\":0}",
	                      &r),
	                 422);
	assert_string_equal(r.p, "{\"detail\":[{\"type\":\"missing\",\"loc\":[\"body\",\"addr\"],"
	                         "\"msg\":\"Field required\"}]}");
	assert_int_equal(call(port, "/register",
	                      "{\"engine_id\":\"e0\",\"dp_rank\":\"x\",\"tp_rank\":0,\"pp_rank\":0,"
	                      "\"addr\":\"a\"}",
	                      &r),
	                 422);
	assert_non_null(strstr(r.p, "\"dp_rank\""));
	/* the dp rank bound is the one pdkv-proxy routes over (pd_ranks.h): its last rank is
	 * taken, the next refused (the proxy's /query parse refuses it too: test_proxy_opts) */
	{
		char b[256];

		snprintf(b, sizeof(b),
		         "{\"engine_id\":\"e0\",\"dp_rank\":%d,\"tp_rank\":0,\"pp_rank\":0,"
		         "\"addr\":\"a\"}",
		         PD_MAX_DP_RANKS);
		assert_int_equal(call(port, "/register", b, &r), 422);
		assert_non_null(strstr(r.p, "\"dp_rank\""));
	}
	/* body limit */
	{
		size_t n = KV1_BOOT_BODY_MAX + 10;
		char *big = malloc(n + 1);

		memset(big, ' ', n);
		big[n] = 0;
		assert_int_equal(call(port, "/register", big, &r), 413);
		free(big);
	}
	assert_int_equal(call(port, "/nope", NULL, &r), 404);
	/* the client's view */
	assert_int_equal(kv1_boot_query(base, 2000, &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 2);
	{
		const struct kv1_boot_engine *e = kv1_boot_find(&t, "e0");

		assert_non_null(e);
		assert_int_equal(e->ntp, 2);
		assert_string_equal(e->addr[1], "tcp://10.0.0.1:50002");
		assert_null(kv1_boot_find(&t, "zz"));
	}
	kv1_boot_table_free(&t);
	kv1_boot_stop(b);
}

static void test_bn(void **state)
{
	(void)state;
	test_server(KV1_SHAPE_BN);
}

static void test_b0(void **state)
{
	(void)state;
	test_server(KV1_SHAPE_B0);
}

/* Nobody listens: Bn gives up after 3 attempts (1 s + 2 s of backoff), with vLLM's message. */
static void test_register_retries(void **state)
{
	int port = pd_free_port("127.0.0.1");
	char base[64], err[1024], want[256];
	struct kv1_boot_table t;
	uint64_t t0 = pd_now_ns();
	(void)state;

	snprintf(base, sizeof(base), "http://127.0.0.1:%d", port);
	assert_int_equal(
	    kv1_boot_register(base, "e", 0, 0, 0, "tcp://h:1", KV1_SHAPE_BN, 500, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "after 3 attempts"));
	/* the payload as pydantic prints it, and the /register URL (vLLM's RuntimeError) */
	snprintf(want, sizeof(want),
	         "Failed to register engine_id='e' dp_rank=0 tp_rank=0 pp_rank=0 addr='tcp://h:1' "
	         "with the Mooncake bootstrap server at %s/register after 3 attempts.",
	         base);
	assert_non_null(strstr(err, want));
	assert_true(pd_now_ns() - t0 >= 2900000000ull);
	assert_int_equal(kv1_boot_query(base, 500, &t, err, sizeof(err)), -1);
}

/* kv1_boot_start_lim: limits out of range are refused; a valid set serves */
static void test_limits(void **state)
{
	struct kv1_boot *b = NULL;
	int port = 0;
	(void)state;
	assert_int_equal(kv1_boot_start_lim("127.0.0.1", 0, KV1_SHAPE_BN,
	                                    &(struct kv1_boot_limits){0, 10}, &b, &port),
	                 -EINVAL);
	assert_int_equal(kv1_boot_start_lim("127.0.0.1", 0, KV1_SHAPE_BN,
	                                    &(struct kv1_boot_limits){4, 0}, &b, &port),
	                 -EINVAL);
	assert_int_equal(kv1_boot_start_lim("127.0.0.1", 0, KV1_SHAPE_BN,
	                                    &(struct kv1_boot_limits){4, 2}, &b, &port),
	                 0);
	assert_true(port > 0);
	assert_int_equal(kv1_boot_engines(b), 0);
	kv1_boot_stop(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bn),
	    cmocka_unit_test(test_b0),
	    cmocka_unit_test(test_register_retries),
	    cmocka_unit_test(test_limits),
	};
	curl_global_init(CURL_GLOBAL_ALL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
