/* SPDX-License-Identifier: Apache-2.0 */
/* te_conn: reading a metadata connection string as the engine reads it (etcd://, redis://,
 * http://, bare host:port = etcd, P2PHANDSHAKE) — public, so tools (pdkv doctor) give advice
 * from the engine's own reading rather than a second parser. */
#ifndef TE_CONN_H
#define TE_CONN_H

#include <stddef.h>

enum te_meta_kind { TE_META_ETCD, TE_META_REDIS, TE_META_HTTP, TE_META_P2P };

struct te_conn_info {
	enum te_meta_kind kind;
	char url[1024]; /* http: full base URL; etcd: "h:p[,h:p]"; redis: "h:p" */
	char host[256]; /* first endpoint's host (etcd, redis) */
	int port;       /* first endpoint's port (redis without port: 12001, as Mooncake) */
	int nendpoints; /* etcd endpoint count */
};
/* Parses a connection string (bare host:port = etcd). TE_ERR_INVALID_ARGUMENT with the
 * reason in errbuf for an unknown scheme or a malformed address. */
int te_conn_parse(const char *conn, struct te_conn_info *out, char *errbuf, size_t errlen);
/* "etcd" "redis" "http" "P2PHANDSHAKE" */
const char *te_meta_kind_name(enum te_meta_kind kind);

#endif
