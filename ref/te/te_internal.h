/* SPDX-License-Identifier: Apache-2.0 */
/* te_internal: the engine's private seams, grouped by concept — descriptors, metadata, sockets,
 * handshake, tasks and transports, engine services, batches, cleanup. Only ref/te includes it;
 * the harness uses te_inspect.h. A new transport or metadata backend is one file + one row. */
#ifndef TE_INTERNAL_H
#define TE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "te.h"
#include "te_conn.h"

struct cJSON;

/* ================================================================ descriptors (te_desc.c,
 * te_json.c) What a segment publishes: docs/metadata.md. */
#define TE_NAME_MAX    256
#define TE_MAX_DEVICES 16

struct te_device_desc {
	char name[64];
	uint16_t lid;
	char gid[48]; /* "xx:xx:...:xx", 16 groups */
};

#define TE_SHM_NAME_MAX 129 /* 128 hex digits of a 64-byte cudaIpcMemHandle_t + NUL */

struct te_buffer_desc {
	char name[TE_NAME_MAX]; /* location ("cpu:0") for rdma and nvlink_intra, server name for tcp
	                         */
	uint64_t addr, length;
	int nkeys; /* rdma: one key per device; tcp: 0 */
	uint32_t lkey[TE_MAX_DEVICES], rkey[TE_MAX_DEVICES];
	char shm_name[TE_SHM_NAME_MAX]; /* nvlink_intra: the IPC handle in upper-case hex; "" for
	                                   memory that only the TCP path reaches */
};

struct te_segment_desc {
	char name[TE_NAME_MAX];
	char protocol[16]; /* "tcp" | "rdma" | "nvlink_intra" */
	char timestamp[32];
	char host_id[64];  /* nvlink_intra, pdkv's own "pdkv_host_id": the kernel's boot id, so a
	                      peer knows whether it shares this host; "" = not published */
	int tcp_data_port; /* 0 = absent */
	int tcp_proto_version;     /* 0 = absent */
	uint64_t metadata_version; /* Mooncake #3837: wall-clock microseconds of the publish;
	                              0 = absent or legacy (P2P handshake, older publishers) */
	int ndevices;
	struct te_device_desc devices[TE_MAX_DEVICES];
	int nbuffers;
	struct te_buffer_desc *buffers;
	char *priority_matrix; /* rdma: compact JSON object text, e.g. {"cpu:0":[["rxe0"],[]]} */
};

/* Mooncake FastWriter bytes: compact, keys sorted byte-wise, trailing "\n". malloc'd. */
char *te_desc_encode(const struct te_segment_desc *d);
/* Tolerant reader with Mooncake's validation (docs/metadata.md): the whole descriptor is rejected
 * on any invalid field. *out is malloc'd; free with te_desc_free. TE_ERR_MALFORMED_JSON on failure,
 * with the reason in errbuf. */
int te_desc_decode(const char *json, size_t len, struct te_segment_desc **out, char *errbuf,
                   size_t errlen);
void te_desc_free(struct te_segment_desc *d);
/* Local-time timestamp "YYYY-MM-DD HH:MM:SS.uuuuuu". */
void te_desc_timestamp(char out[32]);
/* A fresh metadata_version: wall-clock microseconds, strictly above every earlier one of this
 * process (two publishes in one microsecond, or a clock step back, still order). */
uint64_t te_desc_next_version(void);
/* Mooncake #3837's cache rule for a re-read descriptor: 1 take the new one (newer version, or
 * either side unversioned), 0 same version and same content (nothing to do), -1 older (stale),
 * -2 same version but different content. The timestamp is not content. */
int te_desc_version_check(const struct te_segment_desc *cached,
                          const struct te_segment_desc *fresh);
/* Finds the remote buffer holding [addr, addr+len); NULL if none (overflow-safe). */
const struct te_buffer_desc *te_desc_find_range(const struct te_segment_desc *d, uint64_t addr,
                                                uint64_t len);
/* rpc_meta value: {"ip_or_host_name":"...","rpc_port":N}\n (malloc'd), with
 * "metadata_version":version between them when te_compat_metadata_version(). */
char *te_rpcmeta_encode(const char *ip_or_host_name, int rpc_port, uint64_t version);
/* Tolerant reader: host non-empty, rpc_port 1..65535, metadata_version (optional) an unsigned
 * 64-bit integer. TE_ERR_MALFORMED_JSON + reason. */
int te_rpcmeta_decode(const char *json, size_t len, char *host, size_t hostlen, int *rpc_port,
                      char *errbuf, size_t errlen);

/* JSON as Mooncake writes and reads it. te_json_fast_write: compact, sorted keys, INCLUDING the
 * trailing "\n"; cJSON_Raw items are written verbatim (exact u64 numbers). */
char *te_json_fast_write(const struct cJSON *item);
/* Strict parser that keeps numbers exact: every number becomes a cJSON_Raw item holding its
 * text (valuedouble is set too); duplicate object keys: the last wins (as jsoncpp); depth <= 64;
 * trailing whitespace allowed. NULL with the reason in errbuf. Free with cJSON_Delete. */
struct cJSON *te_json_parse(const char *text, size_t len, char *errbuf, size_t errlen);
/* Unsigned integer from a Number or Raw item: rejects negatives, fractions, exponents and
 * values above max. 0 or TE_ERR_MALFORMED_JSON. */
int te_json_get_uint(const struct cJSON *item, uint64_t max, uint64_t *out);

/* ================================================================ Mooncake release
 * (te_meta_compat.c) PDKV_MOONCAKE_VERSION picks the release whose bytes pdkv writes where releases
 * differ. Unset (or unparsable), pdkv writes what the newest release it knows writes,
 * TE_COMPAT_NEWEST: no trailing "\n" on HTTP store values, the 0.3.12 RDMA fields and handshake,
 * no metadata_version (in no tagged release yet; 0.3.13 asks for it). */
#define TE_COMPAT_NEWEST 312 /* v0.3.12.post1 */
/* "0.3.6" / "v0.3.12.post1" -> 306 / 312 (major*10000+minor*100+patch); NULL/"" 0; bad -1. */
int te_compat_parse(const char *s);
int te_compat_version(void); /* PDKV_MOONCAKE_VERSION (read at each call), else TE_COMPAT_NEWEST */
/* HTTP store values end with "\n" (< 0.3.6; redis, etcd and P2P always have it). */
bool te_compat_http_newline(void);
/* RDMA descriptors carry tcp_data_port 0 / tcp_proto_version 1 (>= 0.3.12). */
bool te_compat_rdma_tcp_fields(void);
/* RDMA Connection handshake in the current form: local_gid, local_lid, payload, ready_ack
 * (>= 0.3.11); else the older 4-key form. Both forms are always accepted. */
bool te_compat_rdma_hs_current(void);
/* Descriptors and rpc_meta carry "metadata_version" (Mooncake #3837; >= 0.3.13, so off when
 * unset: no tagged release has it yet). */
bool te_compat_metadata_version(void);

/* ================================================================ metadata (te_conn.c, te_meta*.c)
 * Connection strings and stores: docs/metadata.md. */
struct te_meta; /* opaque store handle; thread-safe */
int te_meta_open(const char *conn, struct te_meta **out, char *errbuf, size_t errlen);
enum te_meta_kind te_meta_kind(const struct te_meta *m);
const char *te_meta_conn(const struct te_meta *m); /* the connection string it was opened with */
int te_meta_put(struct te_meta *m, const char *key, const char *value);
/* *value malloc'd. TE_ERR_NOT_FOUND when absent, TE_ERR_UNREACHABLE when the store is down. */
int te_meta_get(struct te_meta *m, const char *key, char **value);
int te_meta_del(struct te_meta *m, const char *key);
void te_meta_close(struct te_meta *m);
/* Keys with the MC_METADATA_CLUSTER_ID infix: "mooncake/[id/]ram/<name>" (or
 * "mooncake/[id/]<name>" when name has a '/'), "mooncake/[id/]rpc_meta/<name>". malloc'd. */
char *te_meta_segment_key(const char *name);
char *te_meta_rpc_key(const char *name);

/* One metadata backend = one file (te_meta_<name>.c) + one row in te_meta.c's table. State is
 * the backend's own; every op must be thread-safe. get: *val malloc'd, NUL-terminated. */
struct te_meta_backend {
	enum te_meta_kind kind;
	int (*open)(const struct te_conn_info *ci, void **state, char *errbuf, size_t errlen);
	int (*put)(void *state, const char *key, const char *val, size_t len);
	int (*get)(void *state, const char *key, char **val, size_t *len);
	int (*del)(void *state, const char *key); /* TE_ERR_NOT_FOUND when it was absent */
	void (*close)(void *state);
};
extern const struct te_meta_backend te_meta_etcd_backend, te_meta_redis_backend,
    te_meta_http_backend;
/* Shared libcurl request for the etcd and http backends (te_meta.c). method "GET", "PUT",
 * "POST", "DELETE"; body may be NULL. *resp malloc'd (NUL-terminated, capped at 256 MiB).
 * Returns 0 with *status = HTTP code, or TE_ERR_UNREACHABLE (no HTTP answer) with the curl
 * error in errbuf. */
int te_meta_http_request(const char *method, const char *url, const char *body, size_t len,
                         const char *content_type, long timeout_ms, long *status, char **resp,
                         size_t *resp_len, char *errbuf, size_t errlen);
void te_meta_http_global_init(void); /* curl_global_init, once */

/* ================================================================ sockets (te_net.c) */
/* Resolves host (IPv4/IPv6) and connects with a timeout; TCP_NODELAY set. Returns the fd or
 * TE_ERR_DNS / TE_ERR_UNREACHABLE (TE_ERR_INVALID_ARGUMENT for no host or a bad port); _why
 * also says which failure and to what host:port in why (refused, timed out, no route, DNS). */
int te_net_connect(const char *host, int port, int timeout_ms);
int te_net_connect_why(const char *host, int port, int timeout_ms, char *why, size_t whylen);
/* Local IPv4: MC_TCP_BIND_ADDRESS, else the first non-lo UP+RUNNING address, else 127.0.0.1. */
void te_net_local_ip(char *out, size_t len);
/* SO_RCVTIMEO and SO_SNDTIMEO. */
void te_net_set_timeouts_ms(int fd, int ms);
/* TCP_NODELAY, PDKV_TCP_CONGESTION when set, and PDKV_TCP_SOCKBUF's fixed buffer size when set
 * (else kernel autotuning). */
void te_net_tune_socket(int fd);

/* The accept loop of both servers (handshake, TCP data): one thread polls lfd (listening,
 * owned and closed by the caller) and a wake pipe; each connection takes one of max_conns
 * slots (a full table refuses it with a warning) and runs serve(ctx, fd) on its own detached
 * thread; the socket is closed when serve returns. stop wakes the loop, shuts the open
 * connections down and returns once every serve has returned. */
typedef void (*te_net_serve_fn)(void *ctx, int fd);
struct te_net_server;
int te_net_server_start(int lfd, const char *name, int max_conns, te_net_serve_fn serve, void *ctx,
                        struct te_net_server **out);
void te_net_server_stop(struct te_net_server *s);
/* Called by a serve function on its own thread: true when it starts waiting for a peer's next
 * request, false when bytes came. A full table makes room for a new peer by closing the
 * longest idle connection of a peer holding more than its fair share (table / peers). */
void te_net_conn_idle(bool idle);

/* ================================================================ handshake (te_handshake.c)
 * Frames: docs/handshake.md. */
#define TE_HS_CONNECTION 0
#define TE_HS_METADATA   1
#define TE_HS_NOTIFY     2
#define TE_HS_PROBE      3
#define TE_HS_LEGACY     -1 /* a pre-0.3.0 frame (no type byte) */
#define TE_HS_MAX_FRAME  (1u << 20)

int te_hs_send_frame(int fd, int type, const char *json, size_t len);
/* Reads one frame: max_len bounds the length field (0 = TE_HS_MAX_FRAME or
 * MC_HANDSHAKE_MAX_LENGTH); *json is malloc'd and NUL-terminated, *type TE_HS_LEGACY for a
 * legacy frame. TE_ERR_SOCKET on I/O error/EOF/timeout, TE_ERR_MALFORMED_JSON on a length of 0
 * or over the maximum (nothing is allocated for it). */
int te_hs_recv_frame(int fd, int *type, char **json, size_t *len, size_t max_len);

/* Server callback: returns a malloc'd reply JSON text (NULL -> reply "null"). */
typedef char *(*te_hs_handler)(void *ctx, int type, const char *json, size_t len);
struct te_hs_server;
/* Serves on an already-bound (not listening) fd, or binds port if fd < 0. */
int te_hs_server_start(int bound_fd, int port, te_hs_handler h, void *ctx,
                       struct te_hs_server **out);
void te_hs_server_stop(struct te_hs_server *s);
/* Client: one frame out, one frame in (type must match), close. *reply malloc'd. */
int te_hs_request(const char *host, int port, int type, const char *json, char **reply,
                  int timeout_ms);

/* ================================================================ tasks and transports */
/* A batch's end-of-task accounting for te_batch_wait: tasks handed to the transport and not
 * ended (open), and one waiter's wake-up: armed with its threshold (wake_at), woken through
 * seq when open falls to it. */
struct te_batch_wake {
	_Atomic uint32_t open, seq, armed, waiting;
	_Atomic size_t wake_at;
};

struct te_task {
	struct te_request req;
	struct te_batch_wake *wake; /* the batch's: set at submit for every task a transport gets */
	atomic_int ended_slices;    /* slices ended, ok or not: the last one ends the task */
	const struct te_segment_desc *peer; /* snapshot valid until the batch is freed */
	atomic_int slice_count;             /* set by the transport before posting */
	atomic_int success_slices, failed_slices;
	atomic_size_t transferred;
	uint64_t submit_ns;
	bool observed_done; /* set by te_batch_status */
	int src_gpu;        /* set by the engine at submit: 1 + CUDA device of req.source's buffer
	                       (location "cuda:N"), 0 = host memory */
	te_land_fn land;    /* the batch's landing hook (te_batch_set_land), or NULL */
	void *land_ud;
	size_t idx; /* index in its batch */
};

/* A READ's bytes [local, local + len) have landed in host memory: the task's landing hook. */
static inline void te_task_landed(struct te_task *t, const char *local, size_t len)
{
	if (t->land && len)
		t->land(t->land_ud, t->idx, (uint64_t)(local - (const char *)t->req.source), local,
		        len);
}

/* Transports call this when a slice ends; the engine derives the task status from counts. */
void te_batch_wake_task_ended(struct te_batch_wake *w); /* te_batch.c */
/* The task's last slice tells te_batch_wait before its status turns final: the batch cannot be
 * freed (te_batch_free needs every task seen final) while the waiter's wake-up is under way. */
static inline void te_task_slice_done(struct te_task *t, size_t bytes, bool ok)
{
	if (ok)
		atomic_fetch_add(&t->transferred, bytes);
	if (atomic_fetch_add(&t->ended_slices, 1) + 1 == atomic_load(&t->slice_count))
		te_batch_wake_task_ended(t->wake);
	if (ok)
		atomic_fetch_add(&t->success_slices, 1);
	else
		atomic_fetch_add(&t->failed_slices, 1);
}

/* Contracts for transports (tcp, rdma) — the engine relies on these:
 *  - install() runs after the engine has chosen its name, local ip and rpc port; the transport
 *    may call te_engine_take_data_fd() to adopt the pre-bound rpc_port+1 socket (tcp).
 *  - register_mem(): the engine pre-fills b->addr, b->length and b->name = location; the
 *    transport may overwrite b->name (tcp: the server name) and fill keys (rdma).
 *  - submit(): the engine sets every task's slice_count to -1 (= "not started", reported as
 *    WAITING) before the call. The transport must store the final slice_count (>= 1) BEFORE the
 *    first slice of that task can end. Zero-length requests never reach the transport (the
 *    engine completes them). After its last te_task_slice_done() on a task the transport must
 *    not touch the task again: the batch may be freed at once. submit() returning an error
 *    means none of the tasks was started (the engine then reports the error to the caller and
 *    the tasks are not counted in the batch); later failures are reported per slice.
 *  - task->peer is the peer descriptor snapshot (for target_id 0, the local segment's); it stays
 *    valid until the engine is destroyed. task->req.target_offset is already range-checked
 *    against it.
 *  - destroy() stops all threads; every in-flight task must be ended (failed) or abandoned.
 *  - Routing: a request goes to the engine's one transport; a peer whose descriptor names
 *    another protocol is refused at submit with TE_ERR_NOT_SUPPORTED_TRANSPORT.
 *  - Linking: te_engine.c references te_rdma_transport_ops WEAKLY (NULL = "rdma not built in"),
 *    and a weak reference does not pull an archive member: a binary that wants RDMA links lib
 *    terdma AND references the symbol strongly (ref/te/rdma.mk adds rdma_link/te_rdma_link.c). */
struct te_transport;
struct te_transport_ops {
	const char *name; /* "tcp", "rdma" */
	/* Creates the transport for eng; may read MC_* env. */
	int (*install)(struct te_engine *eng, struct te_transport **out);
	/* Called for each te_register / te_unregister; fills keys in *b for rdma. */
	int (*register_mem)(struct te_transport *t, void *addr, size_t len, const char *location,
	                    struct te_buffer_desc *b);
	int (*unregister_mem)(struct te_transport *t, void *addr, size_t len);
	/* Adds transport fields to the descriptor being published (devices, matrix, ports). */
	int (*fill_desc)(struct te_transport *t, struct te_segment_desc *d);
	/* Starts the tasks (asynchronously); returns an error only if nothing could be started. */
	int (*submit)(struct te_transport *t, struct te_task *const *tasks, size_t n);
	/* Connection (type 0) handshake frames addressed to this transport; malloc'd reply JSON. */
	char *(*on_connection)(struct te_transport *t, const char *json, size_t len);
	void (*destroy)(struct te_transport *t);
	/* Optional: the path requests to segment d take ("cuda-ipc", "tcp"; tools, tests). */
	const char *(*peer_path)(struct te_transport *t, const struct te_segment_desc *d);
};

extern const struct te_transport_ops te_tcp_transport_ops;  /* te_tcp.c */
extern const struct te_transport_ops te_rdma_transport_ops; /* te_rdma.c */
extern const struct te_transport_ops te_ipc_transport_ops;  /* te_ipc.c: "nvlink_intra" */

/* ================================================================ engine services for transports
 * (te_engine.c: identity and sockets; te_segment.c: segments and local memory) */
const char *te_engine_local_ip(const struct te_engine *eng);
/* The device_names the engine was created with (a comma list); NULL or "" = every device. */
const char *te_engine_device_names(const struct te_engine *eng);
/* Adopts the socket pre-bound to rpc_port+1 (not listening yet); -1 if none. */
int te_engine_take_data_fd(struct te_engine *eng);
/* Current local descriptor JSON (malloc'd) — what P2P metadata requests are answered with. */
char *te_engine_local_desc_json(struct te_engine *eng);
/* Fetches (cached) the descriptor and rpc_meta of a peer segment by name. */
int te_engine_peer_desc(struct te_engine *eng, const char *name,
                        const struct te_segment_desc **desc);
int te_engine_peer_rpc(struct te_engine *eng, const char *name, char *host, size_t hostlen,
                       int *rpc_port);
/* The path the transport gives requests to segment name ("cuda-ipc", "tcp", "rdma"). */
const char *te_engine_peer_path(struct te_engine *eng, const char *name);
/* Is [addr,addr+len) inside one locally registered buffer? (for validating remote requests) */
bool te_engine_local_range_ok(struct te_engine *eng, uint64_t addr, uint64_t len);
/* Same check, also giving the buffer's memory: *gpu = 1 + CUDA device for a buffer registered
 * as "cuda:N" (te_gpu.h), 0 for host memory. Transports stage device memory themselves. */
bool te_engine_local_range_gpu(struct te_engine *eng, uint64_t addr, uint64_t len, int *gpu);
/* A peer's WRITE of [addr, addr+len) into host memory has landed (te_engine_set_landed). */
void te_engine_landed(struct te_engine *eng, uint64_t addr, uint64_t len);

/* ================================================================ batches (te_batch.c)
 * The handle table makes any bogus id TE_ERR_BAD_BATCH. */
struct te_batch_table;
int te_batch_table_create(struct te_batch_table **out);
/* Frees every batch that is still allocated (engine destroy, after transports stopped). */
void te_batch_table_destroy(struct te_batch_table *bt);

/* ================================================================ cleanup (te_engine.c) */
/* Signal/exit cleanup: SIGINT/SIGTERM remove this engine's metadata keys (from a helper
 * thread, not the handler), then the signal's default action runs. Normal exit() without
 * te_engine_destroy also removes them (atexit). Safe to call for several engines. */
int te_engine_install_signal_cleanup(struct te_engine *eng);
/* Removes this engine's rpc_meta and segment keys now (idempotent). */
int te_engine_remove_keys(struct te_engine *eng);

#endif
