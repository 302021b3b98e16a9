/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_router_decode_request: what the router sent decode — the client's body unchanged,
 * plus the params of the contract: P's answer copied (toy), the same transfer_id and the right
 * remote_bootstrap_addr / remote_engine_id (mooncake) (spec 2.4). */
#include "hr_router.h"

#include <stdlib.h>
#include <string.h>

/* Every key the client sent is there unchanged, and nothing but kv_transfer_params was added */
static const char *same_body(const cJSON *sent, const cJSON *got, char *why, size_t sz)
{
	for (const cJSON *k = sent->child; k; k = k->next) {
		const cJSON *g = cJSON_GetObjectItemCaseSensitive(got, k->string);
		if (!g || !cJSON_Compare(k, g, 1)) {
			char *a = cJSON_PrintUnformatted(k),
			     *b = g ? cJSON_PrintUnformatted(g) : NULL;
			snprintf(why, sz, "\"%s\" %s (the client sent %.60s%s%.60s)", k->string,
			         g ? "changed" : "missing", a ? a : "?", g ? ", decode got " : "",
			         b ? b : "");
			free(a);
			free(b);
			return why;
		}
	}
	for (const cJSON *g = got->child; g; g = g->next)
		if (strcmp(g->string, "kv_transfer_params") &&
		    !cJSON_GetObjectItemCaseSensitive(sent, g->string)) {
			snprintf(why, sz, "extra key \"%s\" the client did not send", g->string);
			return why;
		}
	return NULL;
}

static bool engine_known(const cJSON *query, const char *id)
{
	for (const cJSON *e = query ? query->child : NULL; e; e = e->next) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(e, "engine_id");
		if (cJSON_IsString(x) && !strcmp(x->valuestring, id))
			return true;
	}
	return false;
}

static const char *mooncake(const struct hr_run_data *rd, const cJSON *pb, const cJSON *kv,
                            char *why, size_t sz)
{
	const cJSON *pk = cJSON_GetObjectItemCaseSensitive(pb, "kv_transfer_params");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(kv, "transfer_id");
	const cJSON *pt = cJSON_GetObjectItemCaseSensitive(pk, "transfer_id");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(kv, "remote_bootstrap_addr");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(kv, "remote_engine_id");
	if (!cJSON_IsObject(kv))
		return "no kv_transfer_params (the mooncake contract needs transfer_id, "
		       "remote_bootstrap_addr and remote_engine_id)";
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(kv, "do_remote_prefill")))
		return "kv_transfer_params.do_remote_prefill is not true";
	if (!cJSON_IsString(t) || !t->valuestring[0])
		return "kv_transfer_params.transfer_id missing";
	if (!cJSON_IsString(pt) || strcmp(pt->valuestring, t->valuestring)) {
		snprintf(why, sz, "transfer_id \"%.80s\" is not the one prefill got (%.80s)",
		         t->valuestring, cJSON_IsString(pt) ? pt->valuestring : "none");
		return why;
	}
	if (!cJSON_IsString(a) || strcmp(a->valuestring, rd->p_bootstrap)) {
		snprintf(why, sz, "remote_bootstrap_addr %.100s, expected \"%s\"",
		         cJSON_IsString(a) ? a->valuestring : "missing", rd->p_bootstrap);
		return why;
	}
	if (!cJSON_IsString(e) || !engine_known(rd->p_query, e->valuestring)) {
		snprintf(why, sz, "remote_engine_id %.100s is not one of prefill's (its /query)",
		         cJSON_IsString(e) ? e->valuestring : "missing");
		return why;
	}
	return NULL;
}

static const char *judge(const struct hr_run_data *rd, const struct hr_req *q, bool stream,
                         const cJSON *prec, const cJSON *drec, char *why, size_t sz)
{
	struct hr_scenario one = *rd->sc;
	const cJSON *got = cJSON_GetObjectItemCaseSensitive(drec, "body");
	const cJSON *kv = cJSON_GetObjectItemCaseSensitive(got, "kv_transfer_params");
	const cJSON *pk = cJSON_GetObjectItemCaseSensitive(prec, "response_kv_transfer_params");
	char *txt;
	cJSON *sent;
	const char *w;
	one.wl.stream = stream;
	txt = hr_request_body(&one, q->prompt);
	sent = txt ? cJSON_Parse(txt) : NULL;
	free(txt);
	if (!cJSON_IsObject(got)) {
		cJSON_Delete(sent);
		return "its body is not a JSON object";
	}
	w = sent ? same_body(sent, got, why, sz) : "out of memory";
	cJSON_Delete(sent);
	if (w || !strcmp(rd->contract, "v0"))
		return w;
	if (!strcmp(rd->contract, "mooncake"))
		return mooncake(rd, cJSON_GetObjectItemCaseSensitive(prec, "body"), kv, why, sz);
	/* toy: P's answer copied verbatim when truthy, else nothing */
	if (cJSON_IsObject(pk) && pk->child) {
		char *a = cJSON_PrintUnformatted(pk);
		if (!kv || !cJSON_Compare(kv, pk, 1))
			snprintf(why, sz, "%s; prefill answered kv_transfer_params %.200s",
			         kv ? "kv_transfer_params is not prefill's answer"
			            : "no kv_transfer_params: prefill's answer was not copied",
			         a ? a : "?");
		free(a);
		return kv && cJSON_Compare(kv, pk, 1) ? NULL : why;
	}
	if (!prec)
		return "prefill never got this request";
	if (kv && !cJSON_IsNull(kv))
		return "kv_transfer_params sent although prefill answered none";
	return NULL;
}

static const char *judge_one(const struct hr_run_data *rd, size_t i, const struct hr_req *q,
                             const cJSON **rec, char *why, size_t wsz)
{
	const cJSON *p = hr_router_find(rd->rec_p, q->prompt);
	*rec = hr_router_find(rd->rec_d, q->prompt);
	return *rec ? judge(rd, q, i == rd->nreqs, p, *rec, why, wsz) : "it never reached decode";
}

static bool decode_request(const struct hr_run_data *rd, char *detail, size_t sz)
{
	size_t n;
	if (!hr_router_judge_sent(rd, judge_one, "decode", "decode requests", &n, detail, sz))
		return false;
	snprintf(detail, sz, "%zu decode requests: the client's body%s", n,
	         !strcmp(rd->contract, "toy") ? " plus prefill's kv_transfer_params, copied"
	         : !strcmp(rd->contract, "mooncake")
	             ? " plus transfer_id, remote_bootstrap_addr, remote_engine_id"
	             : ", unchanged");
	return n > 0;
}

const struct hr_check hr_check_router_decode_request = {
    .name = "router_decode_request",
    .what = "the router sends decode the client's body plus the contract's kv_transfer_params",
    .fn = decode_request,
};
