/* SPDX-License-Identifier: Apache-2.0 */
/* te_c: Mooncake's transfer_engine_c.h calls mapped onto te.h, including its mixed return
 * conventions (negative ERR_* for registration, positive Status codes for batch calls). */
#include "te_c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"
#include "te.h"
#include "te_internal.h"

struct te_c_engine {
	struct te_engine *eng; /* created lazily when auto_discover == 0 */
	char conn[1024];
	char name[TE_NAME_MAX];
	int auto_discover;
};

/* te error -> Mooncake's negative ERR_* (pdkv-only codes folded onto the nearest one). */
static int to_err(int e)
{
	switch (e) {
	case TE_ERR_NOT_FOUND:
	case TE_ERR_UNREACHABLE:
		return TE_ERR_METADATA;
	case TE_ERR_OUT_OF_RANGE:
		return TE_ERR_ADDRESS_NOT_REGISTERED;
	case TE_ERR_BAD_BATCH:
	case TE_ERR_TIMEOUT:
		return TE_ERR_INVALID_ARGUMENT;
	default:
		return e;
	}
}

/* te error -> positive Status code (kNotImplemented is 999 in both). */
static int to_status(int e)
{
	return e ? -to_err(e) : 0;
}

static int c_create(struct te_c_engine *c, const char *proto)
{
	struct te_engine_opts o = {c->conn, c->name, proto, NULL};
	if (c->eng)
		return 0;
	return te_engine_create(&o, &c->eng);
}

static struct te_engine *need(transfer_engine_t engine)
{
	struct te_c_engine *c = engine;
	if (!c)
		return NULL;
	if (!c->eng && c_create(c, c->auto_discover ? NULL : "tcp"))
		return NULL;
	return c->eng;
}

transfer_engine_t createTransferEngine(const char *metadata_conn_string,
                                       const char *local_server_name, const char *ip_or_host_name,
                                       uint64_t rpc_port, int auto_discover)
{
	struct te_c_engine *c;

	(void)ip_or_host_name;
	(void)rpc_port;
	if (!metadata_conn_string || !local_server_name)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(c->conn, sizeof(c->conn), "%s", metadata_conn_string);
	snprintf(c->name, sizeof(c->name), "%s", local_server_name);
	c->auto_discover = auto_discover;
	/* init() errors (metadata down, bad conn string) surface here, as in Mooncake */
	if (auto_discover && c_create(c, NULL)) {
		free(c);
		return NULL;
	}
	return c;
}

int getLocalIpAndPort(transfer_engine_t engine, char *buf_out, size_t buf_len)
{
	struct te_engine *e = need(engine);
	if (!e || !buf_out)
		return -1;
	if (snprintf(buf_out, buf_len, "%s:%d", te_engine_local_ip(e), te_engine_rpc_port(e)) >=
	    (int)buf_len)
		return -1;
	return 0;
}

transport_t installTransport(transfer_engine_t engine, const char *proto, void **args)
{
	struct te_c_engine *c = engine;

	(void)args;
	if (!c || !proto)
		return NULL;
	if (!c->eng && c_create(c, proto))
		return NULL;
	if (strcmp(te_engine_protocol(c->eng), proto)) {
		pd_err("te_c: engine already runs %s; cannot install %s as well",
		       te_engine_protocol(c->eng), proto);
		return NULL;
	}
	return c->eng;
}

int uninstallTransport(transfer_engine_t engine, const char *proto)
{
	(void)engine;
	(void)proto;
	return 0; /* the transport lives as long as the engine */
}

void destroyTransferEngine(transfer_engine_t engine)
{
	struct te_c_engine *c = engine;
	if (!c)
		return;
	te_engine_destroy(c->eng);
	free(c);
}

static segment_id_t open_seg(transfer_engine_t engine, const char *name, bool nocache)
{
	struct te_engine *e = need(engine);
	uint64_t id;
	if (!e || !name)
		return -1;
	if (nocache)
		te_sync_segment(e, NULL);
	if (te_open_segment(e, name, &id) || id > INT32_MAX)
		return -1;
	if (nocache && id != TE_LOCAL_SEGMENT && te_sync_segment(e, name))
		return -1;
	return (segment_id_t)id;
}

segment_id_t openSegment(transfer_engine_t engine, const char *segment_name)
{
	return open_seg(engine, segment_name, false);
}

segment_id_t openSegmentNoCache(transfer_engine_t engine, const char *segment_name)
{
	return open_seg(engine, segment_name, true);
}

int closeSegment(transfer_engine_t engine, segment_id_t segment_id)
{
	(void)engine;
	(void)segment_id;
	return 0;
}

int removeLocalSegment(transfer_engine_t engine, const char *segment_name)
{
	(void)engine;
	(void)segment_name;
	return 0;
}

int registerLocalMemory(transfer_engine_t engine, void *addr, size_t length, const char *location,
                        int remote_accessible)
{
	struct te_engine *e = need(engine);
	(void)remote_accessible;
	if (!e)
		return TE_ERR_METADATA;
	return to_err(te_register(e, addr, length, location));
}

int unregisterLocalMemory(transfer_engine_t engine, void *addr)
{
	struct te_engine *e = need(engine);
	if (!e)
		return TE_ERR_METADATA;
	return to_err(te_unregister(e, addr));
}

int registerLocalMemoryBatch(transfer_engine_t engine, buffer_entry_t *buffer_list,
                             size_t buffer_len, const char *location)
{
	int ret = 0;
	for (size_t i = 0; i < buffer_len && !ret; i++)
		ret = registerLocalMemory(engine, buffer_list[i].addr, buffer_list[i].length,
		                          location, 1);
	return ret;
}

int unregisterLocalMemoryBatch(transfer_engine_t engine, void **addr_list, size_t addr_len)
{
	int ret = 0;
	for (size_t i = 0; i < addr_len; i++) {
		int r = unregisterLocalMemory(engine, addr_list[i]);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

batch_id_t allocateBatchID(transfer_engine_t engine, size_t batch_size)
{
	struct te_engine *e = need(engine);
	uint64_t id;
	if (!e || te_batch_alloc(e, batch_size, &id))
		return INVALID_BATCH;
	return id;
}

int submitTransfer(transfer_engine_t engine, batch_id_t batch_id, struct transfer_request *entries,
                   size_t count)
{
	struct te_engine *e = need(engine);
	struct te_request stackv[32], *v = stackv;
	int ret;

	if (!e || (count && !entries))
		return to_status(TE_ERR_INVALID_ARGUMENT);
	if (count > 32 && !(v = malloc(count * sizeof(*v))))
		return to_status(TE_ERR_MEMORY);
	for (size_t i = 0; i < count; i++) {
		v[i].opcode = entries[i].opcode;
		v[i].source = entries[i].source;
		/* int32 on the C side, widened as the Mooncake wrapper does (-1 stays invalid) */
		v[i].target_id =
		    entries[i].target_id < 0 ? TE_INVALID_SEGMENT : (uint64_t)entries[i].target_id;
		v[i].target_offset = entries[i].target_offset;
		v[i].length = entries[i].length;
	}
	ret = te_batch_submit(e, batch_id, v, count);
	if (v != stackv)
		free(v);
	return to_status(ret);
}

int getTransferStatus(transfer_engine_t engine, batch_id_t batch_id, size_t task_id,
                      struct transfer_status *status)
{
	struct te_engine *e = need(engine);
	struct te_task_status st;
	int ret;

	if (!e || !status)
		return to_status(TE_ERR_INVALID_ARGUMENT);
	ret = te_batch_status(e, batch_id, task_id, &st);
	if (!ret) {
		status->status = st.status;
		status->transferred_bytes = st.transferred_bytes;
	}
	return to_status(ret);
}

int freeBatchID(transfer_engine_t engine, batch_id_t batch_id)
{
	struct te_engine *e = need(engine);
	if (!e)
		return to_status(TE_ERR_INVALID_ARGUMENT);
	return to_status(te_batch_free(e, batch_id));
}

int syncSegmentCache(transfer_engine_t engine)
{
	struct te_engine *e = need(engine);
	if (!e)
		return TE_ERR_METADATA;
	return to_err(te_sync_segment(e, NULL));
}
