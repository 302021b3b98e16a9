/* px_ready: the mooncake contract's readiness — per prefill, poll /health until 2xx, then read
 * the bootstrap server's /query table (engine_id per dp rank); picks (prefill, dp) pairs. */
#ifndef PX_READY_H
#define PX_READY_H

#include <stddef.h>

#define PX_MAX_DP        64
#define PX_ENGINE_ID_MAX 256

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

/* Parses a /query answer: {"<dp>": {"engine_id": "...", ...}, ...} with dp ranks exactly
 * 0..n-1, n >= 1. Fills ids[n][PX_ENGINE_ID_MAX]. n, or -EPROTO with why filled. */
int px_ready_parse_query(const char *body, size_t len, char (*ids)[PX_ENGINE_ID_MAX], char *why,
                         size_t whysz);

#endif
