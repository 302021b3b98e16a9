/* SPDX-License-Identifier: Apache-2.0 */
/* bench_perftest: --compare-perftest — ib_write_bw (perftest) on the same device pairs in the
 * same run: servers on the target side (respawned per size), clients after the pdkv rows. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_util.h"
#include "te/te_inspect.h"
#include "pd_meta_scheme.h"

#define PT_MAX_DEV 16
#define PT_BIN     "ib_write_bw"

static int on_path(const char *bin)
{
	const char *path = pd_env_str("PATH");
	char buf[4096];

	for (const char *p = path ? path : "/usr/bin:/bin"; p && *p;) {
		size_t k = strcspn(p, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)k, p, bin);
		if (k && !access(buf, X_OK))
			return 1;
		p += k + (p[k] == ':');
	}
	return 0;
}

int bench_perftest_check(const struct bench_opts *o)
{
	const char *need[] = {PT_BIN, "ib_write_lat", "ib_read_lat"};

	for (size_t i = o->latency ? 1 : 0; i < (o->latency ? 3u : 1u); i++) {
		if (on_path(need[i]))
			continue;
		fprintf(stderr,
		        "pdkv-bench: --compare-perftest needs %s (perftest) on PATH: install the "
		        "'perftest' package (apt-get install perftest / dnf install perftest)\n",
		        need[i]);
		return 2;
	}
	return 0;
}

/* fork+exec with a clean signal mask (the target blocks SIGINT/SIGTERM for sigwait), its own
 * process group, SIGKILL when the spawning thread dies, stdout+stderr into log (appended) */
static pid_t spawn(char *const argv[], const char *log)
{
	pid_t parent = getpid(), pid = fork();

	if (pid)
		return pid;
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644), nul = open("/dev/null", O_RDONLY);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	if (nul >= 0) {
		dup2(nul, 0);
		close(nul);
	}
	execvp(argv[0], argv);
	fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* exit status, or -ETIMEDOUT (the group is killed) after timeout_ms; -1 on waitpid error */
static int wait_for(pid_t pid, int timeout_ms)
{
	uint64_t end = pd_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0 && errno != EINTR)
			return -1;
		if (pd_now_ns() > end) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		pd_sleep_ms(20);
	}
}

static void kill_wait(pid_t pid)
{
	if (pid > 0) {
		kill(-pid, SIGTERM);
		if (wait_for(pid, 1000) == -ETIMEDOUT)
			return; /* wait_for killed and reaped it */
	}
}

/* 1 when something on this host listens on TCP port (IPv4 or IPv6), from /proc/net/tcp* —
 * probing with connect() would use up perftest's single accept */
static int listening(int port)
{
	static const char *const f[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	char line[512];

	for (size_t i = 0; i < 2; i++) {
		FILE *fp = fopen(f[i], "r");
		if (!fp)
			continue;
		while (fgets(line, sizeof(line), fp)) {
			char *c = strchr(line, ':'), *c2;
			unsigned p, st;
			if (!c || !(c2 = strchr(c + 1, ':')))
				continue;
			if (sscanf(c2 + 1, "%x %*s %x", &p, &st) == 2 && (int)p == port &&
			    st == 0x0A) {
				fclose(fp);
				return 1;
			}
		}
		fclose(fp);
	}
	return 0;
}

static int split_devs(const char *list, char devs[][64], int max)
{
	int n = 0;
	for (const char *p = list ? list : ""; *p && n < max;) {
		size_t k = strcspn(p, ",");
		if (k && k < 64) {
			memcpy(devs[n], p, k);
			devs[n++][k] = '\0';
		}
		p += k + (p[k] == ',');
	}
	return n;
}

struct pt_args {
	char *v[24];
	char dev[64], gid[16], port[16], size[32], dur[32], host[256], qps[8];
};

/* ib_write_bw: -D seconds, --report_gbits; ib_*_lat: -n iterations (both sides the same) */
static void build_args(struct pt_args *a, const struct bench_opts *o, const char *bin,
                       const char *dev, int i, uint64_t size, const char *host)
{
	int n = 0, gi = bench_rdma_gid_index(dev);
	bool lat = strstr(bin, "_lat") != NULL;

	snprintf(a->dev, sizeof(a->dev), "%s", dev);
	snprintf(a->gid, sizeof(a->gid), "%d", gi < 0 ? 0 : gi);
	snprintf(a->port, sizeof(a->port), "%d", o->perftest_port + i);
	snprintf(a->size, sizeof(a->size), "%llu", (unsigned long long)size);
	uint64_t iters = lat ? o->iterations : o->perftest_bytes ? o->perftest_bytes / size : 0;
	if (!lat && o->perftest_bytes && iters < 5)
		iters = 5; /* --perftest_bytes: the same bytes per size, at least 5 messages */
	if (iters)
		snprintf(a->dur, sizeof(a->dur), "%llu", (unsigned long long)iters);
	else
		snprintf(a->dur, sizeof(a->dur), "%d", (int)(o->perftest_duration + 0.5));
	a->v[n++] = (char *)bin;
	a->v[n++] = "-d";
	a->v[n++] = a->dev;
	a->v[n++] = "-x";
	a->v[n++] = a->gid;
	a->v[n++] = "-p";
	a->v[n++] = a->port;
	a->v[n++] = "-s";
	a->v[n++] = a->size;
	a->v[n++] = iters ? "-n" : "-D";
	a->v[n++] = a->dur;
	a->v[n++] = "-F";
	if (!lat) {
		/* as many QPs as the engine opens per endpoint (MC_NUM_QP_PER_EP, 2): one QP of
		 * huge messages runs one requester on Soft-RoCE while pdkv's 64 KiB slices run two
		 */
		int64_t nq = 2; /* the row's default; a bad value is reported by pd_env */
		(void)pd_env_int("MC_NUM_QP_PER_EP", &nq);
		snprintf(a->qps, sizeof(a->qps), "%lld", (long long)nq);
		a->v[n++] = "-q";
		a->v[n++] = a->qps;
		a->v[n++] = "--report_gbits";
	}
	if (host) {
		snprintf(a->host, sizeof(a->host), "%s", host);
		a->v[n++] = a->host;
	}
	a->v[n] = NULL;
}

/* BW average of the row for `size` in an ib_write_bw log, in bytes/s; 0 when absent. The table
 * header names the unit: [Gb/sec] (--report_gbits, 1e9 bits) or [MB/sec] (2^20 bytes). */
static double parse_bw(const char *log, uint64_t size)
{
	char *txt = NULL, *save = NULL;
	double mul = 0, bw = 0;

	if (pd_read_file(log, 1 << 20, &txt, NULL))
		return 0;
	for (char *ln = strtok_r(txt, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
		char *tok[8], *s2 = NULL, *t;
		int nt = 0;
		if (strstr(ln, "#bytes") && strstr(ln, "average")) {
			const char *av = strstr(ln, "average");
			mul = strstr(av, "Gb/sec") ? 1e9 / 8 : strstr(av, "MB/sec") ? 1048576.0 : 0;
			continue;
		}
		if (!mul)
			continue;
		for (t = strtok_r(ln, " \t", &s2); t && nt < 8; t = strtok_r(NULL, " \t", &s2))
			tok[nt++] = t;
		if (nt >= 5) {
			uint64_t b;
			char *end;
			double v = strtod(tok[3], &end);
			if (!pd_parse_u64(tok[0], &b) && b == size && !*end && v > 0) {
				bw = v * mul;
				break;
			}
		}
	}
	free(txt);
	return bw;
}

/* The row for `size` of an ib_write_lat / ib_read_lat log: t_typical (perftest's median), 99%
 * percentile and t_max in us, found by the header's column names. 0, or -1 when absent. */
static int parse_lat(const char *log, uint64_t size, struct bench_pt_res *r)
{
	char *txt = NULL, *save = NULL;
	int ctyp = -1, cp99 = -1, cmax = -1, rc = -1;

	if (pd_read_file(log, 1 << 20, &txt, NULL))
		return -1;
	for (char *ln = strtok_r(txt, "\n", &save); ln && rc; ln = strtok_r(NULL, "\n", &save)) {
		char *tok[16], *s2 = NULL, *t;
		int nt = 0;
		for (t = strtok_r(ln, " \t", &s2); t && nt < 16; t = strtok_r(NULL, " \t", &s2))
			tok[nt++] = t;
		if (nt > 4 && !strcmp(tok[0], "#bytes")) {
			for (int i = 0; i < nt; i++) {
				if (!strncmp(tok[i], "t_typical", 9))
					ctyp = i;
				else if (!strncmp(tok[i], "t_max", 5))
					cmax = i;
				else if (!strcmp(tok[i], "99%"))
					cp99 = i;
			}
			continue;
		}
		uint64_t b;
		if (ctyp < 0 || cmax < 0 || nt <= ctyp || nt <= cmax || pd_parse_u64(tok[0], &b) ||
		    b != size)
			continue;
		r->lat = strtod(tok[ctyp], NULL);
		r->max = strtod(tok[cmax], NULL);
		r->p99 = cp99 >= 0 && cp99 < nt ? strtod(tok[cp99], NULL) : 0;
		/* perftest under emulation can print inf/nan (a bad CPU clock): not a figure */
		rc =
		    r->lat > 0 && isfinite(r->lat) && isfinite(r->max) && isfinite(r->p99) ? 0 : -1;
		if (rc)
			r->lat = r->p99 = r->max = 0;
	}
	free(txt);
	return rc;
}

/* 1 when log, from byte `from` on, shows that perftest exchanged QP data with its peer (the
 * " remote address:" line): a connection got past the handshake */
static int exchanged(const char *log, size_t from)
{
	char *txt = NULL;
	size_t len = 0;
	int r;

	if (pd_read_file(log, 1 << 22, &txt, &len))
		return 0;
	r = len > from && strstr(txt + from, "remote address") != NULL;
	free(txt);
	return r;
}

static size_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) ? 0 : (size_t)st.st_size;
}

static void show_tail(const char *log)
{
	char *txt = NULL;
	size_t len = 0;
	if (pd_read_file(log, 1 << 20, &txt, &len))
		return;
	fprintf(stderr, "%s", len > 1500 ? txt + len - 1500 : txt);
	free(txt);
}

/* ---------------------------------------------------------------- target side */
struct srv {
	pthread_t tid;
	const struct bench_opts *o;
	const uint64_t *sizes;
	size_t n;
	const char *bins[2]; /* ib_write_bw; --latency: ib_*_lat per operation, in run order */
	int nbins;
	int idx;
	char dev[64], log[300];
	volatile pid_t pid;
	int warned; /* a server failed: keep its log */
};
static struct srv g_srv[PT_MAX_DEV];
static int g_nsrv;
static volatile int g_stop; /* __atomic: stop writes it while the servers poll it */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	size_t k = 0;

	while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
		struct pt_args a;
		uint64_t t0 = pd_now_ns();
		size_t from = file_size(s->log);
		int st;
		pid_t pid;

		build_args(&a, s->o, s->bins[k / s->n], s->dev, s->idx, s->sizes[k % s->n], NULL);
		pthread_mutex_lock(&g_lock);
		pid = __atomic_load_n(&g_stop, __ATOMIC_RELAXED) ? -1 : spawn(a.v, s->log);
		s->pid = pid;
		pthread_mutex_unlock(&g_lock);
		if (pid < 0)
			break;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		pthread_mutex_lock(&g_lock); /* stop kills s->pid under it */
		s->pid = 0;
		pthread_mutex_unlock(&g_lock);
		if (__atomic_load_n(&g_stop, __ATOMIC_RELAXED))
			break;
		if (exchanged(s->log, from)) {
			/* a client ran this size (ib_write_bw's server may exit 1 after -D even
			 * when the client succeeded): next size */
			k = (k + 1) % (s->n * (size_t)s->nbins);
			continue;
		}
		if (!s->warned++)
			fprintf(stderr,
			        "pdkv-bench: %s server on %s port %s (-s %s) exited with "
			        "status 0x%x; respawning it (log %s)\n",
			        a.v[0], s->dev, a.port, a.size, st, s->log);
		if (pd_now_ns() - t0 < 1000000000ull)
			pd_sleep_ms(1000); /* no tight loop when it cannot even start */
	}
	return NULL;
}

int bench_perftest_serve_start(const struct bench_opts *o, const uint64_t *sizes, size_t n)
{
	static char devs[PT_MAX_DEV][64];
	int nd = split_devs(o->device, devs, PT_MAX_DEV);
	const char *tmp = pd_env_str("TMPDIR"); /* default /tmp */

	if (!nd) {
		fprintf(stderr, "pdkv-bench: --compare-perftest on the target needs "
		                "--device_name=DEV[,DEV...] (ib_write_bw runs per device)\n");
		return -1;
	}
	__atomic_store_n(&g_stop, 0, __ATOMIC_RELAXED);
	if (o->latency)
		nd = 1; /* one request in flight: the first device pair only */
	for (int i = 0; i < nd; i++) {
		struct srv *s = &g_srv[i];
		memset(s, 0, sizeof(*s));
		s->o = o;
		s->sizes = sizes;
		s->n = n;
		s->bins[0] = PT_BIN;
		s->nbins = 1;
		for (int k = 0; o->latency && k < o->lat_nops && k < 2; k++)
			s->bins[k] = o->lat_ops[k] == BENCH_WRITE ? "ib_write_lat" : "ib_read_lat";
		if (o->latency)
			s->nbins = o->lat_nops < 2 ? o->lat_nops : 2;
		s->idx = i;
		snprintf(s->dev, sizeof(s->dev), "%s", devs[i]);
		snprintf(s->log, sizeof(s->log), "%s/pdkv-perftest-srv-%s.%d.log", tmp, devs[i],
		         (int)getpid());
		unlink(s->log);
		if (pthread_create(&s->tid, NULL, srv_main, s)) {
			bench_perftest_serve_stop();
			return -1;
		}
		g_nsrv = i + 1;
		printf("# perftest: %s%s%s server on %s port %d (-s per size in order:", s->bins[0],
		       s->nbins > 1 ? " then " : "", s->nbins > 1 ? s->bins[1] : "", devs[i],
		       o->perftest_port + i);
		for (size_t k = 0; k < n; k++)
			printf(" %llu", (unsigned long long)sizes[k]);
		if (o->latency)
			printf("; -n %llu; log %s)\n", (unsigned long long)o->iterations, s->log);
		else
			printf("; -D %d; log %s)\n", (int)(o->perftest_duration + 0.5), s->log);
	}
	fflush(stdout);
	return 0;
}

void bench_perftest_serve_stop(void)
{
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < g_nsrv; i++) {
		pthread_mutex_lock(&g_lock);
		if (g_srv[i].pid > 0) {
			kill(-g_srv[i].pid, SIGKILL);
			kill(g_srv[i].pid, SIGKILL);
		}
		pthread_mutex_unlock(&g_lock);
		pthread_join(g_srv[i].tid, NULL); /* its waitpid reaps the server */
		if (!g_srv[i].warned)
			unlink(g_srv[i].log);
	}
	g_nsrv = 0;
}

/* ---------------------------------------------------------------- initiator side */
/* One run of bin (ib_write_bw, or ib_*_lat on the first pair only) at one size on every device
 * pair: local servers first (loopback), then the clients in parallel. res: the summed bytes/s
 * (bw), or the latency figures of pair 0. 0, or -1 on failure (message printed, logs kept). */
static int run_size(const struct bench_opts *o, const char *bin, char devs[][64], char tdevs[][64],
                    int nd, const char *host, uint64_t size, const char *dir, int *connected,
                    struct bench_pt_res *res)
{
	pid_t srv[PT_MAX_DEV] = {0}, cli[PT_MAX_DEV] = {0};
	char slog[PT_MAX_DEV][400], clog[PT_MAX_DEV][400];
	bool lat = strstr(bin, "_lat") != NULL, ok = true;
	int timeout_ms =
	    lat ? 30000 + (int)(o->iterations * 5) : (int)(o->perftest_duration * 1000) + 30000;

	memset(res, 0, sizeof(*res));
	for (int i = 0; i < nd; i++) {
		snprintf(slog[i], sizeof(slog[i]), "%s/server-%s-%s-%llu.log", dir,
		         tdevs ? tdevs[i] : "remote", bin, (unsigned long long)size);
		snprintf(clog[i], sizeof(clog[i]), "%s/client-%s-%s-%llu.log", dir, devs[i], bin,
		         (unsigned long long)size);
		unlink(clog[i]);
	}
	for (int i = 0; tdevs && i < nd; i++) {
		struct pt_args a;
		uint64_t end = pd_now_ns() + 10000000000ull;
		unlink(slog[i]);
		build_args(&a, o, bin, tdevs[i], i, size, NULL);
		srv[i] = spawn(a.v, slog[i]);
		while (srv[i] > 0 && !listening(o->perftest_port + i) && pd_now_ns() < end &&
		       waitpid(srv[i], NULL, WNOHANG) == 0)
			pd_sleep_ms(50);
		if (srv[i] < 0 || !listening(o->perftest_port + i)) {
			fprintf(stderr,
			        "pdkv-bench: %s server on %s port %d did not start listening; its "
			        "log (%s):\n",
			        bin, tdevs[i], o->perftest_port + i, slog[i]);
			show_tail(slog[i]);
			ok = false;
		}
	}
	for (int i = 0; ok && i < nd; i++) {
		struct pt_args a;
		build_args(&a, o, bin, devs[i], i, size, host);
		cli[i] = spawn(a.v, clog[i]);
	}
	for (int i = 0; ok && i < nd; i++) {
		int st = cli[i] > 0 ? wait_for(cli[i], timeout_ms) : -1;
		bool exited = st >= 0 && WIFEXITED(st) && !WEXITSTATUS(st);
		double bw = exited && !lat ? parse_bw(clog[i], size) : 0;
		cli[i] = 0;
		if (exchanged(clog[i], 0))
			(*connected)++;
		if (lat && exited && !parse_lat(clog[i], size, res))
			continue;
		if (bw > 0) {
			res->bw += bw;
			continue;
		}
		if (st == -ETIMEDOUT)
			fprintf(
			    stderr,
			    "pdkv-bench: %s -d %s -s %llu %s timed out after %d s (killed); its "
			    "log: %s\n",
			    bin, devs[i], (unsigned long long)size, host, timeout_ms / 1000,
			    clog[i]);
		else
			fprintf(stderr,
			        "pdkv-bench: %s -d %s -s %llu %s failed (status 0x%x%s); its log: "
			        "%s\n",
			        bin, devs[i], (unsigned long long)size, host, st,
			        exited ? ", no row for the size" : "", clog[i]);
		show_tail(clog[i]);
		ok = false;
	}
	for (int i = 0; i < nd; i++) {
		if (cli[i] > 0)
			kill_wait(cli[i]);
		if (srv[i] > 0 && wait_for(srv[i], ok ? 5000 : 200) == -ETIMEDOUT && ok)
			fprintf(stderr, "pdkv-bench: %s server on %s did not exit (killed)\n", bin,
			        tdevs[i]);
	}
	return ok ? 0 : -1;
}

int bench_perftest_run_tool(const struct bench_opts *o, const char *bin, const char *local_servers,
                            const char *host, const uint64_t *sizes, size_t n,
                            struct bench_pt_res *res)
{
	static char devs[PT_MAX_DEV][64], tdevs[PT_MAX_DEV][64];
	int nd = split_devs(o->device, devs, PT_MAX_DEV), nt = 0, failed = 0;
	char dir[300];

	if (local_servers && (nt = split_devs(local_servers, tdevs, PT_MAX_DEV)) != nd) {
		fprintf(stderr,
		        "pdkv-bench: --compare-perftest pairs device i with target device i: "
		        "--device_name has %d, the target %d (\"%s\")\n",
		        nd, nt, local_servers);
		return -1;
	}
	if (!nd) {
		fprintf(stderr,
		        "pdkv-bench: --compare-perftest needs --device_name=DEV[,DEV...]\n");
		return -1;
	}
	if (strstr(bin, "_lat"))
		nd = 1; /* one request in flight: the first device pair */
	snprintf(dir, sizeof(dir), "%s/pdkv-perftest.XXXXXX", pd_env_str("TMPDIR"));
	if (!mkdtemp(dir)) {
		fprintf(stderr, "pdkv-bench: mkdtemp %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (size_t k = 0; k < n; k++) {
		int rc = -1;
		/* a remote server is respawned after each client run: retry while the client
		 * did not get past the connection (a remote server that saw a client has moved on
		 * to the next size, so a run that connected is not repeated) */
		for (int attempt = 0; attempt < (local_servers ? 2 : 5) && rc; attempt++) {
			int conn = 0;
			if (attempt) {
				fprintf(stderr, "pdkv-bench: retrying %s -s %llu\n", bin,
				        (unsigned long long)sizes[k]);
				pd_sleep_ms(1000);
			}
			rc = run_size(o, bin, devs, local_servers ? tdevs : NULL, nd, host,
			              sizes[k], dir, &conn, &res[k]);
			if (!local_servers && conn)
				break;
		}
		if (rc)
			failed++;
	}
	if (!failed)
		pd_rm_rf(dir);
	else
		fprintf(stderr, "pdkv-bench: %s logs kept in %s\n", bin, dir);
	return failed ? -1 : 0;
}

int bench_perftest_run(const struct bench_opts *o, const char *local_servers, const char *host,
                       const uint64_t *sizes, size_t n, double *bw)
{
	struct bench_pt_res res[64];
	int rc;

	if (n > 64)
		n = 64;
	rc = bench_perftest_run_tool(o, PT_BIN, local_servers, host, sizes, n, res);
	for (size_t k = 0; k < n; k++)
		bw[k] = res[k].bw;
	return rc;
}

int bench_perftest_host(const struct bench_opts *o, char *host, size_t len)
{
	char err[256] = "";
	int port = 0, rc = -1;

	if (o->perftest_host) {
		snprintf(host, len, "%s", o->perftest_host);
		return 0;
	}
	if (!o->segment || !*o->segment)
		goto out;
	if (pd_meta_is_p2p(o->metadata)) {
		if (!pd_split_hostport(o->segment, host, len, &port))
			rc = 0;
		else
			snprintf(err, sizeof(err), "segment \"%s\" is not host:port", o->segment);
		goto out;
	}
	if (!te_inspect_rpc_meta(o->metadata, o->segment, host, len, &port, err, sizeof(err)))
		rc = 0;
out:
	if (rc)
		fprintf(stderr,
		        "pdkv-bench: --compare-perftest: cannot tell the target's address for "
		        "ib_write_bw (%s); give --perftest_host=IP\n",
		        err[0] ? err : "no --segment_id");
	return rc;
}

/* --compare-perftest, initiator side: ib_write_bw per size after the pdkv rows, the ratio per
 * (operation, size) printed and stored in the rows for --json/--csv */
int bench_perftest_compare(const struct bench_opts *o, struct bench_row *rows, size_t nrows,
                           const uint64_t *sizes, size_t ns, bool loopback)
{
	double bw[64];

	if (ns > 64)
		ns = 64;
	char host[256];
	int ret;

	if (bench_perftest_host(o, host, sizeof(host)))
		return -1;
	printf("# perftest: ib_write_bw -d %s -> %s (%s), -D %d per size, --report_gbits\n",
	       o->device, host, loopback ? "servers started here" : "the target's servers",
	       (int)(o->perftest_duration + 0.5));
	fflush(stdout);
	ret = bench_perftest_run(
	    o, loopback ? (o->target_device ? o->target_device : o->device) : NULL, host, sizes, ns,
	    bw);
	for (size_t k = 0; k < ns; k++) {
		double pb = bw[k] * (o->unit_bits ? 8 : 1) / o->unit_div;
		if (!(pb > 0))
			continue;
		printf("# ib_write_bw %llu B: %.*f %s/s", (unsigned long long)sizes[k],
		       o->precision, pb, o->unit);
		if (o->line_rate_gbps > 0)
			printf(" = %.1f%% of line rate", bw[k] * 8 / 1e9 / o->line_rate_gbps * 100);
		printf("\n");
		for (int op = 0; op < 2; op++) {
			double best = 0;
			for (size_t j = 0; j < nrows; j++) {
				struct bench_row *x = &rows[j];
				if (x->block != sizes[k] || x->op != op || strcmp(x->kind, "pdkv"))
					continue;
				x->perftest_bw = pb;
				if (x->bw > best)
					best = x->bw;
			}
			if (best > 0)
				printf(
				    "# ratio pdkv/ib_write_bw %s %llu B: %.*f / %.*f %s/s = %.2f "
				    "(%.0f%% of ib_write_bw)\n",
				    op ? "write" : "read", (unsigned long long)sizes[k],
				    o->precision, best, o->precision, pb, o->unit, best / pb,
				    best / pb * 100);
		}
	}
	fflush(stdout);
	if (ret)
		fprintf(stderr, "pdkv-bench: --compare-perftest: ib_write_bw did not complete for "
		                "every size (see above)\n");
	return ret;
}
