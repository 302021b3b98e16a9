/* SPDX-License-Identifier: Apache-2.0 */
/* test_robust: hostile input never crashes, hangs or leaks the cfg library — random bytes, byte
 * flips of a valid config, 10000-deep nesting, huge numbers, 1 MB strings — and every result
 * still renders as one valid --json object (run under ASan/UBSan by `make asan`). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg/cfg.h"
#include "pd_util.h"

static char dir[64];
static char path[128];

static int setup(void **st)
{
	(void)st;
	snprintf(dir, sizeof(dir), "/tmp/pdkv-cfg-robust.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/mooncake.json", dir);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	unlink(path);
	rmdir(dir);
	return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

/* Full pipeline on (file bytes, kv-transfer text); returns the vLLM error (malloc'd) or NULL. */
static char *check_all(const void *buf, size_t len, const char *kv, enum cfg_vllm v, int tp)
{
	struct cfg_check_opts o;
	struct cfg_report r;
	char *json, *err = NULL;
	cJSON *j;

	assert_int_equal(pd_write_file(path, buf, len), 0);
	memset(&o, 0, sizeof(o));
	o.mooncake_path = path;
	o.kv_transfer = kv;
	o.vllm = v;
	o.tp = tp;
	o.dp = 1;
	cfg_check(&o, &r);
	json = cfg_report_json(&r);
	assert_non_null(json);
	assert_non_null(strchr(json, '\n'));
	assert_null(strchr(json, '\n') + 1 == json + strlen(json) ? NULL : json); /* one line */
	j = cJSON_Parse(json);
	assert_non_null(j);
	assert_true(cJSON_IsBool(cJSON_GetObjectItem(j, "ok")));
	cJSON_Delete(j);
	free(json);
	if (r.vllm_error)
		err = strdup(r.vllm_error);
	cfg_report_free(&r);
	return err;
}

static void random_bytes(void **st)
{
	char buf[2048], kv[512];
	int i;
	size_t n, k;
	(void)st;

	for (i = 0; i < 200; i++) {
		n = rnd() % sizeof(buf);
		for (k = 0; k < n; k++)
			buf[k] = (char)rnd();
		for (k = 0; k < sizeof(kv) - 1; k++)
			kv[k] = (char)(rnd() % 255 + 1);
		kv[rnd() % sizeof(kv)] = 0;
		kv[sizeof(kv) - 1] = 0;
		free(check_all(buf, n, kv, (enum cfg_vllm)(i & 1), 1 + (int)(rnd() % 4)));
	}
}

static void flips(void **st)
{
	static const char good[] =
	    "{\"prefill_url\": \"127.0.0.1:13003\", \"decode_url\": \"127.0.0.1:13003\", "
	    "\"metadata_server\": \"etcd://127.0.0.1:2379\", \"metadata_backend\": \"etcd\", "
	    "\"protocol\": \"rdma\", \"device_name\": \"mlx5_0,mlx5_1\"}";
	static const char goodkv[] = "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":"
	                             "\"kv_producer\",\"kv_rank\":0,\"kv_buffer_size\":\"2e9\"}";
	static const char alpha[] = "{}[]\",:0-.eE \\u9aZ\x01\xff";
	char buf[sizeof(good)], kv[sizeof(goodkv)];
	int i, f;
	(void)st;

	for (i = 0; i < 300; i++) {
		memcpy(buf, good, sizeof(good));
		memcpy(kv, goodkv, sizeof(goodkv));
		for (f = 0; f < 1 + (int)(rnd() % 4); f++) {
			buf[rnd() % (sizeof(buf) - 1)] = alpha[rnd() % (sizeof(alpha) - 1)];
			kv[rnd() % (sizeof(kv) - 1)] = alpha[rnd() % (sizeof(alpha) - 2)];
		}
		free(check_all(buf, sizeof(buf) - 1, kv, (enum cfg_vllm)(i % 2), 1 + i % 12));
	}
}

static char *nest(const char *open, const char *close, int depth)
{
	size_t lo = strlen(open), lc = strlen(close), k = 0;
	char *s = malloc((lo + lc) * (size_t)depth + 1);
	int i;

	assert_non_null(s);
	for (i = 0; i < depth; i++, k += lo)
		memcpy(s + k, open, lo);
	for (i = 0; i < depth; i++, k += lc)
		memcpy(s + k, close, lc);
	s[k] = 0;
	return s;
}

static void deep_nesting(void **st)
{
	char *s, *e;
	struct cfg_kv_transfer kt;
	struct cfg_diags d = {0};
	(void)st;

	s = nest("[", "]", 10000);
	e = check_all(s, strlen(s), NULL, CFG_VLLM_V0, 1);
	assert_string_equal(e, "RecursionError: maximum recursion depth exceeded while decoding a "
	                       "JSON array from a unicode string");
	free(e);
	/* pydantic's parser stops at 200 levels; the CLI error stays "invalid from_cli value" */
	assert_int_not_equal(cfg_kv_transfer_parse(s, CFG_VLLM_V0, &kt, &d, NULL), 0);
	assert_non_null(strstr(d.v[d.n - 1].message, "recursion limit exceeded"));
	cfg_kv_transfer_free(&kt);
	cfg_diags_free(&d);
	e = check_all("{}", 2, s, CFG_VLLM_V0, 1);
	assert_non_null(strstr(e, "ArgumentError: argument --kv-transfer-config: invalid from_cli "
	                          "value: '[[[["));
	free(e);
	free(s);

	s = nest("{\"a\":", "}", 10000);
	e = check_all(s, strlen(s), NULL, CFG_VLLM_V0, 1);
	assert_string_equal(e, "RecursionError: maximum recursion depth exceeded while decoding a "
	                       "JSON object from a unicode string");
	free(e);
	free(s);
	/* unterminated nesting: the depth limit is reached before the end is noticed */
	s = nest("[", "", 100000);
	e = check_all(s, strlen(s), NULL, CFG_VLLM_V0, 1);
	assert_non_null(strstr(e, "RecursionError"));
	free(e);
	free(s);
	/* 995 levels are fine for Python (as the top-level value) */
	s = nest("[", "]", 995);
	e = check_all(s, strlen(s), NULL, CFG_VLLM_V0, 1);
	assert_string_equal(e, "AttributeError: 'list' object has no attribute 'get'");
	free(e);
	free(s);
}

static void huge_numbers(void **st)
{
	char *big = malloc(6000), *e;
	char buf[8000];
	(void)st;

	memset(big, '7', 5000);
	big[5000] = 0;
	snprintf(buf, sizeof(buf), "{\"x\": %s}", big);
	e = check_all(buf, strlen(buf), NULL, CFG_VLLM_V0, 1);
	assert_non_null(strstr(e, "ValueError: Exceeds the limit (4300 digits) for integer string "
	                          "conversion: value has 5000 digits"));
	free(e);
	snprintf(buf, sizeof(buf),
	         "{\"prefill_url\": \"h:%s\", \"decode_url\": \"h:1e999999\", \"x\": 1e999999, "
	         "\"y\": -1e-999999, \"metadata_server\": \"h:2379\"}",
	         big);
	e = check_all(buf, strlen(buf), NULL, CFG_VLLM_V0, 1);
	assert_non_null(e); /* int('1e999999') fails */
	assert_string_equal(e, "ValueError: invalid literal for int() with base 10: '1e999999'");
	free(e);
	snprintf(buf, sizeof(buf),
	         "{\"prefill_url\": \"h:%s\", \"decode_url\": \"h:13003\", \"metadata_server\": "
	         "\"h:2379\"}",
	         big);
	e = check_all(buf, strlen(buf),
	              "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":"
	              "\"kv_producer\",\"kv_rank\":1e400,\"kv_port\":"
	              "99999999999999999999999999,\"kv_buffer_size\":1e400}",
	              CFG_VLLM_V0, 1);
	assert_non_null(strstr(e, "invalid from_cli value"));
	free(e);
	e = check_all(buf, strlen(buf), NULL, CFG_VLLM_V0, 1);
	assert_string_equal(e, "zmq.error.ZMQError: Invalid argument");
	free(e);
	free(big);
}

static void megabyte_strings(void **st)
{
	size_t n = 1 << 20, k;
	char *v = malloc(n + 1), *buf = malloc(3 * n + 256), *kv = malloc(n + 256), *e;
	(void)st;

	memset(v, 'a', n);
	v[n] = 0;
	snprintf(buf, 3 * n + 256,
	         "{\"prefill_url\": \"%s:13003\", \"decode_url\": \"%s:13003\", "
	         "\"metadata_server\": \"h:2379\", \"device_name\": \"%s\"}",
	         v, v, v);
	e = check_all(buf, strlen(buf), NULL, CFG_VLLM_V0, 2);
	assert_null(e); /* vLLM does not care how long a host name is */
	free(e);
	for (k = 0; k < n; k += 2)
		v[k] = ',';
	snprintf(buf, 3 * n + 256,
	         "{\"prefill_url\": \"h:13003\", \"decode_url\": \"h:13103\", \"metadata_server\": "
	         "\"h:2379\", \"protocol\": \"rdma\", \"device_name\": \"%s\"}",
	         v);
	e = check_all(buf, strlen(buf), NULL, CFG_VLLM_V0, 1);
	free(e);
	/* many keys, many duplicates */
	for (k = 0; k + 8 < n; k += 8)
		memcpy(buf + k, "\"a\":1, ", 7), buf[k + 7] = ' ';
	buf[0] = '{';
	memcpy(buf + k, "\"a\":1}", 7);
	e = check_all(buf, strlen(buf), NULL, CFG_VLLM_V0, 1);
	free(e);
	snprintf(kv, n + 256, "{\"kv_connector\":\"%s\",\"kv_role\":\"kv_producer\"}", v);
	memcpy(kv, "{", 1);
	e = check_all("{}", 2, kv, CFG_VLLM_V1, 1);
	free(e);
	free(v);
	free(buf);
	free(kv);
}

static void special_files(void **st)
{
	char fifo[160], *e;
	struct cfg_mooncake mc;
	struct cfg_diags d = {0};
	(void)st;

	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_not_equal(cfg_mooncake_load(fifo, CFG_VLLM_V0, &mc, &d, &e), 0);
	assert_int_equal(cfg_diags_count(&d, CFG_ERROR), 1);
	free(e);
	cfg_mooncake_free(&mc);
	cfg_diags_free(&d);
	unlink(fifo);
	/* /dev/null reads as an empty file */
	assert_int_not_equal(cfg_mooncake_load("/dev/null", CFG_VLLM_V0, &mc, &d, &e), 0);
	assert_string_equal(e, "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 "
	                       "(char 0)");
	free(e);
	cfg_mooncake_free(&mc);
	cfg_diags_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(random_bytes),     cmocka_unit_test(flips),
	    cmocka_unit_test(deep_nesting),     cmocka_unit_test(huge_numbers),
	    cmocka_unit_test(megabyte_strings), cmocka_unit_test(special_files),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
