/* SPDX-License-Identifier: Apache-2.0 */
/* proxy_testenv: the proxy end-to-end tests' shared setup (see proxy_testenv.h): the binary, the
 * fake backends, starting and stopping pdkv-proxy. */
#include "proxy_testenv.h"
#include "test_client.h"
#include "pd_util.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int pt_setup(char *bin, size_t binsz, char *tmpdir, struct fb P[2], struct fb D[2])
{
	const char *env = getenv("PDKV_BIN");
	snprintf(bin, binsz, "%s/pdkv-proxy", env ? env : tc_fmt("%s/../bin", pd_self_dir()));
	if (access(bin, X_OK)) {
		fprintf(stderr, "pdkv-proxy not found at %s (build it first)\n", bin);
		return -1;
	}
	if (!mkdtemp(tmpdir))
		return -1;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (fb_start(&P[0], "P0") || fb_start(&P[1], "P1") || fb_start(&D[0], "D0") ||
	    fb_start(&D[1], "D1"))
		return -1;
	return 0;
}

int pt_teardown(const char *tmpdir, struct fb P[2], struct fb D[2], int ret)
{
	for (int i = 0; i < 2; i++) {
		fb_stop(&P[i]);
		fb_stop(&D[i]);
	}
	curl_global_cleanup();
	if (ret == 0 && !getenv("PDKV_KEEP"))
		pd_rm_rf(tmpdir);
	else
		fprintf(stderr, "proxy logs kept in %s\n", tmpdir);
	return ret;
}

void pt_reset_all(struct fb P[2], struct fb D[2])
{
	for (int i = 0; i < 2; i++) {
		fb_reset(&P[i]);
		fb_reset(&D[i]);
	}
}

int pt_wait_health(struct pd_proc *p, int port, long want, int tries)
{
	struct tc_resp r = {0};
	for (int i = 0; i < tries; i++) {
		if (!pd_proc_alive(p)) {
			tc_hfree(&r);
			return -ECHILD;
		}
		if (tc_http(port, "GET", "/health", NULL, NULL, &r) == CURLE_OK && r.status &&
		    (!want || r.status == want)) {
			tc_hfree(&r);
			return 0;
		}
		pd_sleep_ms(20);
	}
	tc_hfree(&r);
	return -ETIMEDOUT;
}

int pt_start_proxy(const char *bin, const char *tmpdir, struct pd_proc *p, int *port,
                   const char *name, const char *const *flags, char *const *env, long want,
                   int tries)
{
	char *argv[48], pbuf[16], logp[PATH_MAX];
	int argc = 0, ret;
	*port = pd_free_port("127.0.0.1");
	snprintf(pbuf, sizeof(pbuf), "%d", *port);
	argv[argc++] = (char *)bin;
	argv[argc++] = "--host";
	argv[argc++] = "127.0.0.1";
	argv[argc++] = "--port";
	argv[argc++] = pbuf;
	for (int i = 0; flags[i] && argc < 46; i++)
		argv[argc++] = (char *)flags[i];
	argv[argc] = NULL;
	snprintf(logp, sizeof(logp), "%s/%s.log", tmpdir, name);
	if ((ret = pd_proc_spawn(p, name, argv, env, logp)))
		return ret;
	if ((ret = pt_wait_health(p, *port, want, tries)))
		fprintf(stderr, "proxy %s did not come up (%d); log %s\n", name, ret, logp);
	return ret;
}

int pt_stop_checked(struct pd_proc *p)
{
	if (!p->pid)
		return 0;
	pd_proc_stop(p, 3000);
	if (!WIFEXITED(p->exit_status) || WEXITSTATUS(p->exit_status)) {
		fprintf(stderr, "%s: unclean exit (wait status 0x%x)\n", p->name, p->exit_status);
		return -1;
	}
	return 0;
}
