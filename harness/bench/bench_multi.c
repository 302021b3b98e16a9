/* SPDX-License-Identifier: Apache-2.0 */
/* bench_multi: pdkv bench over several RDMA devices — each row's share per local device, and
 * --fault-device-down (one device's link taken down mid-run, the slices that moved reported). */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pd_util.h"
#include "te/te_rdma_stats.h"

static int split_fault(const char *spec, char *name, size_t len, double *secs)
{
	const char *at = spec ? strrchr(spec, '@') : NULL;
	char *end;

	if (!at || at == spec || (size_t)(at - spec) >= len)
		return -1;
	memcpy(name, spec, (size_t)(at - spec));
	name[at - spec] = '\0';
	*secs = strtod(at + 1, &end);
	return *end || !(*secs > 0 && *secs <= 3600) ? -1 : 0;
}

static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list ? list : ""; *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, name, n))
			return true;
		p += k + (p[k] == ',');
	}
	return false;
}

int bench_fault_check(const struct bench_opts *o)
{
	char name[64];
	double secs;

	if (!o->fault_down)
		return 0;
	if (split_fault(o->fault_down, name, sizeof(name), &secs)) {
		fprintf(stderr,
		        "pdkv-bench: --fault-device-down=\"%s\": want NAME@SECONDS (an rdma device "
		        "of --device_name, seconds after the first row starts, 0 < S <= 3600)\n",
		        o->fault_down);
		return 2;
	}
	if (!o->protocol || strcmp(o->protocol, "rdma") || o->mode_id == BENCH_TARGET) {
		fprintf(stderr, "pdkv-bench: --fault-device-down is for the rdma initiator or "
		                "loopback (--protocol=rdma)\n");
		return 2;
	}
	if (!in_list(o->device, name) || !strchr(o->device, ',')) {
		fprintf(stderr,
		        "pdkv-bench: --fault-device-down=%s: %s must be one of at least two "
		        "--device_name devices (got \"%s\"): the slices need another device\n",
		        o->fault_down, name, o->device ? o->device : "");
		return 2;
	}
	return 0;
}

void bench_devs_share(struct bench_row *row, const struct te_rdma_dev_stat *a,
                      const struct te_rdma_dev_stat *b, int n)
{
	row->ndevs = 0;
	for (int i = 0; i < n && i < BENCH_MAX_DEVS; i++) {
		struct bench_dev_share *d = &row->devs[row->ndevs++];
		snprintf(d->name, sizeof(d->name), "%s", b[i].name);
		d->bytes = b[i].bytes - a[i].bytes;
		d->moved_in = b[i].moved_in - a[i].moved_in;
		d->moved_out = b[i].moved_out - a[i].moved_out;
		d->down = b[i].down;
	}
}

void bench_devs_print(const struct bench_opts *o, const struct bench_row *r)
{
	uint64_t total = 0, in = 0, out = 0;

	if (r->ndevs < 2 && !o->fault_down)
		return;
	for (int i = 0; i < r->ndevs; i++) {
		total += r->devs[i].bytes;
		in += r->devs[i].moved_in;
		out += r->devs[i].moved_out;
	}
	printf("# devices:");
	for (int i = 0; i < r->ndevs; i++) {
		const struct bench_dev_share *d = &r->devs[i];
		printf(" %s %.1f%% (%.1f MB%s)%s", d->name,
		       total ? (double)d->bytes / (double)total * 100 : 0, (double)d->bytes / 1e6,
		       d->down ? ", port DOWN" : "", i + 1 < r->ndevs ? "," : "");
	}
	printf("\n# failover: %llu slices moved off a device (", (unsigned long long)out);
	for (int i = 0, first = 1; i < r->ndevs; i++) {
		if (!r->devs[i].moved_out)
			continue;
		printf("%s%s %llu", first ? "" : ", ", r->devs[i].name,
		       (unsigned long long)r->devs[i].moved_out);
		first = 0;
	}
	printf("%s), %llu completed on another device; %llu transfers failed\n", out ? "" : "none",
	       (unsigned long long)in, (unsigned long long)r->failed);
	fflush(stdout);
}

/* ---------------------------------------------------------------- the fault */
static struct {
	pthread_t tid;
	bool started, downed;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	char dev[64], netdev[64];
	double secs;
} g_f = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* the netdev under rdma device dev: the first GID's ndev in sysfs (rxe: its veth/eth) */
static int netdev_of(const char *dev, char *out, size_t len)
{
	for (int i = 0; i < 16; i++) {
		char path[256], *txt = NULL;
		size_t n = 0;
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/%d",
		         dev, i);
		if (pd_read_file(path, 256, &txt, &n))
			continue;
		while (n && (txt[n - 1] == '\n' || txt[n - 1] == ' '))
			txt[--n] = '\0';
		if (n && n < len &&
		    strspn(txt, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		                "0123456789_.-@") == n) {
			snprintf(out, len, "%s", txt);
			free(txt);
			return 0;
		}
		free(txt);
	}
	return -1;
}

static int ip_link(const char *netdev, const char *state)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execlp("ip", "ip", "link", "set", "dev", netdev, state, (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

static void *fault_main(void *arg)
{
	struct timespec ts;
	(void)arg;
	pd_deadline_in(&ts, CLOCK_REALTIME, (int)(g_f.secs * 1000));
	pthread_mutex_lock(&g_f.mu);
	while (!g_f.stop && pthread_cond_timedwait(&g_f.cv, &g_f.mu, &ts) != ETIMEDOUT)
		;
	if (!g_f.stop) {
		if (ip_link(g_f.netdev, "down"))
			fprintf(stderr,
			        "pdkv-bench: --fault-device-down: ip link set dev %s down "
			        "failed (root needed)\n",
			        g_f.netdev);
		else
			g_f.downed = true;
		printf("# fault: ip link set dev %s down (under %s) %g s after the first row "
		       "started%s\n",
		       g_f.netdev, g_f.dev, g_f.secs, g_f.downed ? "" : ": FAILED");
		fflush(stdout);
	}
	pthread_mutex_unlock(&g_f.mu);
	return NULL;
}

int bench_fault_start(const struct bench_opts *o)
{
	if (!o->fault_down)
		return 0;
	split_fault(o->fault_down, g_f.dev, sizeof(g_f.dev), &g_f.secs);
	if (netdev_of(g_f.dev, g_f.netdev, sizeof(g_f.netdev))) {
		fprintf(stderr,
		        "pdkv-bench: --fault-device-down: no network device found under %s "
		        "(/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/)\n",
		        g_f.dev, g_f.dev);
		return -1;
	}
	printf("# fault: %s (netdev %s) goes down %g s after the first row starts; up again "
	       "after the last row\n",
	       g_f.dev, g_f.netdev, g_f.secs);
	fflush(stdout);
	g_f.stop = g_f.downed = false;
	if (pthread_create(&g_f.tid, NULL, fault_main, NULL))
		return -1;
	g_f.started = true;
	return 0;
}

/* stops the timer; a device taken down comes back up (waits up to 10 s for its port) */
int bench_fault_stop(void)
{
	char path[256], *txt = NULL;
	int rc = 0;

	if (!g_f.started)
		return 0;
	pthread_mutex_lock(&g_f.mu);
	g_f.stop = true;
	pthread_cond_signal(&g_f.cv);
	pthread_mutex_unlock(&g_f.mu);
	pthread_join(g_f.tid, NULL);
	g_f.started = false;
	if (!g_f.downed)
		return 0;
	rc = ip_link(g_f.netdev, "up");
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/state", g_f.dev);
	for (int i = 0; !rc && i < 100; i++, free(txt), txt = NULL) {
		if (!pd_read_file(path, 256, &txt, NULL) && strstr(txt, "ACTIVE"))
			break;
		pd_sleep_ms(100);
	}
	free(txt);
	printf("# fault: ip link set dev %s up%s\n", g_f.netdev, rc ? ": FAILED" : "");
	fflush(stdout);
	return rc;
}
