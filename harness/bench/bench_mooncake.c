/* SPDX-License-Identifier: Apache-2.0 */
/* bench_mooncake: --compare-mooncake PATH — Mooncake's transfer_engine_bench as an initiator
 * against the same target, with the row's shape, run right after each pdkv row; its CPU is the
 * child's own (wait4's rusage), its latency not measured (it prints none). */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pd_proc.h"
#include "pd_util.h"
#include "pd_env.h"

int bench_mooncake_check(const char *path)
{
	if (!path || access(path, X_OK)) {
		fprintf(stderr,
		        "pdkv-bench: --compare-mooncake: \"%s\" is not an executable "
		        "transfer_engine_bench (from your Mooncake build or the pip wheel)\n",
		        path ? path : "");
		return 2;
	}
	return 0;
}

/* "Test completed: duration D, batch count N, throughput ..." -> D and N. */
static int parse_result(const char *log, double *secs, uint64_t *batches)
{
	char *txt = NULL, *at;
	unsigned long long n;
	int ok = 0;

	if (pd_read_file(log, 16 << 20, &txt, NULL))
		return -1;
	at = strstr(txt, "Test completed: duration ");
	if (at && sscanf(at, "Test completed: duration %lf, batch count %llu", secs, &n) == 2) {
		*batches = n;
		ok = 1;
	}
	free(txt);
	return ok ? 0 : -1;
}

/* Waits up to timeout_ms for the child and reaps it with wait4: *cpu = its user + system CPU
 * seconds (its waited-for children included). 0, or -ETIMEDOUT (the child is left running). */
static int reap(struct pd_proc *p, int timeout_ms, double *cpu)
{
	uint64_t end = pd_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	while (p->pid > 0) {
		struct rusage ru;
		int st;
		pid_t r = wait4(p->pid, &st, WNOHANG, &ru);
		if (r == p->pid) {
			p->exit_status = st;
			p->pid = 0;
			*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
			       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
			return 0;
		}
		if (r < 0 && errno != EINTR) {
			p->pid = 0; /* reaped elsewhere: no figure */
			return 0;
		}
		if (pd_now_ns() >= end)
			return -ETIMEDOUT;
		pd_sleep_ms(10);
	}
	return 0;
}

int bench_mooncake_row(const struct bench_opts *o, uint64_t block, struct bench_row *row)
{
	static int seq;
	char a[12][256], log[512], *av[24];
	struct pd_proc p = {0};
	int n = 0, dur = o->duration < 1 ? 1 : (int)(o->duration + 0.5), rc = -1;
	uint64_t batches = 0;
	double secs = 0, cpu = -1;

	bench_row_init(row, "mooncake", o, block);
	row->pct_line_rate = -1;
	snprintf(log, sizeof(log), "%s/pdkv-bench-mooncake-%d-%d.log", pd_env_str("TMPDIR"),
	         (int)getpid(), ++seq);
	av[n++] = (char *)o->compare_mooncake;
	av[n++] = "--mode=initiator";
	av[n++] = o->op ? "--operation=write" : "--operation=read";
	snprintf(a[0], sizeof(a[0]), "--metadata_server=%s", o->metadata);
	snprintf(a[1], sizeof(a[1]), "--segment_id=%s", o->segment);
	snprintf(a[2], sizeof(a[2]), "--protocol=%s", o->protocol ? o->protocol : "rdma");
	snprintf(a[3], sizeof(a[3]), "--block_size=%llu", (unsigned long long)block);
	snprintf(a[4], sizeof(a[4]), "--batch_size=%llu", (unsigned long long)o->batch);
	snprintf(a[5], sizeof(a[5]), "--threads=%llu", (unsigned long long)o->threads);
	snprintf(a[6], sizeof(a[6]), "--duration=%d", dur);
	snprintf(a[7], sizeof(a[7]), "--buffer_size=%llu",
	         (unsigned long long)(block * o->batch * o->threads));
	snprintf(a[8], sizeof(a[8]), "--local_server_name=127.0.0.1:%d", 24000 + seq);
	for (int i = 0; i < 9; i++)
		av[n++] = a[i];
	if (o->device) {
		snprintf(a[9], sizeof(a[9]), "--device_name=%s", o->device);
		av[n++] = a[9];
	}
	av[n] = NULL;
	if (pd_proc_spawn(&p, "mooncake-bench", av, NULL, log) || reap(&p, (dur + 60) * 1000, &cpu))
		fprintf(stderr, "pdkv-bench: Mooncake's bench did not finish (log %s)\n", log);
	else if (!WIFEXITED(p.exit_status) || WEXITSTATUS(p.exit_status))
		fprintf(stderr, "pdkv-bench: Mooncake's bench failed (exit %d, log %s)\n",
		        WIFEXITED(p.exit_status) ? WEXITSTATUS(p.exit_status) : -1, log);
	else if (parse_result(log, &secs, &batches))
		fprintf(stderr, "pdkv-bench: no \"Test completed\" line in Mooncake's log %s\n",
		        log);
	else
		rc = 0;
	pd_proc_stop(&p, 2000);
	if (rc)
		return rc;
	unlink(log);
	row->seconds = row->wall = secs;
	row->batches = batches;
	row->transfers = batches * o->batch;
	row->bytes = row->transfers * block;
	row->bw = bench_bw(o, row->bytes, secs);
	row->cpu_init_s = cpu;
	/* transfer_engine_bench prints no latency: NAN = not measured (JSON null) */
	row->lat_p50_us = row->lat_p99_us = NAN;
	return 0;
}
