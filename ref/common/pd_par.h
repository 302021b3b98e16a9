/* pd_par: one job cut into n items run on a few threads — the items are taken in order from a
 * shared counter, so with one thread they run exactly in order on the caller's thread. */
#ifndef PD_PAR_H
#define PD_PAR_H

/* fn(ud, item, worker): item in [0, n), worker in [0, nthreads) (0 = the caller's thread; each
 * worker runs one item at a time, so per-worker scratch indexed by worker is safe). When a
 * thread cannot be made, the others take its share. */
typedef void (*pd_par_fn)(void *ud, int item, int worker);
void pd_par_run(int nthreads, int n, pd_par_fn fn, void *ud);

/* How many threads the stand-ins use to generate and hash the fake model's KV:
 * PDKV_KV_THREADS (1..64) if set, else half the CPUs this process may run on, 1 to 8. */
int pd_par_threads(void);

#endif
