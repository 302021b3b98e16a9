/* SPDX-License-Identifier: Apache-2.0 */
/* pd_meta_scheme: the one registry of Mooncake metadata URL schemes (etcd://, redis://, http(s)://
 * and P2PHANDSHAKE); in ref/common because ref/te and the test services, which do not link
 * ref/cfg, parse and write these URLs too (ref/cfg/cfg_names.h names it for the checker). */
#ifndef PD_META_SCHEME_H
#define PD_META_SCHEME_H

#include <stdbool.h>
#include <stddef.h>

/* The metadata "server" that means no store: peers exchange metadata in the handshake. */
#define PD_META_P2P   "P2PHANDSHAKE"
#define PD_META_ETCD  "etcd"
#define PD_META_REDIS "redis"
#define PD_META_HTTP  "http"
#define PD_META_HTTPS "https"
/* the path an http(s) store answers on (pdkv-metaserver, Mooncake's http_metadata_server) */
#define PD_META_HTTP_PATH "/metadata"
/* redis:// without a port: Mooncake falls back to its handshake default, 12001 */
#define PD_META_REDIS_DEFAULT_PORT 12001

enum pd_meta_store { PD_META_STORE_ETCD = 1, PD_META_STORE_REDIS, PD_META_STORE_HTTP };

/* A metadata URL scheme the engine has a plug-in for; name is what goes before "://". */
struct pd_meta_scheme {
	const char *name;  /* "etcd", "redis", "http", "https" */
	const char *store; /* the store behind it: "etcd", "redis", "http" */
	int default_port;  /* when the URL has none (0: the URL must have one) */
	enum pd_meta_store kind;
	bool tls; /* https */
};
/* NULL-terminated (name NULL). */
extern const struct pd_meta_scheme pd_meta_schemes[];
/* The row for the scheme of conn ("etcd://h:p" -> etcd), or NULL (no "://", or unknown). */
const struct pd_meta_scheme *pd_meta_scheme_of(const char *conn);
/* A connection string the engine has a metadata plugin for (a scheme above, bare host:port =
 * etcd, P2PHANDSHAKE); *scheme_len = length of the scheme before "://" (0 if none). */
bool pd_meta_scheme_known(const char *conn, size_t *scheme_len);
/* conn is P2PHANDSHAKE: no store, peers exchange metadata in the handshake. */
bool pd_meta_is_p2p(const char *conn);
/* The connection string of a store at host:port: "etcd://h:p", "redis://h:p" or
 * "http://h:p/metadata"; snprintf's result, -1 (out = "") for a store not in the table. */
int pd_meta_url(char *out, size_t sz, enum pd_meta_store store, const char *host, int port);

#endif
