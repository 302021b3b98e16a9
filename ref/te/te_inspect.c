/* SPDX-License-Identifier: Apache-2.0 */
/* te_inspect: the tools' read-only window (te_inspect.h) over the engine's private views —
 * copies out of descriptors and metadata lookups, so no tool needs te_internal.h. */
#include "te_inspect.h"
#include "te_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* te_engine.c links rdma the same way: weakly, NULL when lib terdma is not linked */
extern const struct te_transport_ops te_rdma_transport_ops __attribute__((weak));

#define PROBE_KEY "mooncake/rpc_meta/__pdkv_doctor_probe__"

const char *te_inspect_transport(int i)
{
	const struct te_transport_ops *built[] = {&te_tcp_transport_ops, &te_rdma_transport_ops,
	                                          &te_ipc_transport_ops};
	int n = 0;
	for (size_t k = 0; k < sizeof(built) / sizeof(built[0]); k++) {
		if (!built[k])
			continue; /* rdma: weak, NULL when not linked */
		if (n++ == i)
			return built[k]->name;
	}
	return NULL;
}

const char *te_inspect_peer_path(struct te_engine *eng, const char *name)
{
	return eng && name ? te_engine_peer_path(eng, name) : "unknown";
}

void te_inspect_local_ip(char *out, size_t len)
{
	te_net_local_ip(out, len);
}

/* The named peer's descriptor, fetched through the engine's cache; TE_ERR_NOT_FOUND if none. */
static int peer_desc(struct te_engine *eng, const char *name, const struct te_segment_desc **d)
{
	int ret;
	*d = NULL;
	if (!eng || !name)
		return TE_ERR_INVALID_ARGUMENT;
	ret = te_engine_peer_desc(eng, name, d);
	if (ret)
		return ret;
	return *d ? 0 : TE_ERR_NOT_FOUND;
}

int te_inspect_segment(struct te_engine *eng, const char *name, struct te_segment_view *v)
{
	const struct te_segment_desc *d;
	int ret = v ? peer_desc(eng, name, &d) : TE_ERR_INVALID_ARGUMENT;
	if (ret)
		return ret;
	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", d->name);
	snprintf(v->protocol, sizeof(v->protocol), "%s", d->protocol);
	v->tcp_data_port = d->tcp_data_port;
	v->tcp_proto_version = d->tcp_proto_version;
	v->ndevices = d->ndevices;
	v->nbuffers = d->nbuffers;
	return 0;
}

int te_inspect_buffer(struct te_engine *eng, const char *name, int i, struct te_buffer_view *b)
{
	const struct te_segment_desc *d;
	int ret = b ? peer_desc(eng, name, &d) : TE_ERR_INVALID_ARGUMENT;
	if (ret)
		return ret;
	if (i < 0 || i >= d->nbuffers)
		return TE_ERR_OUT_OF_RANGE;
	snprintf(b->name, sizeof(b->name), "%s", d->buffers[i].name);
	b->addr = d->buffers[i].addr;
	b->length = d->buffers[i].length;
	return 0;
}

int te_inspect_rpc_meta(const char *conn, const char *segment, char *host, size_t hostlen,
                        int *rpc_port, char *err, size_t errlen)
{
	struct te_meta *m = NULL;
	char *key = NULL, *val = NULL;
	int ret = te_meta_open(conn, &m, err, errlen);
	if (ret)
		return ret;
	key = te_meta_rpc_key(segment);
	ret = key ? te_meta_get(m, key, &val) : TE_ERR_MEMORY;
	if (ret)
		snprintf(err, errlen, "no rpc_meta %s in %s", key ? key : "?", conn);
	else
		ret = te_rpcmeta_decode(val, strlen(val), host, hostlen, rpc_port, err, errlen);
	free(val);
	free(key);
	te_meta_close(m);
	return ret;
}

int te_inspect_meta_probe(const char *conn, bool *opened, char *err, size_t errlen)
{
	struct te_meta *m = NULL;
	char *v = NULL;
	int ret = te_meta_open(conn, &m, err, errlen);
	*opened = ret == 0;
	if (ret)
		return ret;
	ret = te_meta_get(m, PROBE_KEY, &v);
	if (ret == TE_ERR_NOT_FOUND)
		ret = 0;
	free(v);
	te_meta_close(m);
	return ret;
}
