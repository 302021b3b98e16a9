/* SPDX-License-Identifier: Apache-2.0 */
/* px_contract: the contract table (v0 = the guide's proxy, toy = vLLM's toy_proxy_server.py,
 * mooncake = vLLM's >= 0.16 mooncake_connector_proxy.py) and the JSON edits they are made of. */
#include "px_contract.h"
#include "px.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* ---- JSON helpers ---- */

/* Keys are matched case-sensitively and every duplicate goes: Python's json keeps the LAST of
 * duplicate keys, so a left-over "max_tokens" would silently win on the backend. */
void px_json_del_all(cJSON *o, const char *key)
{
	while (cJSON_GetObjectItemCaseSensitive(o, key))
		cJSON_DeleteItemFromObjectCaseSensitive(o, key);
}

int px_json_py_set(cJSON *o, const char *key, cJSON *v)
{
	cJSON *first;
	if (!v)
		return -ENOMEM;
	first = cJSON_GetObjectItemCaseSensitive(o, key);
	if (first) {
		/* keep the position of the first occurrence, as req_data[key] = v does */
		cJSON *next;
		for (cJSON *it = first->next; it; it = next) {
			next = it->next;
			if (it->string && !strcmp(it->string, key))
				cJSON_Delete(cJSON_DetachItemViaPointer(o, it));
		}
		if (!cJSON_ReplaceItemViaPointer(o, first, v)) {
			cJSON_Delete(v);
			return -ENOMEM;
		}
		if (!v->string && !(v->string = strdup(key)))
			return -ENOMEM;
		return 0;
	}
	if (!cJSON_AddItemToObject(o, key, v)) {
		cJSON_Delete(v);
		return -ENOMEM;
	}
	return 0;
}

int px_json_with_key(const char *body, size_t len, const char *key, const char *value_json,
                     char **out, size_t *out_len)
{
	cJSON *root = cJSON_ParseWithLength(body, len), *v;
	size_t end = len, kl = strlen(key), vl = strlen(value_json);
	int empty, ret;
	char *s;

	*out = NULL;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return -EINVAL;
	}
	if (cJSON_GetObjectItemCaseSensitive(root, key)) {
		/* the client sent the key already: replace it where it stands */
		v = cJSON_Parse(value_json);
		ret = v ? px_json_py_set(root, key, v) : -EINVAL;
		if (!ret && !(*out = cJSON_PrintUnformatted(root)))
			ret = -ENOMEM;
		cJSON_Delete(root);
		if (!ret)
			*out_len = strlen(*out);
		return ret;
	}
	empty = cJSON_GetArraySize(root) == 0;
	cJSON_Delete(root);
	/* the object's closing brace is the last non-blank byte of a validated body */
	while (end && body[end - 1] != '}')
		end--;
	if (!end)
		return -EINVAL;
	end--;
	s = malloc(len + kl + vl + 8);
	if (!s)
		return -ENOMEM;
	memcpy(s, body, end);
	*out_len = end + (size_t)sprintf(s + end, "%s\"%s\":%s", empty ? "" : ",", key, value_json);
	memcpy(s + *out_len, body + end, len - end);
	*out_len += len - end;
	s[*out_len] = '\0';
	*out = s;
	return 0;
}

/* ---- uuid4 ---- */

int px_uuid4(char *out, size_t outsz)
{
	unsigned char b[16];
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < sizeof(b)) {
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		got = 0;
		while (fd >= 0 && got < sizeof(b)) {
			ssize_t n = read(fd, b + got, sizeof(b) - got);
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		if (fd >= 0)
			close(fd);
		if (got < sizeof(b))
			return -EIO; /* no weak fallback: these ids pair P and D transfers */
	}
	b[6] = (b[6] & 0x0f) | 0x40; /* version 4 */
	b[8] = (b[8] & 0x3f) | 0x80; /* variant 10xx */
	snprintf(out, outsz, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
	         b[13], b[14], b[15]);
	return 0;
}

/* ---- the edits ---- */

/* What every contract does to the prefill copy: one token, not streamed; toy and mooncake
 * also set max_completion_tokens=1 when present and drop stream_options (v0 always did). */
static int one_token(cJSON *p)
{
	int ret;
	if ((ret = px_json_py_set(p, "stream", cJSON_CreateFalse())) ||
	    (ret = px_json_py_set(p, "max_tokens", cJSON_CreateNumber(1))))
		return ret;
	if (cJSON_GetObjectItemCaseSensitive(p, "max_completion_tokens") &&
	    (ret = px_json_py_set(p, "max_completion_tokens", cJSON_CreateNumber(1))))
		return ret;
	px_json_del_all(p, "stream_options");
	return 0;
}

static int v0_prefill(cJSON *p, const struct px_xfer *x)
{
	(void)x;
	return one_token(p);
}

static int toy_prefill(cJSON *p, const struct px_xfer *x)
{
	cJSON *k = cJSON_CreateObject();
	int ret;
	(void)x;
	if (!k || !cJSON_AddTrueToObject(k, "do_remote_decode") ||
	    !cJSON_AddFalseToObject(k, "do_remote_prefill") ||
	    !cJSON_AddNullToObject(k, "remote_engine_id") ||
	    !cJSON_AddNullToObject(k, "remote_block_ids") ||
	    !cJSON_AddNullToObject(k, "remote_host") || !cJSON_AddNullToObject(k, "remote_port")) {
		cJSON_Delete(k);
		return -ENOMEM;
	}
	if ((ret = px_json_py_set(p, "kv_transfer_params", k)) || (ret = one_token(p)))
		return ret;
	/* "These args are not supported for P" (the toy proxy pops them; decode keeps them) */
	px_json_del_all(p, "min_tokens");
	px_json_del_all(p, "min_completion_tokens");
	return 0;
}

static int mooncake_prefill(cJSON *p, const struct px_xfer *x)
{
	cJSON *k = cJSON_CreateObject();
	int ret;
	if (!k || !cJSON_AddTrueToObject(k, "do_remote_decode") ||
	    !cJSON_AddFalseToObject(k, "do_remote_prefill") ||
	    !cJSON_AddStringToObject(k, "transfer_id", x->transfer_id)) {
		cJSON_Delete(k);
		return -ENOMEM;
	}
	if ((ret = px_json_py_set(p, "kv_transfer_params", k)))
		return ret;
	return one_token(p);
}

static int v0_decode(const struct px_xfer *x, const cJSON *pa, char **out, char *why, size_t n)
{
	(void)x, (void)pa, (void)why, (void)n;
	*out = NULL;
	return 0;
}

/* Python truthiness of a JSON value: `if kv_transfer_params:` */
static int truthy(const cJSON *v)
{
	if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v))
		return 0;
	if (cJSON_IsNumber(v))
		return v->valuedouble != 0;
	if (cJSON_IsString(v))
		return v->valuestring && v->valuestring[0];
	if (cJSON_IsArray(v) || cJSON_IsObject(v))
		return v->child != NULL;
	return 1;
}

static int toy_decode(const struct px_xfer *x, const cJSON *pa, char **out, char *why, size_t n)
{
	const cJSON *k;
	(void)x;
	*out = NULL;
	if (!cJSON_IsObject(pa)) {
		snprintf(why, n, "answered 2xx with a body that is not a JSON object");
		return -EPROTO;
	}
	k = cJSON_GetObjectItemCaseSensitive(pa, "kv_transfer_params");
	if (!truthy(k))
		return 0; /* no params: decode computes the prompt itself, as with the toy proxy */
	*out = cJSON_PrintUnformatted(k);
	return *out ? 0 : -ENOMEM;
}

static int mooncake_decode(const struct px_xfer *x, const cJSON *pa, char **out, char *why,
                           size_t n)
{
	cJSON *k = cJSON_CreateObject();
	(void)pa, (void)why, (void)n;
	*out = NULL;
	if (k && cJSON_AddFalseToObject(k, "do_remote_decode") &&
	    cJSON_AddTrueToObject(k, "do_remote_prefill") &&
	    cJSON_AddStringToObject(k, "remote_bootstrap_addr", x->bootstrap_addr) &&
	    cJSON_AddStringToObject(k, "remote_engine_id", x->engine_id) &&
	    cJSON_AddStringToObject(k, "transfer_id", x->transfer_id))
		*out = cJSON_PrintUnformatted(k);
	cJSON_Delete(k);
	return *out ? 0 : -ENOMEM;
}

/* ---- the table ---- */

static const struct px_contract table[] = {
    [PX_CONTRACT_V0] =
        {
            .name = "v0",
            .rid_from_client = 1,
            .prefill_edit = v0_prefill,
            .decode_params = v0_decode,
        },
    [PX_CONTRACT_TOY] =
        {
            .name = "toy",
            .auth_env_bearer = 1,
            .toy_healthcheck = 1,
            .keep_p_answer = 1,
            .prefill_edit = toy_prefill,
            .decode_params = toy_decode,
        },
    [PX_CONTRACT_MOONCAKE] =
        {
            .name = "mooncake",
            .auth_env_bearer = 1,
            .concurrent = 1,
            .readiness = 1,
            .dp_header = 1,
            .prefill_edit = mooncake_prefill,
            .decode_params = mooncake_decode,
        },
};

const struct px_contract *px_contract_get(int id)
{
	if (id < 0 || (size_t)id >= sizeof(table) / sizeof(table[0]))
		id = PX_CONTRACT_V0;
	return &table[id];
}

char *px_contract_prefill_body(const struct px_contract *k, const cJSON *root,
                               const struct px_xfer *x)
{
	cJSON *p = cJSON_Duplicate(root, 1);
	char *out = NULL;
	if (p && k->prefill_edit(p, x) == 0)
		out = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);
	return out;
}
