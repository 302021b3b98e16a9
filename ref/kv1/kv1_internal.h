/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_internal: the worker's state and the interfaces between the files of ref/kv1 (their order,
 * bottom to top, is in README.md: each file calls only files below it). */
#ifndef KV1_INTERNAL_H
#define KV1_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "kv1.h"
#include "te/te.h"

#define KV1_MAX_HANDLERS 64   /* concurrent handshakes a producer serves */
#define KV1_MAX_PENDING  4096 /* handshakes queued behind them (then refused) */
/* gen B handshakes waiting for P side ready, on no thread (PDKV_KV1_MAX_PARKED[_PER_PEER]) */
#define KV1_MAX_PARKED          1024
#define KV1_MAX_PARKED_PER_PEER 256
#define KV1_MAX_PARKED_MIB      64 /* their msgpack bytes (PDKV_KV1_MAX_PARKED_MIB) */

struct kv1_send {
	struct kv1_send *next;
	char *key;
	int64_t *ids;
	size_t n;
	bool ready, busy;
	bool dropped; /* gen B: P will not send it (discarded); a handshake fails at once */
	int sent;     /* gen B, TP topology: D ranks served so far (vLLM's need_send) */
	size_t gcnt[KV1_MAX_KV_GROUPS]; /* ids of each KV-cache group, one list after another */
	size_t ng;                      /* groups (1 without HMA) */
	uint64_t expire_ns; /* ready / dropped entries: freed after this if never sent / asked */
};

/* A WRITE batch given up while the engine's lanes may still read its source blocks and send
 * them to the decode (kv1_write.c): kept with its runs until every task is seen finished. */
struct kv1_held { /* a WRITE given up in flight; its batch is the engine's (te_batch_abandon) */
	struct kv1_worker *w;
	struct kv1_run *runs;
	size_t nruns;
	uint64_t bytes;
	char peer[300]; /* the decode's segment, "host:port" */
};
#define KV1_MAX_HELD 16 /* held WRITEs past which new WRITEs wait (PDKV_KV1_MAX_HELD_WRITES) */

struct kv1_awaiter { /* on the waiting thread's stack */
	struct kv1_awaiter *next;
};

struct kv1_worker {
	struct kv1_opts o;
	struct kv1_job *pend_head, *pend_tail; /* router thread only */
	int npend;
	char ip[128], seg[128], side_addr[160], boot_url[256], engine_id[128];
	int side_port;
	struct te_engine *te;
	uint8_t *bufs[KV1_MAX_BUFS];
	int order[KV1_MAX_BUFS];   /* o.write_order, or 0..nbufs-1 */
	uint8_t grp[KV1_MAX_BUFS]; /* o.buf_group, or all 0 */
	size_t buf_bytes;
	int gpu_dev; /* -1: host buffers (mmap), else cudaMalloc'd on this CUDA device */
	/* allocator: FIFO ring of free ids */
	pthread_mutex_t amu;
	int64_t *freeq;
	size_t fq_head, fq_n;
	pthread_cond_t acv;                    /* signalled by kv1_free */
	struct kv1_awaiter *aq_head, *aq_tail; /* kv1_alloc_wait's waiters, oldest first */
	/* amu: per block, the held WRITEs reading it, and whether it was freed meanwhile (it
	 * joins the free ring when the last of them ends) */
	uint32_t *hold_refs;
	uint8_t *hold_freed;
	/* held WRITEs (kv1_write.c); hcv is broadcast when one ends */
	pthread_mutex_t hmu;
	pthread_cond_t hcv;
	size_t nheld, max_held;
	atomic_uint_fast64_t writes_abandoned, writes_refused;
	bool write_phases; /* kv1_write.c, PDKV_KV1_PHASES=1: a log line per WRITE, its phases */
	/* consumer, amu: blocks held after receives that did not end cleanly (kv1_rhold.c) */
	uint8_t *rhold_on, *rhold_freed;
	struct kv1_rhold *rholds;
	size_t rhold_blocks, rhold_max;
	uint64_t rhold_s; /* 0: computed per hold */
	atomic_uint_fast64_t recv_holds, recvs_refused;
	/* consumer, gen B: pulls P answered "Timeout waiting for P side ready." / not at all */
	atomic_uint_fast64_t recv_p_timeouts, recv_no_answer;
	/* send table */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct kv1_send *sends;
	/* side channel */
	void *zctx, *router;
	char inproc[64];
	pthread_t thr;
	bool thr_started;
	atomic_bool stop;
	atomic_int handlers;
	const struct kv1_park_ops *ops; /* the generation's, for kv1_park.c */
	/* handler threads kept after a handshake (kv1_park.c): jobs handed to waiting threads
	 * (pq, pool_nq of them not yet taken), threads waiting (pool_idle), alive (pool_live),
	 * started in all (pool_started); pmu guards all but the atomics */
	pthread_mutex_t pmu;
	pthread_cond_t pcv;
	struct kv1_job *pq_head, *pq_tail;
	int pool_idle, pool_nq;
	atomic_int pool_live;
	atomic_uint_fast64_t pool_started;
	/* gen B parked handshakes (w->mu): waiting for an id (parked) or runnable again (wake) */
	struct kv1_job *parked, *wake_head, *wake_tail;
	int nparked, max_parked, max_parked_peer;
	uint64_t parked_bytes, max_parked_bytes;
	uint64_t warn_ns, warn_quiet; /* w->mu: side-channel WARNINGs, at most one a second */
	/* consumer: bootstrap /query cache (gen B) */
	pthread_mutex_t bmu;
	char boot_cached[256];
	struct kv1_boot_table boot;
	/* stats */
	atomic_uint_fast64_t bytes_sent, xfers, xfer_failures, handshakes, unknown_ids, expired;
	atomic_uint_fast64_t rejected; /* side-channel messages refused (frames, msgpack, target) */
	atomic_uint_fast64_t bytes_recv, alloc_waits;
	/* consumer, host buffers: bytes landed per (buffer, block), nbufs x num_blocks, with a
	 * waiter flag and a kick bit (kv1_landed.c: a futex word each, no lock) */
	_Atomic uint32_t *landed;
	atomic_uint_fast64_t landed_idle_wakes; /* kv1_stats.landed_idle_wakes */
};

int kv1_landed_init(struct kv1_worker *w);
void kv1_landed_fini(struct kv1_worker *w);

/* A handshake handed to a thread: identity and payload copied out of the ROUTER frames. */
struct kv1_job {
	struct kv1_worker *w;
	struct kv1_job *next; /* the router thread's queue of jobs waiting for a handler */
	void *ident;
	size_t ident_len;
	void *payload; /* gen B: freed once decoded */
	size_t len;
	size_t cost;          /* the payload's size, counted against PDKV_KV1_MAX_PARKED_MIB */
	char peer[64];        /* the sender's Peer-Address ("?" when ZMQ does not say) */
	void *gb;             /* gen B: the decoded handshake and its progress (kv1_genb.c) */
	uint64_t deadline_ns; /* gen B: answered "Timeout waiting for P side ready." after it */
};

/* ROUTER thread (kv1_router.c). start: binds the ROUTER (gen A: the fixed port, else any) and
 * starts the thread; kv1_worker_destroy stops and joins it. */
int kv1_router_start(struct kv1_worker *w, char *err, size_t errsz);
/* Sends a reply multipart [ident, (empty,) body] back through the ROUTER thread. */
int kv1_job_reply(struct kv1_job *j, void *push, const void *body, size_t len, bool delim);

/* What the handler slots and the parking (kv1_park.c) call in a generation's file, filled there
 * (kv1_gena_park_ops, kv1_genb_park_ops) and handed to kv1_park_init by kv1_worker_create: the
 * generations call the parking, never the reverse. gen A fills only handle. */
struct kv1_park_ops {
	/* runs one handshake on a handler thread with that thread's PUSH (NULL: none could be
	 * opened); frees the job or hands it on to park; the slot is released by the caller */
	void (*handle)(struct kv1_job *j, void *push);
	void (*state_free)(void *gb);                               /* a job's gb (set: gen B) */
	bool (*waits_on)(const struct kv1_job *j, const char *key); /* key among pending ids */
	bool (*runnable_locked)(struct kv1_worker *w, const struct kv1_job *j); /* w->mu held */
	void (*expire)(struct kv1_job *j, void *sock); /* timeout FINISH; frees j */
	void (*refuse)(struct kv1_job *j, void *sock, const char *msg); /* FINISH; frees j */
};
extern const struct kv1_park_ops kv1_gena_park_ops, kv1_genb_park_ops;

void kv1_job_free(struct kv1_job *j);
/* A handler slot (false: KV1_MAX_HANDLERS run); spawn runs j in a reserved slot, on a kept
 * handler thread when one waits, else on a new one. After a handshake a thread waits up to
 * KV1_POOL_IDLE_MS for the next one, with its PUSH open (at most KV1_POOL_KEEP wait): a new
 * thread's first engine call and its PUSH's connect cost a GPU hand-off measurable time.
 * threads_stop wakes the waiting ones to exit (the worker stops); threads_init/fini: pmu, pcv. */
#define KV1_POOL_KEEP    2
#define KV1_POOL_IDLE_MS 5000
bool kv1_handler_reserve(struct kv1_worker *w);
void kv1_handler_spawn(struct kv1_worker *w, struct kv1_job *j);
void kv1_handler_threads_init(struct kv1_worker *w);
void kv1_handler_threads_stop(struct kv1_worker *w); /* returns when none is alive */
void kv1_handler_threads_fini(struct kv1_worker *w);

/* Parking (kv1_park.c): a gen B handshake whose ids are not ready waits on no thread. init: the
 * generation's ops and the caps (env). */
int kv1_park_init(struct kv1_worker *w, const struct kv1_park_ops *ops, char *err, size_t errsz);
/* Rate limit of the side channel's WARNINGs: true when one may be logged now; *quiet: how many
 * were suppressed since the last one. */
bool kv1_park_warn_due(struct kv1_worker *w, uint64_t *quiet);
int kv1_park_request(struct kv1_job *j, void *push); /* handler: j goes to the ROUTER thread */
void kv1_park_admit(struct kv1_worker *w, struct kv1_job *j);       /* ROUTER thread */
size_t kv1_park_wake_locked(struct kv1_worker *w, const char *key); /* w->mu held */
struct kv1_job *kv1_park_pop(struct kv1_worker *w); /* a woken job, or NULL (also stopping) */
void kv1_park_kick(struct kv1_worker *w); /* hands woken jobs to handlers, slots permitting */
void kv1_park_sweep(struct kv1_worker *w, bool all); /* ROUTER thread: expired ones */
void kv1_park_free_all(struct kv1_worker *w);

/* Send table (kv1_send.c; w->mu held by the callers of the _locked forms). */
struct kv1_send *kv1_send_find_locked(struct kv1_worker *w, const char *key);
struct kv1_send *kv1_send_add_locked(struct kv1_worker *w, const char *key);
void kv1_send_remove_locked(struct kv1_worker *w, struct kv1_send *s);
/* Waits (w->mu held) until key's entry is ready and not busy: returns it, or NULL when the
 * deadline passes, the worker stops or the entry is dropped. Entries are looked up again after
 * every wake-up (another thread may free them while the lock is released). */
struct kv1_send *kv1_send_wait_locked(struct kv1_worker *w, const char *key, uint64_t deadline_ns);
/* One bounded (<= 100 ms) wait on the table's condition variable, w->mu held. */
void kv1_cv_wait_locked(struct kv1_worker *w, uint64_t deadline_ns);
/* ROUTER thread: removes ready or dropped entries past expire_ns (never sent, never asked). */
void kv1_send_reap_expired(struct kv1_worker *w);

/* Held WRITEs (kv1_write.c). init: the per-block tables and the cap (env); fini: after
 * te_engine_destroy (which released every held WRITE), frees the tables. */
int kv1_hold_init(struct kv1_worker *w, char *err, size_t errsz);
void kv1_hold_fini(struct kv1_worker *w);
/* Ends the held WRITEs whose batches the engine reports ended (te_batch_reap): returns the
 * blocks their owners freed meanwhile to the free ring. No lock of the worker held. */
void kv1_hold_reap(struct kv1_worker *w);
/* Before a WRITE to peer: 0 while fewer than the cap are held, else waits for one to end
 * until deadline_ns or stop; TE_ERR_TOO_MANY_REQUESTS then (logged, counted). */
int kv1_hold_room(struct kv1_worker *w, const char *peer, uint64_t deadline_ns);
/* A WRITE given up with tasks [next, n) of batch maybe still reading the runs' blocks: the
 * batch goes to the engine (te_batch_abandon), the blocks stay held until it releases them. */
void kv1_hold_add(struct kv1_worker *w, uint64_t batch, size_t n, size_t next,
                  const struct kv1_run *runs, size_t nruns, const char *peer, uint64_t bytes,
                  const char *why);
size_t kv1_hold_count(struct kv1_worker *w);
/* amu held: true when block id is read by a held WRITE (then marked freed, kept back). */
bool kv1_hold_keep_locked(struct kv1_worker *w, int64_t id);

/* Receive holds (kv1_rhold.c). init: the tables, the bound and the cap (opts, env); fini:
 * after te_engine_destroy. */
int kv1_rhold_init(struct kv1_worker *w, char *err, size_t errsz);
void kv1_rhold_fini(struct kv1_worker *w);
/* amu held: true when block id is held after a failed receive (then marked freed, kept back). */
bool kv1_rhold_keep_locked(struct kv1_worker *w, int64_t id);
/* amu held: ends the holds past their deadline and those of blocks landed in full. */
void kv1_rhold_reap_locked(struct kv1_worker *w);
/* Before a receive exposes blocks: 0 while fewer than the cap are held, else waits for room
 * until deadline_ns or stop; -EBUSY then (err set, logged, counted). */
int kv1_rhold_room(struct kv1_worker *w, const char *peer, uint64_t deadline_ns, char *err,
                   size_t errsz);
/* A receive from peer that exposed ids ended without its KV (why); answered: P's handler
 * answered (it will not start a WRITE any more, one may still be in flight). */
void kv1_rhold_add(struct kv1_worker *w, const int64_t *ids, size_t n, const char *peer,
                   const char *why, bool answered);
size_t kv1_rhold_count(struct kv1_worker *w);

/* One engine WRITE batch of blocks to D's segment: for each (local buffer, remote base) pair and
 * each run. 0 or a TE_ERR_*. */
int kv1_write_blocks(struct kv1_worker *w, const char *host, int64_t port, const uint64_t *rbases,
                     size_t nrbases, const struct kv1_run *runs, size_t nruns);

/* Bl: one aligned region of a handshake (kv1_genb.c): bytes [src_off, src_off + len) of each
 * block of local buffer buf go to rbase + block * rblock_len + dst_off on D. */
struct kv1_xregion {
	int buf, group; /* group: the KV-cache group whose block ids this region moves */
	uint64_t rbase;
	int64_t rblock_len, src_off, dst_off, len;
};
/* gen B pairing check of a handshake (kv1_regions.c): false with msg the prefill's err_msg
 * (vLLM's texts; TransferTopology's with o.tp_topology). */
bool kv1_genb_paired(const struct kv1_worker *w, const struct kv1_xfer_meta *m, char *msg,
                     size_t msz);
/* Bl: send_kv_to_decode's checks before it waits — expand both sides' regions (the metadata
 * length assertion), align them by (layer name, occurrence), check their lengths — and the
 * copies of the aligned pairs (*xr malloc'd). 0, or non-zero with msg the ERROR's err_msg. */
int kv1_bl_plan(const struct kv1_worker *w, const struct kv1_xfer_meta *m, struct kv1_xregion **xr,
                size_t *nxr, char *msg, size_t msz);
/* Bl decode: m's registered_* lists for our buffers (kv1_bl_layers_free frees them). */
int kv1_bl_layers(const struct kv1_worker *w, struct kv1_xfer_meta *m);
void kv1_bl_layers_free(struct kv1_xfer_meta *m);
/* One engine WRITE batch over the regions: one descriptor per run where a region moves whole
 * blocks at offset 0 on both sides, else one per block (vLLM's coalescing rule). */
int kv1_write_regions(struct kv1_worker *w, const char *host, int64_t port,
                      const struct kv1_xregion *x, size_t nx, const struct kv1_run *runs,
                      size_t nruns);
/* The same with the runs of each KV-cache group (HMA): region x[j] moves the runs of group
 * x[j].group, gruns[g] / gnruns[g]; one batch. */
int kv1_write_regions_g(struct kv1_worker *w, const char *host, int64_t port,
                        const struct kv1_xregion *x, size_t nx, struct kv1_run *const *gruns,
                        const size_t *gnruns, size_t ng);
/* Ground floor (kv1_util.c). */
/* Waits on cv (mu held) until signalled, deadline_ns (pd_now_ns) or at most 100 ms. */
void kv1_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_ns);
/* A ZMQ socket with linger 0, ZMQ_MAXMSGSIZE = KV1_MAX_MSG and the given receive timeout. */
void *kv1_zsock(struct kv1_worker *w, int type, int rcvtimeo_ms);
/* A handler thread's PUSH to the ROUTER thread's inproc PULL (NULL on failure). */
void *kv1_job_push_open(struct kv1_worker *w);
void kv1_set_err(char *err, size_t errsz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
