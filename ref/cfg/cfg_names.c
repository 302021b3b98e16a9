/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_names: vLLM's connector names (V0 and V1 registries) and the metadata URL schemes the
 * transfer engine has plug-ins for; ground floor of ref/cfg (calls nothing in it). */
#include "cfg/cfg_names.h"

#include <string.h>

/* vLLM V0: vllm/distributed/kv_transfer/kv_connector/factory.py's register_connector calls. */
static const char *const v0_connectors[] = {"PyNcclConnector", CFG_CONNECTOR_MOONCAKE,
                                            "LMCacheConnector", "MooncakeStoreConnector", NULL};
/* vLLM V1: vllm/distributed/kv_transfer/kv_connector/factory.py (V1 section). */
static const char *const v1_connectors[] = {
    CFG_CONNECTOR_MOONCAKE, "NixlConnector",  "SharedStorageConnector", "P2pNcclConnector",
    "LMCacheConnectorV1",   "MultiConnector", "OffloadingConnector",    NULL};

const char *const *cfg_connectors(bool v1)
{
	return v1 ? v1_connectors : v0_connectors;
}

bool cfg_connector_registered(const char *name, bool v1)
{
	if (!name)
		return false;
	for (const char *const *l = cfg_connectors(v1); *l; l++)
		if (!strcmp(*l, name))
			return true;
	return false;
}

/* Mooncake's metadata plug-ins (docs/metadata.md); redis without a port: 12001, as Mooncake. */
const struct cfg_meta_scheme cfg_meta_schemes[] = {
    {"etcd", "etcd", 0},  {"redis", "redis", 12001}, {"http", "http", 0},
    {"https", "http", 0}, {NULL, NULL, 0},
};

const struct cfg_meta_scheme *cfg_meta_scheme_of(const char *conn)
{
	const char *sep = conn ? strstr(conn, "://") : NULL;

	if (!sep)
		return NULL;
	for (const struct cfg_meta_scheme *m = cfg_meta_schemes; m->name; m++)
		if (strlen(m->name) == (size_t)(sep - conn) && !strncmp(conn, m->name, sep - conn))
			return m;
	return NULL;
}

bool cfg_meta_scheme_known(const char *conn, size_t *scheme_len)
{
	const char *sep = conn ? strstr(conn, "://") : NULL;

	if (scheme_len)
		*scheme_len = sep ? (size_t)(sep - conn) : 0;
	if (!conn || !strcmp(conn, CFG_META_P2P))
		return conn != NULL;
	if (!sep) /* bare host:port: the engine's parser takes it as etcd */
		return true;
	return cfg_meta_scheme_of(conn) != NULL;
}
