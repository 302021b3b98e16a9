/* SPDX-License-Identifier: Apache-2.0 */
/* te_engine_get: what the transports and tools read off an engine (name, ports, protocol,
 * local IP, a peer's path, the data socket made at create); below the transports and
 * te_engine.c, which owns the engine's life. */
#include "te_engine_priv.h"

const char *te_engine_name(const struct te_engine *eng)
{
	return eng ? eng->name : "";
}

int te_engine_rpc_port(const struct te_engine *eng)
{
	return eng ? eng->rpc_port : -1;
}

const char *te_engine_protocol(const struct te_engine *eng)
{
	return eng && eng->ops ? eng->ops->name : "";
}

const char *te_engine_device_names(const struct te_engine *eng)
{
	return eng->device_names[0] ? eng->device_names : NULL;
}

const char *te_engine_local_ip(const struct te_engine *eng)
{
	return eng->local_ip;
}

const char *te_engine_peer_path(struct te_engine *eng, const char *name)
{
	const struct te_segment_desc *d = NULL;
	if (te_engine_peer_desc(eng, name, &d) || !d)
		return "unknown";
	return eng->ops->peer_path ? eng->ops->peer_path(eng->tp, d) : eng->ops->name;
}

int te_engine_take_data_fd(struct te_engine *eng)
{
	int fd = eng->data_fd;
	eng->data_fd = -1;
	return fd;
}
