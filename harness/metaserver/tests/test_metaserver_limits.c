/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-metaserver under a slow-connection flood (issue 11 D6): connections from one client
 * address beyond --max-connections-per-client and beyond --max-connections are refused with a
 * log line, idle ones are dropped after --idle-timeout, and a legitimate client on another
 * loopback address is answered throughout. Real binary, loopback 127.0.0.1-4 only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pd_proc.h"
#include "pd_util.h"

#define FLOOD 100

static struct pd_proc g_srv;
static char g_log[256];
static int g_port;

/* connects from src (a 127/8 address) to the server and sends half a request */
static int slow_conn(const char *src)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	static const char half[] = "GET /health HTTP/1.1\r\nHost: x\r\n";
	if (fd < 0)
		return -1;
	inet_pton(AF_INET, src, &a.sin_addr);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	a.sin_port = htons((uint16_t)g_port);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	send(fd, half, sizeof(half) - 1, MSG_NOSIGNAL);
	return fd;
fail:
	close(fd);
	return -1;
}

/* how many of fds the server has closed (EOF or reset) within ms */
static int count_closed(int *fds, int n, int ms)
{
	uint64_t end = pd_now_ns() + (uint64_t)ms * 1000000ull;
	int closed = 0;
	for (;;) {
		closed = 0;
		for (int i = 0; i < n; i++) {
			char b[256];
			if (fds[i] < 0) {
				closed++;
				continue;
			}
			ssize_t r = recv(fds[i], b, sizeof(b), MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
				close(fds[i]);
				fds[i] = -1;
				closed++;
			}
		}
		if (closed == n || pd_now_ns() >= end)
			return closed;
		pd_sleep_ms(50);
	}
}

/* a whole GET /health from 127.0.0.1; the status code, or -1 */
static int legit_get(void)
{
	int fd = pd_tcp_connect("127.0.0.1", g_port, 3000), code = -1;
	static const char req[] = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	char b[512];
	size_t got = 0;
	if (fd < 0)
		return -1;
	if (pd_write_full(fd, req, sizeof(req) - 1) == 0) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		while (got < sizeof(b) - 1 && poll(&p, 1, 5000) > 0) {
			ssize_t r = recv(fd, b + got, sizeof(b) - 1 - got, 0);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		b[got] = '\0';
		if (sscanf(b, "HTTP/1.1 %d", &code) != 1)
			code = -1;
	}
	close(fd);
	return code;
}

static bool log_has(const char *s)
{
	char *txt;
	size_t n;
	bool ok = false;
	if (pd_read_file(g_log, 1 << 20, &txt, &n) == 0) {
		ok = strstr(txt, s) != NULL;
		free(txt);
	}
	return ok;
}

static void test_flood_per_client(void **state)
{
	int a[FLOOD], b[FLOOD], closed;
	(void)state;
	for (int i = 0; i < FLOOD; i++)
		a[i] = slow_conn("127.0.0.2");
	/* 8 held from 127.0.0.2, the rest refused at once */
	closed = count_closed(a, FLOOD, 500);
	print_message("    127.0.0.2: %d of %d closed at once\n", closed, FLOOD);
	assert_true(closed >= FLOOD - 8);
	assert_true(closed < FLOOD); /* the 8 are held until the idle timeout */
	assert_int_equal(legit_get(), 200);
	assert_true(log_has("limit --max-connections-per-client 8"));
	/* 127.0.0.3 brings the total to --max-connections 16 */
	for (int i = 0; i < FLOOD; i++)
		b[i] = slow_conn("127.0.0.3");
	closed = count_closed(b, FLOOD, 500);
	print_message("    127.0.0.3: %d of %d closed at once\n", closed, FLOOD);
	assert_true(closed >= FLOOD - 8);
	/* the slow ones are dropped after --idle-timeout 4, then service is back for all */
	assert_int_equal(count_closed(a, FLOOD, 10000), FLOOD);
	assert_int_equal(count_closed(b, FLOOD, 10000), FLOOD);
	assert_int_equal(legit_get(), 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flood_per_client),
	};
	char exe[512], *txt = NULL;
	size_t n;
	int rc;
	snprintf(exe, sizeof(exe), "%s/../bin/pdkv-metaserver", pd_self_dir());
	if (access(exe, X_OK)) {
		fprintf(stderr, "FAIL: %s not built\n", exe);
		return 1;
	}
	snprintf(g_log, sizeof(g_log), "/tmp/pdkv-ms-limits-%d.log", (int)getpid());
	char *argv[] = {exe,         "--host",
	                "127.0.0.1", "--port",
	                "0",         "--max-connections",
	                "16",        "--max-connections-per-client",
	                "8",         "--idle-timeout",
	                "1",         NULL};
	unlink(g_log);
	if (pd_proc_spawn(&g_srv, "metaserver", argv, NULL, g_log)) {
		fprintf(stderr, "FAIL: cannot start %s\n", exe);
		return 1;
	}
	for (int i = 0; i < 100 && !g_port; i++) {
		pd_sleep_ms(50);
		free(txt);
		txt = NULL;
		if (pd_read_file(g_log, 1 << 20, &txt, &n) == 0) {
			const char *p = strstr(txt, "http://127.0.0.1:");
			if (p)
				g_port = atoi(p + strlen("http://127.0.0.1:"));
		}
	}
	free(txt);
	if (!g_port) {
		fprintf(stderr, "FAIL: the metaserver did not start (log %s)\n", g_log);
		pd_proc_stop(&g_srv, 1000);
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	pd_proc_stop(&g_srv, 2000);
	if (rc == 0)
		unlink(g_log);
	return rc;
}
