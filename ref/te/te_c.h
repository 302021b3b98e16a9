/* SPDX-License-Identifier: Apache-2.0 */
/* te_c: a C API shaped like Mooncake's transfer_engine_c.h (docs/engine.md) on top of te.h, so a
 * program written against Mooncake's C API ports by swapping the include and the library. */
#ifndef TE_C_H
#define TE_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define segment_handle_t int32_t
#define segment_id_t     int32_t
#define batch_id_t       uint64_t
#define LOCAL_SEGMENT    (0)
#define INVALID_BATCH    UINT64_MAX

#define OPCODE_READ  (0)
#define OPCODE_WRITE (1)

#define STATUS_WAITING   (0)
#define STATUS_PENDING   (1)
#define STATUS_INVALID   (2)
#define STATUS_CANCELED  (3)
#define STATUS_COMPLETED (4)
#define STATUS_TIMEOUT   (5)
#define STATUS_FAILED    (6)

struct transfer_request {
	int opcode;
	void *source;
	segment_id_t target_id;
	uint64_t target_offset; /* absolute remote virtual address */
	uint64_t length;
};
typedef struct transfer_request transfer_request_t;

struct transfer_status {
	int status;
	uint64_t transferred_bytes;
};
typedef struct transfer_status transfer_status_t;

struct buffer_entry {
	void *addr;
	size_t length;
};
typedef struct buffer_entry buffer_entry_t;

typedef void *transfer_engine_t;
typedef void *transport_t;

/* NULL on failure. ip_or_host_name and rpc_port are ignored (as Mooncake >= 0.3.0: docs/engine.md).
 * auto_discover != 0 picks rdma when a device exists, else tcp; with 0 the transport is chosen
 * by installTransport() (before that, the first call that needs the engine picks tcp). */
transfer_engine_t createTransferEngine(const char *metadata_conn_string,
                                       const char *local_server_name, const char *ip_or_host_name,
                                       uint64_t rpc_port, int auto_discover);
/* "ip:rpc_port" into buf_out; 0 or -1. */
int getLocalIpAndPort(transfer_engine_t engine, char *buf_out, size_t buf_len);
/* proto "tcp" | "rdma"; args ignored (the NIC matrix comes from discovery). NULL on failure.
 * One transport per engine: a second, different protocol fails. */
transport_t installTransport(transfer_engine_t engine, const char *proto, void **args);
int uninstallTransport(transfer_engine_t engine, const char *proto);
void destroyTransferEngine(transfer_engine_t engine);

/* -1 on failure. */
segment_id_t openSegment(transfer_engine_t engine, const char *segment_name);
segment_id_t openSegmentNoCache(transfer_engine_t engine, const char *segment_name);
int closeSegment(transfer_engine_t engine, segment_id_t segment_id);
int removeLocalSegment(transfer_engine_t engine, const char *segment_name);

/* Negative ERR_* codes (ERR_ADDRESS_OVERLAPPED -7, ERR_ADDRESS_NOT_REGISTERED -3, ...). */
int registerLocalMemory(transfer_engine_t engine, void *addr, size_t length, const char *location,
                        int remote_accessible);
int unregisterLocalMemory(transfer_engine_t engine, void *addr);
int registerLocalMemoryBatch(transfer_engine_t engine, buffer_entry_t *buffer_list,
                             size_t buffer_len, const char *location);
int unregisterLocalMemoryBatch(transfer_engine_t engine, void **addr_list, size_t addr_len);

/* INVALID_BATCH on failure. */
batch_id_t allocateBatchID(transfer_engine_t engine, size_t batch_size);
/* These three return the POSITIVE Status code, as Mooncake's C API: 0 ok, 1 invalid argument
 * (also an unknown batch id), 2 too many requests, 3 address not registered (also a remote
 * range outside every remote buffer), 4 batch busy, 8 transport not supported, 200 metadata. */
int submitTransfer(transfer_engine_t engine, batch_id_t batch_id, struct transfer_request *entries,
                   size_t count);
int getTransferStatus(transfer_engine_t engine, batch_id_t batch_id, size_t task_id,
                      struct transfer_status *status);
int freeBatchID(transfer_engine_t engine, batch_id_t batch_id);
int syncSegmentCache(transfer_engine_t engine);

#ifdef __cplusplus
}
#endif

#endif
