/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_boot: gen B's bootstrap service — the HTTP server a prefill instance runs on
 * VLLM_MOONCAKE_BOOTSTRAP_PORT (POST /register, GET /query) and its two clients. */
#ifndef KV1_BOOT_H
#define KV1_BOOT_H

#include <stddef.h>

#include "kv1_wire.h"
#include "pd_ranks.h"

#define KV1_BOOT_BODY_MAX  (64u << 10)     /* a /register body */
#define KV1_BOOT_QUERY_MAX (1u << 20)      /* a /query answer a client accepts */
#define KV1_BOOT_MAX_DP    PD_MAX_DP_RANKS /* the bound pdkv-proxy routes over too */
#define KV1_BOOT_MAX_TP    4096
#define KV1_QUERY_MAX_PP   8 /* pp ranks per tp rank a consumer takes from /query */
#define KV1_BOOT_MAX_PP    64
#define KV1_BOOT_ADDR_MAX  300

struct kv1_boot;

/* Serves on host:port (host NULL = 0.0.0.0, port 0 = any; *bound_port gets it). The shape picks
 * the re-register rule: B0 answers 400 to any second registration of a (dp, tp, pp), Bn answers
 * 200 when the address is the same. 0 or -errno. */
int kv1_boot_start(const char *host, int port, enum kv1_shape shape, struct kv1_boot **out,
                   int *bound_port);
/* What a server accepts; kv1_boot_start uses KV1_BOOT_LIMITS_DEFAULT. */
struct kv1_boot_limits {
	unsigned max_connections; /* at once (1..10000) */
	unsigned idle_timeout_s;  /* a connection idle this long is dropped (1..86400) */
};
#define KV1_BOOT_LIMITS_DEFAULT ((struct kv1_boot_limits){64, 10})
int kv1_boot_start_lim(const char *host, int port, enum kv1_shape shape,
                       const struct kv1_boot_limits *lim, struct kv1_boot **out, int *bound_port);
/* Engines registered so far (for logs and tests). */
size_t kv1_boot_engines(struct kv1_boot *b);
void kv1_boot_stop(struct kv1_boot *b);

/* POST base_url/register. Bn: at most 3 attempts on connect errors / timeouts, backoff 1 s
 * doubling (cap 10 s); B0: retries connect errors for up to 30 s. An HTTP error is not retried.
 * 0, or -1 with err set. */
int kv1_boot_register(const char *base_url, const char *engine_id, int dp_rank, int tp_rank,
                      int pp_rank, const char *addr, enum kv1_shape shape, int timeout_ms,
                      char *err, size_t errsz);

struct kv1_boot_engine {
	int dp_rank;
	char *engine_id;
	int ntp;     /* len(worker_addr) */
	char **addr; /* [tp] -> pp 0 address, NULL when that tp rank or its pp 0 is absent */
	/* PP (vLLM #44528): [tp * KV1_QUERY_MAX_PP + pp] -> that pp rank's address (NULL: none);
	 * npp[tp] of them */
	char **pp_addr;
	int *npp;
};
struct kv1_boot_table {
	struct kv1_boot_engine *v;
	size_t n;
};
/* GET base_url/query. 0, or -1 with err set. */
int kv1_boot_query(const char *base_url, int timeout_ms, struct kv1_boot_table *t, char *err,
                   size_t errsz);
const struct kv1_boot_engine *kv1_boot_find(const struct kv1_boot_table *t, const char *engine_id);
void kv1_boot_table_free(struct kv1_boot_table *t);

#endif
