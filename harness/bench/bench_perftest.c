/* SPDX-License-Identifier: Apache-2.0 */
/* bench_perftest: --compare-perftest — ib_write_bw (perftest) on the same device pairs in the
 * same run: servers on the target side (respawned per size), clients after the pdkv rows. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
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

#define PT_MAX_DEV 16
#define PT_BIN     "ib_write_bw"

int bench_perftest_check(void)
{
	const char *path = pd_env_str("PATH");
	char buf[4096];

	for (const char *p = path ? path : "/usr/bin:/bin"; p && *p;) {
		size_t k = strcspn(p, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)k, p, PT_BIN);
		if (k && !access(buf, X_OK))
			return 0;
		p += k + (p[k] == ':');
	}
	fprintf(stderr,
	        "pdkv-bench: --compare-perftest needs %s (perftest) on PATH: install the "
	        "'perftest' package (apt-get install perftest / dnf install perftest)\n",
	        PT_BIN);
	return 2;
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
	char dev[64], gid[16], port[16], size[32], dur[32], host[256];
};

static void build_args(struct pt_args *a, const struct bench_opts *o, const char *dev, int i,
                       uint64_t size, const char *host)
{
	int n = 0, gi = bench_rdma_gid_index(dev);

	snprintf(a->dev, sizeof(a->dev), "%s", dev);
	snprintf(a->gid, sizeof(a->gid), "%d", gi < 0 ? 0 : gi);
	snprintf(a->port, sizeof(a->port), "%d", o->perftest_port + i);
	snprintf(a->size, sizeof(a->size), "%llu", (unsigned long long)size);
	snprintf(a->dur, sizeof(a->dur), "%d", (int)(o->perftest_duration + 0.5));
	a->v[n++] = PT_BIN;
	a->v[n++] = "-d";
	a->v[n++] = a->dev;
	a->v[n++] = "-x";
	a->v[n++] = a->gid;
	a->v[n++] = "-p";
	a->v[n++] = a->port;
	a->v[n++] = "-s";
	a->v[n++] = a->size;
	a->v[n++] = "-D";
	a->v[n++] = a->dur;
	a->v[n++] = "-F";
	a->v[n++] = "--report_gbits";
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

		build_args(&a, s->o, s->dev, s->idx, s->sizes[k], NULL);
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
			k = (k + 1) % s->n;
			continue;
		}
		if (!s->warned++)
			fprintf(stderr,
			        "pdkv-bench: ib_write_bw server on %s port %s (-s %s) exited with "
			        "status 0x%x; respawning it (log %s)\n",
			        s->dev, a.port, a.size, st, s->log);
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
	for (int i = 0; i < nd; i++) {
		struct srv *s = &g_srv[i];
		memset(s, 0, sizeof(*s));
		s->o = o;
		s->sizes = sizes;
		s->n = n;
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
		printf("# perftest: ib_write_bw server on %s port %d (-s per size in order:",
		       devs[i], o->perftest_port + i);
		for (size_t k = 0; k < n; k++)
			printf(" %llu", (unsigned long long)sizes[k]);
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
/* One size on every device pair: local servers first (loopback), then the clients in
 * parallel. Returns the summed bytes/s, 0 on failure (message printed, logs kept). */
static double run_size(const struct bench_opts *o, char devs[][64], char tdevs[][64], int nd,
                       const char *host, uint64_t size, const char *dir, int *connected)
{
	pid_t srv[PT_MAX_DEV] = {0}, cli[PT_MAX_DEV] = {0};
	char slog[PT_MAX_DEV][400], clog[PT_MAX_DEV][400];
	int timeout_ms = (int)(o->perftest_duration * 1000) + 30000;
	double sum = 0;
	bool ok = true;

	for (int i = 0; i < nd; i++) {
		snprintf(slog[i], sizeof(slog[i]), "%s/server-%s-%llu.log", dir,
		         tdevs ? tdevs[i] : "remote", (unsigned long long)size);
		snprintf(clog[i], sizeof(clog[i]), "%s/client-%s-%llu.log", dir, devs[i],
		         (unsigned long long)size);
		unlink(clog[i]);
	}
	if (tdevs) {
		for (int i = 0; i < nd; i++) {
			struct pt_args a;
			uint64_t end = pd_now_ns() + 10000000000ull;
			unlink(slog[i]);
			build_args(&a, o, tdevs[i], i, size, NULL);
			srv[i] = spawn(a.v, slog[i]);
			while (srv[i] > 0 && !listening(o->perftest_port + i) &&
			       pd_now_ns() < end && waitpid(srv[i], NULL, WNOHANG) == 0)
				pd_sleep_ms(50);
			if (srv[i] < 0 || !listening(o->perftest_port + i)) {
				fprintf(
				    stderr,
				    "pdkv-bench: ib_write_bw server on %s port %d did not start "
				    "listening; its log (%s):\n",
				    tdevs[i], o->perftest_port + i, slog[i]);
				show_tail(slog[i]);
				ok = false;
			}
		}
	}
	for (int i = 0; ok && i < nd; i++) {
		struct pt_args a;
		build_args(&a, o, devs[i], i, size, host);
		cli[i] = spawn(a.v, clog[i]);
	}
	for (int i = 0; ok && i < nd; i++) {
		int st = cli[i] > 0 ? wait_for(cli[i], timeout_ms) : -1;
		double bw =
		    st >= 0 && WIFEXITED(st) && !WEXITSTATUS(st) ? parse_bw(clog[i], size) : 0;
		cli[i] = 0;
		if (exchanged(clog[i], 0))
			(*connected)++;
		if (bw > 0) {
			sum += bw;
			continue;
		}
		if (st == -ETIMEDOUT)
			fprintf(stderr,
			        "pdkv-bench: ib_write_bw -d %s -s %llu %s timed out after %d s "
			        "(killed); its log: %s\n",
			        devs[i], (unsigned long long)size, host, timeout_ms / 1000,
			        clog[i]);
		else
			fprintf(stderr,
			        "pdkv-bench: ib_write_bw -d %s -s %llu %s failed (status 0x%x%s); "
			        "its log: %s\n",
			        devs[i], (unsigned long long)size, host, st,
			        st >= 0 && WIFEXITED(st) && !WEXITSTATUS(st)
			            ? ", no BW row for the size"
			            : "",
			        clog[i]);
		show_tail(clog[i]);
		ok = false;
	}
	for (int i = 0; i < nd; i++) {
		if (cli[i] > 0)
			kill_wait(cli[i]);
		if (srv[i] > 0 && wait_for(srv[i], ok ? 5000 : 200) == -ETIMEDOUT && ok)
			fprintf(stderr,
			        "pdkv-bench: ib_write_bw server on %s did not exit (killed)\n",
			        tdevs[i]);
	}
	return ok ? sum : 0;
}

int bench_perftest_run(const struct bench_opts *o, const char *local_servers, const char *host,
                       const uint64_t *sizes, size_t n, double *bw)
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
	snprintf(dir, sizeof(dir), "%s/pdkv-perftest.XXXXXX", pd_env_str("TMPDIR"));
	if (!mkdtemp(dir)) {
		fprintf(stderr, "pdkv-bench: mkdtemp %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (size_t k = 0; k < n; k++) {
		bw[k] = 0;
		/* a remote server is respawned after each client run: retry while the client
		 * did not get past the connection (a remote server that saw a client has moved on
		 * to the next size, so a run that connected is not repeated) */
		for (int attempt = 0; attempt < (local_servers ? 2 : 5) && !(bw[k] > 0);
		     attempt++) {
			int conn = 0;
			if (attempt) {
				fprintf(stderr, "pdkv-bench: retrying ib_write_bw -s %llu\n",
				        (unsigned long long)sizes[k]);
				pd_sleep_ms(1000);
			}
			bw[k] = run_size(o, devs, local_servers ? tdevs : NULL, nd, host, sizes[k],
			                 dir, &conn);
			if (!local_servers && conn)
				break;
		}
		if (!(bw[k] > 0))
			failed++;
	}
	if (!failed)
		pd_rm_rf(dir);
	else
		fprintf(stderr, "pdkv-bench: ib_write_bw logs kept in %s\n", dir);
	return failed ? -1 : 0;
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
	if (!strcmp(o->metadata, "P2PHANDSHAKE")) {
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
