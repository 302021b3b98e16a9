/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_names: the one registry of vLLM connector names and Mooncake metadata URL schemes that
 * pdkv's checker, stand-ins and harness use (cfg_names.c). */
#ifndef CFG_NAMES_H
#define CFG_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* The connector pdkv speaks (V0 and V1 spell it the same; kv_connector is case-sensitive). */
#define CFG_CONNECTOR_MOONCAKE "MooncakeConnector"
/* The metadata "server" that means no store: peers exchange metadata in the handshake. */
#define CFG_META_P2P "P2PHANDSHAKE"

/* A name in vLLM's connector registry: V0's KVConnectorFactory, or V1's (which the factory looks
 * up before any kv_connector_module_path). */
bool cfg_connector_registered(const char *name, bool v1);
/* The registered names, NULL-terminated, in vLLM's registration order. */
const char *const *cfg_connectors(bool v1);

/* A metadata URL scheme the engine has a plug-in for; name is what goes before "://". */
struct cfg_meta_scheme {
	const char *name;  /* "etcd", "redis", "http", "https" */
	const char *store; /* the store behind it: "etcd", "redis", "http" */
	int default_port;  /* when the URL has none (0: the URL must have one) */
};
/* NULL-terminated (name NULL). */
extern const struct cfg_meta_scheme cfg_meta_schemes[];
/* The row for the scheme of conn ("etcd://h:p" -> etcd), or NULL (no "://", or unknown). */
const struct cfg_meta_scheme *cfg_meta_scheme_of(const char *conn);
/* A connection string the engine has a metadata plugin for (a scheme above, bare host:port =
 * etcd, P2PHANDSHAKE); *scheme_len = length of the scheme before "://" (0 if none). */
bool cfg_meta_scheme_known(const char *conn, size_t *scheme_len);

#endif
