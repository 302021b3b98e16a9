/* SPDX-License-Identifier: Apache-2.0 */
/* test_te_net: te_net_connect_why says which connect failure and to what host:port — a port
 * nothing listens on (refused, over loopback) and a name that does not resolve (RFC 6761's
 * .invalid) — instead of one "unreachable" for all; the handshake client's log line carries it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "te/te.h"
#include "te/te_internal.h"

/* A loopback port bound (so no one else takes it) but not listening: connects are refused. */
static int refusing_port(int *fd)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t al = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*fd >= 0);
	assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &al), 0);
	return ntohs(a.sin_port);
}

static void test_refused(void **state)
{
	char why[512], hp[64];
	int fd, port = refusing_port(&fd);
	(void)state;

	assert_int_equal(te_net_connect_why("127.0.0.1", port, 2000, why, sizeof(why)),
	                 TE_ERR_UNREACHABLE);
	snprintf(hp, sizeof(hp), "127.0.0.1:%d", port);
	print_message("why: %s\n", why);
	assert_non_null(strstr(why, "refused"));
	assert_non_null(strstr(why, hp));
	assert_null(strstr(why, "unreachable"));
	/* the plain call keeps its code */
	assert_int_equal(te_net_connect("127.0.0.1", port, 2000), TE_ERR_UNREACHABLE);
	close(fd);
}

static void test_dns(void **state)
{
	char why[512];
	const char *name = "pdkv-no-such-host.invalid";
	(void)state;

	assert_int_equal(te_net_connect_why(name, 4242, 2000, why, sizeof(why)), TE_ERR_DNS);
	print_message("why: %s\n", why);
	assert_non_null(strstr(why, "DNS resolution"));
	assert_non_null(strstr(why, name));
	assert_non_null(strstr(why, "4242"));
}

static void test_bad_args(void **state)
{
	char why[128];
	(void)state;

	assert_int_equal(te_net_connect_why("", 1, 100, why, sizeof(why)), TE_ERR_INVALID_ARGUMENT);
	assert_int_equal(te_net_connect_why("127.0.0.1", 70000, 100, why, sizeof(why)),
	                 TE_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(why, "70000"));
}

/* The handshake client (what an engine runs to reach a peer) fails with the same codes. */
static void test_handshake_codes(void **state)
{
	char *reply = NULL;
	int fd, port = refusing_port(&fd);
	(void)state;

	assert_int_equal(te_hs_request("127.0.0.1", port, TE_HS_METADATA, "{}", &reply, 2000),
	                 TE_ERR_UNREACHABLE);
	assert_null(reply);
	assert_int_equal(
	    te_hs_request("pdkv-no-such-host.invalid", port, TE_HS_METADATA, "{}", &reply, 2000),
	    TE_ERR_DNS);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_dns),
	    cmocka_unit_test(test_bad_args),
	    cmocka_unit_test(test_handshake_codes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
