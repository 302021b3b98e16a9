/* SPDX-License-Identifier: Apache-2.0 */
/* sa_resp: the OpenAI completion / chat completion response objects of pdkv-standin (head,
 * choice, usage, kv_transfer_params), the paced next token and the request's log line. */
#ifndef SA_RESP_H
#define SA_RESP_H

#include <cJSON.h>

#include "sa.h"

/* The "usage" object of a response after gen generated tokens. */
cJSON *sa_resp_usage(const struct sa *s, const struct sa_req *r, long long gen);
/* The connector's request_finished: P may hand out kv_transfer_params (gen A). */
void sa_resp_finished(struct sa *s, struct sa_req *r, const char *finish);
/* V1: the response's kv_transfer_params (null when the connector gave none). */
void sa_resp_add_kvtp(const struct sa *s, cJSON *j, const struct sa_req *r);
/* id, object, created, model. */
cJSON *sa_resp_head(const struct sa_req *r, const char *object, long long created);
/* One choice object: completions use "text", chat "message" or "delta". */
cJSON *sa_resp_choice(const struct sa_req *r, const char *text, const char *finish, bool delta,
                      bool role);
/* The request's log line (and its metrics when status is 200). */
void sa_resp_log(struct sa *s, const struct sa_req *r, int status, long long gen,
                 const char *finish);
/* Next output token with pacing; returns the byte (or -1 at EOS) and sets *finish at the end. */
int sa_resp_next_tok(struct sa *s, struct sa_req *r, struct mdl_gen *g, uint64_t t0, long long *gen,
                     const char **finish);

#endif
