/* SPDX-License-Identifier: Apache-2.0 */
/* test_accept_ssh: pdkv accept --hosts through the OpenSSH launcher — three namespaces with a
 * real sshd each as machines, hostC's link limited by tc tbf: the matrix names hostC alone, and
 * no remote process, work dir or ControlMaster is left. NOTRUN (77) without root / sshd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/hr_netns.h"
#include "pd_proc.h"
#include "pd_util.h"
#include "tests/ssh_fixture.h"

static const char *const hosts[] = {"hostA", "hostB", "hostC"};
static struct sshfx fx;

static int count_accept_dirs(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, "pdkv-accept-", 12);
	if (d)
		closedir(d);
	return n;
}

static void hostc_slowed_is_named(void **st)
{
	char path[300], text[3000], cmd[3000], out[65536];
	size_t n = 0;
	int before = count_accept_dirs(), rc;
	FILE *p;
	(void)st;
	snprintf(path, sizeof(path), "%s/hosts.txt", fx.dir);
	text[0] = '\0';
	for (size_t i = 0; i < 3; i++) {
		const char *a = hr_netns_find(&fx.nn, hosts[i])->addr;
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
		         "%s root@%s pdkv=%s MC_TCP_BIND_ADDRESS=%s\n", hosts[i], a, fx.pdkv, a);
	}
	assert_int_equal(pd_write_file(path, text, strlen(text)), 0);
	const struct hr_nshost *c = hr_netns_find(&fx.nn, "hostC");
	assert_int_equal(sshfx_sh("tc -n %s qdisc add dev %s root tbf rate 200mbit burst 64kb "
	                          "latency 100ms && tc -n %s qdisc add dev eth0 root tbf rate "
	                          "200mbit burst 64kb latency 100ms",
	                          fx.nn.bridge_ns, c->port, c->ns),
	                 0);
	/* this test is build/tests/test_accept_ssh, the command build/bin/pdkv-accept */
	snprintf(cmd, sizeof(cmd),
	         "timeout 150 %s/../bin/pdkv-accept --hosts %s --ssh-key %s/userkey "
	         "--connect-timeout 5 --pairs ring --check --json %s/acc.json --workdir %s/w -- "
	         "--operation=write --block_size=64K --batch_size=16 --duration=0.3 2>&1",
	         pd_self_dir(), path, fx.dir, fx.dir, fx.dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (n + 1 < sizeof(out) && fgets(out + n, (int)(sizeof(out) - n), p))
		n += strlen(out + n);
	out[n] = '\0';
	rc = pclose(p);
	rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
	fputs(out, stdout); /* the whole matrix, for a person reading the log */
	fflush(stdout);
	if (rc != 1 || !strstr(out, "OUTLIER node hostC ") || strstr(out, "OUTLIER node hostA") ||
	    strstr(out, "OUTLIER node hostB"))
		fail_msg("rc %d (want 1, hostC alone the outlier node)", rc);
	for (size_t i = 0; i < 3; i++)
		if (sshfx_procs_in(&fx, hosts[i], 3000))
			fail_msg("processes left in %s's namespace", hosts[i]);
	assert_int_equal(count_accept_dirs(), before);
}

int main(void)
{
	char why[512];
	const struct CMUnitTest tests[] = {cmocka_unit_test(hostc_slowed_is_named)};
	if (sshfx_missing(why, sizeof(why))) {
		printf("SKIP: pdkv accept --hosts: %s\n", why);
		return 77;
	}
	hr_netns_cleanup_stale();
	if (sshfx_up(&fx, hosts, 3)) {
		printf("SKIP: pdkv accept --hosts: the sshd fixture did not come up\n");
		return 77;
	}
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	sshfx_down(&fx);
	return rc;
}
