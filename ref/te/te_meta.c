/* SPDX-License-Identifier: Apache-2.0 */
/* te_meta: the metadata store handle — key layout (docs/metadata.md) and the backend table (one
 * file per backend: te_meta_etcd.c, te_meta_redis.c, te_meta_http.c). */
#include "te_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"

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
	const char *id = pd_env_str("MC_METADATA_CLUSTER_ID");
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
