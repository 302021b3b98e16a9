/* SPDX-License-Identifier: Apache-2.0 */
/* px_ready: the mooncake contract's readiness — per prefill, poll /health until 2xx, then read
 * the bootstrap server's /query table (engine_id per dp rank); picks (prefill, dp) pairs. */
#ifndef PX_READY_H
#define PX_READY_H

#include <stddef.h>

#include "pd_ranks.h"

#define PX_MAX_DP        PD_MAX_DP_RANKS /* what the bootstrap server accepts (pd_ranks.h) */
#define PX_ENGINE_ID_MAX 256
#define PX_RANK_WORKERS  8   /* worker addresses of a dp rank probed before routing to it */
#define PX_WORKER_MAX    320 /* "tcp://host:port" */

/* One dp rank of a prefill's /query table: its engine id and the side-channel addresses of its
 * first PX_RANK_WORKERS tp ranks (pp 0), which the decode will connect to. */
struct px_rank {
	char engine_id[PX_ENGINE_ID_MAX];
	char worker[PX_RANK_WORKERS][PX_WORKER_MAX];
	int nworkers;
};

struct px_opts;
struct px_ready;

/* Starts the poller thread over o's prefills (o must outlive it). 0 or -errno. */
int px_ready_start(const struct px_opts *o, struct px_ready **out);
/* Stops the poller (promptly: its waits and calls are interruptible) and frees. */
void px_ready_stop(struct px_ready *r);
int px_ready_ok(struct px_ready *r);
/* What the poller waits for now, for /health ("" once ready). */
void px_ready_waiting(struct px_ready *r, char *buf, size_t n);

/* The next (prefill, dp rank) pair in round robin; only after px_ready_ok. */
struct px_pair {
	int prefill;
	int dp_rank;
	const char *engine_id;
	const char *bootstrap_addr;
};
void px_ready_pick(struct px_ready *r, struct px_pair *p);
/* Whether the pair's workers answer a TCP connect (each bounded by min(--connect-timeout,
 * 1 s); a result is reused for 1 s). 0, or -EHOSTUNREACH with why naming the rank and the
 * address that did not answer. A rank /query listed without workers is not probed. */
int px_ready_rank_check(struct px_ready *r, const struct px_pair *p, char *why, size_t whysz);

/* Parses a /query answer: {"<dp>": {"engine_id": "...", "worker_addr": {tp: {pp: addr}}}, ...}
 * with dp ranks exactly 0..n-1, 1 <= n <= PX_MAX_DP. Fills ranks[0..n-1] (ranks has PX_MAX_DP
 * entries). n, or -EPROTO with why filled. */
int px_ready_parse_query(const char *body, size_t len, struct px_rank *ranks, char *why,
                         size_t whysz);

#endif
