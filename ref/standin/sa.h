/* sa: pdkv-standin's internals — options, the instance (connector ranks, counters), the request
 * pipeline (tokens -> KV from the connector or the fake model -> text) and the HTTP front end. */
#ifndef SA_H
#define SA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg/cfg.h"
#include "kvc/kvc.h"
#include "model/mdl.h"

#define SA_VERSION   "0.1"
#define SA_MAX_NAMES 8
#define SA_MAX_TP    64

enum sa_miss_policy { SA_MISS_RECOMPUTE = 0, SA_MISS_FAIL = 1, SA_MISS_WAIT = 2 };

struct sa_fault {
	bool drop, corrupt, crash;
	int delay_ms;
	int crash_after; /* crash on this request (1 = first) */
};

struct sa_opts {
	const char *model;
	const char *served[SA_MAX_NAMES];
	int nserved;
	const char *host; /* NULL = all addresses */
	int port;
	int64_t max_model_len;
	int tp;
	const char *kv_transfer_config;
	const char *api_key;
	struct mdl_geom geom;
	uint64_t ns_per_token;
	int miss_policy;
	int kv_wait_timeout_ms;
	int kv_select_timeout_ms;
	int frame_format;
	int miss_mode;
	const char *zmq_bind_host;
	const char *fault_spec; /* --fault, else PDKV_FAULT */
	struct sa_fault fault;
	bool dry_run;
};

/* Parses argv like vLLM's argparse. 0 = run, 1 = --help printed (exit 0), 2 = usage error
 * (message printed, exit 2). */
int sa_args_parse(int argc, char **argv, struct sa_opts *o);
int sa_fault_parse(const char *spec, struct sa_fault *f, char *err, size_t errsz);

struct sa_counters {
	atomic_uint_fast64_t reused, recomputed, computed, checksum_failures, transfer_failures;
	atomic_uint_fast64_t misses, requests, requests_failed, prompt_tokens, generation_tokens;
	atomic_uint_fast64_t inserted, insert_failures;
	atomic_int running, inflight;
	atomic_uint_fast64_t fault_seq; /* requests that reached the transfer step (crash=N) */
};

struct sa {
	struct sa_opts o;
	bool kv; /* a --kv-transfer-config was given */
	bool producer, consumer;
	struct cfg_kv_transfer kt;
	struct cfg_mooncake mc;
	struct kvc *kvc[SA_MAX_TP];
	int nkvc;
	struct sa_counters n;
	atomic_bool stopping;
	double started;
};

/* One completion request after parsing. */
struct sa_req {
	char id[96];
	bool chat;
	const char *model_name;
	int64_t *tokens;
	size_t ntok;
	int64_t max_tokens;
	bool ignore_eos;
	bool stream, include_usage;
	uint64_t seed; /* generation seed = checksum of the KV used */
	size_t reused, recomputed;
	const char *kv_note; /* "hit", "miss", "computed", ... for the log line */
	double kv_ms;        /* prefill step: KV fetched + verified, or computed (+ inserted) */
	uint64_t t0_ns;
};

/* Prefill step: KV from the connector (consumer) or the model (+ insert for a producer).
 * 0, or an HTTP status (>= 400) with *msg set (static or malloc'd in *msg_alloc). */
int sa_prefill(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc);

/* Prometheus text; malloc'd. */
char *sa_metrics_text(struct sa *s);
bool sa_ready(struct sa *s);

/* HTTP server (libmicrohttpd, thread per connection). */
struct sa_http;
int sa_http_start(struct sa *s, struct sa_http **out, int *bound_port);
/* Stops accepting; waits up to grace_ms for in-flight requests; returns how many remain. */
int sa_http_quiesce(struct sa_http *h, int grace_ms);
void sa_http_stop(struct sa_http *h);

#endif
