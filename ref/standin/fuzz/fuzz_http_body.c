/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_http_body: the HTTP request bodies remote clients send — the stand-in's /v1/completions
 * and /v1/chat/completions parse (sa_req_parse) and the proxy's body edits for each contract. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "standin/sa_req.h"
#include "proxy/px.h"
#include "proxy/px_contract.h"

/* What a parse that succeeds promises the engine: a prompt in the vocabulary that fits. */
static void standin(const char *body, size_t len, bool chat, int64_t maxlen, const char *rid)
{
	static struct sa s;
	struct sa_req r;
	char *msg = NULL;
	int st;

	s.o.model = "/models/m";
	s.o.served[0] = "m";
	s.o.nserved = 1;
	s.o.max_model_len = maxlen;
	st = sa_req_parse(&s, body, len, chat, rid, &r, &msg);
	if (st) {
		if ((st != 400 && st != 404) || !msg || !*msg)
			abort(); /* every refusal names its reason */
		free(msg);
		return;
	}
	if (msg || r.ntok == 0 || (int64_t)r.ntok >= maxlen || r.max_tokens < 1 ||
	    (int64_t)r.ntok + r.max_tokens > maxlen || !r.model_name)
		abort();
	for (size_t i = 0; i < r.ntok; i++)
		if (r.tokens[i] < 0 || r.tokens[i] >= MDL_VOCAB)
			abort();
	sa_req_free(&r);
}

static cJSON *parse_object(const char *s, size_t len)
{
	cJSON *j = cJSON_ParseWithLength(s, len);

	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/* The proxy's path: the body must be one NUL-free JSON object (as px_flow's parse_body);
 * then every contract's prefill copy and the decode body with kv_transfer_params set must be
 * JSON objects again, the prefill copy asking for one token, not streamed. */
static void proxy(const char *body, size_t len)
{
	struct px_xfer x = {
	    .rid = "rid", .dp_rank = 0, .bootstrap_addr = "http://h:1", .engine_id = "e"};
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithOpts(body, &end, 1);

	strcpy(x.transfer_id, "xfer-rid");
	if (!root || end != body + len || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return;
	}
	for (int id = PX_CONTRACT_V0; id <= PX_CONTRACT_MOONCAKE; id++) {
		const struct px_contract *k = px_contract_get(id);
		char *pb = px_contract_prefill_body(k, root, &x), *params = NULL, *db = NULL;
		char why[256];
		size_t dlen = 0;
		cJSON *p = pb ? parse_object(pb, strlen(pb)) : NULL, *d;

		if (!p || !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(p, "stream")) ||
		    cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "max_tokens")) != 1)
			abort();
		cJSON_Delete(p);
		free(pb);
		/* prefill's answer is remote bytes too: the same body stands in for it */
		if (k->decode_params(&x, k->keep_p_answer ? root : NULL, &params, why, sizeof(why)))
			continue;
		if (params && px_json_with_key(body, len, "kv_transfer_params", params, &db, &dlen))
			abort(); /* a validated object always takes the key */
		if (db) {
			/* the decode body carries exactly the params decode_params made; compared
			 * as printed text, since cJSON_Compare calls two objects with a duplicate
			 * key different even when they are the same bytes */
			cJSON *want = cJSON_Parse(params);
			char *ws = NULL, *gs = NULL;
			d = parse_object(db, dlen);
			if (d && want) {
				ws = cJSON_PrintUnformatted(want);
				gs = cJSON_PrintUnformatted(
				    cJSON_GetObjectItemCaseSensitive(d, "kv_transfer_params"));
			}
			if (!ws || !gs || strcmp(ws, gs))
				abort();
			free(ws);
			free(gs);
			cJSON_Delete(want);
			cJSON_Delete(d);
		}
		free(db);
		free(params);
	}
	cJSON_Delete(root);
}

/* First byte: bit 0 chat, bit 1 a short max-model-len, bit 2 an X-Request-Id, bit 3 proxy. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *body;

	if (size < 1)
		return 0;
	body = malloc(size);
	if (!body)
		return 0;
	memcpy(body, data + 1, size - 1);
	body[size - 1] = '\0';
	if (data[0] & 8)
		proxy(body, size - 1);
	else
		standin(body, size - 1, data[0] & 1, data[0] & 2 ? 64 : 32768,
		        data[0] & 4 ? "rid-\x01 x" : NULL);
	free(body);
	return 0;
}
