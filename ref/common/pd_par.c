/* SPDX-License-Identifier: Apache-2.0 */
/* pd_par: a job's items on a few short-lived threads (no pool: the jobs here are hashes of tens
 * of MB and more, next to which a thread's start is noise). */
#include "pd_par.h"

#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"

#define PAR_MAX PD_PAR_MAX

static void drain(struct pd_par *p, int id)
{
	for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
		p->fn(p->ud, i, id);
}

static void *worker_main(void *arg)
{
	struct pd_par_worker *w = arg;

	if (w->p->low)
		setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	drain(w->p, w->id);
	return NULL;
}

void pd_par_start(struct pd_par *p, int nworkers, int n, pd_par_fn fn, void *ud, bool low)
{
	p->fn = fn;
	p->ud = ud;
	p->n = n;
	p->low = low;
	p->started = 0;
	atomic_init(&p->next, 0);
	if (nworkers > n)
		nworkers = n;
	if (nworkers > PAR_MAX)
		nworkers = PAR_MAX;
	for (int i = 0; i < nworkers; i++) {
		p->w[i] = (struct pd_par_worker){p, i + 1};
		if (pthread_create(&p->th[i], NULL, worker_main, &p->w[i]))
			break;
		p->started++;
	}
}

void pd_par_finish(struct pd_par *p)
{
	drain(p, 0);
	for (int i = 0; i < p->started; i++)
		pthread_join(p->th[i], NULL);
	p->started = 0;
}

void pd_par_run(int nthreads, int n, pd_par_fn fn, void *ud)
{
	struct pd_par p;

	pd_par_start(&p, nthreads - 1, n, fn, ud, false);
	pd_par_finish(&p);
}

int pd_par_threads(void)
{
	int64_t v;
	cpu_set_t set;
	int ncpu = 1;

	/* 1..PD_PAR_MAX; a bad value warns (naming the variable) and reads as unset */
	if (pd_env_int("PDKV_KV_THREADS", &v) == 1)
		return (int)v;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		ncpu = CPU_COUNT(&set);
	ncpu /= 2;
	ncpu = ncpu < 1 ? 1 : ncpu > 8 ? 8 : ncpu;
	return ncpu;
}
