/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_env: the environment variables that change what vLLM and the transfer engine do with a
 * configuration (docs/vllm-v0.md, docs/engine.md, docs/rdma.md). */
#include "cfg/cfg.h"

#include <stdlib.h>
#include <string.h>

void cfg_env_from_environ(struct cfg_env *e)
{
	memset(e, 0, sizeof(*e));
	e->mooncake_config_path = getenv("MOONCAKE_CONFIG_PATH");
	e->bootstrap_port = getenv("VLLM_MOONCAKE_BOOTSTRAP_PORT");
	e->side_channel_port = getenv("VLLM_MOONCAKE_SIDE_CHANNEL_PORT");
	e->abort_timeout = getenv("VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT");
	e->sender_workers = getenv("VLLM_MOONCAKE_SENDER_WORKERS");
	e->protocol = getenv("VLLM_MOONCAKE_PROTOCOL");
	e->legacy_rpc = getenv("MC_LEGACY_RPC_PORT_BINDING");
	e->tcp_bind_address = getenv("MC_TCP_BIND_ADDRESS");
	e->handshake_port = getenv("MC_HANDSHAKE_PORT");
	e->cluster_id = getenv("MC_METADATA_CLUSTER_ID");
	e->min_rpc = getenv("MC_MIN_RPC_PORT");
	e->max_rpc = getenv("MC_MAX_RPC_PORT");
	e->min_prc = getenv("MC_MIN_PRC_PORT");
	e->max_prc = getenv("MC_MAX_PRC_PORT");
	e->disable_reqid_random = getenv("VLLM_DISABLE_REQUEST_ID_RANDOMIZATION");
	e->ib_sysfs = getenv("PDKV_SYSFS_INFINIBAND");
}
