/* SPDX-License-Identifier: Apache-2.0 */
/* kvc_internal: the connector's building blocks — side-channel frames, the pdkv tensor blob,
 * the managed-buffer pool, SimpleBuffer state and the MooncakePipe — shared by kvc*.c and tests. */
#ifndef KVC_INTERNAL_H
#define KVC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvc/kvc.h"

/* ---- side-channel frames (kvc_frame.c) ---------------------------------------------------- */
#define KVC_FRAME_MAX 64 /* longest frame we build or accept */
/* ZMQ_MAXMSGSIZE default on every side-channel socket: > KVC_FRAME_MAX so small junk is
 * logged, while a peer announcing a larger message is dropped before anything is allocated */
#define KVC_ZMQ_MAXMSG_DEFAULT 4096
#define KVC_PICKLE_ACK_LEN     18 /* 80 04 95 07.. 43 03 'ACK' 94 2e */

/* Pickle protocol 4 of the Python tuple (a, b), byte-exact as CPython writes it. Returns the
 * length written to out (<= KVC_FRAME_MAX). */
size_t kvc_pickle_tuple2(uint64_t a, uint64_t b, uint8_t *out);
/* Strict parse of a pickled 2-tuple of non-negative ints (protocol 4 or 5, one frame).
 * 0 or KVC_ERR_PROTOCOL. */
int kvc_unpickle_tuple2(const uint8_t *p, size_t n, uint64_t *a, uint64_t *b);
size_t kvc_pickle_ack(uint8_t *out); /* pickled b'ACK' */
bool kvc_is_pickled_ack(const uint8_t *p, size_t n);
void kvc_u64be_put(uint8_t *out, uint64_t v);
int kvc_u64be_get(const uint8_t *p, size_t n, uint64_t *v); /* n must be 8 */
/* "80 04 95 ..." of at most 32 bytes (then "..."), for log lines about rejected frames. */
void kvc_hex(const void *p, size_t n, char *out, size_t cap);

/* ---- tensor blob (kvc_tensor.c; format documented there) ---------------------------------- */
#define KVC_BLOB_MAGIC   "PDKT"
#define KVC_BLOB_VERSION 1
#define KVC_BLOB_HDR     48
#define KVC_NONE_INT     (-150886311LL)
#define KVC_MAX_NDIM     4

size_t kvc_dtype_size(int dtype);                    /* 0 for an unknown dtype */
bool kvc_tensor_is_none(const struct kvc_tensor *t); /* NULL or ndim == 0 */
/* Shape, dtype and nbytes agree (None counts as valid). 0 or KVC_ERR_PROTOCOL. */
int kvc_tensor_check(const struct kvc_tensor *t);
size_t kvc_blob_size(const struct kvc_tensor *t); /* None -> size of the sentinel blob */
/* Writes the blob of t (None -> NONE_INT sentinel) into dst; 0 or KVC_ERR_PROTOCOL. */
int kvc_blob_encode(const struct kvc_tensor *t, void *dst, size_t cap);
/* Validates and copies out a blob; the sentinel decodes to None (ndim 0, data NULL). */
int kvc_blob_decode(const void *blob, size_t n, struct kvc_tensor *out);
/* The header of t (not None) into dst's first KVC_BLOB_HDR bytes. 0 or KVC_ERR_PROTOCOL. */
int kvc_blob_encode_header(const struct kvc_tensor *t, void *dst);
/* As kvc_blob_decode, but out->data points into blob (no copy, out->pool not set). Returns 1
 * for None (out zeroed), 0 for a tensor, KVC_ERR_PROTOCOL. */
int kvc_blob_decode_inplace(void *blob, size_t n, struct kvc_tensor *out);
/* t's data in a parked buffer of pool (header room in front); KVC_ERR_ALLOC when full. */
int kvc_tensor_alloc_in(struct kvc_pool *pool, struct kvc_tensor *t, int dtype, int ndim,
                        const int64_t *shape);
int kvc_tensor_clone(struct kvc_tensor *dst, const struct kvc_tensor *src);
int kvc_tensor_alloc(struct kvc_tensor *t, int dtype, int ndim, const int64_t *shape);
uint64_t kvc_item_nbytes(const struct kvc_item *it);

/* ---- managed-buffer pool (kvc_pool.c) ------------------------------------------------------ */
#define KVC_POOL_MIN_BLOCK   (8ull << 10)
#define KVC_POOL_MAX_CLASS   (256ull << 20)
#define KVC_POOL_DEFAULT_MIN (64ull << 20)
#define KVC_POOL_DEFAULT_MAX (512ull << 20)
#define KVC_DEDICATED_CAP    (4ull << 30)

typedef int (*kvc_reg_fn)(void *ctx, void *addr, size_t len);
typedef int (*kvc_unreg_fn)(void *ctx, void *addr);
struct kvc_pool;
/* region_bytes is rounded up to a power of two >= 8 KiB. reg/unreg may be NULL (unit tests).
 * Requests over min(256 MiB, region), or any request when the region is full, get a dedicated
 * mmap + reg while the dedicated total stays <= dedicated_cap. */
/* Freed dedicated buffers kept for reuse, at most bytes (capped at the dedicated cap). */
void kvc_pool_set_cache_cap(struct kvc_pool *p, size_t bytes);
int kvc_pool_create(size_t region_bytes, size_t dedicated_cap, kvc_reg_fn reg, kvc_unreg_fn unreg,
                    void *ctx, struct kvc_pool **out);
void *kvc_pool_alloc(struct kvc_pool *p, size_t len); /* NULL -> "Allocation Return Error" */
void kvc_pool_free(struct kvc_pool *p, void *ptr);
void kvc_pool_detach(struct kvc_pool *p); /* engine gone: destroy must not call unreg */
/* Drops the creator's reference; the memory goes when the last tensor holding a buffer of it
 * is freed too. */
void kvc_pool_destroy(struct kvc_pool *p);
void kvc_pool_ref(struct kvc_pool *p);
void kvc_pool_unref(struct kvc_pool *p);
/* A dedicated buffer for a tensor kept in registered memory (zero-copy send), counted against
 * the parked cap (default: the dedicated cap), reused from the cache. NULL when over the cap. */
void *kvc_pool_alloc_parked(struct kvc_pool *p, size_t len);
void kvc_pool_set_parked_cap(struct kvc_pool *p, size_t bytes);
size_t kvc_pool_region_bytes(const struct kvc_pool *p);
size_t kvc_pool_in_use(const struct kvc_pool *p); /* region + dedicated bytes handed out */
size_t kvc_pool_default_bytes(double kv_buffer_size);

/* ---- SimpleBuffer (kvc_sbuf.c) ------------------------------------------------------------- */
struct kvc_sbuf_node {
	struct kvc_item it;
	uint64_t bytes;
	struct kvc_sbuf_node *prev, *next;
};
struct kvc_sbuf {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* "something changed": insert, pop, close */
	struct kvc_sbuf_node *head, *tail;
	uint64_t n, bytes, threshold;
	int rule; /* enum kvc_overflow */
	bool closed;
};
int kvc_sbuf_init(struct kvc_sbuf *b, uint64_t threshold, int rule);
void kvc_sbuf_destroy(struct kvc_sbuf *b); /* frees the items still held */
void kvc_sbuf_close(struct kvc_sbuf *b);   /* wakes every waiter; later waits return CLOSED */
/* Clones it in; waits per the overflow rule. timeout_ms <= 0: until room or close.
 * 0, KVC_ERR_TIMEOUT, KVC_ERR_CLOSED, KVC_ERR_ALLOC, KVC_ERR_PROTOCOL (invalid item). */
int kvc_sbuf_insert(struct kvc_sbuf *b, const struct kvc_item *it, int timeout_ms);
int kvc_sbuf_insert_ex(struct kvc_sbuf *b, struct kvc_item *it, int timeout_ms, bool move_kv);
/* SimpleBuffer._matches: roi-masked tokens share an equal prefix over min(len) > 0 tokens.
 * roi NULL = all true. Returns the matched length (0 = no match). */
size_t kvc_match_len(const int64_t *st, const uint8_t *sroi, size_t sn, const int64_t *rt,
                     const uint8_t *rroi, size_t rn);
/* drop_select_handler's search: vLLM's rotate-the-deque order; pops the match into *out.
 * wait_ms: 0 = answer at once (BUF-old), > 0 = wait that long, < 0 = until a match or close.
 * 0 (found), KVC_MISS, KVC_ERR_CLOSED. */
int kvc_sbuf_take(struct kvc_sbuf *b, const int64_t *qt, const uint8_t *qroi, size_t qn,
                  int wait_ms, struct kvc_item *out);
void kvc_sbuf_usage(struct kvc_sbuf *b, uint64_t *bytes, uint64_t *items);

/* ---- MooncakePipe (kvc_pipe.c) ------------------------------------------------------------- */
struct kvc_ackq {
	void *ptr;
	size_t len;
	struct kvc_ackq *next;
};
#define KVC_MON_PEERS 16
/* A READ given up while the engine may still write into its buffer (kvc_read.c) */
struct kvc_quar { /* its batch is the engine's (te_batch_abandon) */
	struct kvc_pipe *p;
	void *buf;
	size_t len;
	struct kvc_land *land; /* freed on release: a lane may call it until then */
	struct kvc_quar *link;
};
#define KVC_QUAR_MAX 16 /* abandoned READs held at once; past it a new READ waits, then fails */
struct kvc_mon_peer {
	bool used;
	int fd;
	uint64_t since;
	char name[80];
};
/* kvc_read in two steps, so one READ can run while the caller gets on with another: start
 * (submitted, or an error and nothing started) and finish (waits; as kvc_read). A started READ
 * that is never finished must be abandoned (into the quarantine). */
struct kvc_rd {
	void *dst;
	size_t len, chunk, n, next;
	uint64_t batch, end;
	bool started;
	struct kvc_land *land; /* the pieces the engine showed as they landed, or NULL */
};
/* kvc_pipe_recv's next announced tensor, taken off the socket while the one before it was read
 * (read-ahead): its (ptr, len) checked and its READ started, or rc says why not. */
struct kvc_ann {
	bool on;
	int rc, start_rc;
	uint64_t ptr, len, t_read;
	struct kvc_rd rd; /* rd.dst: its buffer */
};
struct kvc_pipe {
	struct cfg_v0_pipe v0;
	int64_t max_msg; /* ZMQ_MAXMSGSIZE on every side-channel socket */
	int fmt;
	int transfer_timeout_ms;
	struct te_engine *eng;
	struct kvc_pool *pool;
	void *zctx, *data_out, *data_in, *ack_out, *ack_in;
	pthread_t cleaner;
	bool cleaner_started;
	pthread_mutex_t ack_mu;
	pthread_cond_t ack_cv;
	struct kvc_ackq *ack_head, *ack_tail;
	size_t ack_n;
	atomic_bool stop;
	atomic_uint_fast64_t bytes_sent, bytes_received, transfers, transfer_failures;
	atomic_uint_fast64_t protocol_errors, alloc_failures;
	/* kvc_mon.c: monitors of data_out / ack_out, used by its thread only */
	void *mon[2];
	pthread_t mon_th;
	bool mon_started;
	int mon_npeers[2];
	struct kvc_mon_peer mon_peer[2][KVC_MON_PEERS];
	atomic_uint_fast64_t extra_peers;
	/* kvc_read.c: abandoned READs whose buffers stay out of the pool until the engine
	 * reports their batch finished */
	pthread_mutex_t quar_mu;
	struct kvc_quar *quar;
	size_t quar_n, quar_bytes;
	atomic_uint_fast64_t reads_abandoned, reads_refused;
	bool read_ahead; /* PDKV_KVC_READ_AHEAD, default on */
	/* kvc_drop_select_pieces: whom kvc_read_finish shows each landed chunk, as tensor piece_i
	 */
	kvc_piece_fn piece_fn;
	void *piece_ud;
	int piece_i, piece_n; /* piece_n: tensors in this answer (a READ ahead past it: no hook) */
	struct kvc_ann ahead;
	atomic_uint_fast64_t reads_ahead;
};
int kvc_pipe_open(struct kvc_pipe *p, const struct kvc_opts *o);
void kvc_pipe_close(struct kvc_pipe *p);
/* Sends one tensor (NULL/None -> sentinel): managed buffer, blob, PUSH (ptr,len), queue the ACK
 * wait. timeout_ms <= 0: no deadline. abort (may be NULL) ends a wait with KVC_ERR_CLOSED. */
int kvc_pipe_send(struct kvc_pipe *p, const struct kvc_tensor *t, int timeout_ms,
                  const atomic_bool *abort);
/* As kvc_pipe_send, but *t is consumed on 0 (zeroed): a tensor in this pipe's registered
 * memory (kvc_tensor_alloc_in) goes without a copy, its buffer released on the ACK. */
int kvc_pipe_send_move(struct kvc_pipe *p, struct kvc_tensor *t, int timeout_ms,
                       const atomic_bool *abort);
/* Receives one tensor: PULL (ptr,len), TE READ, decode, ACK. None -> out->ndim == 0. The
 * tensor stays in the receive buffer (out->pool set). */
int kvc_pipe_recv(struct kvc_pipe *p, struct kvc_tensor *out, int timeout_ms,
                  const atomic_bool *abort);
/* kvc_read.c: TE READ of len bytes at the peer's ptr into dst (a pool buffer); one request,
 * or chunks of PDKV_KVC_READ_CHUNK in one batch. te_transfer_sync's codes, and
 * TE_ERR_TOO_MANY_REQUESTS when KVC_QUAR_MAX abandoned READs stayed held for its whole deadline.
 * *abandoned true: the READ timed out (or the pipe stopped) still in flight, so the engine may yet
 * write into dst: dst now belongs to the pipe's quarantine, which gives it back to the pool once
 * the engine reports the batch finished; the caller must neither use nor free it. */
int kvc_read(struct kvc_pipe *p, void *dst, uint64_t ptr, size_t len, bool *abandoned);
/* piece_i >= 0 (with p->piece_fn set): the engine's lanes show the select's hook each piece of
 * the READ as tensor piece_i as it lands, in that core's cache (te_batch_set_land); the chunks
 * they did not show, kvc_read_finish shows whole. */
int kvc_read_start(struct kvc_pipe *p, void *dst, uint64_t ptr, size_t len, int piece_i,
                   struct kvc_rd *rd);
/* No more pieces of rd to the select's hook (its caller is going away); waits for a call in
 * progress to return. */
void kvc_read_land_off(struct kvc_rd *rd);
/* Frees rd's landing context: only once no lane can call it (its batch has ended). */
void kvc_read_land_free(struct kvc_rd *rd);
int kvc_read_finish(struct kvc_pipe *p, struct kvc_rd *rd, bool *abandoned);
void kvc_read_abandon(struct kvc_pipe *p, struct kvc_rd *rd);
/* A READ started ahead gets its whole deadline from when it is waited on. */
void kvc_read_rearm(struct kvc_pipe *p, struct kvc_rd *rd);
/* Frees the quarantined buffers whose batches the engine reports ended (te_batch_reap;
 * kvc_read does it on every call). */
void kvc_read_reap(struct kvc_pipe *p);
/* After te_engine_destroy (no transport thread left to write): frees every quarantined
 * buffer into the pool. */
void kvc_read_quar_drop(struct kvc_pipe *p);
size_t kvc_read_quar_count(struct kvc_pipe *p);
/* Waits (bounded) until every sent buffer was ACKed and freed. */
int kvc_pipe_flush(struct kvc_pipe *p, int timeout_ms);
/* The consumer left (end signal): waits up to quiet_ms for its last ACKs, then frees the
 * buffers it will never ACK. Returns how many were released unACKed. */
size_t kvc_pipe_forget_peer(struct kvc_pipe *p, int quiet_ms);
/* kvc_mon.c: logs connects/disconnects on the PUSH ports, counts extra data-port peers. */
int kvc_mon_start(struct kvc_pipe *p);
void kvc_mon_stop(struct kvc_pipe *p); /* after p->stop is set, before the sockets close */

#endif
