/* SPDX-License-Identifier: Apache-2.0 */
/* te_meta_etcd: etcd v3 through its JSON gateway (POST /v3/kv/put|range|deleterange with base64
 * key/value; etcd 3.4), endpoints "h:p[,h:p]" tried in order, 5 s per operation as Mooncake. */
#include "te_internal.h"

#include <cJSON.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"
#include "pd_util.h"

#define ETCD_TIMEOUT_MS    5000
#define ETCD_MAX_ENDPOINTS 16

struct etcd {
	int n;
	char ep[ETCD_MAX_ENDPOINTS][300];
	atomic_int good; /* endpoint that answered last */
};

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const void *data, size_t len)
{
	const unsigned char *s = data;
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
	size_t i;
	if (!out)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		*o++ = b64chars[v >> 18];
		*o++ = b64chars[(v >> 12) & 63];
		*o++ = b64chars[(v >> 6) & 63];
		*o++ = b64chars[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < len ? (uint32_t)s[i + 1] << 8 : 0);
		*o++ = b64chars[v >> 18];
		*o++ = b64chars[(v >> 12) & 63];
		*o++ = i + 1 < len ? b64chars[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64chars, c) : NULL;
	return p ? (int)(p - b64chars) : -1;
}

/* Standard base64 with padding (what the gateway emits); NULL on bad input. */
static char *b64_decode(const char *s, size_t *outlen)
{
	size_t n = strlen(s), o = 0;
	char *out;
	if (n % 4)
		return NULL;
	out = malloc(n / 4 * 3 + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 4) {
		int a = b64_val(s[i]), b = b64_val(s[i + 1]);
		int c = s[i + 2] == '=' ? 0 : b64_val(s[i + 2]);
		int d = s[i + 3] == '=' ? 0 : b64_val(s[i + 3]);
		int pad = (s[i + 2] == '=') + (s[i + 3] == '=');
		if (a < 0 || b < 0 || c < 0 || d < 0 || (pad && i + 4 != n) ||
		    (s[i + 2] == '=' && s[i + 3] != '=')) {
			free(out);
			return NULL;
		}
		uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
		out[o++] = (char)(v >> 16);
		if (pad < 2)
			out[o++] = (char)(v >> 8);
		if (pad < 1)
			out[o++] = (char)v;
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

/* POSTs body to /v3/kv/<op> on the first endpoint that answers. *resp = parsed reply. */
static int etcd_call_err(struct etcd *e, const char *op, const char *body, const char *key,
                         cJSON **resp, char *err, size_t errlen)
{
	char url[400];
	int ret = TE_ERR_UNREACHABLE, start = atomic_load(&e->good);

	*resp = NULL;
	for (int i = 0; i < e->n; i++) {
		int idx = (start + i) % e->n;
		long status;
		char *text = NULL;
		size_t tlen;
		snprintf(url, sizeof(url), "http://%s/v3/kv/%s", e->ep[idx], op);
		ret = te_meta_http_request("POST", url, body, strlen(body), "application/json",
		                           ETCD_TIMEOUT_MS, &status, &text, &tlen, err, errlen);
		if (ret == TE_ERR_UNREACHABLE)
			continue;
		if (ret)
			break;
		atomic_store(&e->good, idx);
		*resp = cJSON_ParseWithLength(text, tlen);
		if (status != 200 || !*resp) {
			const cJSON *m = *resp ? cJSON_GetObjectItem(*resp, "message") : NULL;
			snprintf(err, errlen, "%s: HTTP %ld%s%s", url, status,
			         cJSON_IsString(m) ? ": " : "",
			         cJSON_IsString(m) ? m->valuestring : "");
			cJSON_Delete(*resp);
			*resp = NULL;
			ret = TE_ERR_METADATA;
		}
		free(text);
		break;
	}
	if (ret)
		pd_warn("etcd %s of \"%s\" failed: %s", op, key, err[0] ? err : "no endpoint");
	return ret;
}

static int etcd_call(struct etcd *e, const char *op, const char *body, const char *key,
                     cJSON **resp)
{
	char err[512] = "";
	return etcd_call_err(e, op, body, key, resp, err, sizeof(err));
}

static int etcd_open(const struct te_conn_info *ci, void **state, char *errbuf, size_t errlen)
{
	struct etcd *e = calloc(1, sizeof(*e));
	const char *s = ci->url;
	char probe[64], why[512] = "", *k;
	cJSON *resp;
	int ret;

	if (!e)
		return TE_ERR_MEMORY;
	while (*s && e->n < ETCD_MAX_ENDPOINTS) {
		size_t n = strcspn(s, ",");
		snprintf(e->ep[e->n++], sizeof(e->ep[0]), "%.*s", (int)n, s);
		s += n + (s[n] == ',');
	}
	/* a count-only range proves the v3 gateway answers, so a dead store fails here clearly */
	k = b64_encode("mooncake/", 9);
	snprintf(probe, sizeof(probe), "{\"key\":\"%s\",\"count_only\":true}", k ? k : "");
	free(k);
	ret = etcd_call_err(e, "range", probe, "mooncake/", &resp, why, sizeof(why));
	cJSON_Delete(resp);
	if (ret) {
		snprintf(errbuf, errlen,
		         "etcd at %s %s: %s (is etcd running, with its client URL "
		         "reachable from here?)",
		         ci->url, ret == TE_ERR_UNREACHABLE ? "is unreachable" : "gave an error",
		         why);
		free(e);
		return ret;
	}
	*state = e;
	return 0;
}

static char *kv_body(const char *key, const char *val, size_t len)
{
	char *k = b64_encode(key, strlen(key)), *v = val ? b64_encode(val, len) : NULL, *out;
	if (!k || (val && !v))
		out = NULL;
	else if (val)
		out = pd_asprintf("{\"key\":\"%s\",\"value\":\"%s\"}", k, v);
	else
		out = pd_asprintf("{\"key\":\"%s\"}", k);
	free(k);
	free(v);
	return out;
}

/* etcd_call of op with the body of key (and val, when not NULL); *resp NULL on an error */
static int kv_call(struct etcd *e, const char *op, const char *key, const char *val, size_t len,
                   cJSON **resp)
{
	char *body = kv_body(key, val, len);
	int ret;

	*resp = NULL;
	if (!body)
		return TE_ERR_MEMORY;
	ret = etcd_call(e, op, body, key, resp);
	free(body);
	return ret;
}

static int etcd_put(void *state, const char *key, const char *val, size_t len)
{
	cJSON *resp;
	int ret = kv_call(state, "put", key, val, len, &resp);

	cJSON_Delete(resp);
	return ret;
}

static int etcd_get(void *state, const char *key, char **val, size_t *len)
{
	const cJSON *kvs, *v;
	cJSON *resp;
	int ret = kv_call(state, "range", key, NULL, 0, &resp);

	if (ret)
		return ret;
	kvs = cJSON_GetObjectItem(resp, "kvs");
	if (!cJSON_IsArray(kvs) || cJSON_GetArraySize(kvs) == 0) {
		ret = TE_ERR_NOT_FOUND;
		goto out;
	}
	v = cJSON_GetObjectItem(cJSON_GetArrayItem(kvs, 0), "value");
	if (!v) { /* protobuf JSON omits an empty value */
		*val = strdup("");
		*len = 0;
		ret = *val ? 0 : TE_ERR_MEMORY;
		goto out;
	}
	if (!cJSON_IsString(v) || !(*val = b64_decode(v->valuestring, len))) {
		pd_warn("etcd range of \"%s\": value is not base64", key);
		ret = TE_ERR_METADATA;
	}
out:
	cJSON_Delete(resp);
	return ret;
}

static int etcd_del(void *state, const char *key)
{
	const cJSON *n;
	cJSON *resp;
	int ret = kv_call(state, "deleterange", key, NULL, 0, &resp);

	if (ret)
		return ret;
	/* int64 fields are JSON strings in the gateway; absent when 0 */
	n = cJSON_GetObjectItem(resp, "deleted");
	if (!n || (cJSON_IsString(n) && !strcmp(n->valuestring, "0")) ||
	    (cJSON_IsNumber(n) && n->valuedouble == 0))
		ret = TE_ERR_NOT_FOUND;
	cJSON_Delete(resp);
	return ret;
}

static void etcd_close(void *state)
{
	free(state);
}

const struct te_meta_backend te_meta_etcd_backend = {
    .kind = TE_META_ETCD,
    .open = etcd_open,
    .put = etcd_put,
    .get = etcd_get,
    .del = etcd_del,
    .close = etcd_close,
};
