/* SPDX-License-Identifier: Apache-2.0 */
/* bench_loop: the targets --mode=loopback spawns (this binary as --mode=target, one per target
 * segment a scheme needs): their argv, ready files, clean exit, and the CPU they use. */
#include "bench.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pd_util.h"
#include "pd_env.h"
#include "pd_meta_scheme.h"

/* argv of a spawned target: the loopback's own flags that concern the target side */
struct target_args {
	char meta[1100], proto[64], dev[600], ready[300], name[300], gpu[64], buf[64], nbuf[32];
	char *argv[24];
};

static void target_argv(const struct bench_opts *o, const char *exe, const char *ready,
                        uint64_t buffer_size, int idx, struct target_args *a)
{
	int ta = 0;

	snprintf(a->buf, sizeof(a->buf), "--buffer_size=%llu", (unsigned long long)buffer_size);
	a->argv[ta++] = (char *)exe;
	a->argv[ta++] = "--mode=target";
	snprintf(a->meta, sizeof(a->meta), "--metadata_server=%s", o->metadata);
	a->argv[ta++] = a->meta;
	if (o->protocol) {
		snprintf(a->proto, sizeof(a->proto), "--protocol=%s", o->protocol);
		a->argv[ta++] = a->proto;
	} else {
		a->argv[ta++] = "--auto_discovery";
	}
	if (o->target_device || o->device) {
		snprintf(a->dev, sizeof(a->dev), "--device_name=%s",
		         o->target_device ? o->target_device : o->device);
		a->argv[ta++] = a->dev;
	}
	a->argv[ta++] = a->buf;
	if (o->buffers > 1) {
		snprintf(a->nbuf, sizeof(a->nbuf), "--buffers=%d", o->buffers);
		a->argv[ta++] = a->nbuf;
	}
	snprintf(a->ready, sizeof(a->ready), "--ready_file=%s", ready);
	a->argv[ta++] = a->ready;
	if (!pd_meta_is_p2p(o->metadata)) {
		/* a store needs distinct names: one per target of a scheme */
		char host[128] = "localhost", sfx[16] = "";
		gethostname(host, sizeof(host) - 1);
		if (idx)
			snprintf(sfx, sizeof(sfx), "-%d", idx);
		snprintf(a->name, sizeof(a->name), "--local_server_name=%s:bench-target-%d%s", host,
		         (int)getpid(), sfx);
		a->argv[ta++] = a->name;
	}
	if (o->baseline_id != BENCH_BASELINE_NONE)
		a->argv[ta++] = "--baseline=socket";
	if (o->use_vram) {
		snprintf(a->gpu, sizeof(a->gpu), "--gpu_id=%d", bench_target_gpu(o));
		a->argv[ta++] = "--use_vram";
		a->argv[ta++] = a->gpu;
	}
	a->argv[ta] = NULL;
}

int bench_loop_spawn(const struct bench_opts *o, uint64_t buffer_size, int idx,
                     struct bench_loop_target *lt)
{
	struct target_args a;
	char exe[PATH_MAX + 16], sfx[16] = "";

	memset(lt, 0, sizeof(*lt));
	snprintf(exe, sizeof(exe), "%s/pdkv-bench", pd_self_dir());
	if (idx)
		snprintf(sfx, sizeof(sfx), ".%d", idx);
	snprintf(lt->ready, sizeof(lt->ready), "%s/pdkv-bench-ready.%d%s", pd_env_str("TMPDIR"),
	         (int)getpid(), sfx);
	unlink(lt->ready);
	target_argv(o, exe, lt->ready, buffer_size, idx, &a);
	lt->log = pd_asprintf("%s.log", lt->ready);
	if (!lt->log || bench_affinity_child_begin() ||
	    pd_proc_spawn(&lt->proc, "bench-target", a.argv, NULL, lt->log)) {
		bench_affinity_child_end();
		fprintf(stderr, "pdkv-bench: cannot start %s\n", exe);
		free(lt->log);
		lt->log = NULL;
		return 1;
	}
	bench_affinity_child_end();
	return 0;
}

int bench_loop_wait(struct bench_loop_target *lt)
{
	uint64_t end = pd_now_ns() + 20000000000ull;
	for (;;) {
		char *txt = NULL;
		if (!pd_read_file(lt->ready, 4096, &txt, NULL)) {
			char *nl = strchr(txt, '\n');
			if (nl) {
				*nl = '\0';
				snprintf(lt->seg, sizeof(lt->seg), "%s", txt);
				snprintf(lt->sockaddr, sizeof(lt->sockaddr), "%s", nl + 1);
				lt->sockaddr[strcspn(lt->sockaddr, "\n")] = '\0';
			}
			free(txt);
			return 0;
		}
		if (!pd_proc_alive(&lt->proc) || pd_now_ns() > end) {
			char *tl = NULL;
			fprintf(stderr,
			        "pdkv-bench: the spawned target did not come up; its "
			        "log (%s):\n",
			        lt->log);
			if (!pd_read_file(lt->log, 1 << 16, &tl, NULL))
				fputs(tl, stderr);
			free(tl);
			pd_proc_stop(&lt->proc, 2000);
			lt->reported = true; /* its log is the message: keep it, say no more */
			return 1;
		}
		pd_sleep_ms(20);
	}
}

int bench_loop_stop(struct bench_loop_target *lt, int rc)
{
	if (!lt->proc.pid && !lt->log)
		return rc;
	pd_proc_stop(&lt->proc, 5000);
	if (lt->reported)
		rc = rc ? rc : 1;
	else if (!WIFEXITED(lt->proc.exit_status) || WEXITSTATUS(lt->proc.exit_status)) {
		fprintf(stderr,
		        "pdkv-bench: the spawned target did not exit cleanly "
		        "(status 0x%x)\n",
		        lt->proc.exit_status);
		rc = rc ? rc : 1;
	}
	unlink(lt->ready);
	if (lt->log && !rc)
		unlink(lt->log);
	free(lt->log);
	lt->log = NULL;
	return rc;
}

double bench_cpu_self(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime+stime of another process (a spawned target), from /proc/PID/stat */
double bench_cpu_of(pid_t pid)
{
	char path[64], *txt = NULL, *p;
	unsigned long long ut, st;
	double v = -1;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (pd_read_file(path, 4096, &txt, NULL))
		return -1;
	p = strrchr(txt, ')'); /* comm may hold spaces */
	if (p &&
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
		v = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	free(txt);
	return v;
}
