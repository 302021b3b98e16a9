/* SPDX-License-Identifier: Apache-2.0 */
/* kv1: the vLLM V1 MooncakeConnector's worker side on pdkv's engine — one kv1_worker per
 * (dp engine, tp rank) with its KV buffers, block allocator, TE segment and side channel
 * (gen A: ZMQ ROUTER at BASE + dp*tp + r; gen B: ROUTER on a random port + bootstrap server). */
#ifndef KV1_H
#define KV1_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg/cfg_names.h"
#include "cfg/cfg_vllm.h"
#include "kv1_boot.h"
#include "kv1_wire.h"

#define KV1_MAX_BUFS       2048
#define KV1_MAX_TP_TARGETS 4096 /* remote ranks one rank pairs with (the TP ratio's bound) */
#define KV1_MAX_PULLS      64   /* P ranks one D rank pulls from (P.tp / D.tp) */
#define KV1_LAYER_NAME_MAX 48   /* "model.layers.<int>.self_attn.attn" and its NUL */
#define KV1_MAX_KV_GROUPS  8    /* KV-cache groups of one worker (HMA: full, sliding, ...) */

/* The gen-B struct shape a generation speaks (B0 for gen A / V0, which have none). */
static inline enum kv1_shape kv1_shape_of(enum cfg_gen g)
{
	/* enum kv1_shape mirrors cfg_gen's gen-B order from B0 on */
	return g >= CFG_GEN_B0 ? (enum kv1_shape)(g - CFG_GEN_B0) : KV1_SHAPE_B0;
}

struct kv1_opts {
	enum cfg_gen gen;        /* CFG_GEN_A, or a gen-B shape (CFG_GEN_B0 ..) */
	bool producer;           /* binds the side channel and pushes KV */
	const char *protocol;    /* kv_connector_extra_config.mooncake_protocol ("rdma" default) */
	const char *device_name; /* kv_connector_extra_config.device_name ("" = all) */
	const char *ip;          /* get_ip(); NULL = VLLM_HOST_IP, else the engine's address */
	int base_port;           /* VLLM_MOONCAKE_BOOTSTRAP_PORT (gen A side-channel base) */
	int dp_index, tp_size, tp_rank;
	const char *engine_id;     /* gen B */
	const char *bootstrap_url; /* gen B producer: register here ("http://h:p"); NULL = don't */
	int abort_timeout_s;       /* VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT (480) */
	int recv_timeout_ms;       /* consumer: bound on one handshake (gen A: 60000) */
	/* consumer: seconds the blocks of a receive that did not end cleanly stay out of the free
	 * list (0: PDKV_KV1_RECV_HOLD_S, else the producer's bound, see kv1_rhold.c); 0..86400 */
	int recv_hold_s;
	int nbufs;        /* registered KV buffers: 2 per layer, or 1 per layer (MLA, Bl LBHNC) */
	size_t block_len; /* bytes of one block of one buffer */
	size_t num_blocks;
	/* Where the KV buffers live: NULL / "cpu:0" = mmap'd host memory; "cuda:N" = cudaMalloc'd
	 * on device N (te_gpu, loaded at run time) and registered as "cuda:N". kv1_block() then
	 * returns device pointers: the caller copies with te_gpu. */
	const char *location;
	/* Producer: the order in which the buffers' WRITEs are submitted (a permutation of
	 * 0..nbufs-1, copied; NULL = 0, 1, ...). Bytes land in about that order, so a consumer
	 * that works on them as they land (kv1_landed_wait) can ask for the order it reads in. */
	const int *write_order;
	/* P-side transfer observer (metrics): seconds, bytes, descriptors, ok. May be NULL. */
	void (*on_xfer)(void *ud, double secs, uint64_t bytes, size_t ndesc, bool ok);
	void *ud;
	/* Consumer, host memory over TCP: each piece of a producer's WRITE as it lands, on the
	 * engine's server thread right after the receive (the bytes still in its cache), before
	 * the block's landed count (kv1_landed_wait) includes it: KV buffer, block, offset in the
	 * block, the bytes. Pieces may come from several threads at once. May be NULL. */
	void (*on_piece)(void *piece_ud, int buf, int64_t block, size_t off, const uint8_t *data,
	                 size_t len);
	void *piece_ud;
	/* ---- behaviours of later vLLM releases (the stand-in maps cfg_vllm_info.feat here) ----
	 */
	/* Bl: KV buffers per layer, [L0.K, L0.V, L1.K, ...] (2) or one per layer (1: MLA, or K and
	 * V in one block as vLLM's LBHNC layout, ref/standin/sa_v1_layout.c); 0 = 2
	 * when nbufs is even, else 1. Buffer i is registered as layer i / layer_bufs, its name
	 * repeated once per buffer (vLLM matches them by occurrence). */
	int layer_bufs;
	bool mla; /* MLA: KV replicated over TP ranks; vLLM skips the region length checks */
	/* CFG_F_TP_TOPOLOGY (vLLM #36869): TP pairing by TransferTopology.handshake_target_ranks
	 * and head slices (src / dst offsets in a block); off: D rank d <-> P rank d % P.tp */
	bool tp_topology;
	/* CFG_F_D_FAIL_REPORT: the consumer's DEALER waits abort_timeout_s + 60 s for an answer
	 * (used when recv_timeout_ms is 0) */
	bool d_fail_report;
	/* CFG_F_HMA (vLLM #41847, mooncake_connector.py @ 00f4240e): KV-cache groups. kv_groups
	 * 0 or 1: one group. Else buf_group[i] (copied; values below kv_groups) is buffer i's
	 * group: registered_group_indices on the Bl wire, and a request's block ids are one list
	 * per group (kv1_send_ready_g / kv1_recv_b_g), each region written with its own group's
	 * blocks
	 * (_build_transfer_params). Needs a gen-B shape from B2 on. */
	int kv_groups;
	const uint8_t *buf_group;
	/* PP on the prefill side (vLLM #44528): this worker is pipeline stage pp_rank (registered
	 * with the bootstrap server as such) and its buffers hold layers first_layer .. (Bl:
	 * registered_layer_names / _indices start there; a prefill aligns regions by name, so a
	 * stage writes only its layers into a decode that registered them all) */
	int pp_rank, first_layer;
	int pp_size; /* the prefill's PP size (0 = 1): need_send and partial alignment */
};

/* o->pp_size, 1 when unset. */
static inline int kv1_pp_size(const struct kv1_opts *o)
{
	return o->pp_size > 1 ? o->pp_size : 1;
}

struct kv1_worker;

/* Creates the engine (P2PHANDSHAKE), maps and registers the buffers, binds (producer) the side
 * channel and registers with the bootstrap server (gen B). 0, or -1 with err naming the cause. */
int kv1_worker_create(const struct kv1_opts *o, struct kv1_worker **out, char *err, size_t errsz);
void kv1_worker_destroy(struct kv1_worker *w);

const char *kv1_worker_segment(const struct kv1_worker *w); /* "ip:rpc_port" */
const char *kv1_worker_ip(const struct kv1_worker *w);
const char *kv1_worker_side_addr(const struct kv1_worker *w); /* "tcp://ip:port" (producer) */
int kv1_worker_side_port(const struct kv1_worker *w);
size_t kv1_worker_num_blocks(const struct kv1_worker *w);

/* ---- memory: block b of buffer i lives at base_i + b * block_len ---- */
uint8_t *kv1_block(struct kv1_worker *w, int buf, int64_t block);
/* n free block ids into ids (oldest freed first). 0 or -ENOSPC. */
int kv1_alloc(struct kv1_worker *w, size_t n, int64_t *ids);
void kv1_free(struct kv1_worker *w, const int64_t *ids, size_t n);
/* Like kv1_alloc, but waits (FIFO among waiters) for blocks to be freed until deadline_ns
 * (pd_now_ns clock). 0; -E2BIG when n exceeds the whole pool (at once); -ETIMEDOUT; -ECANCELED
 * (worker stopping). *waited (may be NULL): whether it had to wait (counted in alloc_waits). */
int kv1_alloc_wait(struct kv1_worker *w, size_t n, int64_t *ids, uint64_t deadline_ns,
                   bool *waited);

/* ---- producer: the send table (vLLM's reqs_need_send), keyed by the engine request id (gen A)
 * or the transfer_id (gen B) ---- */
/* gen A: the request is known (update_state_after_alloc); a handshake for it waits. */
int kv1_send_expect(struct kv1_worker *w, const char *key);
/* The request finished with its blocks: a handshake may now push them. kv1 owns the ids from
 * here and frees them once sent or after abort_timeout_s. */
int kv1_send_ready(struct kv1_worker *w, const char *key, const int64_t *ids, size_t n);
/* The same with one list per KV-cache group (o.kv_groups): ids holds the groups' lists one after
 * the other, gcnt[g] ids each, ng of them (ng == o.kv_groups; a request D asks with another
 * number of lists is answered "KV group count mismatch"). */
int kv1_send_ready_g(struct kv1_worker *w, const char *key, const int64_t *ids, size_t n,
                     const size_t *gcnt, size_t ng);
/* The request will not be sent (finished by a stop token): drops the entry. */
void kv1_send_discard(struct kv1_worker *w, const char *key);

/* ---- consumer ----
 * A receive that sent its handshake and then failed without P saying it wrote nothing
 * (timeout, I/O error, trans_error, an error answer while a WRITE may be in flight) holds ids
 * out of the free list (kv1_free keeps them back) until the producer must be done with them
 * (recv_hold_s / PDKV_KV1_RECV_HOLD_S, else its bound: kv1_rhold.c) or every byte of them has
 * landed (TCP host memory). While PDKV_KV1_RECV_HOLD_MAX_BLOCKS are held a receive waits for
 * room until its timeout, then fails with -EBUSY before sending anything. */
/* gen A: REQ to tcp://host:(port + tp_rank), MooncakeAgentMetadata for req_id, waits for the
 * reply. 0 = trans_done, -EIO = trans_error / bad reply, -ETIMEDOUT, -EINVAL; err set. */
int kv1_recv_a(struct kv1_worker *w, const char *host, int port, const char *req_id,
               const int64_t *ids, size_t n, char *err, size_t errsz);
/* gen B: /query (cached per address), DEALER to the paired P worker, MooncakeXferMetadata,
 * responses until FINISH / ERROR. 0 = req_id in ok_reqs; -EIO (err_reqs / ERROR, err = P's
 * err_msg), -ETIMEDOUT, -ENOENT (engine id unknown to the bootstrap server); err set. */
int kv1_recv_b(struct kv1_worker *w, const char *bootstrap_addr, const char *engine_id,
               const char *transfer_id, const char *req_id, const int64_t *ids, size_t n, char *err,
               size_t errsz);

/* gen B with one block list per KV-cache group (ids and gcnt as kv1_send_ready_g). */
int kv1_recv_b_g(struct kv1_worker *w, const char *bootstrap_addr, const char *engine_id,
                 const char *transfer_id, const char *req_id, const int64_t *ids, size_t n,
                 const size_t *gcnt, size_t ng, char *err, size_t errsz);

/* ---- consumer: blocks landed so far (kv1_landed.c) ----
 * Lets a consumer work on a request's KV while the producer is still writing it: reset the
 * request's blocks before the handshake; kv1_landed_wait(buf) returns 0 once every block of ids
 * in KV buffer buf has been written in full by a peer (TCP, host memory: the engine's landed
 * hook), or once *done is > 0 (kv1_landed_done after a successful receive: RDMA and CUDA
 * memory are only seen that way); -ECANCELED when *done < 0 (the receive failed) or the
 * worker stops. */
void kv1_landed_reset(struct kv1_worker *w, const int64_t *ids, size_t n);
int kv1_landed_wait(struct kv1_worker *w, int buf, const int64_t *ids, size_t n,
                    const atomic_int *done);
void kv1_landed_done(struct kv1_worker *w, atomic_int *done, bool ok);

/* ---- copy plan (exposed for tests) ---- */
struct kv1_run {
	int64_t local, remote, n;
};
/* Runs of consecutive (local, remote) ids. P having more blocks than D asked for sends its last
 * nr; fewer is -ERANGE ("P num blocks less than D"). *runs malloc'd. */
int kv1_plan(const int64_t *local, size_t nl, const int64_t *remote, size_t nr,
             struct kv1_run **runs, size_t *nruns);

/* ---- Bl regions and TP topology (kv1_regions.c, exposed for tests) ---- */
struct kv1_region {
	const char *name; /* registered layer name */
	int64_t index, group;
	uint64_t base;
	int64_t block_len, kv_block_len;
};
int kv1_layer_bufs(const struct kv1_opts *o);
void kv1_layer_name(int layer, char *out, size_t outsz); /* "model.layers.<l>.self_attn.attn" */
/* A decoded handshake's regions as vLLM's _expand_transfer_regions builds them: 0, or -EINVAL
 * with msg vLLM's assertion text (lengths differ); *out malloc'd, names point into m. */
int kv1_regions_expand(const struct kv1_xfer_meta *m, struct kv1_region **out, size_t *n, char *msg,
                       size_t msz);
/* _align_transfer_regions: map[i] = the remote region of local region i, matched by (layer
 * name, occurrence), or -1 (skipped: allow_partial and the layer is not the consumer's).
 * 0, or -EINVAL with vLLM's text. */
int kv1_regions_align(const struct kv1_region *loc, size_t nl, const struct kv1_region *rem,
                      size_t nr, bool allow_partial, long *map, char *msg, size_t msz);
/* _validate_asymmetric_region_lengths over the aligned pairs (P is local). */
int kv1_regions_check_lens(const struct kv1_region *loc, size_t nl, const struct kv1_region *rem,
                           const long *map, int local_tp, int remote_tp, char *msg, size_t msz);
/* TransferTopology.tp_ratio: local/remote when local >= remote, else -(remote/local); 0 when one
 * does not divide the other. */
int kv1_tp_ratio(int local_tp, int remote_tp);
/* handshake_target_ranks: the remote ranks rank pairs with (at most max); the count. */
int kv1_tp_targets(int rank, int tp, int remote_tp, int *ranks, int max);
/* _compute_sender_transfer_plan for P rank p_rank writing to D rank d_rank: bytes [src_off,
 * src_off + len) of P's block go to [dst_off, ..) of D's block; send false: another P rank
 * sends them (replicated KV). */
struct kv1_tp_plan {
	bool send;
	int64_t src_off, dst_off, len;
};
void kv1_tp_plan(int p_rank, int p_tp, int d_rank, int d_tp, int64_t p_kv_len, int64_t d_kv_len,
                 bool replicated, struct kv1_tp_plan *out);

struct kv1_stats {
	uint64_t bytes_sent, xfers, xfer_failures, handshakes, unknown_ids, expired;
	uint64_t rejected; /* side-channel messages refused: frames, msgpack, rank or lengths */
	uint64_t bytes_received_blocks; /* consumer: bytes of blocks reported written */
	uint64_t alloc_waits;           /* kv1_alloc_wait calls that had to wait */
	/* producer: WRITEs given up in flight (timeout, slice timeout, stop); their blocks stay
	 * out of the free list until the engine ends them (abandoned_held now); WRITEs refused
	 * meanwhile (PDKV_KV1_MAX_HELD_WRITES held, default 16) */
	uint64_t writes_abandoned, writes_abandoned_held, writes_refused;
	/* consumer: receives that ended without their KV while the producer might still write
	 * (timeout, error, a WRITE maybe in flight), whose blocks were held out of the free list;
	 * blocks held now; receives refused meanwhile (PDKV_KV1_RECV_HOLD_MAX_BLOCKS held) */
	uint64_t recv_holds, recv_held_blocks, recvs_refused;
	/* consumer, gen B: pulls the prefill ended with "Timeout waiting for P side ready." (an
	 * unknown, already served or never ready transfer_id: vLLM answers it after
	 * VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT), and pulls with no answer within the receive
	 * timeout; both are load failures the kv_load_failure_policy handles */
	uint64_t recv_p_timeouts, recv_no_answer;
	/* consumer: kv1_landed_wait wake-ups by a WRITE that landed none of the blocks it waits
	 * for (each one costs a waiter's thread a slice of CPU for nothing) */
	uint64_t landed_idle_wakes;
	/* producer: handshake handler threads started so far, and those waiting now for the next
	 * handshake (a thread is kept up to 5 s after one; at most 2 wait) */
	uint64_t handler_threads_started, handler_threads_waiting;
};
void kv1_worker_stats(struct kv1_worker *w, struct kv1_stats *st);

#endif
