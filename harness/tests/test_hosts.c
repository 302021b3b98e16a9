/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of pdkv run --hosts: as root, three namespaces with a real sshd each stand in for three
 * machines; the 1P1D scenarios (V0 etcd, V1 gen B) run through the ssh launcher, then the failure
 * cases (unreachable, wrong key, pdkv missing, remote process dies, Ctrl-C), nothing left. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/hr.h"
#include "pd_proc.h"
#include "pd_util.h"
#include "ssh_fixture.h"

static const char *const hosts[] = {"hostA", "hostB", "hostC"};

static struct {
	struct sshfx fx;
	char run[600], scen[600], work[300];
	int remote_dirs; /* before the tests */
} g;

static const char *addr(const char *host)
{
	return hr_netns_find(&g.fx.nn, host)->addr;
}

/* hosts.txt with hostB's line replaced by b_line (NULL = the normal one); its path */
static const char *hosts_file(const char *name, const char *b_line, bool with_c)
{
	static char path[300];
	char text[3000], b[800];
	snprintf(path, sizeof(path), "%s/%s", g.fx.dir, name);
	snprintf(b, sizeof(b), "hostB root@%s pdkv=%s", addr("hostB"), g.fx.pdkv);
	snprintf(text, sizeof(text), "# the test's three machines\nhostA root@%s pdkv=%s\n%s\n",
	         addr("hostA"), g.fx.pdkv, b_line ? b_line : b);
	if (with_c)
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
		         "hostC root@%s pdkv=%s\n", addr("hostC"), g.fx.pdkv);
	assert_int_equal(pd_write_file(path, text, strlen(text)), 0);
	return path;
}

/* pdkv run --hosts HOSTS --ssh-key KEY --workdir W ARGS...: exit status, output in out */
static int run_pdkv(const char *hostsf, const char *key, const char *args, char *out, size_t sz)
{
	char cmd[3000];
	size_t n = 0;
	FILE *p;
	int st;
	snprintf(cmd, sizeof(cmd),
	         "timeout 150 %s --hosts %s --ssh-key %s/%s --ssh-timeout 3 --workdir %s %s 2>&1",
	         g.run, hostsf, g.fx.dir, key, g.work, args);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (n + 1 < sz && fgets(out + n, (int)(sz - n), p))
		n += strlen(out + n);
	out[n] = '\0';
	st = pclose(p);
	if (getenv("PDKV_TEST_SHOW")) { /* what each run said, for a person reading the test */
		print_message("$ pdkv run %s\n", args);
		for (char *l = out, *e; *l; l = e + 1) {
			e = strchr(l, '\n');
			if (!e)
				e = l + strlen(l) - 1;
			print_message("%.*s\n", (int)(e - l), l);
		}
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* /tmp/pdkv-remote.* : the remote work dirs (the test's machines share this file system) */
static int count_remote_dirs(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, "pdkv-remote.", 12);
	if (d)
		closedir(d);
	return n;
}

/* Nothing of a run is left: no process in any namespace but its sshd, no ControlMaster, no
 * remote work dir. */
static void assert_nothing_left(const char *out)
{
	if (count_remote_dirs() > g.remote_dirs)
		fail_msg("a remote work dir /tmp/pdkv-remote.* was left after:\n%s", out);
	for (size_t i = 0; i < 3; i++) {
		int n = sshfx_procs_in(&g.fx, hosts[i], 3000);
		if (n)
			fail_msg("%d processes left in %s's namespace after:\n%s", n, hosts[i],
			         out);
	}
	/* our ControlMasters: their command line names the run's work dir (its known_hosts; other
	 * tests on this machine may have their own); `ssh -O exit` returns before they are gone */
	char mine[400];
	snprintf(mine, sizeof(mine), "%s/", g.work);
	int n = 0;
	for (int t = 0;
	     t < 50 && (n = sshfx_procs_with(mine) + sshfx_procs_with("/tmp/pdkv-accept.")); t++)
		pd_sleep_ms(100);
	if (n)
		fail_msg("%d ssh ControlMaster(s) left running after:\n%s", n, out);
}

static void expect_fail_with(const char *hostsf, const char *key, const char *want1,
                             const char *want2)
{
	char out[16384];
	int rc = run_pdkv(hostsf, key, g.scen, out, sizeof(out));
	if (rc != 1 || !strstr(out, want1) || (want2 && !strstr(out, want2)))
		fail_msg("rc %d (wanted 1) and \"%s\"%s%s in:\n%s", rc, want1, want2 ? " + " : "",
		         want2 ? want2 : "", out);
	assert_nothing_left(out);
}

static int setup(void **state)
{
	(void)state;
	if (sshfx_up(&g.fx, hosts, 3))
		return -1;
	g.remote_dirs = count_remote_dirs();
	snprintf(g.run, sizeof(g.run), "%s/../bin/pdkv-run", pd_self_dir());
	snprintf(g.scen, sizeof(g.scen), "%s/../../scenarios/30-netns-1p1d-v0.json", pd_self_dir());
	snprintf(g.work, sizeof(g.work), "%s/work", g.fx.dir);
	return access(g.run, X_OK) || access(g.scen, R_OK) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	sshfx_down(&g.fx);
	return 0;
}

static void assert_log(const char *scenario, const char *name, const char *want)
{
	char p[700], *buf = NULL;
	size_t len = 0;
	snprintf(p, sizeof(p), "%s/%s/%s.log", g.work, scenario, name);
	if (pd_read_file(p, 16 << 20, &buf, &len))
		fail_msg("%s was not fetched back", p);
	if (!strstr(buf, want))
		fail_msg("%s lacks \"%s\":\n%.2000s", p, want, buf);
	free(buf);
}

static void test_v0_and_v1_through_ssh(void **state)
{
	char out[32768], args[1400];
	(void)state;
	snprintf(args, sizeof(args),
	         "--keep -v %s %s/../../scenarios/32-netns-1p1d-v1-gen-b.json "
	         "%s/../../scenarios/33-netns-v1-tp2-two-hosts.json",
	         g.scen, pd_self_dir(), pd_self_dir());
	int rc = run_pdkv(hosts_file("hosts.txt", NULL, true), "userkey", args, out, sizeof(out));
	if (rc != 0 || !strstr(out, "netns-1p1d-v0 ") || !strstr(out, "3 passed"))
		fail_msg("rc %d:\n%s", rc, out);
	/* each process ran on its machine, and its log came back under the run's work dir */
	assert_log("netns-1p1d-v0", "prefill", "# on hostA: ");
	assert_log("netns-1p1d-v0", "decode", "# on hostB: ");
	assert_log("netns-1p1d-v0", "proxy", "# on hostC: ");
	assert_log("netns-1p1d-v0", "plain", "# on hostC: ");
	assert_log("netns-1p1d-v0", "metadata-etcd", "# on hostC: etcd");
	assert_log("netns-1p1d-v0", "prefill", "pdkv-standin[prefill]"); /* the remote content */
	assert_log("netns-1p1d-v1-gen-b", "decode", "# on hostB: ");
	/* the metadata service listened on hostC's address */
	if (!strstr(out, "metadata at etcd://") || !strstr(out, addr("hostC")))
		fail_msg("etcd not on hostC:\n%s", out);
	assert_nothing_left(out);
	pd_rm_rf(g.work);
}

/* scenario 30 with "metadata" and "reference" placed on their own hosts: path in out */
static void placed_scenario(char *out, size_t sz)
{
	char *buf = NULL, *at;
	size_t len = 0;
	const char *key = "\"proxy\": \"hostC\"";
	assert_int_equal(pd_read_file(g.scen, 1 << 20, &buf, &len), 0);
	at = strstr(buf, key);
	assert_non_null(at);
	*at = '\0';
	char *text = pd_asprintf("%s%s, \"metadata\": \"hostA\", \"reference\": \"hostB\"%s", buf,
	                         key, at + strlen(key));
	snprintf(out, sz, "%s/placed.json", g.fx.dir);
	assert_int_equal(pd_write_file(out, text, strlen(text)), 0);
	free(text);
	free(buf);
}

/* "metadata" and "reference" keys are honoured: through --hosts, and on namespaces alone */
static void test_metadata_reference_placed(void **state)
{
	char out[32768], args[1000], scen[300], want[200];
	(void)state;
	placed_scenario(scen, sizeof(scen));
	snprintf(args, sizeof(args), "--keep -v %s", scen);
	int rc = run_pdkv(hosts_file("hosts.txt", NULL, true), "userkey", args, out, sizeof(out));
	if (rc != 0)
		fail_msg("rc %d:\n%s", rc, out);
	assert_log("netns-1p1d-v0", "metadata-etcd", "# on hostA: etcd");
	assert_log("netns-1p1d-v0", "plain", "# on hostB: ");
	snprintf(want, sizeof(want), "metadata at etcd://%s:", addr("hostA"));
	if (!strstr(out, want))
		fail_msg("no \"%s\" in:\n%s", want, out);
	assert_nothing_left(out);
	pd_rm_rf(g.work);
	/* without --hosts: the runner's own namespaces; etcd sits at prefill's (hostA's) address */
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "timeout 100 %s -v --workdir %s %s 2>&1", g.run, g.work, scen);
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	assert_non_null(p);
	while (n + 1 < sizeof(out) && fgets(out + n, (int)(sizeof(out) - n), p))
		n += strlen(out + n);
	out[n] = '\0';
	assert_int_equal(pclose(p), 0);
	char *pre = strstr(out, "starting prefill http://"),
	     *meta = strstr(out, "metadata at etcd://");
	if (!pre || !meta)
		fail_msg("no prefill / metadata address in:\n%s", out);
	pre += strlen("starting prefill http://");
	meta += strlen("metadata at etcd://");
	if (strncmp(pre, meta, strcspn(meta, ":") + 1))
		fail_msg("etcd not on hostA's namespace address:\n%s", out);
	pd_rm_rf(g.work);
}

/* scenario 30 on another metadata backend, under a new name: its path in out */
static void backend_scenario(const char *kind, char *out, size_t sz)
{
	char *buf = NULL, *a, *b, *c;
	size_t len = 0;
	assert_int_equal(pd_read_file(g.scen, 1 << 20, &buf, &len), 0);
	a = strstr(buf, "\"netns-1p1d-v0\"");
	b = strstr(buf, "\"metadata\": \"etcd\"");
	c = strstr(buf, "${METADATA_HOSTPORT}");
	assert_true(a && b && c && a < b && b < c);
	*a = *b = *c = '\0';
	char *text =
	    pd_asprintf("%s\"netns-%s\"%s\"metadata\": \"%s\"%s${METADATA}%s", buf, kind,
	                a + strlen("\"netns-1p1d-v0\""), kind, b + strlen("\"metadata\": \"etcd\""),
	                c + strlen("${METADATA_HOSTPORT}"));
	snprintf(out, sz, "%s/%s.json", g.fx.dir, kind);
	assert_int_equal(pd_write_file(out, text, strlen(text)), 0);
	free(text);
	free(buf);
}

/* redis-server and pdkv metaserver started on hostC through ssh, as etcd is */
static void test_other_metadata_backends(void **state)
{
	char out[32768], args[1000], redis[300], http[300];
	(void)state;
	backend_scenario("redis", redis, sizeof(redis));
	backend_scenario("http", http, sizeof(http));
	snprintf(args, sizeof(args), "--keep %s %s", redis, http);
	int rc = run_pdkv(hosts_file("hosts.txt", NULL, true), "userkey", args, out, sizeof(out));
	if (rc != 0 || !strstr(out, "2 passed"))
		fail_msg("rc %d:\n%s", rc, out);
	assert_log("netns-redis", "metadata-redis", "# on hostC: redis-server");
	assert_log("netns-http", "metadata-http", "# on hostC: ");
	assert_nothing_left(out);
	pd_rm_rf(g.work);
}

static void test_unreachable(void **state)
{
	char ghost[32], line[800];
	(void)state;
	sshfx_ghost(&g.fx, ghost, sizeof(ghost));
	snprintf(line, sizeof(line), "hostB root@%s pdkv=%s", ghost, g.fx.pdkv);
	expect_fail_with(hosts_file("h-ghost.txt", line, true), "userkey", "--hosts: host hostB",
	                 "cannot reach it through ssh");
}

static void test_wrong_key(void **state)
{
	(void)state;
	expect_fail_with(hosts_file("hosts.txt", NULL, true), "wrongkey", "authentication refused",
	                 "Permission denied");
}

static void test_pdkv_missing(void **state)
{
	char line[300];
	(void)state;
	snprintf(line, sizeof(line), "hostB root@%s pdkv=/nonexistent/bin/pdkv", addr("hostB"));
	expect_fail_with(hosts_file("h-nopdkv.txt", line, true), "userkey",
	                 "pdkv is not installed there", "line 3 of");
}

static void test_host_not_listed(void **state)
{
	(void)state;
	expect_fail_with(hosts_file("h-noc.txt", NULL, false), "userkey",
	                 "hosts.proxy: host \"hostC\" is not in", NULL);
}

/* hostB's pdkv answers --help, but its stand-in dies at once: the error names the process,
 * the host and the last words of its log, fetched back; prefill and etcd are stopped. */
static void test_remote_dies(void **state)
{
	char wrap[300], text[1200], line[800];
	(void)state;
	snprintf(wrap, sizeof(wrap), "%s/dying-pdkv", g.fx.dir);
	snprintf(text, sizeof(text),
	         "#!/bin/sh\nif [ \"$1\" = standin ]; then echo 'error: simulated crash on hostB' "
	         ">&2; exit 3; fi\nexec %s \"$@\"\n",
	         g.fx.pdkv);
	assert_int_equal(pd_write_file(wrap, text, strlen(text)), 0);
	assert_int_equal(chmod(wrap, 0755), 0);
	snprintf(line, sizeof(line), "hostB root@%s pdkv=%s", addr("hostB"), wrap);
	expect_fail_with(hosts_file("h-dies.txt", line, true), "userkey",
	                 "decode exited on host hostB during startup",
	                 "error: simulated crash on hostB");
}

/* Ctrl-C once the stand-ins run: the runner stops everything it started and exits. */
static void test_interrupt(void **state)
{
	struct pd_proc p;
	char key[300], log[400], wd[400];
	(void)state;
	snprintf(key, sizeof(key), "%s/userkey", g.fx.dir);
	snprintf(log, sizeof(log), "%s/interrupt.out", g.fx.dir);
	snprintf(wd, sizeof(wd), "%s/netns-1p1d-v0/proxy.log", g.work);
	char *argv[] = {g.run,       "--hosts", (char *)hosts_file("hosts.txt", NULL, true),
	                "--ssh-key", key,       "--workdir",
	                g.work,      "--keep",  g.scen,
	                NULL};
	assert_int_equal(pd_proc_spawn(&p, "pdkv-run", argv, NULL, log), 0);
	for (int i = 0; i < 300 && access(wd, F_OK); i++)
		pd_sleep_ms(50);
	assert_int_equal(access(wd, F_OK), 0); /* the proxy was being started */
	kill(p.pid, SIGINT);
	assert_int_equal(pd_proc_wait(&p, 60000), 0);
	assert_true(WIFEXITED(p.exit_status) &&
	            WEXITSTATUS(p.exit_status) == 130); /* 128 + SIGINT */
	char *buf = NULL;
	size_t len = 0;
	assert_int_equal(pd_read_file(log, 1 << 20, &buf, &len), 0);
	if (!strstr(buf, "interrupted"))
		fail_msg("no \"interrupted\" in:\n%s", buf);
	assert_nothing_left(buf);
	free(buf);
	pd_rm_rf(g.work);
}

/* ci/rxe/rdma-accept.sh two-host: the bench target started on hostB through ssh, the
 * initiator here, one command; over TCP (no NIC here), which is the same plumbing. */
static void test_rdma_accept_two_host(void **state)
{
	char cmd[2000], out[16384], tlog[300];
	size_t n = 0;
	(void)state;
	snprintf(tlog, sizeof(tlog), "%s/target.log", g.fx.dir);
	snprintf(
	    cmd, sizeof(cmd),
	    "cd %s/../.. && PDKV_BIN=%s/../bin PDKV_ACCEPT_TARGET_LOG=%s timeout 120 bash "
	    "ci/rxe/rdma-accept.sh two-host --hosts=%s --target_host=hostB --ssh-key=%s/userkey "
	    "--protocol=tcp --target_devices=eth0 --device_name=lo --duration=1 "
	    "--buffer_size=16777216 --sizes='-b 64K -e 64K' 2>&1",
	    pd_self_dir(), pd_self_dir(), tlog, hosts_file("hosts.txt", NULL, true), g.fx.dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	while (n + 1 < sizeof(out) && fgets(out + n, (int)(sizeof(out) - n), p))
		n += strlen(out + n);
	out[n] = '\0';
	int st = pclose(p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !strstr(out, "target on hostB (") ||
	    !strstr(out, "\n65536 "))
		fail_msg("rdma-accept two-host:\n%s", out);
	if (getenv("PDKV_TEST_SHOW"))
		print_message("%s", out);
	char *buf = NULL;
	size_t len = 0;
	assert_int_equal(pd_read_file(tlog, 1 << 20, &buf, &len), 0); /* its log came back */
	assert_true(len > 0);
	free(buf);
	assert_nothing_left(out);
}

int main(void)
{
	char why[512];
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v0_and_v1_through_ssh),
	    cmocka_unit_test(test_metadata_reference_placed),
	    cmocka_unit_test(test_other_metadata_backends),
	    cmocka_unit_test(test_unreachable),
	    cmocka_unit_test(test_wrong_key),
	    cmocka_unit_test(test_pdkv_missing),
	    cmocka_unit_test(test_host_not_listed),
	    cmocka_unit_test(test_remote_dies),
	    cmocka_unit_test(test_interrupt),
	    cmocka_unit_test(test_rdma_accept_two_host),
	};
	if (sshfx_missing(why, sizeof(why))) {
		printf("SKIP: pdkv run --hosts: %s\n", why);
		return 77;
	}
	hr_netns_cleanup_stale();
	return cmocka_run_group_tests(tests, setup, teardown);
}
