/* pd_par: a job's items on a few short-lived threads (no pool: the jobs here are hashes of tens
 * of MB and more, next to which a thread's start is noise). */
#include "pd_par.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "pd_log.h"
#include "pd_util.h"

#define PAR_MAX 64

struct par {
	pd_par_fn fn;
	void *ud;
	int n;
	atomic_int next;
};

struct worker {
	struct par *p;
	int id;
};

static void drain(struct par *p, int id)
{
	for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
		p->fn(p->ud, i, id);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	drain(w->p, w->id);
	return NULL;
}

void pd_par_run(int nthreads, int n, pd_par_fn fn, void *ud)
{
	struct par p = {fn, ud, n, 0};
	struct worker w[PAR_MAX];
	pthread_t th[PAR_MAX];
	int started = 0;

	if (nthreads > n)
		nthreads = n;
	if (nthreads > PAR_MAX)
		nthreads = PAR_MAX;
	for (int i = 1; i < nthreads; i++) {
		w[started] = (struct worker){&p, started + 1};
		if (pthread_create(&th[started], NULL, worker_main, &w[started]))
			break;
		started++;
	}
	drain(&p, 0);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

int pd_par_threads(void)
{
	const char *e = getenv("PDKV_KV_THREADS");
	int64_t v;
	cpu_set_t set;
	int ncpu = 1;

	static atomic_bool warned;

	if (e && *e && pd_parse_i64(e, &v) == 0 && v >= 1 && v <= PAR_MAX)
		return (int)v;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		ncpu = CPU_COUNT(&set);
	ncpu /= 2;
	ncpu = ncpu < 1 ? 1 : ncpu > 8 ? 8 : ncpu;
	if (e && *e && !atomic_exchange(&warned, true))
		pd_warn("PDKV_KV_THREADS=%s: expected a whole number from 1 to %d; using %d", e,
		        PAR_MAX, ncpu);
	return ncpu;
}
