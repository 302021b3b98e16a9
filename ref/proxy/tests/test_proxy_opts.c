/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for pdkv-proxy's flags: every backend URL spelling (guide, PROXY-16, toy proxy),
 * list forms, defaults and the errors a bad flag must give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/px.h"
#include "proxy/px_contract.h"
#include "proxy/px_ready.h"

#define assert_has_str(hay, needle)                                                                \
	do {                                                                                       \
		if (!strstr((hay), (needle)))                                                      \
			fail_msg("expected \"%s\" in: %s", (needle), (hay));                       \
	} while (0)

static void norm_ok(const char *in, const char *want)
{
	char out[PX_URL_MAX], err[256];
	int ret = px_normalize_url(in, out, sizeof(out), err, sizeof(err));
	if (ret)
		fail_msg("px_normalize_url(\"%s\") failed: %s", in, err);
	if (strcmp(out, want))
		fail_msg("px_normalize_url(\"%s\") = \"%s\", want \"%s\"", in, out, want);
}

static void norm_bad(const char *in, const char *needle)
{
	char out[PX_URL_MAX], err[256] = "";
	int ret = px_normalize_url(in, out, sizeof(out), err, sizeof(err));
	if (ret != -EINVAL)
		fail_msg("px_normalize_url(\"%s\") = %d (\"%s\"), want -EINVAL", in, ret, out);
	if (!strstr(err, needle))
		fail_msg("px_normalize_url(\"%s\") error \"%s\" lacks \"%s\"", in, err, needle);
}

static void test_normalize(void **state)
{
	(void)state;
	norm_ok("http://10.0.0.1:8100", "http://10.0.0.1:8100");
	norm_ok("10.0.0.1:8100", "http://10.0.0.1:8100");
	norm_ok("localhost:8200", "http://localhost:8200");
	norm_ok("http://h:8100/v1/completions", "http://h:8100");
	norm_ok("http://h:8100/v1/chat/completions", "http://h:8100");
	norm_ok("http://h:8100/v1/", "http://h:8100");
	norm_ok("http://h:8100/", "http://h:8100");
	norm_ok("h:8100/v1", "http://h:8100");
	norm_ok("HTTPS://h:8443/v1/completions", "https://h:8443");
	norm_ok("http://h", "http://h");
	norm_ok("[::1]:8100", "http://[::1]:8100");
	norm_ok("http://[fe80::1]:8100/v1/models", "http://[fe80::1]:8100");
	norm_ok("http://gw:80/team-a/v1/completions", "http://gw:80/team-a");
	norm_bad("", "expected");
	norm_bad("h", "no port");
	norm_bad("h:0", "port must be 1..65535");
	norm_bad("h:99999", "port must be 1..65535");
	norm_bad("h:80x", "port must be");
	norm_bad("ftp://h:21", "only http:// and https://");
	norm_bad("http://:8100", "bad host");
	norm_bad("http://u@h:8100", "user info");
	norm_bad("http://h:8100/v1?x=1", "query");
	norm_bad("http://h :8100", "space");
	norm_bad("[::1:8100", "unterminated");
}

static int parse(struct px_opts *o, char *err, size_t errsz, ...)
{
	char *argv[64];
	int argc = 0;
	va_list ap;
	argv[argc++] = "pdkv-proxy";
	va_start(ap, errsz);
	for (char *a; (a = va_arg(ap, char *)) && argc < 63;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return px_parse_args(argc, argv, o, err, errsz);
}

static void test_defaults(void **state)
{
	struct px_opts o;
	char err[256];
	(void)state;
	assert_int_equal(parse(&o, err, sizeof(err), NULL), 0);
	assert_int_equal(o.port, 8000);
	assert_string_equal(o.host, "0.0.0.0");
	assert_int_equal(o.n_prefill, 1);
	assert_string_equal(o.prefill[0], "http://localhost:8100");
	assert_int_equal(o.n_decode, 1);
	assert_string_equal(o.decode[0], "http://localhost:8200");
	assert_int_equal(o.max_body, 64 << 20);
	assert_int_equal(o.prefill_timeout_ms, 600000);
}

static void test_guide_spellings(void **state)
{
	struct px_opts o;
	char err[256];
	(void)state;
	assert_int_equal(parse(&o, err, sizeof(err), "--port", "9000", "--host=127.0.0.1",
	                       "--prefill", "http://localhost:8100/v1/completions", "--prefill",
	                       "10.0.0.2:8101,10.0.0.3:8102", "--decode",
	                       "http://192.168.0.139:8200", "--decode=10.0.0.9:8201/v1",
	                       "--prefill-timeout", "2.5", "--decode-timeout", "0",
	                       "--connect-timeout", "0.25", "--max-body", "1MiB", NULL),
	                 0);
	assert_int_equal(o.port, 9000);
	assert_string_equal(o.host, "127.0.0.1");
	assert_int_equal(o.n_prefill, 3);
	assert_string_equal(o.prefill[0], "http://localhost:8100");
	assert_string_equal(o.prefill[1], "http://10.0.0.2:8101");
	assert_string_equal(o.prefill[2], "http://10.0.0.3:8102");
	assert_int_equal(o.n_decode, 2);
	assert_string_equal(o.decode[0], "http://192.168.0.139:8200");
	assert_string_equal(o.decode[1], "http://10.0.0.9:8201");
	assert_int_equal(o.prefill_timeout_ms, 2500);
	assert_int_equal(o.decode_timeout_ms, 0);
	assert_int_equal(o.connect_timeout_ms, 250);
	assert_int_equal(o.max_body, 1 << 20);

	/* PROXY-16: "--prefill URL [BOOTSTRAP_PORT|none]" — the bootstrap port is accepted */
	assert_int_equal(parse(&o, err, sizeof(err), "--prefill", "http://p1:8100", "8998",
	                       "--prefill", "http://p2:8100", "none", "--decode", "http://d:8200",
	                       NULL),
	                 0);
	assert_int_equal(o.n_prefill, 2);
	assert_string_equal(o.prefill[1], "http://p2:8100");
}

static void test_toy_spellings(void **state)
{
	struct px_opts o;
	char err[256];
	(void)state;
	/* argparse nargs="+" lists, comma lists and repeats all work */
	assert_int_equal(parse(&o, err, sizeof(err), "--prefiller-hosts", "a", "b",
	                       "--prefiller-ports", "8100", "8101", "--decoder-host", "c",
	                       "--decoder-host", "d", "--decoder-port", "8200,8201", NULL),
	                 0);
	assert_int_equal(o.n_prefill, 2);
	assert_string_equal(o.prefill[0], "http://a:8100");
	assert_string_equal(o.prefill[1], "http://b:8101");
	assert_int_equal(o.n_decode, 2);
	assert_string_equal(o.decode[0], "http://c:8200");
	assert_string_equal(o.decode[1], "http://d:8201");

	/* one host for many ports; ports alone use the toy default host */
	assert_int_equal(parse(&o, err, sizeof(err), "--prefiller-host", "10.1.1.1",
	                       "--prefiller-port", "8100,8101,8102", "--decoder-port", "8200",
	                       NULL),
	                 0);
	assert_int_equal(o.n_prefill, 3);
	assert_string_equal(o.prefill[2], "http://10.1.1.1:8102");
	assert_string_equal(o.decode[0], "http://localhost:8200");
	assert_int_equal(o.n_decode, 1);

	/* IPv6 host from the toy flags gets brackets */
	assert_int_equal(parse(&o, err, sizeof(err), "--prefiller-host", "::1", NULL), 0);
	assert_string_equal(o.prefill[0], "http://[::1]:8100");
}

static void bad(const char *needle, ...)
{
	struct px_opts o;
	char *argv[32], err[256] = "";
	int argc = 0, ret;
	va_list ap;
	argv[argc++] = "pdkv-proxy";
	va_start(ap, needle);
	for (char *a; (a = va_arg(ap, char *)) && argc < 31;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	ret = px_parse_args(argc, argv, &o, err, sizeof(err));
	if (ret != -EINVAL)
		fail_msg("args starting %s: got %d, want -EINVAL", argv[1], ret);
	if (!strstr(err, needle))
		fail_msg("args starting %s: error \"%s\" lacks \"%s\"", argv[1], err, needle);
}

static void test_errors(void **state)
{
	(void)state;
	bad("pdkv-proxy: unknown option --bogus (see pdkv-proxy --help)", "--bogus", NULL);
	bad("--port: expected 0..65535", "--port", "x", NULL);
	bad("--port: expected 0..65535", "--port", "70000", NULL);
	bad("--prefill: missing value", "--prefill", NULL);
	bad("--decode: URL \"ftp://x:1\"", "--decode", "ftp://x:1", NULL);
	bad("--prefill: expected http://host:port or host:port, got \"h\"", "--prefill", "h", NULL);
	bad("Number of prefiller hosts (3) must match number of prefiller ports (2)",
	    "--prefiller-host", "a,b,c", "--prefiller-port", "1,2", NULL);
	bad("--decoder-port: expected 1..65535, got \"0\"", "--decoder-port", "0", NULL);
	bad("--prefill-timeout: expected seconds", "--prefill-timeout", "-1", NULL);
	bad("--connect-timeout: expected seconds (a number > 0)", "--connect-timeout", "0", NULL);
	bad("--max-body: expected a size", "--max-body", "lots", NULL);
	bad("unexpected argument \"stray\"", "stray", NULL);
	bad("--prefill: empty entry", "--prefill", "a:1,,b:2", NULL);
}

static void test_contract_flags(void **state)
{
	struct px_opts o;
	char err[256];
	(void)state;
	assert_int_equal(parse(&o, err, sizeof(err), NULL), 0);
	assert_int_equal(o.contract, PX_CONTRACT_V0); /* the default stays v0 */
	assert_int_equal(parse(&o, err, sizeof(err), "--contract", "toy", NULL), 0);
	assert_int_equal(o.contract, PX_CONTRACT_TOY);
	assert_int_equal(parse(&o, err, sizeof(err), "--contract=mooncake", "--prefill",
	                       "http://p1:8100", "9000", "--prefill", "http://[::1]:8101", "none",
	                       "--prefill", "p3:8102,p4:8103", "8999", "--prefill", "p5:8104",
	                       NULL),
	                 0);
	assert_int_equal(o.contract, PX_CONTRACT_MOONCAKE);
	assert_int_equal(o.n_prefill, 5);
	assert_int_equal(o.bootstrap[0], 9000);
	assert_int_equal(o.bootstrap[1], 0); /* none -> 8998 at use */
	assert_int_equal(o.bootstrap[2], 8999);
	assert_int_equal(o.bootstrap[3], 8999); /* a comma list shares its port */
	assert_int_equal(o.bootstrap[4], 0);
	assert_string_equal(o.contract_why, "");
	/* auto: bootstrap port -> mooncake; toy spellings -> toy; else v0 */
	assert_int_equal(
	    parse(&o, err, sizeof(err), "--contract", "auto", "--prefill", "p:1", "none", NULL), 0);
	assert_int_equal(o.contract, PX_CONTRACT_MOONCAKE);
	assert_has_str(o.contract_why, "bootstrap");
	assert_int_equal(
	    parse(&o, err, sizeof(err), "--contract", "auto", "--prefiller-port", "8100", NULL), 0);
	assert_int_equal(o.contract, PX_CONTRACT_TOY);
	assert_int_equal(
	    parse(&o, err, sizeof(err), "--contract", "auto", "--prefill", "p:1", NULL), 0);
	assert_int_equal(o.contract, PX_CONTRACT_V0);
	bad("--contract: expected v0, toy, mooncake or auto, got \"nixl\"", "--contract", "nixl",
	    NULL);
	bad("--contract: missing value", "--contract", NULL);
}

static void test_url_host(void **state)
{
	char h[64];
	(void)state;
	assert_int_equal(px_url_host("http://10.0.0.1:8100", h, sizeof(h)), 0);
	assert_string_equal(h, "10.0.0.1");
	assert_int_equal(px_url_host("https://gw:443/team-a", h, sizeof(h)), 0);
	assert_string_equal(h, "gw");
	assert_int_equal(px_url_host("http://[fe80::1]:8100", h, sizeof(h)), 0);
	assert_string_equal(h, "[fe80::1]");
	assert_int_equal(px_url_host("http://h", h, sizeof(h)), 0);
	assert_string_equal(h, "h");
}

static void with_key(const char *in, const char *want)
{
	char *out = NULL;
	size_t n = 0;
	assert_int_equal(
	    px_json_with_key(in, strlen(in), "kv_transfer_params", "{\"a\":1}", &out, &n), 0);
	assert_string_equal(out, want);
	assert_int_equal(n, strlen(want));
	free(out);
}

static void test_json_edits(void **state)
{
	char *out = NULL;
	size_t n;
	(void)state;
	/* appended before the closing brace; the client's bytes (big ints, spacing) kept */
	with_key("{\"seed\": 123456789012345678901, \"p\":\"x\"}",
	         "{\"seed\": 123456789012345678901, \"p\":\"x\",\"kv_transfer_params\":{\"a\":1}}");
	with_key("{}", "{\"kv_transfer_params\":{\"a\":1}}");
	with_key(" { \"p\" : 1 } \n", " { \"p\" : 1 ,\"kv_transfer_params\":{\"a\":1}} \n");
	/* a client's own kv_transfer_params is replaced where it stands, duplicates dropped */
	with_key("{\"kv_transfer_params\":null,\"p\":1,\"kv_transfer_params\":{}}",
	         "{\"kv_transfer_params\":{\"a\":1},\"p\":1}");
	assert_int_equal(px_json_with_key("[1]", 3, "k", "1", &out, &n), -EINVAL);
	assert_null(out);
}

static void test_uuid4(void **state)
{
	char a[40], b[40];
	(void)state;
	assert_int_equal(px_uuid4(a, sizeof(a)), 0);
	assert_int_equal(px_uuid4(b, sizeof(b)), 0);
	assert_int_equal(strlen(a), 36);
	assert_true(a[14] == '4' && strchr("89ab", a[19]) && a[8] == '-' && a[23] == '-');
	assert_string_not_equal(a, b);
}

static void query_bad(const char *body, const char *needle)
{
	static struct px_rank rk[PX_MAX_DP];
	char why[200] = "";
	int n = px_ready_parse_query(body, strlen(body), rk, why, sizeof(why));
	if (n != -EPROTO)
		fail_msg("/query %s: got %d, want -EPROTO", body, n);
	if (!strstr(why, needle))
		fail_msg("/query %s: \"%s\" lacks \"%s\"", body, why, needle);
}

static void test_query_parse(void **state)
{
	static struct px_rank rk[PX_MAX_DP];
	const char *ok = "{\"1\":{\"engine_id\":\"e1\",\"worker_addr\":{\"0\":{\"0\":"
	                 "\"tcp://127.0.0.1:5\"},\"1\":{\"0\":\"tcp://127.0.0.1:6\"}}},"
	                 "\"0\":{\"engine_id\":\"e0\",\"extra\":[1]}}";
	char why[200], big[64];
	(void)state;
	assert_int_equal(px_ready_parse_query(ok, strlen(ok), rk, why, sizeof(why)), 2);
	assert_string_equal(rk[0].engine_id, "e0");
	assert_int_equal(rk[0].nworkers, 0);
	assert_string_equal(rk[1].engine_id, "e1");
	assert_int_equal(rk[1].nworkers, 2);
	assert_string_equal(rk[1].worker[1], "tcp://127.0.0.1:6");
	/* the bootstrap server's bound (pd_ranks.h) is the router's: its last rank is routable */
	snprintf(big, sizeof(big), "{\"%d\":{\"engine_id\":\"e\"}}", PD_MAX_DP_RANKS - 1);
	query_bad(big, "rank 0 missing");
	query_bad("{}", "no dp rank registered yet");
	query_bad("[]", "not a JSON object");
	query_bad("{\"x\":{\"engine_id\":\"e\"}}", "key \"x\" is not a dp rank");
	query_bad("{\"1024\":{\"engine_id\":\"e\"}}", "is not a dp rank 0..1023");
	query_bad("{\"1\":{\"engine_id\":\"e\"}}", "rank 0 missing");
	query_bad("{\"0\":{\"engine_id\":5}}", "\"0\".engine_id: expected a string");
	query_bad("{\"0\":{\"engine_id\":\"\"}}", "\"0\".engine_id: expected a string");
	query_bad("{\"0\":{\"engine_id\":\"a\"},\"0\":{\"engine_id\":\"b\"}}", "appears twice");
	query_bad("{\"0\":{\"engine_id\":\"a\\nb\"}}", "control character");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_normalize),       cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_guide_spellings), cmocka_unit_test(test_toy_spellings),
	    cmocka_unit_test(test_errors),          cmocka_unit_test(test_contract_flags),
	    cmocka_unit_test(test_url_host),        cmocka_unit_test(test_json_edits),
	    cmocka_unit_test(test_uuid4),           cmocka_unit_test(test_query_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
