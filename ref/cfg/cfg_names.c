/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_names: vLLM's connector names (V0 and V1 registries); the metadata URL schemes are
 * ref/common's pd_meta_scheme. Ground floor of ref/cfg (calls nothing in it). */
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
