/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_router_prefill_request: what the router sent prefill — max_tokens 1, stream false,
 * no stream_options, and the kv_transfer_params the graded contract needs (spec 2.4). */
#include "hr_router.h"

#include <stdlib.h>
#include <string.h>

static const char *const toy_keys[] = {"remote_engine_id", "remote_block_ids", "remote_host",
                                       "remote_port"};

/* NULL when body is right for contract, else what is wrong */
static const char *judge(const cJSON *body, const char *contract, char *why, size_t sz)
{
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(body, "max_tokens");
	const cJSON *mct = cJSON_GetObjectItemCaseSensitive(body, "max_completion_tokens");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(body, "stream");
	const cJSON *kv = cJSON_GetObjectItemCaseSensitive(body, "kv_transfer_params"), *x;
	if (!cJSON_IsObject(body))
		return "its body is not a JSON object";
	if (!cJSON_IsNumber(mt) || mt->valuedouble != 1)
		return mt ? "max_tokens is not 1" : "max_tokens missing (must be 1)";
	if (mct && (!cJSON_IsNumber(mct) || mct->valuedouble != 1))
		return "max_completion_tokens is not 1";
	if (st && !cJSON_IsFalse(st))
		return "stream is not false";
	if (cJSON_GetObjectItemCaseSensitive(body, "stream_options"))
		return "stream_options kept (vLLM answers 400 to stream_options without stream)";
	if (!strcmp(contract, "v0"))
		return NULL;
	if (!cJSON_IsObject(kv))
		return kv ? "kv_transfer_params is not an object"
		       : !strcmp(contract, "toy")
		           ? "kv_transfer_params missing (the toy contract "
		             "needs do_remote_decode and the remote_* keys)"
		           : "kv_transfer_params missing (the mooncake "
		             "contract needs do_remote_decode and transfer_id)";
	x = cJSON_GetObjectItemCaseSensitive(kv, "do_remote_decode");
	if (!cJSON_IsTrue(x))
		return "kv_transfer_params.do_remote_decode is not true";
	x = cJSON_GetObjectItemCaseSensitive(kv, "do_remote_prefill");
	if (x && !cJSON_IsFalse(x))
		return "kv_transfer_params.do_remote_prefill is not false";
	if (!strcmp(contract, "toy")) {
		for (size_t i = 0; i < sizeof(toy_keys) / sizeof(toy_keys[0]); i++)
			if (!cJSON_HasObjectItem(kv, toy_keys[i])) {
				snprintf(why, sz,
				         "kv_transfer_params.%s missing (the toy router "
				         "sends it as null)",
				         toy_keys[i]);
				return why;
			}
		return NULL;
	}
	x = cJSON_GetObjectItemCaseSensitive(kv, "transfer_id");
	if (!cJSON_IsString(x) || !x->valuestring[0])
		return x ? "kv_transfer_params.transfer_id is not a non-empty string"
		         : "kv_transfer_params.transfer_id missing (gen B prefill needs it: "
		           "\"Missing transfer_id in kv_transfer_params from router!\")";
	return NULL;
}

static const char *judge_one(const struct hr_run_data *rd, size_t i, const struct hr_req *q,
                             const cJSON **rec, char *why, size_t wsz)
{
	(void)i;
	*rec = hr_router_find(rd->rec_p, q->prompt);
	return *rec ? judge(cJSON_GetObjectItemCaseSensitive(*rec, "body"), rd->contract, why, wsz)
	            : "it never reached prefill";
}

static bool prefill_request(const struct hr_run_data *rd, char *detail, size_t sz)
{
	size_t n;
	if (!hr_router_judge_sent(rd, judge_one, "prefill", "requests", &n, detail, sz))
		return false;
	snprintf(detail, sz,
	         "%zu prefill requests: max_tokens 1, stream false, kv_transfer_params as the %s "
	         "contract requires",
	         n, rd->contract);
	return n > 0;
}

const struct hr_check hr_check_router_prefill_request = {
    .name = "router_prefill_request",
    .what = "the router sends prefill max_tokens 1, stream false and the contract's "
            "kv_transfer_params",
    .fn = prefill_request,
};
