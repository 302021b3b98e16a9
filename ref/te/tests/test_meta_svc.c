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
#include <string.h>
#include <sys/stat.h>

#include "pd_svc.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_etcd),
	    cmocka_unit_test(test_redis),
	    cmocka_unit_test(test_metaserver),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
