/* Unit tests for pdkv-proxy's flags: every backend URL spelling (guide, PROXY-16, toy proxy),
 * list forms, defaults and the errors a bad flag must give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proxy/px.h"

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
	bad("unknown flag \"--bogus\"", "--bogus", NULL);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_normalize),       cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_guide_spellings), cmocka_unit_test(test_toy_spellings),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
