/* SPDX-License-Identifier: Apache-2.0 */
/* kvc: the vLLM V0 MooncakeConnector on pdkv's engine — MooncakePipe (ZMQ PUSH/PULL side channel
 * + TE READ by the receiver + FIFO ACKs) under SimpleBuffer (insert / drop_select keyed by tokens
 * and roi, kv_buffer_size back pressure). docs/v0-pipe.md, docs/vllm-v0.md.
 * One struct kvc per (instance, TP rank). Thread-safe: many request threads may call in. */
#ifndef KVC_H
#define KVC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg/cfg.h"

#define KVC_OK           0
#define KVC_MISS         1 /* drop_select: producer had no match (BUF-old 5 x None) */
#define KVC_ERR_TIMEOUT  -2001
#define KVC_ERR_TRANSFER -2002 /* "Transfer Return Error" */
#define KVC_ERR_ALLOC    -2003 /* "Allocation Return Error" */
#define KVC_ERR_PROTOCOL -2004 /* malformed side-channel frame or tensor blob from the peer */
#define KVC_ERR_CONFIG   -2005
#define KVC_ERR_CLOSED   -2006

enum kvc_frame_format {
	KVC_FRAME_PICKLE = 0, /* PIPE-a/b: pickled (ptr, len) tuple, pickled b'ACK' */
	KVC_FRAME_U64BE = 1,  /* PIPE-c: two big-endian u64 frames, raw "ACK" */
};
enum kvc_miss_mode {
	KVC_MISS_OLD = 0, /* BUF-old: no match -> 5 x None right away */
	KVC_MISS_NEW = 1, /* BUF-new: producer waits for a matching insert */
};

/* Producer back pressure (docs/vllm-v0.md). Added by the kvc helper. */
enum kvc_overflow {
	KVC_OVERFLOW_NEW_ESCAPE = 0, /* BUF-new `bytes + item > threshold` waits, but an item larger
	                                than the whole threshold is accepted into an empty buffer
	                                (warning) instead of blocking forever — pdkv's default */
	KVC_OVERFLOW_NEW = 1,        /* BUF-new exactly: an oversize item waits forever/timeout */
	KVC_OVERFLOW_OLD = 2,        /* BUF-old: wait while bytes > threshold, then add */
};

enum kvc_dtype { KVC_BOOL = 0, KVC_I64 = 1, KVC_F32 = 2, KVC_BF16 = 3, KVC_F16 = 4, KVC_U8 = 5 };

struct kvc_pool;
/* A tensor as it crosses the pipe (documented pdkv tensor blob format in kvc_tensor.c). */
struct kvc_tensor {
	int dtype; /* enum kvc_dtype */
	int ndim;  /* 1..4 */
	int64_t shape[4];
	void *data;
	size_t nbytes;
	/* NULL: data is malloc'd. Else data sits in a connector's registered buffer, right behind
	 * room for the blob header (kvc_tensor_alloc_buf, or received in place); the pipe sends
	 * it without a copy and kvc_tensor_free gives the buffer back. Never set it by hand. */
	struct kvc_pool *pool;
};

/* One SimpleBuffer item: tokens [T] i64, roi [T] bool, keys/values [L,T,H,D], hidden [T,h]. */
struct kvc_item {
	struct kvc_tensor tokens, roi, keys, values, hidden;
};
void kvc_item_free(struct kvc_item *it); /* frees the tensors' data (not the struct) */
/* Added by the kvc helper: a tensor with ndim == 0 is None (sent as the NONE_INT sentinel). */
void kvc_tensor_free(struct kvc_tensor *t);

struct kvc_opts {
	const struct cfg_mooncake *mc;
	const struct cfg_kv_transfer *kt;
	int local_rank;
	int frame_format;          /* enum kvc_frame_format */
	int miss_mode;             /* enum kvc_miss_mode (producer side) */
	int select_timeout_ms;     /* consumer: bound on a drop_select (0 = wait forever) */
	const char *zmq_bind_host; /* NULL = the own URL's host when it is an IP address (as
	                              PIPE-c), else "*"; "*" = every address (PIPE-a/b) */
	/* Added by the kvc helper; 0 = default for each. */
	size_t pool_bytes;       /* registered managed-buffer region (default: kv_buffer_size
	                            rounded up to a power of two, clamped to 64..512 MiB;
	                            env PDKV_KVC_POOL_BYTES) */
	int overflow_rule;       /* enum kvc_overflow */
	int insert_timeout_ms;   /* producer: bound on a back-pressure wait (0 = 5 s, the
	                            default; < 0 = until destroy, as vLLM) */
	int miss_wait_ms;        /* KVC_MISS_NEW: answer 5 x None after this long (0 = wait for a
	                            match until destroy, as vLLM) */
	int transfer_timeout_ms; /* one TE READ (0 = engine default, MC_TRANSFER_TIMEOUT 30 s) */
	size_t pool_cache_bytes; /* freed dedicated buffers kept registered for reuse (0 = one
	                            region's worth; env PDKV_KVC_POOL_CACHE_BYTES; at most the
	                            4 GiB dedicated cap): above one region a long prompt's
	                            buffers would be mapped, faulted in and registered (a
	                            segment republish) again on every request */
	/* issue 11 */
	int64_t zmq_max_msg_bytes; /* ZMQ_MAXMSGSIZE on every side-channel socket (0 = 4096;
	                              64 .. 1 GiB): a peer announcing more is dropped */
	/* issue 10 */
	size_t parked_bytes; /* most registered memory kvc_tensor_alloc_buf hands out at once,
	                        apart from the pipe's own buffers (0 = the larger of
	                        kv_buffer_size and 4 GiB) */
};

struct kvc;
/* Builds the engine (segment named own_url), the buffer pool, and the four ZMQ sockets. */
int kvc_create(const struct kvc_opts *o, struct kvc **out);
void kvc_destroy(struct kvc *c);
/* True once the segment is published and the side-channel sockets are bound, and while the
 * engine's metadata store answers (te_engine_meta_ok). */
bool kvc_ready(const struct kvc *c);

/* Producer: copies the item into the buffer; blocks while over kv_buffer_size (back pressure). */
int kvc_insert(struct kvc *c, const struct kvc_item *it);
/* As kvc_insert, but keys, values and hidden (malloc'd data) move into the buffer instead of
 * being copied (tokens and roi are copied): on 0 they are zeroed in *it, on an error they are
 * still the caller's. Saves a copy of the whole KV per insert. */
int kvc_insert_move_kv(struct kvc *c, struct kvc_item *it);
/* Allocates t (data uninitialised) in c's registered buffer memory, so an item inserted with
 * kvc_insert_move_kv goes on the wire without a copy; falls back to malloc'd data when that
 * memory is used up (kvc_opts.parked_bytes). Free with kvc_tensor_free, before or after
 * kvc_destroy. 0, KVC_ERR_PROTOCOL (bad shape) or KVC_ERR_ALLOC. */
int kvc_tensor_alloc_buf(struct kvc *c, struct kvc_tensor *t, int dtype, int ndim,
                         const int64_t *shape);
/* Consumer: asks the producer for tokens; KVC_OK with *out filled on a hit, KVC_MISS on a miss.
 * The tensors of *out sit in the pipe's registered buffers where they were read (no copy):
 * kvc_item_free them soon, they hold receive memory (the dedicated-buffer cap). */
int kvc_drop_select(struct kvc *c, const int64_t *tokens, size_t ntokens, struct kvc_item *out);

/* Called on the drop_select's thread as each answer tensor arrives (i = 0 tokens, 1 roi as
 * float, 2 keys, 3 values, 4 hidden; not validated yet), before the next one is read, so a
 * check can overlap the transfer; then once with i = -1 and t = NULL before the select returns
 * (and before any tensor it was shown is freed): work on them must be finished by then. */
typedef void (*kvc_arrive_fn)(void *ud, int i, const struct kvc_tensor *t);
int kvc_drop_select_cb(struct kvc *c, const int64_t *tokens, size_t ntokens, struct kvc_item *out,
                       kvc_arrive_fn fn, void *ud);
/* While answer tensor i is read: each piece of its READ as it lands, as the tensor's data bytes
 * [off, off + len) of total (the blob header left out), at data. Over TCP the pieces are the
 * engine lane's socket reads (256 KiB), shown on that lane's thread right after the read, so a
 * check hashes bytes that are still in that core's cache; chunks the engine did not show (RDMA)
 * are shown whole on the drop_select's thread once they have landed. So pieces come in any
 * order and from several threads at once (lanes, and the next tensor's READ started ahead while
 * fn(ud, i, ...) runs): pfn must be thread safe. All of tensor i's come before fn(ud, i, ...) and
 * none after the select returns; a READ retried after a failure shows its pieces again (a check
 * that counts the bytes it saw can tell). */
typedef void (*kvc_piece_fn)(void *ud, int i, size_t off, const void *data, size_t len,
                             size_t total);
int kvc_drop_select_pieces(struct kvc *c, const int64_t *tokens, size_t ntokens,
                           struct kvc_item *out, kvc_arrive_fn fn, kvc_piece_fn pfn, void *ud);

struct kvc_stats {
	uint64_t bytes_sent, bytes_received; /* payload bytes pulled by the peer / by us */
	uint64_t transfers, transfer_failures;
	uint64_t buffer_bytes, buffer_items; /* producer buffer occupancy now */
	uint64_t hits, misses;
	/* added by the kvc helper */
	uint64_t protocol_errors,
	    alloc_failures; /* rejected frames/blobs; Allocation Return Error */
	uint64_t pool_bytes_in_use, pending_acks; /* managed buffers handed out; sends not ACKed */
	/* issue 11: a consumer that lost answers and resynchronised its pipe; inserts that gave
	 * up on a full buffer; extra peers seen on a bound (PUSH) side-channel port */
	uint64_t resyncs, insert_timeouts, extra_peers;
	/* READs given up while in flight (timeout, stop): their buffers are held out of the pool
	 * until the engine ends them (abandoned_held now, at most 16); READs refused meanwhile */
	uint64_t reads_abandoned, reads_abandoned_held, reads_refused;
	/* READs started while the one before them was still running (PDKV_KVC_READ_AHEAD) */
	uint64_t reads_ahead;
};
void kvc_get_stats(const struct kvc *c, struct kvc_stats *s);
/* Added by the kvc helper: this rank's TE segment name (own_url, +100 rule applied) and the
 * peer's (remote_url), for logs and /health. */
const char *kvc_own_url(const struct kvc *c);
const char *kvc_remote_url(const struct kvc *c);
const char *kvc_strerror(int err);

#endif
