/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_resources: each process of the deployment keeps its open files, threads and RSS flat
 * over the workload — sampled from /proc/PID at the start, every 0.5 s during and once more after
 * an idle pause; the soak's figures (requests, wrong, lost) beside them (issue 34). */
#include "hr.h"
#include "pd_util.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROCS   4
#define MAX_SAMPLES 4096
#define PERIOD_MS   500

/* The bound, stated: against the base (the highest sample of the workload's first half, when the
 * connection pools and the KV buffers have filled), the end sample (after the idle pause) may hold
 * at most
 * FD_SLACK more open files (or FD_SHARE % more), THREAD_SLACK more threads and RSS_SLACK_MIB
 * more resident memory (or RSS_SHARE % more). A leak of one fd, one thread or 10 KiB per request
 * passes none of them over a 10,000-request run. */
#define FD_SLACK      16
#define FD_SHARE      10
#define THREAD_SLACK  4
#define RSS_SLACK_MIB 64
#define RSS_SHARE     25

struct sample {
	double t;
	long fds, threads, rss_kib;
};

struct proc {
	char name[16];
	int pid;
	struct sample *s;
	size_t n;
	bool gone; /* /proc/PID stopped answering */
};

struct hr_res {
	struct proc p[MAX_PROCS];
	size_t np;
	double t0;
	double t_work_end; /* when the workload ended (hr_res_stop), 0 = unknown */
	pthread_t th;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
};

static long count_fds(int pid)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	long n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int read_status(int pid, long *threads, long *rss_kib)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	*threads = *rss_kib = -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Threads:", 8))
			*threads = strtol(line + 8, NULL, 10);
		else if (!strncmp(line, "VmRSS:", 6))
			*rss_kib = strtol(line + 6, NULL, 10);
	}
	fclose(f);
	return *threads < 0 || *rss_kib < 0 ? -1 : 0;
}

void hr_res_add(struct hr_res *res, size_t i, double t, long fds, long threads, long rss_kib)
{
	struct proc *p = &res->p[i];

	if (i >= res->np || p->n >= MAX_SAMPLES)
		return;
	p->s[p->n++] = (struct sample){t, fds, threads, rss_kib};
}

static void sample_all(struct hr_res *res)
{
	double t = pd_now_s() - res->t0;

	for (size_t i = 0; i < res->np; i++) {
		struct proc *p = &res->p[i];
		long fds, th, rss;

		if (p->gone || p->pid <= 0)
			continue;
		fds = count_fds(p->pid);
		if (fds < 0 || read_status(p->pid, &th, &rss)) {
			p->gone = true;
			continue;
		}
		if (p->n == MAX_SAMPLES) /* keep the first and the newest: halve the middle */
			for (size_t k = 1; k < MAX_SAMPLES / 2; k++)
				p->s[k] = p->s[2 * k];
		if (p->n == MAX_SAMPLES)
			p->n = MAX_SAMPLES / 2;
		hr_res_add(res, i, t, fds, th, rss);
	}
}

static void *sampler(void *arg)
{
	struct hr_res *res = arg;

	pthread_mutex_lock(&res->mu);
	while (!res->stop) {
		struct timespec ts;

		pthread_mutex_unlock(&res->mu);
		sample_all(res);
		pthread_mutex_lock(&res->mu);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += PERIOD_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		if (!res->stop)
			pthread_cond_timedwait(&res->cv, &res->mu, &ts);
	}
	pthread_mutex_unlock(&res->mu);
	return NULL;
}

static struct hr_res *res_new(const char *const *names, const int *pids, size_t n)
{
	struct hr_res *res = calloc(1, sizeof(*res));

	if (!res)
		return NULL;
	res->t0 = pd_now_s();
	pthread_mutex_init(&res->mu, NULL);
	pthread_cond_init(&res->cv, NULL);
	for (size_t i = 0; i < n && res->np < MAX_PROCS; i++) {
		struct proc *p = &res->p[res->np];

		p->s = calloc(MAX_SAMPLES, sizeof(*p->s));
		if (!p->s) {
			hr_res_free(res);
			return NULL;
		}
		snprintf(p->name, sizeof(p->name), "%s", names[i]);
		p->pid = pids ? pids[i] : 0;
		res->np++;
	}
	return res;
}

struct hr_res *hr_res_start(const char *const *names, const int *pids, size_t n)
{
	struct hr_res *res = res_new(names, pids, n);

	if (!res || !pids)
		return res;
	sample_all(res); /* the start sample, before any request */
	res->running = pthread_create(&res->th, NULL, sampler, res) == 0;
	return res;
}

void hr_res_stop(struct hr_res *res, double idle_s)
{
	if (!res || !res->running)
		return;
	res->t_work_end = pd_now_s() - res->t0;
	pd_sleep_ms((int)(idle_s * 1000)); /* sampled during the pause too */
	pthread_mutex_lock(&res->mu);
	res->stop = true;
	pthread_cond_signal(&res->cv);
	pthread_mutex_unlock(&res->mu);
	pthread_join(res->th, NULL);
	res->running = false;
	sample_all(res); /* the end sample */
}

void hr_res_free(struct hr_res *res)
{
	if (!res)
		return;
	if (res->running)
		hr_res_stop(res, 0);
	for (size_t i = 0; i < res->np; i++)
		free(res->p[i].s);
	pthread_mutex_destroy(&res->mu);
	pthread_cond_destroy(&res->cv);
	free(res);
}

/* start, base (the highest sample of the workload's first half: the working set once the pools,
 * buffers and connections have filled), peak and end of one process */
struct fig {
	struct sample start, warm, peak, end;
};

static void raise_to(struct sample *m, const struct sample *s)
{
	if (s->fds > m->fds)
		m->fds = s->fds;
	if (s->threads > m->threads)
		m->threads = s->threads;
	if (s->rss_kib > m->rss_kib)
		m->rss_kib = s->rss_kib;
}

static bool figures(const struct hr_res *res, const struct proc *p, struct fig *f)
{
	double half;

	if (p->n < 2)
		return false;
	f->start = p->s[0];
	f->end = p->s[p->n - 1];
	half = f->start.t + ((res->t_work_end > 0 ? res->t_work_end : f->end.t) - f->start.t) / 2;
	f->warm = f->peak = f->start;
	for (size_t k = 0; k < p->n; k++) {
		const struct sample *s = &p->s[k];

		if (s->t <= half && k < p->n - 1) {
			raise_to(&f->warm, s);
			f->warm.t = s->t;
		}
		raise_to(&f->peak, s);
	}
	return true;
}

static long allowed(long warm, long slack, int share)
{
	long by_share = warm * share / 100;
	return warm + (by_share > slack ? by_share : slack);
}

/* One process within the bound? Appends its figures to detail either way. */
static bool judge_one(const struct hr_res *res, const struct proc *p, bool first, char *detail,
                      size_t sz)
{
	struct fig f;
	size_t k = strlen(detail);
	bool ok;

	if (!figures(res, p, &f)) {
		snprintf(detail + k, sz - k, "%s%s: %s", first ? "" : "; ", p->name,
		         p->gone ? "exited during the run" : "fewer than 2 samples");
		return false;
	}
	ok = f.end.fds <= allowed(f.warm.fds, FD_SLACK, FD_SHARE) &&
	     f.end.threads <= f.warm.threads + THREAD_SLACK &&
	     f.end.rss_kib <= allowed(f.warm.rss_kib, RSS_SLACK_MIB * 1024L, RSS_SHARE);
	snprintf(detail + k, sz - k,
	         "%s%s%s: fds %ld/%ld/%ld/%ld, threads %ld/%ld/%ld/%ld, RSS "
	         "%.0f/%.0f/%.0f/%.0f MiB",
	         first ? "" : "; ", ok ? "" : "GREW ", p->name, f.start.fds, f.warm.fds, f.peak.fds,
	         f.end.fds, f.start.threads, f.warm.threads, f.peak.threads, f.end.threads,
	         f.start.rss_kib / 1024.0, f.warm.rss_kib / 1024.0, f.peak.rss_kib / 1024.0,
	         f.end.rss_kib / 1024.0);
	return ok;
}

/* requests / streamed / cut / wrong / lost: a request is lost when its client did not hang up
 * and it has no valid 200 answer, wrong when its answer differs from the plain stand-in's */
struct counts {
	size_t streamed, cut, lost, wrong, answered;
};

static struct counts count_requests(const struct hr_run_data *rd)
{
	struct counts c = {0};

	for (size_t i = 0; i < rd->nreqs; i++) {
		const struct hr_req *r = &rd->reqs[i];

		c.streamed += r->stream;
		if (r->cut) {
			c.cut++;
			continue;
		}
		if (r->status != 200 || r->invalid || !r->text) {
			c.lost++;
			continue;
		}
		c.answered++;
		if (rd->plain && rd->plain[i].text && strcmp(r->text, rd->plain[i].text))
			c.wrong++;
	}
	return c;
}

static bool resources(const struct hr_run_data *rd, char *detail, size_t sz)
{
	bool ok = true;

	if (!rd->res || !rd->res->np) {
		snprintf(detail, sz, "no samples of the processes (they run on other machines)");
		return false;
	}
	{
		struct counts c = count_requests(rd);
		snprintf(detail, sz,
		         "%zu requests (%zu streamed, %zu cut by their clients): ", rd->nreqs,
		         c.streamed, c.cut);
		if (rd->plain)
			snprintf(detail + strlen(detail), sz - strlen(detail), "%zu wrong, ",
			         c.wrong);
		snprintf(detail + strlen(detail), sz - strlen(detail), "%zu lost; ", c.lost);
	}
	for (size_t i = 0; i < rd->res->np; i++)
		ok &= judge_one(rd->res, &rd->res->p[i], i == 0, detail, sz);
	{
		size_t k = strlen(detail);
		snprintf(detail + k, sz - k,
		         " (start/base/peak/end; bound: end <= base + max(%d, %d %%) fds, + %d "
		         "threads, + max(%d MiB, %d %%) RSS)",
		         FD_SLACK, FD_SHARE, THREAD_SLACK, RSS_SLACK_MIB, RSS_SHARE);
	}
	return ok;
}

const struct hr_check hr_check_resources = {
    .name = "resources",
    .what = "open files, threads and RSS of each process flat over the workload (sampled from "
            "/proc)",
    .fn = resources,
};

static cJSON *sample_json(const struct sample *s, bool timed)
{
	cJSON *o = cJSON_CreateObject();
	if (timed)
		cJSON_AddNumberToObject(o, "t_s", s->t);
	cJSON_AddNumberToObject(o, "fds", (double)s->fds);
	cJSON_AddNumberToObject(o, "threads", (double)s->threads);
	cJSON_AddNumberToObject(o, "rss_mib", s->rss_kib / 1024.0);
	return o;
}

cJSON *hr_res_json(const struct hr_run_data *rd)
{
	cJSON *o = cJSON_CreateObject(), *procs;
	struct counts c = count_requests(rd);

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "requests", (double)rd->nreqs);
	cJSON_AddNumberToObject(o, "streamed", (double)c.streamed);
	cJSON_AddNumberToObject(o, "cut", (double)c.cut);
	cJSON_AddNumberToObject(o, "answered", (double)c.answered);
	if (rd->plain)
		cJSON_AddNumberToObject(o, "wrong", (double)c.wrong);
	cJSON_AddNumberToObject(o, "lost", (double)c.lost);
	if (!rd->res)
		return o;
	procs = cJSON_AddObjectToObject(o, "processes");
	for (size_t i = 0; i < rd->res->np; i++) {
		const struct proc *p = &rd->res->p[i];
		struct fig f;
		cJSON *e;

		if (!figures(rd->res, p, &f))
			continue;
		e = cJSON_AddObjectToObject(procs, p->name);
		cJSON_AddNumberToObject(e, "pid", p->pid);
		cJSON_AddNumberToObject(e, "samples", (double)p->n);
		cJSON_AddItemToObject(e, "start", sample_json(&f.start, true));
		cJSON_AddItemToObject(e, "base", sample_json(&f.warm, false));
		cJSON_AddItemToObject(e, "peak", sample_json(&f.peak, false));
		cJSON_AddItemToObject(e, "end", sample_json(&f.end, true));
	}
	return o;
}
