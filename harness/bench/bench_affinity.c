/* SPDX-License-Identifier: Apache-2.0 */
/* bench_affinity: --affinity, a loopback run's initiator and target on their own CPUs (as
 * iperf3 -A does). Every row of the run gets the same placement: pdkv's, the socket
 * baseline's and Mooncake's (its initiator is spawned from the pinned main thread, its target is
 * pdkv's spawned target).
 *
 * Why a benchmark wants it: a host whose scheduler sees no shared cache between its CPUs (a VM
 * that exposes no cache topology, as the 2-core CI host) never moves a woken thread to an idle
 * CPU; only the load balancer does, a tick or two later. A transfer that starts after an idle
 * spell then runs its sending and receiving threads on one CPU for milliseconds while the
 * other idles, as often as the threads' last CPUs happen to coincide, and the figure measures
 * that luck more than the transport (issue 33: pdkv's 1 MiB WRITE with --check at 0.88-0.91 of
 * a socket unpinned, 0.96 with initiator and target on one CPU each). In a deployment, prefill
 * and decode are separate processes on their own cores, which is what split models. */
#include "bench.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
	bool on;
	cpu_set_t init, tgt;
	char desc[256];
} g_aff;

/* "0-3,8" -> set; only CPUs in allowed; -1 with why filled */
static int parse_list(const char *s, const cpu_set_t *allowed, cpu_set_t *out, char *why, size_t wl)
{
	const char *p = s;

	CPU_ZERO(out);
	if (!*p) {
		snprintf(why, wl, "an empty CPU list");
		return -1;
	}
	while (*p) {
		char *end;
		long a, b;

		errno = 0;
		a = strtol(p, &end, 10);
		if (end == p || errno || a < 0 || a >= CPU_SETSIZE) {
			snprintf(why, wl, "\"%s\" is not a CPU list like 0-3,8", s);
			return -1;
		}
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || errno || b < a || b >= CPU_SETSIZE) {
				snprintf(why, wl, "\"%s\" is not a CPU list like 0-3,8", s);
				return -1;
			}
		}
		for (long c = a; c <= b; c++) {
			if (!CPU_ISSET((int)c, allowed)) {
				snprintf(why, wl, "CPU %ld is not one this process may run on", c);
				return -1;
			}
			CPU_SET((int)c, out);
		}
		if (*end == ',')
			end++;
		else if (*end) {
			snprintf(why, wl, "\"%s\" is not a CPU list like 0-3,8", s);
			return -1;
		}
		p = end;
	}
	return 0;
}

/* "0-3,8" of set s (ranges merged) */
static void fmt_list(const cpu_set_t *s, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE && n < len; c++) {
		int e = c;
		if (!CPU_ISSET(c, s))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, s))
			e++;
		n += (size_t)snprintf(out + n, len - n, e > c ? "%s%d-%d" : "%s%d", n ? "," : "", c,
		                      e);
		c = e;
	}
}

int bench_affinity_parse(const struct bench_opts *o)
{
	const char *spec = o->affinity;
	cpu_set_t allowed;
	char why[160], a[100], b[100];
	const char *slash;

	g_aff.on = false;
	if (!spec || !strcmp(spec, "none"))
		return 0;
	if (o->mode_id != BENCH_LOOPBACK) {
		fprintf(
		    stderr,
		    "pdkv-bench: --affinity splits a --mode=loopback run's CPUs between its "
		    "initiator and the target it spawns; with --mode=%s start the process under "
		    "taskset instead\n",
		    o->mode);
		return 2;
	}
	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		fprintf(stderr, "pdkv-bench: --affinity: cannot read this process's CPUs: %s\n",
		        strerror(errno));
		return 2;
	}
	if (!strcmp(spec, "split")) {
		int n = CPU_COUNT(&allowed), k = 0;
		if (n < 2) {
			printf("# affinity: --affinity=split on one CPU: nothing to split, "
			       "unpinned\n");
			return 0;
		}
		CPU_ZERO(&g_aff.init);
		CPU_ZERO(&g_aff.tgt);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				CPU_SET(c, k++ < n / 2 ? &g_aff.init : &g_aff.tgt);
	} else if ((slash = strchr(spec, '/')) && (size_t)(slash - spec) < sizeof(a) &&
	           strlen(slash + 1) < sizeof(b)) {
		snprintf(a, sizeof(a), "%.*s", (int)(slash - spec), spec);
		snprintf(b, sizeof(b), "%s", slash + 1);
		if (parse_list(a, &allowed, &g_aff.init, why, sizeof(why)) ||
		    parse_list(b, &allowed, &g_aff.tgt, why, sizeof(why))) {
			fprintf(stderr,
			        "pdkv-bench: --affinity=%s: %s (expected split, none or "
			        "INITIATOR_CPUS/TARGET_CPUS, e.g. 0-3/4-7)\n",
			        spec, why);
			return 2;
		}
	} else {
		fprintf(stderr,
		        "pdkv-bench: --affinity=%s: expected split, none or "
		        "INITIATOR_CPUS/TARGET_CPUS (CPU lists, e.g. 0-3/4-7)\n",
		        spec);
		return 2;
	}
	fmt_list(&g_aff.init, a, sizeof(a));
	fmt_list(&g_aff.tgt, b, sizeof(b));
	snprintf(g_aff.desc, sizeof(g_aff.desc), "initiator on CPU %s, target on CPU %s (%s)", a, b,
	         spec);
	g_aff.on = true;
	return 0;
}

const char *bench_affinity_desc(void)
{
	return g_aff.on ? g_aff.desc : NULL;
}

/* Pins the calling thread: the main thread, before it starts any other. */
int bench_affinity_self(void)
{
	if (g_aff.on && sched_setaffinity(0, sizeof(g_aff.init), &g_aff.init)) {
		fprintf(stderr, "pdkv-bench: --affinity: cannot pin the initiator: %s\n",
		        strerror(errno));
		return 2;
	}
	return 0;
}

/* Around spawning a target: the child inherits the calling thread's CPUs. */
int bench_affinity_child_begin(void)
{
	if (g_aff.on && sched_setaffinity(0, sizeof(g_aff.tgt), &g_aff.tgt)) {
		fprintf(stderr, "pdkv-bench: --affinity: cannot pin the target: %s\n",
		        strerror(errno));
		return -1;
	}
	return 0;
}

void bench_affinity_child_end(void)
{
	if (g_aff.on)
		sched_setaffinity(0, sizeof(g_aff.init), &g_aff.init);
}
