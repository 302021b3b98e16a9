/* SPDX-License-Identifier: Apache-2.0 */
/* sa_resp: the OpenAI completion / chat completion response objects of pdkv-standin (head,
 * choice, usage, kv_transfer_params), the paced next token and the request's log line. */
#include <time.h>

#include <cJSON.h>

#include "pd_log.h"
#include "pd_util.h"
#include "sa.h"
#include "sa_record.h"
#include "sa_resp.h"

cJSON *sa_resp_usage(const struct sa *s, const struct sa_req *r, long long gen)
{
	cJSON *u = cJSON_CreateObject();

	cJSON_AddNumberToObject(u, "prompt_tokens", (double)r->ntok);
	cJSON_AddNumberToObject(u, "total_tokens", (double)r->ntok + (double)gen);
	cJSON_AddNumberToObject(u, "completion_tokens", (double)gen);
	if (s->o.prompt_tokens_details)
		cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "prompt_tokens_details"),
		                        "cached_tokens", (double)r->cached_tokens);
	else
		cJSON_AddNullToObject(u, "prompt_tokens_details");
	return u;
}

/* The connector's request_finished: P may hand out kv_transfer_params (gen A). */
void sa_resp_finished(struct sa *s, struct sa_req *r, const char *finish)
{
	if (s->kv && s->conn->finished)
		s->conn->finished(s, r, finish);
}

void sa_resp_add_kvtp(const struct sa *s, cJSON *j, const struct sa_req *r)
{
	cJSON *p;

	if (!cfg_gen_is_v1(s->gen))
		return;
	p = r->kvtp_out ? cJSON_Parse(r->kvtp_out) : NULL;
	if (p)
		cJSON_AddItemToObject(j, "kv_transfer_params", p);
	else
		cJSON_AddNullToObject(j, "kv_transfer_params");
	sa_record_kvtp(p); /* what prefill answered: the router must copy it (gen A) */
}

cJSON *sa_resp_head(const struct sa_req *r, const char *object, long long created)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "id", r->id);
	cJSON_AddStringToObject(j, "object", object);
	cJSON_AddNumberToObject(j, "created", (double)created);
	cJSON_AddStringToObject(j, "model", r->model_name);
	return j;
}

/* One choice object: completions use "text", chat "message" or "delta". */
cJSON *sa_resp_choice(const struct sa_req *r, const char *text, const char *finish, bool delta,
                      bool role)
{
	cJSON *ch = cJSON_CreateObject();

	cJSON_AddNumberToObject(ch, "index", 0);
	if (!r->chat) {
		cJSON_AddStringToObject(ch, "text", text);
	} else {
		cJSON *m = cJSON_AddObjectToObject(ch, delta ? "delta" : "message");

		if (role)
			cJSON_AddStringToObject(m, "role", "assistant");
		if (!delta)
			cJSON_AddNullToObject(m, "reasoning_content");
		cJSON_AddStringToObject(m, "content", text);
		if (!delta)
			cJSON_AddArrayToObject(m, "tool_calls");
	}
	cJSON_AddNullToObject(ch, "logprobs");
	if (finish)
		cJSON_AddStringToObject(ch, "finish_reason", finish);
	else
		cJSON_AddNullToObject(ch, "finish_reason");
	cJSON_AddNullToObject(ch, "stop_reason");
	return ch;
}

void sa_resp_log(struct sa *s, const struct sa_req *r, int status, long long gen,
                 const char *finish)
{
	if (status == 200)
		sa_metrics_done(s, r, gen);
	pd_info("request %s engine_id=%s dp=%d role=%s prompt_tokens=%zu reused=%zu recomputed=%zu "
	        "kv=%s "
	        "kv_ms=%.1f gen_tokens=%lld finish=%s status=%d ms=%.1f",
	        r->id, r->engine_id, r->dp, s->kv ? s->kt.kv_role : "plain", r->ntok, r->reused,
	        r->recomputed, r->kv_note ? r->kv_note : "-", r->kv_ms, gen, finish ? finish : "-",
	        status, (double)(pd_now_ns() - r->t0_ns) / 1e6);
}

/* Next output token with pacing; returns the byte (or -1 at EOS) and sets *finish at the end. */
int sa_resp_next_tok(struct sa *s, struct sa_req *r, struct mdl_gen *g, uint64_t t0, long long *gen,
                     const char **finish)
{
	int64_t t = mdl_gen_next(g);

	(*gen)++;
	atomic_fetch_add(&s->n.generation_tokens, 1);
	mdl_pace(t0, s->o.ns_per_token, (size_t)*gen);
	sa_metrics_token(s, r);
	if (!r->first_token_seen) {
		r->first_token_seen = true;
		sa_hist_observe(&s->ttft, (double)(pd_now_ns() - r->t0_ns) / 1e9);
	}
	if (t == MDL_EOS || (*gen == 1 && s->o.fault.eos_first)) {
		*finish = "stop";
		return -1;
	}
	if (*gen >= r->max_tokens)
		*finish = "length";
	return (int)t;
}
