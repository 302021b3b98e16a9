/* SPDX-License-Identifier: Apache-2.0 */
/* pd_meta_scheme: the metadata URL schemes the transfer engine has plug-ins for (docs/metadata.md)
 * and the lookups the engine's parser, the test services and the config checker share. */
#include "pd_meta_scheme.h"

#include <stdio.h>
#include <string.h>

/* Mooncake's metadata plug-ins; redis without a port: 12001, as Mooncake. */
const struct pd_meta_scheme pd_meta_schemes[] = {
    {PD_META_ETCD, "etcd", 0, PD_META_STORE_ETCD, false},
    {PD_META_REDIS, "redis", PD_META_REDIS_DEFAULT_PORT, PD_META_STORE_REDIS, false},
    {PD_META_HTTP, "http", 0, PD_META_STORE_HTTP, false},
    {PD_META_HTTPS, "http", 0, PD_META_STORE_HTTP, true},
    {NULL, NULL, 0, 0, false},
};

const struct pd_meta_scheme *pd_meta_scheme_of(const char *conn)
{
	const char *sep = conn ? strstr(conn, "://") : NULL;

	if (!sep)
		return NULL;
	for (const struct pd_meta_scheme *m = pd_meta_schemes; m->name; m++)
		if (strlen(m->name) == (size_t)(sep - conn) && !strncmp(conn, m->name, sep - conn))
			return m;
	return NULL;
}

bool pd_meta_scheme_known(const char *conn, size_t *scheme_len)
{
	const char *sep = conn ? strstr(conn, "://") : NULL;

	if (scheme_len)
		*scheme_len = sep ? (size_t)(sep - conn) : 0;
	if (!conn || !strcmp(conn, PD_META_P2P))
		return conn != NULL;
	if (!sep) /* bare host:port: the engine's parser takes it as etcd */
		return true;
	return pd_meta_scheme_of(conn) != NULL;
}

bool pd_meta_is_p2p(const char *conn)
{
	return conn && !strcmp(conn, PD_META_P2P);
}

int pd_meta_url(char *out, size_t sz, enum pd_meta_store store, const char *host, int port)
{
	for (const struct pd_meta_scheme *m = pd_meta_schemes; m->name; m++)
		if (m->kind == store && !m->tls)
			return snprintf(out, sz, "%s://%s:%d%s", m->name, host, port,
			                store == PD_META_STORE_HTTP ? PD_META_HTTP_PATH : "");
	if (sz)
		*out = 0;
	return -1;
}
