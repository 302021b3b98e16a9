/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of hr_netns on real namespaces: three hosts reach each other (ping, TCP), a cut link
 * makes a connect fail within its timeout and recovers, nftables drops, and nothing is left
 * behind (namespaces, links, processes), also after a run that died. NOTRUN (77) unprivileged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/hr_netns.h"

#define PORT 7411

static struct hr_netns g_nn; /* removed by teardown when an assertion fails half-way */

static int run_quiet(const char *const argv[])
{
	int st;
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A child inside host's namespace that answers "ok" to every connection on addr:PORT. */
static pid_t listener(const struct hr_netns *nn, const char *host)
{
	const struct hr_nshost *h = hr_netns_find(nn, host);
	pid_t pid = fork();
	if (pid == 0) {
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(PORT)};
		int one = 1, s;
		alarm(60); /* never outlive a broken test */
		if (hr_netns_enter(nn, host))
			_exit(2);
		s = socket(AF_INET, SOCK_STREAM, 0);
		inet_pton(AF_INET, h->addr, &sa.sin_addr);
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 8))
			_exit(3);
		for (;;) {
			int c = accept(s, NULL, NULL);
			if (c >= 0) {
				(void)!write(c, "ok", 2);
				close(c);
			}
		}
	}
	usleep(200 * 1000);
	return pid;
}

/* 0 when a TCP connect from host (NULL = this namespace) to addr:PORT reads "ok" within
 * timeout_ms, 1 otherwise. */
static int tcp_try(const struct hr_netns *nn, const char *from, const char *addr, int timeout_ms)
{
	int st;
	pid_t pid = fork();
	if (pid == 0) {
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(PORT)};
		struct pollfd p;
		char buf[4] = "";
		int s;
		if (from && hr_netns_enter(nn, from))
			_exit(2);
		s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		inet_pton(AF_INET, addr, &sa.sin_addr);
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS)
			_exit(1);
		p = (struct pollfd){.fd = s, .events = POLLIN};
		if (poll(&p, 1, timeout_ms) != 1 || read(s, buf, 2) != 2)
			_exit(1);
		_exit(strcmp(buf, "ok") ? 1 : 0);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int ping(const struct hr_netns *nn, const char *from, const char *addr)
{
	const char *pre[4];
	hr_netns_exec_prefix(nn, from, pre);
	const char *argv[] = {pre[0], pre[1], pre[2], pre[3], "ping", "-c1", "-W2", addr, NULL};
	return run_quiet(argv);
}

static bool ns_exists(const char *name)
{
	char p[128];
	snprintf(p, sizeof(p), "/run/netns/%s", name);
	return access(p, F_OK) == 0;
}

static void assert_all_gone(const struct hr_netns *nn)
{
	for (size_t i = 0; i < nn->n; i++)
		assert_false(ns_exists(nn->h[i].ns));
	assert_false(ns_exists(nn->bridge_ns));
	assert_int_equal(if_nametoindex(nn->root_if), 0);
}

static void test_three_hosts(void **state)
{
	struct hr_netns nn;
	const char *hosts[] = {"hostA", "hostB", "hostC", "hostB"};
	char err[512] = "";
	pid_t lb;
	(void)state;
	if (hr_netns_create(&nn, hosts, 4, 1400, err, sizeof(err)))
		fail_msg("hr_netns_create: %s", err);
	g_nn = nn;
	assert_int_equal(nn.n, 3); /* hostB named twice: one namespace */
	for (size_t i = 0; i < nn.n; i++) {
		assert_true(ns_exists(nn.h[i].ns));
		assert_int_equal(strncmp(nn.h[i].addr, "198.1", 5), 0);
		assert_int_equal(strncmp(nn.h[i].ns, nn.prefix, strlen(nn.prefix)), 0);
	}
	assert_int_not_equal(if_nametoindex(nn.root_if), 0);
	/* across namespaces, and from the runner's own stack */
	assert_int_equal(ping(&nn, "hostA", hr_netns_find(&nn, "hostB")->addr), 0);
	assert_int_equal(ping(&nn, "hostC", hr_netns_find(&nn, "hostA")->addr), 0);
	assert_int_equal(ping(&nn, "hostA", nn.root_addr), 0);
	/* MTU 1400: a 1372-byte ping (1400 with headers) passes unfragmented, 1373 does not */
	{
		const char *big[] = {"ip",   "netns", "exec", hr_netns_find(&nn, "hostA")->ns,
		                     "ping", "-c1",   "-W2",  "-M",
		                     "do",   "-s",    "1372", hr_netns_find(&nn, "hostB")->addr,
		                     NULL};
		assert_int_equal(run_quiet(big), 0);
		big[10] = "1373";
		assert_int_not_equal(run_quiet(big), 0);
	}
	lb = listener(&nn, "hostB");
	const char *b = hr_netns_find(&nn, "hostB")->addr;
	assert_int_equal(tcp_try(&nn, "hostA", b, 3000), 0);
	assert_int_equal(tcp_try(&nn, NULL, b, 3000), 0);
	/* hostB's link cut: the connect gives up within its own timeout */
	assert_int_equal(hr_netns_link(&nn, "hostB", false, err, sizeof(err)), 0);
	assert_int_equal(tcp_try(&nn, "hostA", b, 1500), 1);
	assert_int_equal(hr_netns_link(&nn, "hostB", true, err, sizeof(err)), 0);
	assert_int_equal(tcp_try(&nn, "hostA", b, 5000), 0); /* and it recovers */
	assert_int_equal(hr_netns_link(&nn, "nohost", false, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "nohost"));
	/* nftables: 100% drop on hostB's input, then removed */
	int r = hr_netns_drop(&nn, "hostB", 100, err, sizeof(err));
	if (r == -ENOTSUP) {
		print_message("nftables unavailable, drops not tested: %s\n", err);
	} else {
		if (r)
			fail_msg("hr_netns_drop: %s", err);
		assert_int_equal(tcp_try(&nn, "hostA", b, 1500), 1);
		assert_int_equal(hr_netns_drop(&nn, "hostB", 0, err, sizeof(err)), 0);
		assert_int_equal(tcp_try(&nn, "hostA", b, 5000), 0);
	}
	/* the listener still runs inside hostB: destroy must kill it */
	hr_netns_destroy(&nn);
	assert_int_equal(waitpid(lb, NULL, 0), lb);
	assert_all_gone(&nn);
	hr_netns_destroy(&nn); /* idempotent */
	g_nn.created = false;
}

static int teardown(void **state)
{
	(void)state;
	hr_netns_destroy(&g_nn);
	return 0;
}

static void test_bad_input(void **state)
{
	struct hr_netns nn;
	char err[512] = "";
	const char *bad[] = {"host B"};
	const char *ok[] = {"a"};
	(void)state;
	assert_int_equal(hr_netns_create(&nn, bad, 1, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "host B"));
	assert_int_equal(hr_netns_create(&nn, ok, 1, 100000, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "mtu"));
	assert_false(hr_netns_name_ok(""));
	assert_false(hr_netns_name_ok("../x"));
	assert_true(hr_netns_name_ok("node-01_b"));
}

/* A run killed before its cleanup: the next one's hr_netns_cleanup_stale removes its leftovers. */
static void test_stale_cleanup(void **state)
{
	int fds[2], st;
	struct hr_netns dead;
	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	if (pid == 0) {
		struct hr_netns nn;
		const char *hosts[] = {"x", "y"};
		char err[256];
		int r = hr_netns_create(&nn, hosts, 2, 0, err, sizeof(err));
		(void)!write(fds[1], &nn, sizeof(nn));
		_exit(r ? 1 : 0); /* no destroy: like a SIGKILLed runner */
	}
	assert_int_equal(read(fds[0], &dead, sizeof(dead)), (ssize_t)sizeof(dead));
	waitpid(pid, &st, 0);
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(ns_exists(dead.h[0].ns));
	assert_true(hr_netns_cleanup_stale() >= 3); /* x, y and the bridge */
	assert_all_gone(&dead);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	char why[512];
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_input),
	    cmocka_unit_test_teardown(test_three_hosts, teardown),
	    cmocka_unit_test(test_stale_cleanup),
	};
	if (hr_netns_probe(why, sizeof(why))) {
		printf("SKIP: %s\n", why);
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
