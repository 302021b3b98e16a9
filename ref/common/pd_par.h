/* SPDX-License-Identifier: Apache-2.0 */
/* pd_par: one job cut into n items run on a few threads — the items are taken in order from a
 * shared counter, so with one thread they run exactly in order on the caller's thread. */
#ifndef PD_PAR_H
#define PD_PAR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define PD_PAR_MAX 64

/* fn(ud, item, worker): item in [0, n); worker 0 is the thread that calls pd_par_finish (or
 * pd_par_run), 1.. the started ones. A worker runs one item at a time, so per-worker scratch
 * indexed by worker is safe. When a thread cannot be made, the others take its share. */
typedef void (*pd_par_fn)(void *ud, int item, int worker);

struct pd_par_worker {
	struct pd_par *p;
	int id;
};

struct pd_par {
	pd_par_fn fn;
	void *ud;
	int n, started;
	atomic_int next;
	bool low;
	pthread_t th[PD_PAR_MAX];
	struct pd_par_worker w[PD_PAR_MAX];
};

/* Starts nworkers threads (worker ids 1..nworkers) on the job; low: each at nice 10, so the
 * job fills the cycles other threads leave. */
void pd_par_start(struct pd_par *p, int nworkers, int n, pd_par_fn fn, void *ud, bool low);
/* The caller takes the items left (as worker 0, at its own priority), then waits for the
 * workers. */
void pd_par_finish(struct pd_par *p);
/* start(nthreads - 1 workers) + finish: the whole job on nthreads threads, caller included. */
void pd_par_run(int nthreads, int n, pd_par_fn fn, void *ud);

/* How many threads the stand-ins use to generate and hash the fake model's KV:
 * PDKV_KV_THREADS (1..64) if set, else half the CPUs this process may run on, 1 to 8. */
int pd_par_threads(void);

#endif
