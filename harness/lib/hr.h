/* SPDX-License-Identifier: Apache-2.0 */
/* hr: the scenario runner library behind `pdkv run` — scenario files, the processes of one 1P1D
 * deployment, the OpenAI workload, /metrics scraping, the checks and the reporters. */
#ifndef HR_H
#define HR_H

#include <cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define HR_VERSION "0.1"

/* ---- scenario (hr_scenario.c) -------------------------------------------------------------- */
enum { HR_NODE_PREFILL = 1, HR_NODE_DECODE = 2, HR_NODE_PLAIN = 4, HR_NODE_PROXY = 8 };
enum hr_meta { HR_META_ETCD = 0, HR_META_REDIS, HR_META_HTTP, HR_META_P2P };

struct hr_workload {
	int requests;
	int concurrency;
	int max_tokens;
	bool stream;
	int stream_pct;     /* workload.stream_percent: this share streamed (default: stream) */
	int disconnect_pct; /* workload.disconnect_percent: this share cut mid-answer */
	bool ignore_eos;    /* workload.ignore_eos: sent as vLLM's ignore_eos */
	bool chat;          /* endpoint "chat" = /v1/chat/completions, else /v1/completions */
	int *prompt_tokens; /* one planned prompt length per request (deterministic) */
	char **prompts;     /* literal prompts, cycled (NULL = generated ones of prompt_tokens) */
	size_t nprompts;
};

struct hr_scenario {
	char *path; /* the file it came from ("" for built-in) */
	char *dir;  /* directory of that file: fixture paths are relative to it */
	char *name;
	char *description;
	enum hr_meta meta;
	char *protocol; /* "tcp" | "rdma" | "nvlink_intra" */
	char *prefill_host, *decode_host, *proxy_host;
	char *model;
	int max_model_len;
	/* templates, ${VAR} substituted at run time (hr_subst) */
	cJSON *mooncake;                                               /* object */
	cJSON *kv_prefill;                                             /* object */
	cJSON *kv_decode;                                              /* object */
	cJSON *standin_args, *prefill_args, *decode_args, *proxy_args; /* arrays of strings */
	struct hr_workload wl;
	char **checks;
	size_t nchecks;
	char *expect_fail;    /* NULL or the check that must FAIL */
	char *expect_match;   /* NULL or a substring the failing check's numbers must contain */
	unsigned expect_exit; /* HR_NODE_* bits: processes allowed to exit during the run */
	double timeout_s;     /* 0 = runner default */
	/* connector generation: "vllm" and/or "generation" (hr_scenario_gen.c) */
	char *vllm; /* the release the stand-ins emulate (--vllm-version), never NULL */
	int gen;    /* enum cfg_gen */
	/* per side ("vllm": {"prefill": X, "decode": Y}, hr_scenario_sides.c): [0] prefill,
	 * [1] decode; with one release both equal vllm / gen, else vllm / gen are the newer side's
	 * (the default router contract follows it) */
	char *vllm_side[2];
	int gen_side[2];
	char *proxy_contract; /* pdkv-proxy --contract: v0 | toy | mooncake | auto */
	cJSON *proxy_cmd;  /* "proxy.cmd": a user's router (array of strings), NULL = pdkv-proxy */
	char *proxy_ready; /* "proxy.ready": its readiness path, NULL = the default probe */
	cJSON *env;        /* object: extra environment of the prefill and decode stand-ins */
	/* separate network stacks: "hosts", "faults", "mtu" (hr_hosts.c) */
	cJSON *hosts;   /* object role -> host name, NULL = everything on the runner's stack */
	cJSON *faults;  /* array of link faults, NULL = none */
	int mtu;        /* of the namespaces' links, 0 = 1500 */
	bool needs_gpu; /* "needs": ["gpu"] (or protocol nvlink_intra): NOTRUN without CUDA */
	char *launcher; /* "launcher": "local" | "ssh" | "slurm"; NULL = not given */
};

/* Parses and validates one scenario file. On error returns -1 with err = "FILE: FIELD: what is
 * wrong, expected ...". */
int hr_scenario_load(const char *path, struct hr_scenario *sc, char *err, size_t errsz);
/* Same, from JSON text (path is only used in messages and for fixture paths). */
int hr_scenario_parse(const char *path, const char *json, struct hr_scenario *sc, char *err,
                      size_t errsz);
void hr_scenario_free(struct hr_scenario *sc);
/* "vllm", "generation", "proxy" and "env" of a scenario (called by hr_scenario_parse). */
int hr_scenario_parse_gen(const char *path, const cJSON *root, struct hr_scenario *sc, char *err,
                          size_t errsz);
/* "vllm" given as {"prefill": "X", "decode": "Y"} (v, an object): fills vllm, gen and the
 * per-side fields; "generation" (g) must be absent. -1 with err naming the field. */
int hr_scenario_parse_sides(const char *path, const cJSON *v, const cJSON *g,
                            struct hr_scenario *sc, char *err, size_t errsz);
/* The string form: both sides from vllm / gen. */
int hr_scenario_same_sides(struct hr_scenario *sc);
/* "X" or "X/Y" (prefill/decode) when the sides differ, for messages. */
const char *hr_scenario_vllm_label(const struct hr_scenario *sc, char *buf, size_t sz);
const char *hr_meta_name(enum hr_meta m);
/* The router contract graded against: "proxy.contract", else the generation's (v0 / toy for
 * gen A / mooncake for gen B). */
const char *hr_scenario_grade_contract(const struct hr_scenario *sc);
bool hr_scenario_has_check(const struct hr_scenario *sc, const char *check);

/* ---- ${VAR} substitution (hr_subst.c) ------------------------------------------------------ */
#define HR_MAX_VARS 32
struct hr_vars {
	size_t n;
	char name[HR_MAX_VARS][48];
	char value[HR_MAX_VARS][256];
};
int hr_vars_set(struct hr_vars *v, const char *name, const char *value);
const char *hr_vars_get(const struct hr_vars *v, const char *name);
/* True for names the runner can provide: PREFILL_HOST, DECODE_HOST, PROXY_HOST, METADATA,
 * METADATA_HOSTPORT, WORKDIR and PORT_<NAME>. */
bool hr_var_known(const char *name);
/* Calls fn for every ${NAME} in s; stops and returns fn's non-zero value. -1 on a bad ${. */
int hr_vars_scan(const char *s, int (*fn)(const char *name, void *ud), void *ud);
/* Returns a malloc'd copy of s with every ${NAME} replaced; NULL (and err) on an unset name. */
char *hr_subst(const struct hr_vars *v, const char *s, char *err, size_t errsz);
/* Deep copy of a JSON template with every string value substituted. */
cJSON *hr_subst_json(const struct hr_vars *v, const cJSON *tmpl, char *err, size_t errsz);
/* A base port B on host such that B..B+span-1 and B+100..B+100+span-1 are all free now
 * (the V0 pipe binds B+9+2r and B+10+2r; identical URLs move decode to B+100). */
int hr_pick_port_block(const char *host, int span);

/* ---- Prometheus text (hr_metrics.c) -------------------------------------------------------- */
struct hr_metrics {
	size_t n;
	char **name; /* metric name without labels; samples with labels are summed */
	double *value;
};
int hr_metrics_parse(const char *text, struct hr_metrics *m);
/* Value or NAN when absent. */
double hr_metrics_get(const struct hr_metrics *m, const char *name);
void hr_metrics_free(struct hr_metrics *m);
/* GET url (the /metrics endpoint) and parse; 0 or negative. */
int hr_metrics_scrape(const char *url, int timeout_ms, struct hr_metrics *m);
/* GET url (no proxy, bounded) into b, body NUL-terminated (the caller frees b->p); the HTTP
 * status, 0 when there was no answer, -ENOMEM. */
struct pd_buf;
long hr_http_get(const char *url, int timeout_ms, struct pd_buf *b);

/* ---- the OpenAI workload (hr_workload.c) --------------------------------------------------- */
struct hr_req {
	int idx;
	int planned_tokens;
	char *prompt;
	long status;       /* HTTP status, 0 = no answer */
	char *body;        /* raw body (SSE text for streams) */
	char *text;        /* assembled completion text, NULL when the body was not valid */
	char *invalid;     /* why the body is not a valid OpenAI response, NULL when it is */
	bool done_marker;  /* stream ended with data: [DONE] */
	long usage_prompt; /* usage.prompt_tokens, -1 when absent */
	long usage_completion;
	long usage_cached; /* usage.prompt_tokens_details.cached_tokens, -1 when absent */
	double secs;
	char curl_err[128];
	bool kv_check_failed; /* X-PDKV-KV-Check: failed (a pdkv-standin decode; issue 34 N4) */
	bool stream;          /* this request streamed (workload.stream / stream_percent) */
	bool disconnect;      /* this client hangs up mid-answer (workload.disconnect_percent) */
	bool cut;             /* ... and did: no full answer expected from it */
	char transfer_id[96]; /* X-PDKV-Transfer-Id: the gen-B transfer_id decode pulled with */
};
/* Deterministic prompt of about ntok tokens for request idx (unique per idx and seed). */
char *hr_prompt_text(int idx, int ntok, unsigned seed);
/* Sends every request to base_url ("http://h:p") with at most wl->concurrency in flight.
 * progress (may be NULL) is called after each completion. Stops early when *stop becomes
 * non-zero or the deadline (pd_now_s() clock) passes; unsent requests keep status 0. */
int hr_workload_run(const char *base_url, const struct hr_scenario *sc, struct hr_req *reqs,
                    double deadline, volatile sig_atomic_t *stop,
                    void (*progress)(int done, int total, void *ud), void *ud);
/* Validates one response body as the OpenAI answer to a (chat|completion, stream) request;
 * fills text/invalid/done_marker/usage. Exposed for tests. */
void hr_response_parse(struct hr_req *r, bool chat, bool stream);
void hr_reqs_free(struct hr_req *reqs, size_t n);
/* {"total","sent","ok","prompt_tokens","latency_p50_s","latency_max_s"} of one run's requests */
cJSON *hr_request_summary(const struct hr_req *q, size_t n);
/* The JSON body sent for prompt (malloc'd): the client's body a router must pass on. */
char *hr_request_body(const struct hr_scenario *sc, const char *prompt);

/* ---- what one run produced, what checks look at (hr_check.c) ------------------------------- */
struct hr_run_data {
	const struct hr_scenario *sc;
	struct hr_req *reqs;  /* through the proxy */
	struct hr_req *plain; /* the same requests on the plain stand-in, NULL if none */
	size_t nreqs;
	struct hr_metrics p_before, p_after, d_before, d_after;
	bool have_metrics;
	const char *startup_error; /* why the deployment did not come up; NULL when it did */
	char pf_notes[2048];       /* process faults done (hr_faults.c), "" when none */
	/* router conformance (hr_router.c): what reached the stand-ins, the extra phases */
	const char *contract;  /* the router contract graded against: v0 | toy | mooncake */
	bool router_phase;     /* the records and extra phases below were collected */
	cJSON *rec_p, *rec_d;  /* arrays of --record-requests lines of prefill / decode */
	struct hr_req *probe;  /* one streamed request (router_stream) */
	struct hr_req *fail;   /* requests sent while prefill answered 500s */
	size_t nfail;          /* router_prefill_failure */
	cJSON *p_query;        /* gen B: prefill's bootstrap /query answer */
	char p_bootstrap[160]; /* gen B: http://<prefill host>:<bootstrap port> */
	/* external mode (hr_external.c): no process of ours; real vLLM signals */
	bool external;
	bool have_reference;                /* plain = answers of the reference instance */
	char *d_before_text, *d_after_text; /* decode's raw /metrics (labels kept) */
	const char *vllm; /* the release decode runs (--external vllm=, a scenario's "vllm"), or
	                     NULL: picks the by-source era (cfg_vllm.h) kv_reused expects */
	/* --external mamba=1: the model has Mamba/GDN layers (vLLM #46807): decode loads N-1
	 * prompt tokens per request and computes the last one */
	bool mamba;
	struct hr_res *res; /* the "resources" check's samples (hr_check_resources.c), or NULL */
};
struct hr_check_result {
	const char *name;
	bool pass;
	bool notrun;       /* external mode: the check could not run here (detail says why) */
	char detail[1024]; /* the numbers; on PASS a short summary */
};
struct hr_check {
	const char *name;
	const char *what; /* one line for --list / README */
	bool needs_plain; /* the runner starts a plain (non-disaggregated) stand-in */
	/* returns true for PASS; writes the numbers into detail either way */
	bool (*fn)(const struct hr_run_data *rd, char *detail, size_t sz);
};
const struct hr_check *hr_check_find(const char *name);
/* Issue 34 N3: "; transfer_id X was used by requests i and j (...)" appended to detail when two
 * requests' answers carry the same X-PDKV-Transfer-Id; nothing when none was reused. */
void hr_note_dup_transfer_ids(const struct hr_req *reqs, size_t n, char *detail, size_t sz);
size_t hr_check_count(void);
const struct hr_check *hr_check_at(size_t i);
/* Delta of a counter between two scrapes (0 when absent in both; hr_metrics.c). */
double hr_metric_delta(const struct hr_metrics *before, const struct hr_metrics *after,
                       const char *name);

/* ---- fd / thread / RSS samples of the deployment's processes (hr_check_resources.c) ---- */
/* Starts sampling /proc/PID of each process (n of them, names for the report) every 0.5 s. */
struct hr_res *hr_res_start(const char *const *names, const int *pids, size_t n);
/* After the workload: waits idle_s with no request in flight, samples once more, stops. */
void hr_res_stop(struct hr_res *res, double idle_s);
void hr_res_free(struct hr_res *res);
/* One sample in by hand (tests): process i, at t seconds since the start. */
void hr_res_add(struct hr_res *res, size_t i, double t, long fds, long threads, long rss_kib);
/* The soak's figures: requests, streamed, cut, wrong, lost, and per process fds / threads / RSS
 * at start, warm (after a fifth of the run), peak and end. */
cJSON *hr_res_json(const struct hr_run_data *rd);

/* ---- results (hr_result.c) and reporters (hr_report_*.c) ----------------------------------- */
enum hr_status { HR_PASS = 0, HR_FAIL, HR_NOTRUN };
/* kv_reused in external mode: vLLM's signals chosen by what decode's /metrics offers
 * (hr_src.c); NOTRUN when it offers none. */
enum hr_status hr_external_kv_reused(const struct hr_run_data *rd, char *detail, size_t sz);
/* vLLM's vllm:prompt_tokens_by_source_total between two raw /metrics texts against n prompt
 * tokens in ok fully transferred requests, n1 of them loaded for N-1 tokens (Mamba/GDN, vLLM
 * #46807: external N-1, local_compute 1 each), in the era of release vllm (NULL: the era
 * decode's /metrics shows). FAIL names the era and the numbers. */
/* GET url (a /metrics endpoint), bounded: the body (malloc'd) or NULL. */
char *hr_metrics_text(const char *url);
enum hr_status hr_src_judge(const char *before, const char *after, const char *vllm, double n,
                            double ok, double n1, char *detail, size_t sz);
struct hr_result {
	char *name;
	char *path;
	enum hr_status status;
	char reason[1400]; /* FAIL/NOTRUN: why, one line */
	double secs;
	double startup_s, workload_s;
	struct hr_check_result *checks;
	size_t nchecks;
	char *expect_fail;
	cJSON *metrics;  /* {"prefill":{name:delta},"decode":{...}} or NULL */
	cJSON *requests; /* summary: sent, ok, latency */
	cJSON *logs;     /* per process: warning / error counts and the first of each */
	char workdir[512];
	bool kept;
	char *router; /* the router graded (its command line and contract), NULL = none */
	bool error;   /* FAIL because the scenario could not be loaded (JUnit <error>) */
};
/* The per-router table: check, PASS/FAIL, evidence (hr_report_text.c). */
void hr_report_router_table(FILE *f, const struct hr_result *r);
const char *hr_status_name(enum hr_status s);
void hr_result_free(struct hr_result *r);
/* Appends "; <text>" (or "<text>" when buf is empty) to a fixed buffer of notes; a note that
 * does not fit is dropped. */
void hr_note_add(char *buf, size_t sz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

struct hr_report {
	struct hr_result *v;
	size_t n;
	double wall_s;
	char *workdir;
	bool interrupted;
	cJSON *versions; /* {"pdkv-run": ..., "etcd": ...}; may be NULL */
};
/* fabtests-style line: "%-60s%8s%8.1fs", then indented details for FAIL/NOTRUN. */
void hr_report_line(FILE *f, const struct hr_result *r, bool verbose);
void hr_report_summary(FILE *f, const struct hr_report *rep);
int hr_report_json(const char *path, const struct hr_report *rep);
int hr_report_junit(const char *path, const struct hr_report *rep);

/* ---- running one scenario (hr_run.c, hr_deploy.c) ------------------------------------------ */
struct hr_hosts;
struct hr_slurm;
struct hr_opts {
	const char *workdir; /* parent of the per-scenario work dirs */
	bool keep;           /* keep work dirs of passed scenarios too */
	bool verbose;
	double timeout_s;            /* per scenario, 0 = scenario's own or 120 */
	FILE *progress;              /* progress lines ("# ..."), NULL = none */
	bool progress_tty;           /* progress is a terminal: one line, rewritten in place */
	volatile sig_atomic_t *stop; /* set by SIGINT/SIGTERM */
	/* --hosts: scenarios with "hosts" run on these machines through ssh (hr_ssh.h) */
	const struct hr_hosts *hosts;
	const char *ssh_key; /* --ssh-key: ssh -i, NULL = ssh's own choice */
	int ssh_timeout_s;   /* ConnectTimeout, 0 = 10 */
	/* --launcher: NULL (the scenario's "launcher", else ssh for --hosts), "slurm" */
	const char *launcher;
	struct hr_slurm *slurm; /* the allocation slurm runs use (hr_slurm.h), opened once */
	/* --proxy-cmd: run the user's router instead of pdkv-proxy, with every router_* check */
	const cJSON *proxy_cmd;  /* array of strings with {placeholders}, NULL = the scenario's */
	const char *proxy_ready; /* --proxy-ready PATH */
	const char *proxy_label; /* appended to the scenario's name in the report */
	/* --external: prefill=URL,decode=URL,proxy=URL[,reference=URL] */
	const char *ext_prefill, *ext_decode, *ext_proxy, *ext_reference;
	const char *ext_vllm; /* --external vllm=X.Y: decode's release (kv_reused's era) */
	bool ext_mamba;       /* --external mamba=1: a Mamba/GDN model (N-1 loaded, #46807) */
	/* pdkv bench serve: replaces the scenario's workload and checks; called once every node is
	 * healthy with the proxy's base URL and the stand-ins' /metrics URLs; a non-zero return
	 * marks the scenario failed */
	int (*serve)(const char *proxy_url, const char *prefill_metrics, const char *decode_metrics,
	             void *ud);
	void *serve_ud;
};
/* Runs sc; always stops every process it started. Fills res. */
void hr_run_scenario(const struct hr_scenario *sc, const struct hr_opts *o, struct hr_result *res);
/* Binary next to pdkv-run or in $PDKV_BIN (hr_node.c); 0 or -ENOENT. */
int hr_find_bin(const char *name, char *out, size_t outsz);
/* ---- router conformance (hr_router.c) and external mode (hr_external.c) ------------------- */
/* True for the checks that grade the router from the stand-ins' records. */
bool hr_check_is_router(const char *name);
/* Splits a --proxy-cmd line into words (shell-style quotes '...' and "..."); NULL on error. */
cJSON *hr_router_split(const char *line, char *err, size_t errsz);
/* The prompt text of a recorded body (completions "prompt", chat last message), or NULL. */
const char *hr_router_prompt(const cJSON *body);
/* The record (of rec, an array) whose prompt is prompt; NULL when none arrived. */
const cJSON *hr_router_find(const cJSON *rec, const char *prompt);
/* Runs sc against the deployment named by o->ext_* (starts nothing). Fills res. */
void hr_run_external(const struct hr_scenario *sc, const struct hr_opts *o, struct hr_result *res);

/* Reason string when the scenario cannot run on this host (rdma without devices), else NULL. */
const char *hr_capability_missing(const struct hr_scenario *sc, char *buf, size_t sz);

#endif
