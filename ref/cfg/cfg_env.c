/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_env: the environment variables that change what vLLM and the transfer engine do with a
 * configuration (docs/vllm-v0.md, docs/engine.md, docs/rdma.md). */
#include "cfg/cfg.h"

#include <stdlib.h>
#include <string.h>

#include "pd_env.h"

/* The raw text of each (the checker names a bad value itself, as the engine would read it). */
void cfg_env_from_environ(struct cfg_env *e)
{
	memset(e, 0, sizeof(*e));
	e->mooncake_config_path = pd_env_raw("MOONCAKE_CONFIG_PATH");
	e->bootstrap_port = pd_env_raw("VLLM_MOONCAKE_BOOTSTRAP_PORT");
	e->side_channel_port = pd_env_raw("VLLM_MOONCAKE_SIDE_CHANNEL_PORT");
	e->abort_timeout = pd_env_raw("VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT");
	e->sender_workers = pd_env_raw("VLLM_MOONCAKE_SENDER_WORKERS");
	e->protocol = pd_env_raw("VLLM_MOONCAKE_PROTOCOL");
	e->legacy_rpc = pd_env_raw("MC_LEGACY_RPC_PORT_BINDING");
	e->tcp_bind_address = pd_env_raw("MC_TCP_BIND_ADDRESS");
	e->handshake_port = pd_env_raw("MC_HANDSHAKE_PORT");
	e->cluster_id = pd_env_raw("MC_METADATA_CLUSTER_ID");
	e->min_rpc = pd_env_raw("MC_MIN_RPC_PORT");
	e->max_rpc = pd_env_raw("MC_MAX_RPC_PORT");
	e->min_prc = pd_env_raw("MC_MIN_PRC_PORT");
	e->max_prc = pd_env_raw("MC_MAX_PRC_PORT");
	e->disable_reqid_random = pd_env_raw("VLLM_DISABLE_REQUEST_ID_RANDOMIZATION");
	e->ib_sysfs = pd_env_raw("PDKV_SYSFS_INFINIBAND");
}
