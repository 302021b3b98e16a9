/* SPDX-License-Identifier: Apache-2.0 */
/* test_meta_svc: pd_svc starts real etcd, redis-server and pdkv-metaserver on free loopback
 * ports, each answers, and pd_svc_stop leaves no process and no data directory behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testsvc/pd_svc.h"
#include "pd_util.h"

static void check_kind(enum pd_svc_kind kind)
{
	struct pd_svc s;
	struct stat st;
	char dir[512];
	pid_t pid;
	int ret = pd_svc_start(kind, NULL, NULL, &s);

	if (ret == -ENOENT) {
		printf("SKIP: %s binary not installed\n", pd_svc_kind_name(kind));
		return;
	}
	assert_int_equal(ret, 0);
	assert_true(s.port > 0);
	assert_string_equal(s.host, "127.0.0.1");
	assert_non_null(strstr(s.conn, "://127.0.0.1:"));
	assert_int_equal(pd_wait_tcp(s.host, s.port, 1000), 0);
	assert_int_equal(stat(s.datadir, &st), 0);
	snprintf(dir, sizeof(dir), "%s", s.datadir);
	pid = s.proc.pid;
	assert_true(pid > 0);
	pd_svc_stop(&s);
	assert_int_equal(s.proc.pid, 0);
	assert_int_not_equal(kill(pid, 0), 0); /* reaped: no such process */
	assert_int_not_equal(stat(dir, &st), 0);
	pd_svc_stop(&s); /* idempotent */
}

static void test_etcd(void **state)
{
	(void)state;
	check_kind(PD_SVC_ETCD);
}

static void test_redis(void **state)
{
	(void)state;
	check_kind(PD_SVC_REDIS);
}

static void test_metaserver(void **state)
{
	(void)state;
	check_kind(PD_SVC_METASERVER);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(pd_svc_kind_name(PD_SVC_ETCD), "etcd");
	assert_string_equal(pd_svc_kind_name(PD_SVC_REDIS), "redis");
	assert_string_equal(pd_svc_kind_name(PD_SVC_METASERVER), "http");
}

/* A child starts a metaserver and leaves without pd_svc_stop: exit() (atexit) stops it and
 * removes its directory; _exit() leaves the directory, which the next pd_svc_start sweeps. */
static void child_leaves(int use_exit, pid_t *svc_pid, char *dir, size_t dirlen)
{
	int fds[2];
	pid_t child;
	char buf[600] = "";
	ssize_t n;
	assert_int_equal(pipe(fds), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct pd_svc s;
		close(fds[0]);
		if (pd_svc_start(PD_SVC_METASERVER, NULL, NULL, &s))
			_exit(3);
		dprintf(fds[1], "%d %s", (int)s.proc.pid, s.datadir);
		close(fds[1]);
		if (use_exit)
			exit(0);
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	waitpid(child, NULL, 0);
	assert_true(n > 0);
	buf[n] = '\0';
	int pid = 0;
	assert_int_equal(sscanf(buf, "%d %511s", &pid, dir), 2);
	(void)dirlen;
	*svc_pid = pid;
}

static void test_cleanup_without_stop(void **state)
{
	char dir[512];
	struct stat st;
	struct pd_svc s;
	pid_t pid;
	(void)state;
	if (pd_svc_start(PD_SVC_METASERVER, NULL, NULL, &s) == -ENOENT)
		skip();
	pd_svc_stop(&s);

	child_leaves(1, &pid, dir, sizeof(dir));
	assert_int_not_equal(stat(dir, &st), 0); /* atexit removed it */
	for (int i = 0; i < 100 && kill(pid, 0) == 0; i++)
		pd_sleep_ms(20);
	assert_int_not_equal(kill(pid, 0), 0);

	child_leaves(0, &pid, dir, sizeof(dir));
	for (int i = 0; i < 100 && kill(pid, 0) == 0; i++) /* PDEATHSIG */
		pd_sleep_ms(20);
	assert_int_not_equal(kill(pid, 0), 0);
	assert_int_equal(stat(dir, &st), 0); /* left behind ... */
	assert_int_equal(pd_svc_start(PD_SVC_METASERVER, NULL, NULL, &s), 0);
	assert_int_not_equal(stat(dir, &st), 0); /* ... and swept by the next start */
	pd_svc_stop(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_etcd),
	    cmocka_unit_test(test_redis),
	    cmocka_unit_test(test_metaserver),
	    cmocka_unit_test(test_cleanup_without_stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
