/* SPDX-License-Identifier: Apache-2.0 */
/* px_contract: the router contracts pdkv-proxy can speak (v0, toy, mooncake) as one table of
 * data and body-edit functions, plus the JSON edits and the uuid4 they share. */
#ifndef PX_CONTRACT_H
#define PX_CONTRACT_H

#include <cJSON.h>
#include <stddef.h>

/* What one request's edits need to know (filled by the front end per request). */
struct px_xfer {
	const char *rid;            /* X-Request-Id sent to both instances */
	char transfer_id[48];       /* mooncake: "xfer-<rid>" */
	int dp_rank;                /* mooncake: prefill dp rank; -1 otherwise */
	const char *bootstrap_addr; /* mooncake: "http://<P host>:<bootstrap port>" */
	const char *engine_id;      /* mooncake: from the bootstrap's /query for dp_rank */
};

/* One row of the contract table. Adding a router = adding a row. */
struct px_contract {
	const char *name;
	int rid_from_client; /* keep a client's valid X-Request-Id (else always a new uuid4) */
	int auth_env_bearer; /* "Authorization: Bearer <OPENAI_API_KEY or None>" on every call */
	int concurrent;      /* prefill in flight while decode is called (else P answers first) */
	int readiness;       /* 503 until each prefill's /health and bootstrap /query answered */
	int dp_header;       /* X-data-parallel-rank: <dp> on the prefill call */
	int toy_healthcheck; /* GET /healthcheck answers exactly as the toy proxy */
	int keep_p_answer;   /* decode_params reads prefill's JSON answer */
	/* Edits the prefill copy of the request in place. 0 or -ENOMEM. */
	int (*prefill_edit)(cJSON *body, const struct px_xfer *x);
	/* The decode body's kv_transfer_params as JSON text (malloc'd) in *out, or NULL to send
	 * the client's bytes unchanged. p_answer: prefill's parsed answer (keep_p_answer), else
	 * NULL. 0, -ENOMEM, or -EPROTO with why filled (prefill's answer is unusable). */
	int (*decode_params)(const struct px_xfer *x, const cJSON *p_answer, char **out, char *why,
	                     size_t whysz);
};

/* The row for an enum px_contract_id (never AUTO). */
const struct px_contract *px_contract_get(int id);

/* The prefill body for root under contract k (malloc'd JSON), or NULL when out of memory. */
char *px_contract_prefill_body(const struct px_contract *k, const cJSON *root,
                               const struct px_xfer *x);

/* body (len bytes, a JSON object as validated by the caller) with top-level key set to
 * value_json: appended before the closing brace when key is absent (the client's bytes stay
 * as they are), else re-serialised with the key replaced in place. 0 or -ENOMEM / -EINVAL. */
int px_json_with_key(const char *body, size_t len, const char *key, const char *value_json,
                     char **out, size_t *out_len);

/* Python dict semantics: replaces the first `key` in place (later duplicates dropped) or
 * appends it. Takes v (freed on failure). 0 or -ENOMEM. */
int px_json_py_set(cJSON *o, const char *key, cJSON *v);
void px_json_del_all(cJSON *o, const char *key);

/* An RFC 4122 version 4 UUID from getrandom / /dev/urandom into out (37 bytes). 0 or -EIO. */
int px_uuid4(char *out, size_t outsz);

#endif
