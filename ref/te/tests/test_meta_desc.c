/* SPDX-License-Identifier: Apache-2.0 */
/* test_meta_desc: descriptor and rpc_meta JSON — byte-exact FastWriter output (docs/metadata.md
 * example round-trips), exact u64 numbers, and every [P2] decoder rejection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "te/te_internal.h"

static const char spec_example[] =
    "{\"buffers\":[{\"addr\":140000000000000,\"length\":1073741824,\"lkey\":[4660],\"name\":"
    "\"cpu:0\",\"rkey\":[4660]}],\"devices\":[{\"gid\":\"00:00:00:00:00:00:00:00:00:00:ff:ff:"
    "0a:00:00:02\",\"lid\":0,\"name\":\"rxe0\"}],\"name\":\"10.0.0.2:13003\",\"priority_matrix\":"
    "{\"cpu:0\":[[\"rxe0\"],[]]},\"protocol\":\"rdma\",\"timestamp\":\"2025-06-17 "
    "00:44:41.000000\"}";

static struct te_segment_desc *decode_ok(const char *json)
{
	struct te_segment_desc *d = NULL;
	char err[256] = "";
	int ret = te_desc_decode(json, strlen(json), &d, err, sizeof(err));
	if (ret)
		fail_msg("decode failed (%d): %s\ninput: %s", ret, err, json);
	assert_non_null(d);
	return d;
}

static void test_spec_example_roundtrip(void **state)
{
	struct te_segment_desc *d;
	char *enc, expect[sizeof(spec_example) + 1];
	(void)state;

	d = decode_ok(spec_example);
	assert_string_equal(d->name, "10.0.0.2:13003");
	assert_string_equal(d->protocol, "rdma");
	assert_int_equal(d->ndevices, 1);
	assert_string_equal(d->devices[0].name, "rxe0");
	assert_string_equal(d->devices[0].gid, "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00:02");
	assert_int_equal(d->nbuffers, 1);
	assert_true(d->buffers[0].addr == 140000000000000ull);
	assert_true(d->buffers[0].length == 1073741824ull);
	assert_int_equal(d->buffers[0].nkeys, 1);
	assert_int_equal(d->buffers[0].rkey[0], 4660);
	assert_string_equal(d->priority_matrix, "{\"cpu:0\":[[\"rxe0\"],[]]}");
	/* the 0.3.3.post2 bytes */
	setenv("PDKV_MOONCAKE_VERSION", "0.3.3.post2", 1);
	enc = te_desc_encode(d);
	unsetenv("PDKV_MOONCAKE_VERSION");
	assert_non_null(enc);
	snprintf(expect, sizeof(expect), "%s\n", spec_example);
	assert_string_equal(enc, expect);
	free(enc);
	/* 0.3.12+ (and pdkv's default): an RDMA segment carries tcp_data_port 0 and
	 * tcp_proto_version 1, as Mooncake writes them */
	enc = te_desc_encode(d);
	assert_non_null(enc);
	assert_non_null(strstr(enc, "\"protocol\":\"rdma\",\"tcp_data_port\":0,"
	                            "\"tcp_proto_version\":1,\"timestamp\":"));
	assert_int_equal(strlen(enc), strlen(expect) + strlen(",\"tcp_data_port\":0,"
	                                                      "\"tcp_proto_version\":1"));
	free(enc);
	setenv("PDKV_MOONCAKE_VERSION", "0.3.11", 1);
	enc = te_desc_encode(d);
	unsetenv("PDKV_MOONCAKE_VERSION");
	assert_string_equal(enc, expect);
	free(enc);
	te_desc_free(d);
}

/* PDKV_MOONCAKE_VERSION spellings, and which release changes what. */
static void test_compat_version(void **state)
{
	(void)state;
	assert_int_equal(te_compat_parse("0.3.6"), 306);
	assert_int_equal(te_compat_parse("v0.3.12.post1"), 312);
	assert_int_equal(te_compat_parse("0.3.3.post2"), 303);
	assert_int_equal(te_compat_parse(""), 0);
	assert_int_equal(te_compat_parse(NULL), 0);
	assert_int_equal(te_compat_parse("0.3"), -1);
	assert_int_equal(te_compat_parse("0.3.6x"), -1);
	/* unset: the newest release pdkv knows (0.3.12.post1): no "\n" on HTTP values, the
	 * current RDMA forms, no metadata_version */
	unsetenv("PDKV_MOONCAKE_VERSION");
	assert_int_equal(te_compat_version(), TE_COMPAT_NEWEST);
	assert_int_equal(te_compat_version(), te_compat_parse("v0.3.12.post1"));
	assert_false(te_compat_http_newline());
	assert_true(te_compat_rdma_tcp_fields());
	assert_true(te_compat_rdma_hs_current());
	assert_false(te_compat_metadata_version());
	setenv("PDKV_MOONCAKE_VERSION", "0.3.5", 1);
	assert_true(te_compat_http_newline());
	assert_false(te_compat_rdma_hs_current());
	setenv("PDKV_MOONCAKE_VERSION", "0.3.6", 1);
	assert_false(te_compat_http_newline());
	assert_false(te_compat_rdma_tcp_fields());
	setenv("PDKV_MOONCAKE_VERSION", "0.3.12", 1);
	assert_true(te_compat_rdma_tcp_fields());
	assert_true(te_compat_rdma_hs_current());
	setenv("PDKV_MOONCAKE_VERSION", "bogus", 1); /* warned about, the newest */
	assert_int_equal(te_compat_version(), TE_COMPAT_NEWEST);
	unsetenv("PDKV_MOONCAKE_VERSION");
}

/* Tolerant reader: whitespace anywhere, other key order, trailing newline and spaces. */
static void test_tolerant_reader(void **state)
{
	const char *loose =
	    " {\n  \"timestamp\" : \"x\", \"protocol\":\"tcp\", \"name\" : \"h:1\",\n"
	    "  \"buffers\" : [ { \"length\" : 4096, \"name\":\"h:1\", \"addr\" : 4096 } ],"
	    " \"tcp_data_port\": 15001, \"unknown_field\": {\"a\": [1, 2.5, null, true]} }\n \t\n";
	struct te_segment_desc *d;
	char *enc;
	(void)state;
	d = decode_ok(loose);
	assert_int_equal(d->tcp_data_port, 15001);
	enc = te_desc_encode(d);
	assert_string_equal(enc, "{\"buffers\":[{\"addr\":4096,\"length\":4096,\"name\":\"h:1\"}],"
	                         "\"name\":\"h:1\",\"protocol\":\"tcp\",\"tcp_data_port\":15001,"
	                         "\"timestamp\":\"x\"}\n");
	free(enc);
	te_desc_free(d);
}

/* u64 addresses above 2^53 survive a round trip exactly (cJSON doubles would not). */
static void test_u64_exact(void **state)
{
	struct te_buffer_desc b = {.name = "n:1", .addr = 0xfffffffffffff001ull, .length = 4095};
	struct te_segment_desc d = {
	    .name = "n:1", .protocol = "tcp", .timestamp = "t", .nbuffers = 1, .buffers = &b};
	struct te_segment_desc *back;
	char *enc;
	(void)state;
	enc = te_desc_encode(&d);
	assert_non_null(strstr(enc, "\"addr\":18446744073709547521,"));
	back = decode_ok(enc);
	assert_true(back->buffers[0].addr == 0xfffffffffffff001ull);
	assert_true(back->buffers[0].length == 4095);
	free(enc);
	te_desc_free(back);
}

static void test_tcp_encode_exact(void **state)
{
	struct te_buffer_desc b[2] = {
	    {.name = "10.0.0.2:13003", .addr = 1, .length = 2},
	    {.name = "10.0.0.2:13003", .addr = 140737488355328ull, .length = 1ull << 40}};
	struct te_segment_desc d = {.name = "10.0.0.2:13003",
	                            .protocol = "tcp",
	                            .timestamp = "2025-06-17 00:44:41.000000",
	                            .tcp_data_port = 15424,
	                            .tcp_proto_version = 2,
	                            .nbuffers = 2,
	                            .buffers = b};
	char *enc = te_desc_encode(&d);
	(void)state;
	assert_string_equal(enc,
	                    "{\"buffers\":[{\"addr\":1,\"length\":2,\"name\":\"10.0.0.2:13003\"},"
	                    "{\"addr\":140737488355328,\"length\":1099511627776,\"name\":"
	                    "\"10.0.0.2:13003\"}],\"name\":\"10.0.0.2:13003\",\"protocol\":\"tcp\","
	                    "\"tcp_data_port\":15424,\"tcp_proto_version\":2,\"timestamp\":"
	                    "\"2025-06-17 00:44:41.000000\"}\n");
	free(enc);
}

static void test_empty_segment_and_timestamp(void **state)
{
	struct te_segment_desc d = {.name = "a:1", .protocol = "tcp"}, *back;
	char *enc = te_desc_encode(&d), ts[32];
	(void)state;
	assert_non_null(strstr(enc, "\"buffers\":[]"));
	back = decode_ok(enc);
	assert_int_equal(back->nbuffers, 0);
	assert_int_equal(strlen(back->timestamp), 26); /* filled at encode time */
	te_desc_timestamp(ts);
	assert_int_equal(strlen(ts), 26);
	assert_true(ts[4] == '-' && ts[10] == ' ' && ts[13] == ':' && ts[19] == '.');
	free(enc);
	te_desc_free(back);
}

/* Every [P2] rule: one bad field rejects the whole descriptor. */
static void test_decoder_rejects(void **state)
{
	static const char *const bad[] = {
	    "",
	    "[]",
	    "{\"name\":\"a\",\"protocol\":\"tcp\"",                 /* truncated */
	    "{\"name\":\"a\",\"protocol\":\"tcp\"} x",              /* garbage */
	    "{\"protocol\":\"tcp\"}",                               /* no name */
	    "{\"name\":\"\",\"protocol\":\"tcp\"}",                 /* empty name */
	    "{\"name\":\"a\"}",                                     /* no protocol */
	    "{\"name\":\"a\",\"protocol\":\"nvmeof\"}",             /* unsupported */
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"buffers\":{}}", /* not an array */
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"buffers\":[1]}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"buffers\":[{\"name\":\"\",\"addr\":1,"
	    "\"length\":1}]}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"buffers\":[{\"name\":\"a\",\"addr\":0,"
	    "\"length\":1}]}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"buffers\":[{\"name\":\"a\",\"addr\":1,"
	    "\"length\":0}]}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"buffers\":[{\"name\":\"a\",\"length\":1}]}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"buffers\":[{\"name\":\"a\",\"addr\":-4096,"
	    "\"length\":1}]}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"buffers\":[{\"name\":\"a\",\"addr\":1.5,"
	    "\"length\":1}]}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"buffers\":[{\"name\":\"a\",\"addr\":\"4096\","
	    "\"length\":1}]}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"buffers\":[{\"name\":\"a\",\"addr\":"
	    "18446744073709551616,\"length\":1}]}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"buffers\":[{\"name\":\"a\",\"addr\":"
	    "18446744073709551615,\"length\":2}]}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"tcp_data_port\":70000}",
	    /* rdma */
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"devices\":[{\"name\":\"\",\"lid\":0,\"gid\":"
	    "\"00\"}]}",
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"devices\":[{\"name\":\"rxe0\",\"lid\":0,"
	    "\"gid\":\"\"}]}",
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"devices\":[{\"name\":\"rxe0\",\"lid\":0}]}",
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"devices\":[{\"name\":\"rxe0\",\"lid\":70000,"
	    "\"gid\":\"00\"}]}",
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"buffers\":[{\"name\":\"cpu:0\",\"addr\":1,"
	    "\"length\":1,\"rkey\":[],\"lkey\":[]}]}",
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"buffers\":[{\"name\":\"cpu:0\",\"addr\":1,"
	    "\"length\":1,\"lkey\":[1]}]}",
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"buffers\":[{\"name\":\"cpu:0\",\"addr\":1,"
	    "\"length\":1,\"rkey\":[1,2],\"lkey\":[1]}]}",
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"buffers\":[{\"name\":\"cpu:0\",\"addr\":1,"
	    "\"length\":1,\"rkey\":[4294967296],\"lkey\":[1]}]}",
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"buffers\":[{\"name\":\"cpu:0\",\"addr\":0,"
	    "\"length\":1,\"rkey\":[1],\"lkey\":[1]}]}",
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"buffers\":[{\"name\":\"\",\"addr\":1,"
	    "\"length\":1,\"rkey\":[1],\"lkey\":[1]}]}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"s\":\"\\ud800\"}",   /* lone surrogate */
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"s\":\"a\\u0000b\"}", /* NUL */
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"s\":\"\x01\"}",      /* raw control */
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"n\":01}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",\"n\":1.}",
	    "{\"name\":\"a\",\"protocol\":\"tcp\",}",
	    "{\"name\":\"a\xff\",\"protocol\":\"tcp\"}", /* invalid UTF-8 */
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"devices\":[{\"name\":\"rxe0\",\"lid\":0,"
	    "\"gid\":\"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00\"}]}", /* 15 groups */
	    "{\"name\":\"a\",\"protocol\":\"rdma\",\"devices\":[{\"name\":\"rxe0\",\"lid\":0,"
	    "\"gid\":\"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00:0g\"}]}",
	};
	char err[256];
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct te_segment_desc *d = (void *)1;
		err[0] = '\0';
		int ret = te_desc_decode(bad[i], strlen(bad[i]), &d, err, sizeof(err));
		if (ret != TE_ERR_MALFORMED_JSON || d != NULL || !err[0])
			fail_msg("case %zu accepted or wrong error (%d, \"%s\"): %s", i, ret, err,
			         bad[i]);
	}
	/* the error names the field */
	te_desc_decode(bad[26], strlen(bad[26]), &(struct te_segment_desc *){NULL}, err,
	               sizeof(err));
	assert_non_null(strstr(err, "1 lkeys"));
}

/* Bad nesting depth and a huge object are refused, not a crash. */
static void test_hostile_json(void **state)
{
	char *deep = malloc(20001), err[128];
	struct te_segment_desc *d;
	(void)state;
	memset(deep, '[', 20000);
	deep[20000] = '\0';
	assert_int_equal(te_desc_decode(deep, 20000, &d, err, sizeof(err)), TE_ERR_MALFORMED_JSON);
	assert_non_null(strstr(err, "deeper"));
	free(deep);
	/* "\u00e9" and a surrogate pair decode to UTF-8 and re-encode as jsoncpp does */
	const char *u = "{\"name\":\"\\u00e9\\ud83d\\ude00/\\\"\\n\",\"protocol\":\"tcp\"}";
	d = decode_ok(u);
	assert_string_equal(d->name, "\xc3\xa9\xf0\x9f\x98\x80/\"\n");
	char *enc = te_desc_encode(d);
	assert_non_null(strstr(enc, "\"name\":\"\\u00e9\\ud83d\\ude00/\\\"\\n\""));
	free(enc);
	te_desc_free(d);
}

static void test_fast_write(void **state)
{
	cJSON *o = cJSON_Parse("{\"b\":1,\"a\":[true,false,null,-5,0.5,\"x\\u0001\"],\"B\":{},"
	                       "\"\":{\"z\":1,\"y\":2},\"aa\":1e3}");
	char *s = te_json_fast_write(o);
	(void)state;
	assert_string_equal(s, "{\"\":{\"y\":2,\"z\":1},\"B\":{},\"a\":[true,false,null,-5,0.5,"
	                       "\"x\\u0001\"],\"aa\":1000,\"b\":1}\n");
	free(s);
	cJSON_Delete(o);
	/* te_json_parse keeps numbers exact and lets the last duplicate key win */
	char err[128];
	const char *dup = "{\"k\":1,\"k\":18446744073709551615}";
	o = te_json_parse(dup, strlen(dup), err, sizeof(err));
	assert_non_null(o);
	uint64_t v = 0;
	assert_int_equal(te_json_get_uint(cJSON_GetObjectItem(o, "k"), UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_not_equal(te_json_get_uint(cJSON_GetObjectItem(o, "k"), UINT32_MAX, &v), 0);
	s = te_json_fast_write(o);
	assert_string_equal(s, "{\"k\":18446744073709551615}\n");
	free(s);
	cJSON_Delete(o);
}

static void test_find_range(void **state)
{
	struct te_buffer_desc b[2] = {{.name = "x", .addr = 0x1000, .length = 0x1000},
	                              {.name = "x", .addr = UINT64_MAX - 0xfff, .length = 0x1000}};
	struct te_segment_desc d = {.nbuffers = 2, .buffers = b};
	(void)state;
	assert_ptr_equal(te_desc_find_range(&d, 0x1000, 0x1000), &b[0]);
	assert_ptr_equal(te_desc_find_range(&d, 0x1800, 0x800), &b[0]);
	assert_null(te_desc_find_range(&d, 0x1800, 0x801));      /* straddles the end */
	assert_null(te_desc_find_range(&d, 0xfff, 2));           /* starts before */
	assert_null(te_desc_find_range(&d, 0x1800, UINT64_MAX)); /* wraps */
	assert_ptr_equal(te_desc_find_range(&d, UINT64_MAX - 0xf, 0x10), &b[1]);
	assert_null(te_desc_find_range(&d, UINT64_MAX - 0xf, 0x11));
	assert_null(te_desc_find_range(NULL, 1, 1));
}

static void test_rpcmeta(void **state)
{
	char host[64], err[128], *s;
	int port = 0;
	(void)state;
	s = te_rpcmeta_encode("10.0.0.2", 15423, 1);
	assert_string_equal(s, "{\"ip_or_host_name\":\"10.0.0.2\",\"rpc_port\":15423}\n");
	assert_int_equal(
	    te_rpcmeta_decode(s, strlen(s), host, sizeof(host), &port, err, sizeof(err)), 0);
	assert_string_equal(host, "10.0.0.2");
	assert_int_equal(port, 15423);
	free(s);
	assert_null(te_rpcmeta_encode("h", 0, 0));
	assert_null(te_rpcmeta_encode("h", 65536, 0));
	static const char *const bad[] = {
	    "{\"ip_or_host_name\":\"\",\"rpc_port\":1}",
	    "{\"ip_or_host_name\":\"h\"}",
	    "{\"ip_or_host_name\":\"h\",\"rpc_port\":0}",
	    "{\"ip_or_host_name\":\"h\",\"rpc_port\":65536}",
	    "{\"ip_or_host_name\":\"h\",\"rpc_port\":\"1\"}",
	    "{\"ip_or_host_name\":5,\"rpc_port\":1}",
	    "null",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (te_rpcmeta_decode(bad[i], strlen(bad[i]), host, sizeof(host), &port, err,
		                      sizeof(err)) != TE_ERR_MALFORMED_JSON)
			fail_msg("rpc_meta case %zu accepted: %s", i, bad[i]);
	/* extra fields and whitespace are fine */
	const char *ok = " {\"rpc_port\" : 16000 , \"x\":[], \"ip_or_host_name\":\"node-1\"}\n";
	assert_int_equal(
	    te_rpcmeta_decode(ok, strlen(ok), host, sizeof(host), &port, err, sizeof(err)), 0);
	assert_int_equal(port, 16000);
}

/* Mutated descriptors (byte flips, cuts, insertions; fixed seed) never crash the decoder, and
 * whatever it accepts re-encodes to something it accepts again. */
static void test_mutations(void **state)
{
	static const char alphabet[] = "{}[]\":,0123456789-.eE\\ntfu\x01\xff ";
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	size_t base = strlen(spec_example), accepted = 0;
	char *buf = malloc(base + 16), err[256];
	(void)state;
	for (int iter = 0; iter < 5000; iter++) {
		size_t len = base;
		memcpy(buf, spec_example, base);
		for (int k = 0; k < 1 + iter % 4; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			size_t pos = (size_t)(seed >> 33) % len;
			char c = alphabet[(seed >> 13) % (sizeof(alphabet) - 1)];
			switch ((seed >> 7) % 3) {
			case 0:
				buf[pos] = c;
				break;
			case 1:
				len = pos ? pos : 1;
				break;
			default:
				if (len < base + 15) {
					memmove(buf + pos + 1, buf + pos, len - pos);
					buf[pos] = c;
					len++;
				}
			}
		}
		struct te_segment_desc *d = NULL, *d2 = NULL;
		if (te_desc_decode(buf, len, &d, err, sizeof(err)) == 0) {
			char *enc = te_desc_encode(d);
			assert_non_null(enc);
			if (te_desc_decode(enc, strlen(enc), &d2, err, sizeof(err)))
				fail_msg("accepted %.*s\nbut not its encoding %s: %s", (int)len,
				         buf, enc, err);
			te_desc_free(d2);
			free(enc);
			te_desc_free(d);
			accepted++;
		} else {
			assert_null(d);
		}
	}
	assert_true(accepted > 0); /* some mutations (inside strings) stay valid */
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spec_example_roundtrip),
	    cmocka_unit_test(test_tolerant_reader),
	    cmocka_unit_test(test_u64_exact),
	    cmocka_unit_test(test_tcp_encode_exact),
	    cmocka_unit_test(test_empty_segment_and_timestamp),
	    cmocka_unit_test(test_decoder_rejects),
	    cmocka_unit_test(test_hostile_json),
	    cmocka_unit_test(test_fast_write),
	    cmocka_unit_test(test_compat_version),
	    cmocka_unit_test(test_find_range),
	    cmocka_unit_test(test_rpcmeta),
	    cmocka_unit_test(test_mutations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
