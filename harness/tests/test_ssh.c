/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of hr_ssh: hosts.txt parsing and its errors; then, as root, a real sshd (Debian
 * openssh-server) inside each of two test namespaces with keys made for the test: remote commands,
 * scp both ways, remote start / alive / stop, and the failure cases with nothing left running. */
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
#include <unistd.h>

#include "lib/hr.h"
#include "lib/hr_netns.h"
#include "lib/hr_ssh.h"
#include "pd_proc.h"
#include "pd_util.h"
#include "ssh_fixture.h"

static void expect_hosts_error(const char *text, const char *want)
{
	struct hr_hosts hs;
	char err[600] = "";
	if (hr_hosts_parse("h.txt", text, &hs, err, sizeof(err)) == 0 || !strstr(err, want))
		fail_msg("hosts \"%s\": got \"%s\", wanted an error with \"%s\"", text, err, want);
}

static void test_hosts_parse(void **state)
{
	struct hr_hosts hs;
	char err[600] = "";
	(void)state;
	assert_int_equal(hr_hosts_parse("h.txt",
	                                "# cluster\n\nnodeA alice@10.0.0.5 pdkv=/opt/pdkv/bin/pdkv "
	                                "CUDA_VISIBLE_DEVICES=0 port=2222\n"
	                                "nodeB 192.0.2.7   # comment\n",
	                                &hs, err, sizeof(err)),
	                 0);
	assert_int_equal(hs.n, 2);
	assert_string_equal(hs.h[0].name, "nodeA");
	assert_string_equal(hs.h[0].user, "alice");
	assert_string_equal(hs.h[0].addr, "10.0.0.5");
	assert_int_equal(hs.h[0].port, 2222);
	assert_string_equal(hs.h[0].pdkv, "/opt/pdkv/bin/pdkv");
	assert_int_equal(hs.h[0].nenv, 1);
	assert_string_equal(hs.h[0].env[0], "CUDA_VISIBLE_DEVICES=0");
	assert_int_equal(hs.h[0].line, 3);
	assert_string_equal(hs.h[1].pdkv, "pdkv");
	assert_string_equal(hs.h[1].user, "");
	assert_int_equal(hs.h[1].line, 4);
	assert_non_null(hr_hosts_find(&hs, "nodeB"));
	assert_null(hr_hosts_find(&hs, "nodeC"));
	expect_hosts_error("a 1.2.3.4\n\nb\n", "h.txt:3: host \"b\" has no address");
	expect_hosts_error("a 1.2.3.4\na 1.2.3.5\n", "h.txt:2: host \"a\" listed twice");
	expect_hosts_error("a -oProxyCommand=x\n", "h.txt:1: address \"-oProxyCommand=x\"");
	expect_hosts_error("a h port=0\n", "h.txt:1: port \"0\": expected 1..65535");
	expect_hosts_error("a h 9X=1\n", "environment name \"9X\"");
	expect_hosts_error("a h junk\n", "\"junk\": expected KEY=VALUE");
	expect_hosts_error("a b@c;d\n", "address \"c;d\"");
	expect_hosts_error("# only comments\n", "h.txt: no hosts");
	char q[64];
	assert_int_equal(hr_shell_quote("it's", q, sizeof(q)), 0);
	assert_string_equal(q, "'it'\\''s'");
}

/* ---- the real thing: two namespaces with an sshd each (ssh_fixture.c) ---- */
static struct {
	struct sshfx fx;
	struct hr_hosts hosts;
	struct hr_ssh ssh;
} g;

static int setup_real(void **state)
{
	const char *hosts[] = {"hostA", "hostB"};
	char err[600], text[2048];
	(void)state;
	if (sshfx_up(&g.fx, hosts, 2))
		return -1;
	/* ghost: an address on the test bridge where nothing answers */
	char ghost[32];
	sshfx_ghost(&g.fx, ghost, sizeof(ghost));
	snprintf(text, sizeof(text),
	         "hostA root@%s pdkv=%s GREETING=hello\nhostB root@%s\n"
	         "ghost root@%s\nnopdkv root@%s pdkv=/nonexistent/pdkv\n",
	         hr_netns_find(&g.fx.nn, "hostA")->addr, g.fx.pdkv,
	         hr_netns_find(&g.fx.nn, "hostB")->addr, ghost,
	         hr_netns_find(&g.fx.nn, "hostB")->addr);
	if (hr_hosts_parse("hosts.txt", text, &g.hosts, err, sizeof(err)))
		return -1;
	char key[256];
	snprintf(key, sizeof(key), "%s/userkey", g.fx.dir);
	return hr_ssh_init(&g.ssh, &g.hosts, g.fx.dir, key, 2);
}

static int teardown_real(void **state)
{
	char ctl[64], prefix[32];
	(void)state;
	snprintf(ctl, sizeof(ctl), "%s", g.ssh.ctl);
	snprintf(prefix, sizeof(prefix), "%s", g.fx.nn.prefix);
	hr_ssh_close(&g.ssh);
	sshfx_down(&g.fx);
	/* the proof that nothing of the test is left: our control dir, our namespaces */
	int left = ctl[0] ? sshfx_procs_with(ctl) : 0;
	left += sshfx_procs_with(prefix);
	if (left) {
		print_error("%d processes of the test still run\n", left);
		return -1;
	}
	return 0;
}

static void test_remote_command(void **state)
{
	char out[1024] = "", err[600] = "";
	(void)state;
	int r = hr_ssh_run(&g.ssh, "hostA", "echo hi from $(id -un); ip -4 -o addr show dev eth0",
	                   out, sizeof(out), 0, err, sizeof(err));
	if (r)
		fail_msg("hr_ssh_run: %d %s %s", r, err, out);
	assert_non_null(strstr(out, "hi from root"));
	/* it ran inside hostA's namespace: eth0 there has hostA's address */
	assert_non_null(strstr(out, hr_netns_find(&g.fx.nn, "hostA")->addr));
	assert_int_equal(hr_ssh_run(&g.ssh, "hostB", "exit 7", NULL, 0, 0, err, sizeof(err)), 7);
	if (hr_ssh_check(&g.ssh, "hostA", err, sizeof(err)))
		fail_msg("hr_ssh_check hostA: %s", err);
	/* the ControlMaster: one connection per host, reused */
	assert_true(sshfx_procs_with(g.ssh.ctl) >= 1);
}

static void test_copy_both_ways(void **state)
{
	char local[256], remote[256], back[256], err[600] = "", *buf = NULL;
	size_t len = 0;
	const char *text = "{\"prefill_url\": \"198.18.0.10:7000\"}\n";
	(void)state;
	snprintf(local, sizeof(local), "%s/mooncake.json", g.fx.dir);
	snprintf(remote, sizeof(remote), "%s/remoteB/mooncake.json", g.fx.dir);
	snprintf(back, sizeof(back), "%s/back.json", g.fx.dir);
	assert_int_equal(pd_write_file(local, text, strlen(text)), 0);
	char mk[300];
	snprintf(mk, sizeof(mk), "mkdir -p %s/remoteB", g.fx.dir);
	assert_int_equal(hr_ssh_run(&g.ssh, "hostB", mk, NULL, 0, 0, err, sizeof(err)), 0);
	if (hr_ssh_put(&g.ssh, "hostB", local, remote, err, sizeof(err)))
		fail_msg("put: %s", err);
	if (hr_ssh_get(&g.ssh, "hostB", remote, back, err, sizeof(err)))
		fail_msg("get: %s", err);
	assert_int_equal(pd_read_file(back, 1 << 16, &buf, &len), 0);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(buf, text, len);
	free(buf);
	assert_int_not_equal(hr_ssh_get(&g.ssh, "hostB", "/nonexistent/x", back, err, sizeof(err)),
	                     0);
	assert_non_null(strstr(err, "hostB"));
}

static bool in_namespace_of(int pid, const char *host)
{
	char p1[64], p2[128];
	struct stat a, b;
	snprintf(p1, sizeof(p1), "/proc/%d/ns/net", pid);
	snprintf(p2, sizeof(p2), "/run/netns/%s", hr_netns_find(&g.fx.nn, host)->ns);
	return stat(p1, &a) == 0 && stat(p2, &b) == 0 && a.st_ino == b.st_ino;
}

static void test_start_stop(void **state)
{
	char rdir[256], log[256], err[600] = "", *buf = NULL;
	size_t len = 0;
	int pid = 0;
	(void)state;
	snprintf(rdir, sizeof(rdir), "%s/runA", g.fx.dir);
	/* durations no other process on the host is likely to sleep for: the check below counts
	 * every process whose command line holds "sleep 3137" (a developer's `sleep 300` in
	 * another shell once made it fail) */
	const char *argv[] = {"sh", "-c", "echo $GREETING $EXTRA; sleep 31370 & exec sleep 31371",
	                      NULL};
	const char *env[] = {"EXTRA=world", NULL};
	if (hr_ssh_start(&g.ssh, "hostA", rdir, "sleeper", argv, env, &pid, err, sizeof(err)))
		fail_msg("start: %s", err);
	assert_true(pid > 1);
	assert_int_equal(hr_ssh_alive(&g.ssh, "hostA", pid), 1);
	/* same machine: the remote pid is visible here, inside hostA's namespace */
	assert_true(in_namespace_of(pid, "hostA"));
	assert_int_equal(hr_ssh_stop(&g.ssh, "hostA", pid, 2000), 0);
	assert_int_equal(hr_ssh_alive(&g.ssh, "hostA", pid), 0);
	/* the group went, its background child too: SIGTERM reaches both at once, but on a busy
	 * host the child may take a moment to be scheduled and exit, so allow it up to 5 s */
	int left = 1;
	for (int t = 0; t < 100 && (left = sshfx_procs_with("sleep 3137")); t++)
		pd_sleep_ms(50);
	assert_int_equal(left, 0);
	snprintf(log, sizeof(log), "%s/sleeper.log", g.fx.dir);
	char rlog[300];
	snprintf(rlog, sizeof(rlog), "%s/sleeper.log", rdir);
	if (hr_ssh_get(&g.ssh, "hostA", rlog, log, err, sizeof(err)))
		fail_msg("log back: %s", err);
	assert_int_equal(pd_read_file(log, 1 << 16, &buf, &len), 0);
	assert_non_null(strstr(buf, "hello world")); /* hosts.txt env + the caller's */
	free(buf);
}

static void test_remote_dies(void **state)
{
	char rdir[256], err[600] = "";
	int pid = 0, alive = 1;
	(void)state;
	snprintf(rdir, sizeof(rdir), "%s/runB", g.fx.dir);
	const char *argv[] = {"sh", "-c", "echo boom >&2; sleep 0.3; exit 3", NULL};
	if (hr_ssh_start(&g.ssh, "hostB", rdir, "crasher", argv, NULL, &pid, err, sizeof(err)))
		fail_msg("start: %s", err);
	for (int i = 0; i < 100 && alive == 1; i++) {
		alive = hr_ssh_alive(&g.ssh, "hostB", pid);
		pd_sleep_ms(100);
	}
	assert_int_equal(alive, 0);
	char out[256] = "", line[400];
	snprintf(line, sizeof(line), "cat %s/crasher.log", rdir);
	assert_int_equal(hr_ssh_run(&g.ssh, "hostB", line, out, sizeof(out), 0, err, sizeof(err)),
	                 0);
	assert_non_null(strstr(out, "boom"));
	/* a bad command: start reports the exit, not a pid */
	const char *none[] = {"/nonexistent/pdkv-standin", NULL};
	assert_int_equal(
	    hr_ssh_start(&g.ssh, "hostB", rdir, "x", none, NULL, &pid, err, sizeof(err)),
	    0); /* nohup starts it; it dies at once */
	pd_sleep_ms(300);
	assert_int_equal(hr_ssh_alive(&g.ssh, "hostB", pid), 0);
}

static void test_failures(void **state)
{
	struct hr_ssh wrong;
	char err[600] = "", key[256];
	(void)state;
	assert_int_equal(hr_ssh_check(&g.ssh, "nopdkv", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "pdkv is not installed"));
	assert_non_null(strstr(err, "line 4 of hosts.txt"));
	assert_int_equal(hr_ssh_run(&g.ssh, "ghost", "true", NULL, 0, 0, err, sizeof(err)),
	                 -EHOSTUNREACH);
	assert_non_null(strstr(err, "host ghost"));
	assert_non_null(strstr(err, "cannot reach"));
	assert_int_equal(hr_ssh_run(&g.ssh, "nosuch", "true", NULL, 0, 0, err, sizeof(err)),
	                 -ENOENT);
	assert_non_null(strstr(err, "not in hosts.txt"));
	snprintf(key, sizeof(key), "%s/wrongkey", g.fx.dir);
	assert_int_equal(hr_ssh_init(&wrong, &g.hosts, g.fx.dir, key, 2), 0);
	assert_int_equal(hr_ssh_run(&wrong, "hostB", "true", NULL, 0, 0, err, sizeof(err)),
	                 -EACCES);
	assert_non_null(strstr(err, "authentication refused"));
	assert_non_null(strstr(err, "Permission denied"));
	hr_ssh_close(&wrong);
	/* a cut link: the call ends within ssh's own timeouts, as an unreachable host */
	assert_int_equal(hr_netns_link(&g.fx.nn, "hostB", false, err, sizeof(err)), 0);
	struct hr_ssh fresh;
	snprintf(key, sizeof(key), "%s/userkey", g.fx.dir);
	assert_int_equal(hr_ssh_init(&fresh, &g.hosts, g.fx.dir, key, 2), 0);
	assert_int_equal(hr_ssh_run(&fresh, "hostB", "true", NULL, 0, 0, err, sizeof(err)),
	                 -EHOSTUNREACH);
	hr_ssh_close(&fresh);
	assert_int_equal(hr_netns_link(&g.fx.nn, "hostB", true, err, sizeof(err)), 0);
}

int main(void)
{
	char why[512];
	const struct CMUnitTest unit[] = {cmocka_unit_test(test_hosts_parse)};
	const struct CMUnitTest real[] = {
	    cmocka_unit_test(test_remote_command), cmocka_unit_test(test_copy_both_ways),
	    cmocka_unit_test(test_start_stop),     cmocka_unit_test(test_remote_dies),
	    cmocka_unit_test(test_failures),
	};
	if (cmocka_run_group_tests(unit, NULL, NULL))
		return 1;
	if (sshfx_missing(why, sizeof(why))) {
		printf("SKIP: the sshd tests: %s\n", why);
		return 77;
	}
	hr_netns_cleanup_stale();
	return cmocka_run_group_tests(real, setup_real, teardown_real);
}
