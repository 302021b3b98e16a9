/* SPDX-License-Identifier: Apache-2.0 */
/* te_meta: the metadata store handle — key layout (docs/metadata.md), the backend table (one file
 * per backend: te_meta_etcd.c, te_meta_redis.c, te_meta_http.c) and the shared libcurl request. */
#include "te_internal.h"

#include "pd_buf.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"
#include "pd_util.h"

#define META_MAX_RESPONSE (256u << 20)

struct te_meta {
	enum te_meta_kind kind;
	const struct te_meta_backend *be; /* NULL for P2PHANDSHAKE */
	void *state;
	char conn[1024];
};

static const struct te_meta_backend *const backends[] = {
    &te_meta_etcd_backend,
    &te_meta_redis_backend,
    &te_meta_http_backend,
};

/* ------------------------------------------------------------------ keys */
/* "mooncake/" or "mooncake/<MC_METADATA_CLUSTER_ID>/" ('/' appended when missing). */
static char *key_prefix(void)
{
	const char *id = getenv("MC_METADATA_CLUSTER_ID");
	size_t n;
	if (!id || !*id)
		return strdup("mooncake/");
	n = strlen(id);
	return pd_asprintf("mooncake/%s%s", id, id[n - 1] == '/' ? "" : "/");
}

/* <prefix><dir><name> */
static char *prefixed_key(const char *dir, const char *name)
{
	char *p = key_prefix(), *k;
	if (!p)
		return NULL;
	k = pd_asprintf("%s%s%s", p, dir, name);
	free(p);
	return k;
}

char *te_meta_segment_key(const char *name)
{
	return name ? prefixed_key(strchr(name, '/') ? "" : "ram/", name) : NULL;
}

char *te_meta_rpc_key(const char *name)
{
	return name ? prefixed_key("rpc_meta/", name) : NULL;
}

/* ------------------------------------------------------------------ libcurl */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void te_meta_http_global_init(void)
{
	pthread_once(&curl_once, curl_init_once);
}

int te_meta_http_request(const char *method, const char *url, const char *body, size_t len,
                         const char *content_type, long timeout_ms, long *status, char **resp,
                         size_t *resp_len, char *errbuf, size_t errlen)
{
	char cerr[CURL_ERROR_SIZE] = "", ct[128];
	struct curl_slist *hdr = NULL;
	struct pd_buf b = {.max = META_MAX_RESPONSE};
	CURLcode rc;
	CURL *c;
	int ret = TE_ERR_UNREACHABLE;

	pthread_once(&curl_once, curl_init_once);
	*status = 0;
	if (resp)
		*resp = NULL;
	if (resp_len)
		*resp_len = 0;
	c = curl_easy_init(); /* one handle per call: thread-safe without a lock */
	if (!c) {
		snprintf(errbuf, errlen, "curl_easy_init failed");
		return TE_ERR_MEMORY;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 1500 ? timeout_ms : 1500L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, pd_buf_curl_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (!strcmp(method, "GET")) {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
		if (body || strcmp(method, "DELETE")) {
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
			                 (curl_off_t)(body ? len : 0));
		}
	}
	if (content_type) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
		hdr = curl_slist_append(hdr, ct);
	}
	hdr = curl_slist_append(hdr, "Expect:"); /* no 100-continue round trip */
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);

	rc = curl_easy_perform(c);
	if (rc == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
		ret = 0;
	} else if (b.over) {
		snprintf(errbuf, errlen, "%s %s: response larger than %u bytes", method, url,
		         META_MAX_RESPONSE);
		ret = TE_ERR_METADATA;
	} else {
		snprintf(errbuf, errlen, "%s %s: %s", method, url,
		         cerr[0] ? cerr : curl_easy_strerror(rc));
		ret = rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_COULDNT_CONNECT ||
		              rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_RECV_ERROR ||
		              rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING
		          ? TE_ERR_UNREACHABLE
		          : TE_ERR_METADATA;
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	if (ret == 0 && resp) {
		*resp = b.p ? b.p : strdup("");
		if (resp_len)
			*resp_len = b.len;
		if (!*resp)
			ret = TE_ERR_MEMORY;
	} else {
		free(b.p);
	}
	return ret;
}

/* ------------------------------------------------------------------ handle */
int te_meta_open(const char *conn, struct te_meta **out, char *errbuf, size_t errlen)
{
	struct te_conn_info ci;
	struct te_meta *m;
	int ret;

	*out = NULL;
	if (errbuf && errlen)
		errbuf[0] = '\0';
	ret = te_conn_parse(conn, &ci, errbuf, errlen);
	if (ret)
		return ret;
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(errbuf, errlen, "out of memory");
		return TE_ERR_MEMORY;
	}
	m->kind = ci.kind;
	snprintf(m->conn, sizeof(m->conn), "%s", conn);
	for (size_t i = 0; i < PD_ARRAY_SIZE(backends); i++)
		if (backends[i]->kind == ci.kind)
			m->be = backends[i];
	if (m->be) {
		ret = m->be->open(&ci, &m->state, errbuf, errlen);
		if (ret) {
			free(m);
			return ret;
		}
	}
	*out = m;
	return 0;
}

enum te_meta_kind te_meta_kind(const struct te_meta *m)
{
	return m->kind;
}

const char *te_meta_conn(const struct te_meta *m)
{
	return m ? m->conn : "";
}

int te_meta_put(struct te_meta *m, const char *key, const char *value)
{
	if (!m || !key || !*key || !value)
		return TE_ERR_INVALID_ARGUMENT;
	if (!m->be)
		return 0; /* P2PHANDSHAKE: nothing is stored */
	return m->be->put(m->state, key, value, strlen(value));
}

int te_meta_get(struct te_meta *m, const char *key, char **value)
{
	size_t len;
	if (value)
		*value = NULL;
	if (!m || !key || !*key || !value)
		return TE_ERR_INVALID_ARGUMENT;
	if (!m->be)
		return TE_ERR_NOT_FOUND; /* the engine asks the peer itself */
	return m->be->get(m->state, key, value, &len);
}

int te_meta_del(struct te_meta *m, const char *key)
{
	if (!m || !key || !*key)
		return TE_ERR_INVALID_ARGUMENT;
	if (!m->be)
		return 0;
	return m->be->del(m->state, key);
}

void te_meta_close(struct te_meta *m)
{
	if (!m)
		return;
	if (m->be)
		m->be->close(m->state);
	free(m);
}
