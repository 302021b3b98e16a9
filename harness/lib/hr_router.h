/* SPDX-License-Identifier: Apache-2.0 */
/* hr_router: internal to the runner library — a user's router in place of pdkv-proxy, the
 * stand-ins' request records and the extra phases the router_* checks grade (hr_router.c). */
#ifndef HR_ROUTER_H
#define HR_ROUTER_H

/* In the prompts of the prefill-failure phase; prefill runs with --fault fail-marker=<it>. */
#define HR_ROUTER_FAIL_MARKER "PDKV-INJECT-PREFILL-FAILURE"

#include "hr_deploy.h"

/* Some check of sc is a router_* check: the stand-ins record requests, the phases run. */
bool hr_router_wanted(const struct hr_scenario *sc);
/* argv of the scenario's proxy.cmd with {port}, {prefill_url}, ... filled in. */
cJSON *hr_router_argv(struct hr_deploy *d, char *err, size_t errsz);
/* proxy.ready (or --proxy-ready) answers 2xx; default: a 2xx on /health, /healthcheck or
 * /v1/models, or an HTTP server that has none of them. Bounded; 0 or -errno with why. */
int hr_router_wait_ready(struct hr_deploy *d, double deadline, volatile sig_atomic_t *stop,
                         char *why, size_t sz);
/* WORKDIR/prefill.requests.jsonl or decode.requests.jsonl */
void hr_router_record_path(const struct hr_deploy *d, bool prefill, char *out, size_t sz);
/* After the workload: a streamed probe, then (router_prefill_failure) requests while prefill
 * answers 500; then the records. Fills rd's router fields. */
void hr_router_phases(struct hr_deploy *d, struct hr_run_data *rd, double deadline,
                      volatile sig_atomic_t *stop);
void hr_router_data_free(struct hr_run_data *rd);
/* A body for evidence: the prompt replaced by its length, cut at max bytes (malloc'd). */
char *hr_router_show(const cJSON *body, size_t max);
/* Request i of the router phases (0..nreqs-1 the workload, nreqs the streamed probe); NULL when
 * there is none or it was never sent. */
const struct hr_req *hr_router_sent(const struct hr_run_data *rd, size_t i);
/* The evidence of a wrong request i: "workload|streamed request N: <what>[; <side> got <body>]",
 * the body that of the record rec (may be NULL). */
void hr_router_evidence(char *out, size_t sz, const struct hr_run_data *rd, size_t i,
                        const char *what, const char *side, const cJSON *rec);
/* One request of the router phases judged for a check: NULL when right, else why (in why or a
 * constant); *rec: the record of it on the check's side (NULL when it never got there). */
typedef const char *(*hr_router_judge_fn)(const struct hr_run_data *rd, size_t i,
                                          const struct hr_req *q, const cJSON **rec, char *why,
                                          size_t wsz);
/* Judges every request the router phases sent (*n of them). false, with detail, when the phases
 * did not run or some are wrong ("B of N <noun> wrong for the C contract; first: <evidence of
 * side's record>"); true and detail untouched when every one is right. */
bool hr_router_judge_sent(const struct hr_run_data *rd, hr_router_judge_fn judge, const char *side,
                          const char *noun, size_t *n, char *detail, size_t dsz);

#endif
