/* SPDX-License-Identifier: Apache-2.0 */
/* sa: pdkv-standin's internals — options, the instance (connector ranks, counters), the request
 * pipeline (tokens -> KV from the connector or the fake model -> text) and the HTTP front end. */
#ifndef SA_H
#define SA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg/cfg.h"
#include "cfg/cfg_names.h"
#include "cfg/cfg_vllm.h"
#include "kv1/kv1.h"
#include "kvc/kvc.h"
#include "model/mdl.h"
#include "pd_opt.h"
#include "sa_v1_layout.h"

#define SA_VERSION   "0.1"
#define SA_MAX_NAMES 8
#define SA_MAX_TP    64
#define SA_MAX_DP    16
#define SA_MAX_PP    4 /* prefill pipeline stages (--pipeline-parallel-size, sa_v1_pp.c) */

enum sa_miss_policy { SA_MISS_RECOMPUTE = 0, SA_MISS_FAIL = 1, SA_MISS_WAIT = 2 };

struct sa_fault {
	bool drop, corrupt, crash;
	bool eos_first; /* the first generated token is EOS (finish "stop" after 0 tokens) */
	int delay_ms;
	int crash_after;      /* crash on this request (1 = first) */
	int fail_after;       /* fail-after=N: completions after the first N answer 500; -1 = off */
	char fail_marker[64]; /* --fault fail-marker=TEXT: bodies containing TEXT answer 500 */
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
	const char *boot_host;  /* --bootstrap-host: gen B bootstrap server bind (NULL = 0.0.0.0) */
	const char *fault_spec; /* --fault, else PDKV_FAULT */
	struct sa_fault fault;
	bool dry_run;
	/* V1 */
	const char *vllm_version; /* --vllm-version; NULL = cfg_vllm_newest */
	const char *v1_shape;     /* --v1-shape b0|bn|bl; NULL = the release's */
	bool list_versions;
	int dp;                 /* -dp / --data-parallel-size */
	int pp;                 /* -pp / --pipeline-parallel-size: prefill PP stages, 0/1 none */
	int block_size;         /* tokens per block (16) */
	int64_t num_gpu_blocks; /* --num-gpu-blocks-override; 0 = 4 max-model-len requests */
	bool kv_mla;            /* one KV buffer per layer */
	const char *kv_groups;  /* --kv-groups SPEC: hybrid model (sa_v1_hyb.c); NULL = off */
	bool prompt_tokens_details;
	/* sa_limits.c (issue 11): --max-connections, --max-connections-per-client,
	 * --idle-timeout (s), --kv-zmq-max-msg-bytes (0 = kvc's 4096), --kv-insert-timeout-ms
	 * (0 = kvc's 5 s; -1 = until shutdown) */
	unsigned max_conns, max_conns_per_client, idle_timeout_s;
	int64_t kv_zmq_max_msg_bytes;
	int kv_insert_timeout_ms;
	/* V1: --kv-block-wait-timeout-ms, how long a request waits for free KV blocks (0 = not) */
	int kv_block_wait_ms;
	/* --max-body (one request's body, bytes) and --max-body-in-flight (all bodies being
	 * received or held at once) (issue 34, D7) */
	int64_t max_body, max_body_in_flight;
	/* --kv-integrity-policy off|fail|recompute: what a decode does with KV that fails its
	 * checksum (off: decode from it, as vLLM, which has no checksum; the answer is marked
	 * X-PDKV-KV-Check: failed either way) (issue 34, N4) */
	int kv_integrity_policy;
	const char *kv_cache_device; /* --kv-cache-device cpu|cuda|cuda:N (NULL = cpu) */
	const char *record_requests; /* --record-requests FILE: JSON lines (sa_record.c) */
};

/* sa_limits.c. Defaults: a stand-in's usual client is one proxy, so the per-client limit
 * is the total's. */
#define SA_DEFAULT_MAX_CONNS            2048u
#define SA_DEFAULT_MAX_CONNS_PER_CLIENT 2048u
#define SA_DEFAULT_IDLE_TIMEOUT_S       300u
#define SA_DEFAULT_KV_BLOCK_WAIT_MS     120000
/* --kv-integrity-policy; DEFAULT (not given): off on V1, and on V0 a checksum failure stays what
 * it was before the flag, a miss handled by --kv-miss-policy */
enum { SA_KVI_DEFAULT = -1, SA_KVI_OFF, SA_KVI_FAIL, SA_KVI_RECOMPUTE };
#define SA_DEFAULT_MAX_BODY           (64ll << 20)
#define SA_DEFAULT_MAX_BODY_IN_FLIGHT (256ll << 20)
void sa_limits_default(struct sa_opts *o);
/* The limit rows of the option table (rows[] needs SA_LIMIT_ROWS entries). */
#define SA_LIMIT_ROWS 6
struct pd_opt_group sa_limits_group(struct pd_opt *rows, struct sa_opts *o);

/* Parses argv with pd_opt in vLLM's style (--a-b and --a_b, --flag=value, `serve MODEL`). 0 =
 * run, 1 = --help or --version printed (exit 0), 2 = usage error (one line printed, exit 2). */
int sa_args_parse(int argc, char **argv, struct sa_opts *o);
int sa_fault_parse(const char *spec, struct sa_fault *f, char *err, size_t errsz);
/* --fault crash[=N]: exits at the Nth request that reaches a transfer step (sa_engine.c). */
struct sa;
void sa_maybe_crash(struct sa *s, const char *where, const char *id);

struct sa_counters {
	atomic_uint_fast64_t reused, recomputed, computed, checksum_failures, transfer_failures;
	atomic_uint_fast64_t misses, requests, requests_failed, prompt_tokens, generation_tokens;
	atomic_uint_fast64_t inserted, insert_failures;
	/* V1 consumer checks: KV parts summed as their bytes landed (on the engine's receiving
	 * thread), and checks whose first hash disagreed and were redone from the final blocks */
	atomic_uint_fast64_t parts_landed, check_rescans;
	atomic_int running, inflight;
	atomic_uint_fast64_t fault_seq; /* requests that reached the transfer step (crash=N) */
	/* vLLM V1 names */
	atomic_uint_fast64_t src_local, src_cache, src_external, cached_tokens;
	atomic_uint_fast64_t mamba_n1; /* D: requests loaded for N-1 tokens (Mamba/GDN) */
	atomic_uint_fast64_t ext_queries, ext_hits, failed_recvs;
};

/* A Prometheus histogram with fixed upper bounds (+Inf implied). */
#define SA_HIST_MAX 32
struct sa_hist {
	const double *le;
	int n;
	atomic_uint_fast64_t count[SA_HIST_MAX + 1];
	atomic_uint_fast64_t total;
	atomic_uint_fast64_t sum_ns; /* sum x 1e9, so it stays an integer counter */
};
void sa_hist_observe(struct sa_hist *h, double v);

struct sa;
struct sa_req;
/* One connector generation (V0 pipe, V1 gen A / gen B) behind one interface. */
struct sa_conn {
	const char *name;
	int (*start)(struct sa *s);
	void (*stop)(struct sa *s);
	bool (*ready)(struct sa *s);
	/* The prefill step: 0 or an HTTP status with *msg / *msg_alloc set. */
	int (*prefill)(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc);
	/* The request finished generating (finish "length" | "stop"); may set r->kvtp_out. */
	void (*finished)(struct sa *s, struct sa_req *r, const char *finish);
	void (*metrics)(struct sa *s, char **buf, size_t *len, size_t *cap);
};
extern const struct sa_conn sa_conn_v0, sa_conn_v1;

#define SA_MAX_GROUPS 8
struct sa_hyb {
	int ng;                 /* groups; 0 = no --kv-groups */
	int win[SA_MAX_GROUPS]; /* group g's sliding window in tokens, 0 = full attention,
	                           SA_HYB_MAMBA = a Mamba/GDN group (MambaSpec) */
	bool wire;              /* one block list per group on the wire (else one list) */
	bool mamba;             /* a Mamba/GDN group: vLLM #46807's N-1 rule (sa_v1_hyb.c) */
};
#define SA_HYB_MAMBA (-1)
/* A request's block ids on each rank, the groups' lists one after another: group g's cnt[g]
 * ids from off[g] hold its logical blocks first[g] .. first[g] + cnt[g] - 1. */
struct sa_glay {
	size_t ng, total;
	size_t off[SA_MAX_GROUPS], cnt[SA_MAX_GROUPS], first[SA_MAX_GROUPS];
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
	/* V1 */
	const struct sa_conn *conn;
	struct cfg_vllm_info vi;
	enum cfg_gen gen;
	bool policy_fail; /* kv_load_failure_policy "fail" */
	char protocol[16];
	int bootstrap_port, abort_timeout_s;
	char boot_addr[300]; /* kv_connector_extra_config.bootstrap_server_address, "" = none */
	struct kv1_worker *w[SA_MAX_DP][SA_MAX_TP];
	/* PP prefill: stage st >= 1's workers (stage 0's are w), sa_v1_pp.c */
	struct kv1_worker *wst[SA_MAX_PP - 1][SA_MAX_DP][SA_MAX_TP];
	struct sa_owners *own[SA_MAX_DP][SA_MAX_TP]; /* V1 consumer: which check a block is for */
	char engine_ids[SA_MAX_DP][160];
	struct kv1_boot *boot;
	atomic_uint dp_rr;
	struct sa_hist ttft, xfer_time, xfer_bytes, xfer_desc;
	/* latency (vLLM's names and buckets) and pdkv's hand-off histograms, every generation */
	struct sa_hist itl, tpot, e2e, handoff_s, handoff_bytes;
	struct sa_ho_ring *ho_ring;  /* the last hand-offs one by one (GET /pdkv/handoffs) */
	struct sa_gpu *gpu;          /* KV blocks in GPU memory (sa_gpu.c), NULL = host */
	enum sa_kv_layout kv_layout; /* V1: the KV buffers (sa_v1_layout.c), set at start */
	struct sa_hyb hyb;           /* --kv-groups (sa_v1_hyb.c) */
};

/* sa_v1_hyb.c: the hybrid-model mode (--kv-groups SPEC, e.g. "full,sliding:128"): layer l is
 * in KV-cache group l % ng; a sliding group keeps the last cdiv(W, block_size) + 1 blocks of a
 * request (vLLM's get_sw_clipped_blocks), and the fake model only has those rows of its layers.
 * With HMA on the wire (CFG_F_HMA, from b2) each group is its own block list. */
int sa_hyb_parse(const char *spec, struct sa_hyb *h, char *err, size_t errsz);
/* V1 start: checks the mode against the generation and the KV placement, sets wire, logs. */
int sa_hyb_start(struct sa *s);
/* ntok tokens' layout: clipped (what is sent / received) or every block (P computing). */
void sa_hyb_layout(const struct sa *s, size_t ntok, bool clipped, struct sa_glay *gl);
/* *t0 (malloc'd, layers entries): each layer's first kept position; NULL when no mode. */
int sa_hyb_t0(const struct sa *s, size_t ntok, size_t **t0);
/* kv1's buffer -> group table for nbufs buffers (layout of sa_v1_buf). */
void sa_hyb_buf_groups(const struct sa *s, uint8_t *bg, int nbufs);
int sa_hyb_group(const struct sa *s, int layer);
/* Mamba/GDN (a "mamba" group, CFG_F_GDN_N1): the prompt tokens a remote prefill computes and
 * sends for an ntok-token prompt, ntok - 1 (vLLM #46807), else ntok. */
size_t sa_hyb_remote_tokens(const struct sa *s, size_t ntok);
/* D, after r's N-1 tokens were loaded (r->n1_full set, r->ntok = N-1): back to N tokens, the last
 * one recomputed from the loaded state (its counters; the generation seed becomes the whole
 * prompt's unless the loaded KV failed the check). 0 or -errno. */
int sa_hyb_n1_done(struct sa *s, struct sa_req *r);
/* P, at the request's end: rank w's ids in layout all (every block) -> out, the window-clipped
 * lists one after another (gcnt[g] each); the blocks left out are freed. The count in out. */
size_t sa_hyb_clip_send(struct sa *s, struct kv1_worker *w, size_t ntok, const struct sa_glay *all,
                        const int64_t *ids, int64_t *out, size_t *gcnt);

/* sa_v1_pp.c: PP on the prefill side (vLLM #44528): --pipeline-parallel-size N makes each
 * (dp, tp rank) N kv1 workers, stage st owning layers st x L/N .. (each its own TE engine, ZMQ
 * ROUTER, bootstrap registration with pp_rank st and block pool). */
int sa_pp_stages(const struct sa *s);           /* N (1 without PP) */
int sa_pp_stage(const struct sa *s, int layer); /* the stage that owns layer */
int sa_pp_first(const struct sa *s, int stage); /* its first layer */
struct kv1_worker *sa_pp_worker(struct sa *s, int dp, int k, int stage);
/* V1 start: the role, release and modes PP works with; -1 after printing why. */
int sa_pp_check(const struct sa *s);

/* One completion request after parsing. */
struct sa_req {
	char id[96];
	bool chat;
	const char *model_name;
	int64_t *tokens;
	size_t ntok;
	size_t n1_full; /* V1 Mamba/GDN decode: the prompt's length while ntok is N-1 (else 0) */
	int64_t max_tokens;
	bool ignore_eos;
	bool stream, include_usage;
	uint64_t seed; /* generation seed = checksum of the KV used */
	size_t reused, recomputed;
	bool kv_check_failed; /* the received KV failed the decode's checksum: X-PDKV-KV-Check */
	const char *kv_note;  /* "hit", "miss", "computed", ... for the log line */
	double kv_ms;         /* prefill step: KV fetched + verified, or computed (+ inserted) */
	uint64_t t0_ns;
	/* V1 */
	char engine_id[160]; /* the engine request id (vLLM's, with the random suffix if any) */
	int dp;              /* dp engine serving it (X-data-parallel-rank or round robin) */
	int dp_header;       /* X-data-parallel-rank, -1 = none */
	struct {
		bool present, do_remote_decode, do_remote_prefill, has_port;
		char remote_host[256], remote_engine_id[160], bootstrap[256], transfer_id[160];
		int64_t remote_port;
		char *text; /* the object as received (for log lines) */
	} kvp;
	bool send_tracked; /* producer: blocks held for a remote decode */
	char send_key[160];
	int64_t *blk[SA_MAX_TP];
	int64_t *bst[SA_MAX_PP - 1][SA_MAX_TP]; /* PP prefill: stage st >= 1's block ids */
	size_t nblk;
	struct sa_glay glay; /* V1: the groups in blk (one group of nblk without --kv-groups) */
	size_t cached_tokens;
	bool first_token_seen;
	char *kvtp_out; /* JSON object text for the response's kv_transfer_params */
	/* hand-off stages (CLOCK_MONOTONIC ns, 0 = not reached) and a per-stage breakdown for the
	 * debug log: "prefill has the KV" and "decode has verified it" */
	uint64_t t_kv_ready, t_kv_verified;
	uint64_t t_first_tok, t_last_tok; /* CLOCK_MONOTONIC ns of the first / latest token */
	char stages[256];
	/* V1 consumer, streamed: the received blocks still being checked (sa_v1.c); the stream
	 * sends its first token, then waits for the result before anything else */
	struct sa_verify *verify;
};

/* Where rank k's heads of row (layer l, position t) of keys / values live (kv_heads / nsh x
 * head_dim x dtype_bytes bytes). */
struct sa_kvmap {
	uint8_t *(*seg)(void *ud, bool value, int l, size_t t, int k); /* NULL: hash only */
	void *ud;
	/* t0[l]: layer l's first position the model keeps (a sliding window's, sa_v1_hyb.c);
	 * rows before it are neither written, read nor hashed. NULL: every position. */
	const size_t *t0;
	/* bytes from one head's row of the segment to the next (a head-major block, SA_KV_HEADS);
	 * 0: the rank's heads are adjacent rows */
	size_t hstride;
};
/* Writes the fake model's KV of tokens for nsh ranks where map says (NULL: nowhere, rows are only
 * hashed), hashing as it goes: *seed = mdl_kv_checksum of the whole KV, sums[k] (if sums) of rank
 * k's shard. 0 or -errno. */
int sa_kv_gen(const struct mdl_geom *g, const int64_t *tokens, size_t n, int nsh,
              const struct sa_kvmap *map, uint64_t *seed, uint64_t *sums);
/* sa_kv_gen's hash-only form (map NULL: the expected checksum of a prompt) or block writing,
 * started on pd_par_threads() threads (low: at nice 10) while the caller does something else;
 * sa_kv_gen_finish takes the parts not started yet on the calling thread, at its own priority,
 * waits for the rest, sets *seed and frees the job. tokens must live until then. NULL: no
 * memory (or bad arguments). */
struct sa_kvjob;
struct sa_kvjob *sa_kv_gen_start(const struct mdl_geom *g, const int64_t *tokens, size_t n, int nsh,
                                 const struct sa_kvmap *map, bool low);
void sa_kv_gen_finish(struct sa_kvjob *job, uint64_t *seed);
/* Hashes the KV where map says into *seed and, unless same is NULL, compares it with the fake
 * model's rows (*same). Both run each layer's keys and values as parts on pd_par_threads(). */
int sa_kv_scan(const struct mdl_geom *g, const int64_t *tokens, size_t n, int nsh,
               const struct sa_kvmap *map, uint64_t *seed, bool *same);

/* sa_kvdiff.c: after a checksum mismatch, where keys/values ([L,T,nheads,D] of heads head0..)
 * differ from the fake model's for tokens: up to 3 byte ranges each, with their layer, token
 * and head, and whether they hold zeros, into out. */
void sa_kv_diff(const struct mdl_geom *g, const int64_t *tokens, size_t ntok, int head0, int nheads,
                int shard, int nshards, const void *keys, const void *values, char *out, size_t sz);

/* sa_v0hash.c: hashes a V0 answer's keys and values (mdl_kv_checksum) chunk by chunk while
 * their READs land. */
struct sa_v0hash {
	pthread_mutex_t mu; /* pieces come from the engine's lanes and the select's thread */
	int layers;
	size_t row_bytes, n;    /* n: bytes of keys (and of values), from their first chunk */
	bool bad, ok;           /* bad: a chunk did not fit; the caller checks it the slow way */
	const void *k, *v;      /* the tensors the sum is of */
	const uint8_t *base[2]; /* keys', values' data as their chunks showed it */
	size_t seen[2];         /* bytes of keys, values hashed or left for their edges */
	uint64_t *edge[2];      /* rows cut by a chunk edge (hashed when the tensor arrived) */
	size_t nedge[2], capedge[2];
	uint64_t sum, *acc; /* acc: the 2 x layers parts' row sums, then their final sums */
};
/* The hooks of kvc_drop_select_pieces (ud = the struct); sa_v0hash_get gives the checksum of
 * the keys and values it saw whole (mdl_kv_checksum's value), false if it did not see them so. */
void sa_v0hash_init(struct sa_v0hash *h, int layers, size_t row_bytes);
void sa_v0hash_piece(void *ud, int i, size_t off, const void *data, size_t len, size_t total);
void sa_v0hash_arrive(void *ud, int i, const struct kvc_tensor *t);
bool sa_v0hash_get(struct sa_v0hash *h, const void *k, const void *v, size_t n, uint64_t *sum);
void sa_v0hash_destroy(struct sa_v0hash *h);

/* sa_v1_check.c: a V1 consumer worker's blocks -> the check they are received for, so each
 * piece of a WRITE is summed by the engine thread that received it (kv1_opts.on_piece, host
 * memory, not MLA); NULL where that does not apply or out of memory (the check then reads the
 * blocks back). */
struct sa_owners *sa_owners_new(struct sa *s, int dp, int rank, size_t nblocks);
void sa_owners_free(struct sa_owners *o);
void sa_v1_piece(void *ud, int buf, int64_t block, size_t off, const uint8_t *data, size_t len);

/* Appends " name=ms" (since *t, then *t = now) to r->stages. */
void sa_stage(struct sa_req *r, const char *name, uint64_t *t);

/* Prefill step: KV from the connector (consumer) or the model (+ insert for a producer).
 * 0, or an HTTP status (>= 400) with *msg set (static or malloc'd in *msg_alloc). */
int sa_prefill(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc);

/* V1 consumer block layout (sa_v1_seg.c): bytes of one token's K (or V) row of one tp rank's
 * heads, the KV buffer of (layer, keys/values) and where rank k's row of position t sits in the
 * request's blocks blk[k] (its first head's row; the next heads' follow at sa_v1_hstride when
 * that is not 0). */
size_t sa_v1_row_bytes(const struct sa *s);
int sa_v1_buf(const struct sa *s, bool value, int l);
uint8_t *sa_v1_seg(struct sa *s, int dp, int64_t *const *blk, bool value, int l, size_t t, int k);
/* Rank k's row of (layer l, position t) in block id. */
uint8_t *sa_v1_seg_id(struct sa *s, int dp, int k, int64_t id, bool value, int l, size_t t);
/* sa_kvmap.hstride of the stand-in's block layout (0 unless head-major). */
size_t sa_v1_hstride(const struct sa *s);
/* The same in a grouped layout (gl NULL: one group); NULL for a position outside its group's
 * blocks. */
uint8_t *sa_v1_seg_g(struct sa *s, int dp, int64_t *const *blk, const struct sa_glay *gl,
                     bool value, int l, size_t t, int k);
/* The check of a request's received blocks (sa_v1_check.c): start before the handshake (its
 * thread hashes layers as they land); transfer_done after the receive; join gives the hash of
 * the blocks; free ends it. Streamed requests hand it over to r instead (r->seed = expect) and
 * sa_verify_wait ends it: 0 = the KV was the prompt's (or nothing was pending), -EBADMSG = it
 * was not (counted, logged), -errno = it could not be read. */
struct sa_verify *sa_check_start(struct sa *s, const struct sa_req *r, int64_t **blk, size_t nb);
void sa_check_transfer_done(struct sa_verify *v, bool ok, uint64_t t_arrived);
int sa_check_join(struct sa_verify *v, uint64_t expect, uint64_t *got);
uint64_t sa_check_done_ns(const struct sa_verify *v);
void sa_check_free(struct sa_verify *v);
void sa_check_hand_over(struct sa_req *r, struct sa_verify *v, int64_t **blk, uint64_t expect);
int sa_verify_wait(struct sa_req *r);

/* Engine request id of r (vLLM's derivation; random suffix on releases that add one). */
void sa_v1_engine_id(struct sa *s, struct sa_req *r);

/* sa_v1_blocks.c: where rank k's heads of (layer, token) sit in a request's blocks (a sa_kvmap
 * seg callback on a struct sa_v1_blkmap). */
struct sa_v1_blkmap {
	struct sa *s;
	int dp;
	int64_t **blk;
	const struct sa_glay *gl;   /* NULL: one group */
	int64_t *(*bst)[SA_MAX_TP]; /* PP prefill: stage st >= 1's ids (sa_v1_pp.c) */
};
uint8_t *sa_v1_blk_seg(void *ud, bool value, int l, size_t t, int k);
/* nb blocks for rank k of stage st, waiting while the pool is short (--kv-block-wait-timeout-ms);
 * 0, or -ENOSPC (more than the whole pool), -ETIMEDOUT, -ECANCELED, -ENOMEM with why set. */
int sa_v1_alloc_blocks(struct sa *s, struct sa_req *r, int k, int st, size_t nb, int64_t **out,
                       char *why, size_t wsz);
/* A local prefill (recompute: counted as recomputed); 0 or -errno. */
int sa_v1_local_compute(struct sa *s, struct sa_req *r, bool recompute);
/* sa_v1_recv.c: the consumer half of a V1 prefill step; 0 or an HTTP status with *msg or
 * *msg_alloc set. */
int sa_v1_prefill_consumer(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc);

/* V0's prefill step (the pipe, or a plain instance). */
int sa_v0_prefill(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc);
void sa_metrics_init(struct sa *s);
/* A token was generated (TTFT on the first, inter-token latency after). */
void sa_metrics_token(struct sa *s, struct sa_req *r);
/* The request ended after gen tokens: e2e latency, time per output token. */
void sa_metrics_done(struct sa *s, const struct sa_req *r, long long gen);
/* One hand-off seen from this side: secs from "prefill has the KV" (P) / the start of the pull
 * (D) to "handed over" (P: WRITE done / inserted) / "verified" (D), and the KV bytes. */
void sa_metrics_handoff(struct sa *s, double secs, uint64_t bytes);
/* GET /pdkv/handoffs?after=SEQ: {"seq": last, "seconds": [...], "bytes": [...]} — the hand-offs
 * numbered after SEQ still in the ring (the last SA_HO_RING), for exact per-request percentiles
 * (`pdkv bench serve`); malloc'd JSON text */
#define SA_HO_RING 16384
char *sa_metrics_handoffs_json(struct sa *s, unsigned long long after);
void sa_metrics_free(struct sa *s);

/* Prometheus text; malloc'd. */
char *sa_metrics_text(struct sa *s);
/* Gen B: vLLM's "KV Transfer metrics: ..." line every VLLM_LOG_STATS_INTERVAL s (main loop). */
void sa_metrics_tick(struct sa *s);
/* sa_engine.c: no KV connector, or the connector says it is ready (/health, main). */
bool sa_ready(struct sa *s);

/* HTTP server (libmicrohttpd, thread per connection). */
struct sa_http;
int sa_http_start(struct sa *s, struct sa_http **out, int *bound_port);
/* Stops accepting; waits up to grace_ms for in-flight requests; returns how many remain. */
int sa_http_quiesce(struct sa_http *h, int grace_ms);
void sa_http_stop(struct sa_http *h);

#endif
