/* SPDX-License-Identifier: Apache-2.0 */
/* te: pdkv's reference transfer engine — the public API. Semantics follow Mooncake's
 * TransferEngine (docs/engine.md); see te_c.h for the transfer_engine_c.h shape.
 * Every int-returning call returns 0 (or a non-negative value) on success, a TE_ERR_* (< 0) else.
 */
#ifndef TE_H
#define TE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Error codes: Mooncake's ERR_* values (negated Status codes), plus pdkv's own below -1000. */
#define TE_OK                          0
#define TE_ERR_INVALID_ARGUMENT        -1
#define TE_ERR_TOO_MANY_REQUESTS       -2
#define TE_ERR_ADDRESS_NOT_REGISTERED  -3
#define TE_ERR_BATCH_BUSY              -4
#define TE_ERR_DEVICE_NOT_FOUND        -6
#define TE_ERR_ADDRESS_OVERLAPPED      -7
#define TE_ERR_NOT_SUPPORTED_TRANSPORT -8
#define TE_ERR_DNS                     -101
#define TE_ERR_SOCKET                  -102
#define TE_ERR_MALFORMED_JSON          -103
#define TE_ERR_REJECT_HANDSHAKE        -104
#define TE_ERR_METADATA                -200
#define TE_ERR_ENDPOINT                -201
#define TE_ERR_CONTEXT                 -202
#define TE_ERR_MEMORY                  -302
#define TE_ERR_NOT_IMPLEMENTED         -999
/* pdkv-specific */
#define TE_ERR_NOT_FOUND    -1001 /* metadata key / segment not present */
#define TE_ERR_OUT_OF_RANGE -1002 /* remote range not inside one registered remote buffer */
#define TE_ERR_TIMEOUT      -1003
#define TE_ERR_BAD_BATCH    -1004 /* unknown or already-freed batch id */
#define TE_ERR_UNREACHABLE  -1005 /* metadata store or peer not reachable */

#define TE_LOCAL_SEGMENT   0ull
#define TE_INVALID_SEGMENT UINT64_MAX
#define TE_INVALID_BATCH   UINT64_MAX

enum te_opcode { TE_READ = 0, TE_WRITE = 1 };

enum te_status {
	TE_WAITING = 0,
	TE_PENDING = 1,
	TE_INVALID = 2,
	TE_CANCELED = 3,
	TE_COMPLETED = 4,
	TE_TIMEOUT = 5,
	TE_FAILED = 6,
};

struct te_engine; /* opaque */

struct te_engine_opts {
	const char *metadata_conn;     /* "etcd://h:p", "h:p", "redis://h:p", "http://h:p/path",
	                                  "P2PHANDSHAKE" (docs/metadata.md) */
	const char *local_server_name; /* segment name, e.g. "10.0.0.2:13003" */
	const char *protocol;          /* "tcp", "rdma" or NULL = auto (rdma if a device exists) */
	const char *device_names;      /* comma list for rdma ("mlx5_0,mlx5_1"); NULL = all */
};

struct te_request {
	int opcode;             /* TE_READ: remote -> source; TE_WRITE: source -> remote */
	void *source;           /* local address, must be inside a registered buffer */
	uint64_t target_id;     /* from te_open_segment */
	uint64_t target_offset; /* ABSOLUTE remote virtual address (Mooncake semantics) */
	size_t length;
};

struct te_task_status {
	int status; /* enum te_status */
	size_t transferred_bytes;
};

/* Creates the engine: resolves the RPC endpoint (docs/engine.md; MC_* env honoured), writes
 * mooncake/rpc_meta/<name>, installs the transport and publishes the segment descriptor. */
int te_engine_create(const struct te_engine_opts *opts, struct te_engine **out);
/* Removes this engine's metadata keys, stops listeners and frees everything. NULL is a no-op. */
void te_engine_destroy(struct te_engine *eng);
/* Effective segment name (P2PHANDSHAKE rewrites it to host:rpc_port). */
const char *te_engine_name(const struct te_engine *eng);
int te_engine_rpc_port(const struct te_engine *eng);
/* False while the metadata store does not answer the engine's periodic key check (which puts
 * lost keys back; PDKV_TE_REPUBLISH_S, default 5 s); true with P2PHANDSHAKE. */
bool te_engine_meta_ok(const struct te_engine *eng);
const char *te_engine_protocol(const struct te_engine *eng); /* "tcp" | "rdma" */
/* TCP connections (lanes) an engine opens to each peer: 1 on hosts with <= 4 CPUs, 2 up to 15,
 * 4 from 16; MC_TCP_LANES_PER_PEER (1..16) overrides (read at each call). */
int te_tcp_lanes_per_peer(void);

/* Target side: fn(ud, addr, len) runs on an engine server thread as each piece of a peer's
 * WRITE into this engine's host memory lands (TCP: each socket read of the body, at most
 * PDKV_TCP_RECV_CHUNK, right after it, while the bytes are in that core's cache; a WRITE's
 * pieces add up to it). RDMA and CUDA memory are not seen, so a user must not depend on it for
 * completion: it only lets work on landed bytes start early. Pieces of a connection broken
 * mid-body are reported too. Set it before traffic; NULL removes it. fn must be short and must
 * never wait for another thread (no lock a waiter may hold): while it runs that connection reads
 * nothing, the peer's window closes and its WRITEs stall (issue 33). */
typedef void (*te_landed_fn)(void *ud, const void *addr, size_t len);
void te_engine_set_landed(struct te_engine *eng, te_landed_fn fn, void *ud);

/* location: "cpu:0", "cuda:0", "*". Overlap -> TE_ERR_ADDRESS_OVERLAPPED. Republishes. */
int te_register(struct te_engine *eng, void *addr, size_t len, const char *location);
/* addr must be a registered buffer's start, else TE_ERR_ADDRESS_NOT_REGISTERED. */
int te_unregister(struct te_engine *eng, void *addr);

/* Returns a segment id >= 1 (0 = own segment) in *id, fetching and caching the descriptor. */
int te_open_segment(struct te_engine *eng, const char *name, uint64_t *id);
/* Re-fetches cached descriptors (name NULL = all). */
int te_sync_segment(struct te_engine *eng, const char *name);

int te_batch_alloc(struct te_engine *eng, size_t batch_size, uint64_t *batch_id);
/* May be called several times while the running total <= batch_size (else TOO_MANY_REQUESTS).
 * Invalid requests (unregistered source, range outside every remote buffer, unknown segment)
 * are rejected here with an error and nothing of the call is submitted. */
int te_batch_submit(struct te_engine *eng, uint64_t batch_id, const struct te_request *reqs,
                    size_t n);
int te_batch_status(struct te_engine *eng, uint64_t batch_id, size_t task_id,
                    struct te_task_status *st);
/* Landing hook (pdkv's own; Mooncake has none): fn is shown the bytes of this batch's READs as
 * they land in local host memory, on the transport's receiving thread and before the task can
 * be seen finished: task (index in the batch), off (offset in that request), len bytes at data.
 * A caller can then check the bytes while they are still in that core's cache. Only where the
 * transport sees them land: TCP into host memory does; RDMA, CUDA destinations and WRITEs never
 * call it, so a caller counts what it was shown (a READ that ended TE_COMPLETED was shown every
 * byte once, or none). Calls for one batch may come from several lanes at once; fn must be
 * thread safe, quick, and must not call into the engine. Set it before the batch's first
 * submit (TE_ERR_BATCH_BUSY after); the caller keeps ud alive until every task has ended. */
typedef void (*te_land_fn)(void *ud, size_t task, uint64_t off, const void *data, size_t len);
int te_batch_set_land(struct te_engine *eng, uint64_t batch_id, te_land_fn fn, void *ud);
/* Waiting for a batch (pdkv's own; Mooncake has none, its callers poll te_batch_status):
 * sleeps until at most max_open of the batch's submitted tasks are still running (0: all have
 * ended), or timeout_us passed (TE_ERR_TIMEOUT). The thread is woken by the transport thread
 * that ends the task crossing that line, so a caller sees the end at once without a polling
 * loop's wake-ups. A task counted ended here may show its final status through
 * te_batch_status a few instructions later (yield and ask again). One thread waits on a batch
 * at a time (TE_ERR_BATCH_BUSY); te_batch_free / _abandon of a batch a thread waits on are
 * TE_ERR_BATCH_BUSY. */
int te_batch_wait(struct te_engine *eng, uint64_t batch_id, size_t max_open, uint64_t timeout_us);
/* TE_ERR_BATCH_BUSY unless every task was observed finished through te_batch_status. */
int te_batch_free(struct te_engine *eng, uint64_t batch_id);

/* Abandoned batches (pdkv's own; Mooncake has none). A caller that gives up on a batch whose
 * tasks may still be running (its deadline passed, it is stopping) must not free or reuse the
 * memory those tasks read or write: a lane may still send it or land bytes into it. It hands
 * the batch to the engine instead: te_batch_abandon takes it over (the id is then unknown to
 * te_batch_status / te_batch_free: TE_ERR_BAD_BATCH), and once every task has ended the engine
 * frees the batch and calls release(ud, false) exactly once; only then may the caller reuse the
 * memory (and the landing hook's ud). The engine ends every task eventually (a lane fails its
 * slices when its connection breaks or its socket times out). Releases run in te_batch_reap,
 * on the caller's thread: call it from the caller's own reap points (a new transfer, a periodic
 * sweep) with no lock held that release takes. te_engine_destroy calls release(ud, true) for the
 * batches still held, after its transports are stopped (no task can touch the memory then);
 * release must not call into the engine in either case. release may be NULL. */
typedef void (*te_release_fn)(void *ud, bool engine_gone);
int te_batch_abandon(struct te_engine *eng, uint64_t batch_id, te_release_fn release, void *ud);
/* Releases (as above) the abandoned batches whose every task has ended; returns how many. */
size_t te_batch_reap(struct te_engine *eng);
/* Abandoned batches the engine still holds. */
size_t te_batch_abandoned(struct te_engine *eng);

/* Convenience: one request, waits for the end (timeout_ms <= 0 -> MC_TRANSFER_TIMEOUT, 30 s). */
int te_transfer_sync(struct te_engine *eng, int opcode, const char *segment, void *local,
                     uint64_t remote_addr, size_t len, int timeout_ms);

const char *te_strerror(int err);
const char *te_status_name(int status);

#endif
