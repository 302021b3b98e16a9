/* pdkv-bench: transfer_engine_bench's flags and output on pdkv's engine, plus an nccl-tests
 * size sweep, --check, a plain-socket baseline, and a loopback mode that spawns its own target. */
#include "bench.h"
#include "bench_serve.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pd_log.h"
#include "pd_proc.h"
#include "pd_util.h"
#include "te/te.h"
#include "te/te_inspect.h"

static size_t sizes_of(const struct bench_opts *o, uint64_t *out, size_t max)
{
	size_t n = 0;
	if (!o->sweep_b) {
		out[n++] = o->block;
		return n;
	}
	for (double s = (double)o->sweep_b; s <= (double)o->sweep_e * 1.0000001 && n < max;
	     s *= o->sweep_f)
		out[n++] = (uint64_t)llround(s);
	return n;
}

static void default_name(struct bench_opts *o, const char *role, char *buf, size_t len)
{
	char host[128] = "localhost";
	if (o->local_name)
		return;
	gethostname(host, sizeof(host) - 1);
	if (strcmp(o->metadata, "P2PHANDSHAKE") && role)
		snprintf(buf, len, "%s:bench-%s-%d", host, role, (int)getpid());
	else
		snprintf(buf, len, "%s", host);
	o->local_name = buf;
}

/* Listening socket for the plain-socket baseline (target side). */
static int sock_listen(char *addr, size_t len)
{
	const char *bind = getenv("MC_TCP_BIND_ADDRESS");
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	char ip[128];
	int fd = pd_tcp_listen(bind && *bind ? bind : NULL, 0, 16);

	if (fd < 0 || getsockname(fd, (struct sockaddr *)&sa, &sl))
		return -1;
	te_inspect_local_ip(ip, sizeof(ip));
	snprintf(addr, len, "%s:%d", ip, ntohs(sa.sin_port));
	return fd;
}

static double cpu_self(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime+stime of another process (the spawned target), from /proc/PID/stat; -1 if unknown */
static double cpu_of(pid_t pid)
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

struct runner {
	pid_t target_pid;
	struct bench_opts *o;
	struct bench_te *te;
	const char *sock_server;
	struct bench_row rows[128];
	size_t nrows;
	int rc;
};

static void add_row(struct runner *r, struct bench_row *row, double c0, double t0)
{
	double t1 = cpu_of(r->target_pid);
	row->cpu_init_s = cpu_self() - c0;
	row->cpu_target_s = t0 >= 0 && t1 >= 0 ? t1 - t0 : 0;
	row->pct_line_rate =
	    r->o->line_rate_gbps > 0 && row->seconds > 0
	        ? (double)row->bytes * 8 / row->seconds / 1e9 / r->o->line_rate_gbps * 100
	        : -1;
	bench_table_row(r->o, row);
	if (row->bytes)
		printf("# cpu: initiator %.2f s, target %.2f s = %.2f s per GB moved\n",
		       row->cpu_init_s, row->cpu_target_s,
		       (row->cpu_init_s + row->cpu_target_s) / ((double)row->bytes / 1e9));
	if (row->wrong || row->failed) {
		fprintf(stderr,
		        "pdkv-bench: %s %s %llu B: %llu wrong bytes, %llu failed transfers\n",
		        row->kind, row->op ? "write" : "read", (unsigned long long)row->block,
		        (unsigned long long)row->wrong, (unsigned long long)row->failed);
		r->rc = 1;
	}
	if (r->o->min_bw > 0 && !strcmp(row->kind, "pdkv") && row->bw < r->o->min_bw) {
		fprintf(stderr, "pdkv-bench: BW result %.*f %s/s is below --min-bw %g\n",
		        r->o->precision, row->bw, r->o->unit, r->o->min_bw);
		r->rc = 1;
	}
	if (r->nrows < PD_ARRAY_SIZE(r->rows))
		r->rows[r->nrows++] = *row;
}

static void run_all(struct runner *r, const struct bench_run_ops *ro)
{
	struct bench_opts *o = r->o;
	uint64_t sizes[64];
	size_t ns = sizes_of(o, sizes, PD_ARRAY_SIZE(sizes));

	bench_table_header(o);
	for (int k = 0; k < ro->nops; k++) {
		o->op = ro->ops[k];
		for (size_t i = 0; i < ns; i++) {
			double best_s = 0, best_p = 0, best_m = 0;
			for (int rep = 0; rep < o->repeat; rep++) {
				struct bench_row srow, prow;
				double c0, t0;
				if (o->baseline_id != BENCH_BASELINE_NONE) {
					c0 = cpu_self();
					t0 = cpu_of(r->target_pid);
					if (bench_sock_row(o, r->sock_server, sizes[i], &srow))
						r->rc = 1;
					add_row(r, &srow, c0, t0);
					if (srow.bw > best_s)
						best_s = srow.bw;
				}
				if (o->baseline_id == BENCH_BASELINE_SOCKET_ONLY)
					continue;
				c0 = cpu_self();
				t0 = cpu_of(r->target_pid);
				if (bench_te_row(r->te, o, sizes[i], &prow))
					r->rc = 1;
				add_row(r, &prow, c0, t0);
				if (prow.bw > best_p)
					best_p = prow.bw;
				if (o->compare_mooncake) {
					struct bench_row mrow;
					if (bench_mooncake_row(o, sizes[i], &mrow))
						r->rc = 1;
					else
						add_row(r, &mrow, cpu_self(), -1);
					if (mrow.bw > best_m)
						best_m = mrow.bw;
				}
			}
			if (best_m > 0 && best_p > 0)
				printf(
				    "# ratio pdkv/Mooncake %s %llu B: %.*f / %.*f %s/s = %.2f%s\n",
				    o->op ? "write" : "read", (unsigned long long)sizes[i],
				    o->precision, best_p, o->precision, best_m, o->unit,
				    best_p / best_m, o->repeat > 1 ? " (best of each)" : "");
			bench_gpu_reference(o, sizes[i], best_p);
			if (best_s > 0 && best_p > 0)
				printf("# ratio pdkv/socket %s %llu B: %.*f / %.*f %s/s = %.2f%s\n",
				       o->op ? "write" : "read", (unsigned long long)sizes[i],
				       o->precision, best_p, o->precision, best_s, o->unit,
				       best_p / best_s, o->repeat > 1 ? " (best of each)" : "");
		}
	}
}

/* ---------------------------------------------------------------- modes */
/* --mode=target: registers the buffer, serves until SIGINT/SIGTERM (and the socket baseline,
 * ib_write_bw servers when asked). */
static int mode_target(struct bench_opts *o, const uint64_t *sizes, size_t ns)
{
	char namebuf[256], sockaddr_s[160];
	sigset_t ss;
	int lfd = -1, rc;

	/* block before any thread exists, so sigwait() in the target gets them */
	sigemptyset(&ss);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &ss, NULL);
	default_name(o, "target", namebuf, sizeof(namebuf));
	if (o->baseline_id != BENCH_BASELINE_NONE &&
	    (lfd = sock_listen(sockaddr_s, sizeof(sockaddr_s))) < 0) {
		fprintf(stderr, "pdkv-bench: cannot listen for the socket baseline\n");
		return 1;
	}
	if (o->compare_perftest && bench_perftest_serve_start(o, sizes, ns)) {
		if (lfd >= 0)
			close(lfd);
		return 1;
	}
	rc = bench_te_target(o, lfd, sockaddr_s);
	if (o->compare_perftest)
		bench_perftest_serve_stop();
	if (lfd >= 0)
		close(lfd);
	return rc;
}

/* The spawned target of --mode=loopback. */
struct loop_target {
	struct pd_proc proc;
	char ready[256], seg[256], sockaddr[160];
};

/* argv of the spawned target: the loopback's own flags that concern the target side */
static void target_argv(const struct bench_opts *o, const char *exe, const char *ready,
                        char **targv)
{
	static char a_meta[1100], a_proto[64], a_dev[600], a_ready[300], a_name[300], a_gpu[64],
	    bufarg[64];
	int ta = 0;

	snprintf(bufarg, sizeof(bufarg), "--buffer_size=%llu", (unsigned long long)o->buffer_size);
	targv[ta++] = (char *)exe;
	targv[ta++] = "--mode=target";
	snprintf(a_meta, sizeof(a_meta), "--metadata_server=%s", o->metadata);
	targv[ta++] = a_meta;
	if (o->protocol) {
		snprintf(a_proto, sizeof(a_proto), "--protocol=%s", o->protocol);
		targv[ta++] = a_proto;
	} else {
		targv[ta++] = "--auto_discovery";
	}
	if (o->target_device || o->device) {
		snprintf(a_dev, sizeof(a_dev), "--device_name=%s",
		         o->target_device ? o->target_device : o->device);
		targv[ta++] = a_dev;
	}
	targv[ta++] = bufarg;
	snprintf(a_ready, sizeof(a_ready), "--ready_file=%s", ready);
	targv[ta++] = a_ready;
	if (strcmp(o->metadata, "P2PHANDSHAKE")) {
		char host[128] = "localhost";
		gethostname(host, sizeof(host) - 1);
		snprintf(a_name, sizeof(a_name), "--local_server_name=%s:bench-target-%d", host,
		         (int)getpid());
		targv[ta++] = a_name;
	}
	if (o->baseline_id != BENCH_BASELINE_NONE)
		targv[ta++] = "--baseline=socket";
	if (o->use_vram) {
		snprintf(a_gpu, sizeof(a_gpu), "--gpu_id=%d", bench_target_gpu(o));
		targv[ta++] = "--use_vram";
		targv[ta++] = a_gpu;
	}
	targv[ta] = NULL;
}

/* --mode=loopback, first half: spawns the target and waits for its ready file (segment name,
 * socket baseline address). 0, or 1 with its log printed. */
static int spawn_target(struct bench_opts *o, const struct bench_run_ops *ro, uint64_t region,
                        struct loop_target *lt)
{
	char *targv[24], *log, exe[PATH_MAX + 16];
	uint64_t end;

	snprintf(exe, sizeof(exe), "%s/pdkv-bench", pd_self_dir());
	snprintf(lt->ready, sizeof(lt->ready), "%s/pdkv-bench-ready.%d",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	unlink(lt->ready);
	if (!ro->buffer_given)
		o->buffer_size = region;
	target_argv(o, exe, lt->ready, targv);
	log = pd_asprintf("%s.log", lt->ready);
	if (pd_proc_spawn(&lt->proc, "bench-target", targv, NULL, log)) {
		fprintf(stderr, "pdkv-bench: cannot start %s\n", exe);
		free(log);
		return 1;
	}
	end = pd_now_ns() + 20000000000ull;
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
			break;
		}
		if (!pd_proc_alive(&lt->proc) || pd_now_ns() > end) {
			char *tl = NULL;
			fprintf(stderr,
			        "pdkv-bench: the spawned target did not come up; its "
			        "log (%s):\n",
			        log);
			if (!pd_read_file(log, 1 << 16, &tl, NULL))
				fputs(tl, stderr);
			free(tl);
			free(log);
			pd_proc_stop(&lt->proc, 2000);
			return 1;
		}
		pd_sleep_ms(20);
	}
	o->segment = lt->seg;
	if (o->baseline_id != BENCH_BASELINE_NONE)
		o->baseline_server = lt->sockaddr;
	free(log);
	return 0;
}

/* --mode=loopback, second half: the target must exit cleanly; its files go unless rc. */
static int stop_target(struct loop_target *lt, int rc)
{
	char *log;
	pd_proc_stop(&lt->proc, 5000);
	if (!WIFEXITED(lt->proc.exit_status) || WEXITSTATUS(lt->proc.exit_status)) {
		fprintf(stderr,
		        "pdkv-bench: the spawned target did not exit cleanly "
		        "(status 0x%x)\n",
		        lt->proc.exit_status);
		rc = rc ? rc : 1;
	}
	unlink(lt->ready);
	log = pd_asprintf("%s.log", lt->ready);
	if (log && !rc)
		unlink(log);
	free(log);
	return rc;
}

/* --mode=initiator (and loopback's initiator): every row, then the reports. */
static int mode_initiator(struct bench_opts *o, const struct bench_run_ops *ro, uint64_t region,
                          const uint64_t *sizes, size_t ns, pid_t target_pid)
{
	struct runner r = {0};
	char namebuf[256];
	int rc;

	default_name(o, "initiator", namebuf, sizeof(namebuf));
	r.o = o;
	r.target_pid = target_pid;
	r.sock_server = o->baseline_server;
	if (o->baseline_id != BENCH_BASELINE_SOCKET_ONLY && bench_te_init(o, region, &r.te)) {
		rc = 1;
		goto out;
	}
	if (o->baseline_id != BENCH_BASELINE_NONE && bench_sock_prepare(region)) {
		rc = 1;
		goto out;
	}
	if (o->protocol && !strcmp(o->protocol, "rdma")) {
		static char lrdesc[512];
		if (!bench_rdma_line_rate(o->device, &o->line_rate_gbps, lrdesc, sizeof(lrdesc)))
			fprintf(stderr, "pdkv-bench: no %% of line rate in this report: %s\n",
			        lrdesc);
		o->line_rate_desc = lrdesc;
	}
	bench_banner(o, r.te ? bench_te_local_name(r.te) : "-", o->segment,
	             r.te ? bench_te_remote_size(r.te) : o->buffer_size);
	run_all(&r, ro);
	rc = r.rc;
	if (o->compare_perftest &&
	    bench_perftest_compare(o, r.rows, r.nrows, sizes, ns, o->mode_id == BENCH_LOOPBACK))
		rc = rc ? rc : 1;
	if (o->json && bench_write_json(o, o->json, r.rows, r.nrows,
	                                r.te ? bench_te_local_name(r.te) : "-", o->segment)) {
		fprintf(stderr, "pdkv-bench: cannot write --json %s\n", o->json);
		rc = 1;
	}
	if (o->csv && bench_write_csv(o, o->csv, r.rows, r.nrows)) {
		fprintf(stderr, "pdkv-bench: cannot write --csv %s\n", o->csv);
		rc = 1;
	}
out:
	bench_te_fini(r.te);
	return rc;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct bench_run_ops ro;
	struct loop_target lt = {0};
	uint64_t sizes[64], max_block = 0, region;
	size_t ns;
	bool done;
	int rc;

	pd_log_set_name("pdkv-bench");
	if (argc > 1 && !strcmp(argv[1], "serve"))
		return bench_serve_main(argc - 1, argv + 1);
	rc = bench_parse(argc, argv, &o, &ro, &done);
	if (rc || done)
		return rc;
	rc = bench_gpu_require(&o);
	if (!rc && o.compare_perftest)
		rc = bench_perftest_check();
	if (!rc && o.compare_mooncake)
		rc = bench_mooncake_check(o.compare_mooncake);
	if (rc)
		return rc;
	ns = sizes_of(&o, sizes, PD_ARRAY_SIZE(sizes));
	for (size_t i = 0; i < ns; i++)
		if (sizes[i] > max_block)
			max_block = sizes[i];
	region = max_block * o.batch * o.threads;
	if (o.buffer_size < region)
		o.buffer_size = region;

	switch (o.mode_id) {
	case BENCH_TARGET:
		return mode_target(&o, sizes, ns);
	case BENCH_INITIATOR:
		return mode_initiator(&o, &ro, region, sizes, ns, 0);
	case BENCH_LOOPBACK:
		if (spawn_target(&o, &ro, region, &lt))
			return 1;
		rc = mode_initiator(&o, &ro, region, sizes, ns, lt.proc.pid);
		return stop_target(&lt, rc);
	}
	return 2;
}
