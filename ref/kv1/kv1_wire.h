/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_wire: the vLLM V1 MooncakeConnector's msgpack structs (gen A MooncakeAgentMetadata, gen B
 * MooncakeXferMetadata in shapes B0 / B1 / B2 / Bn / Bl, MooncakeXferResponse), encoded as msgspec
 * does. */
#ifndef KV1_WIRE_H
#define KV1_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds applied to every message from a peer (peers are untrusted). */
#define KV1_MAX_MSG    (16u << 20) /* ZMQ_MAXMSGSIZE of every kv1 socket */
#define KV1_MAX_STR    4096        /* one string (host, request id, error text) */
#define KV1_MAX_REQS   4096        /* requests in one handshake */
#define KV1_MAX_IDS    (1u << 20)  /* block ids in one list */
#define KV1_MAX_BASES  4096        /* registered KV buffers */
#define KV1_MAX_GROUPS 64          /* KV-cache groups (Bn) */
#define KV1_MAX_DEPTH  8           /* container nesting */

/* Raw gen A replies (not msgpack). */
#define KV1_TRANS_DONE  "trans_done"
#define KV1_TRANS_ERROR "trans_error"

/* gen-B struct shapes, in the order vLLM introduced them (cfg_vllm.h's CFG_GEN_B0 ..). */
enum kv1_shape {
	KV1_SHAPE_B0 = 0,
	KV1_SHAPE_B1 = 1, /* + block_lens (vLLM #36869) */
	KV1_SHAPE_B2 = 2, /* req_blocks per KV-cache group (vLLM #40860) */
	KV1_SHAPE_BN = 3, /* + kv_block_lens */
	KV1_SHAPE_BL = 4  /* + registered_layer_* (vLLM #44528) */
};
enum kv1_status { KV1_FINISH = 0, KV1_CONTINUE = 1, KV1_ERROR = 2 };

struct kv1_ids {
	int64_t *v;
	size_t n;
};

/* gen A request, D -> P. All fields required. */
struct kv1_agent_meta {
	char *remote_hostname;
	int64_t remote_port; /* D's TE rpc port */
	char **request_ids;
	size_t nreq;
	uint64_t *bases; /* kv_caches_base_addr */
	size_t nbases;
	struct kv1_ids *block_ids; /* one list per request */
	size_t nblock_ids;
};

/* One entry of req_blocks: D request id -> (transfer_id, block ids). B0 and B1 have one flat
 * list (ngroups = 1 on decode, groups[0] encoded flat); B2 on one list per KV-cache group. */
struct kv1_req_blocks {
	char *req_id;
	char *transfer_id;
	struct kv1_ids *groups;
	size_t ngroups;
};

/* One prefix_replay_checkpoints entry: D request id -> (boundary, local-hit tokens, digest). */
struct kv1_replay_ckpt {
	char *req_id;
	int64_t boundary, local_hits;
	char *digest;
};

struct kv1_xfer_meta {
	char *remote_hostname;
	int64_t remote_port, remote_tp_size, remote_tp_rank;
	struct kv1_req_blocks *reqs;
	size_t nreqs;
	uint64_t *bases;
	size_t nbases;
	/* block_lens: B1 on; kv_block_lens: Bn on (required where the shape has them) */
	int64_t *block_lens;
	size_t nblock_lens;
	int64_t *kv_block_lens;
	size_t nkv_block_lens;
	int64_t remote_pp_size; /* Bn, default 1 (omitted when 1) */
	/* Bl (vLLM #44528, mooncake_connector.py @ 00f4240e): one entry per region, each list
	 * defaulting to [] (omitted when empty); a real decode always fills them. */
	char **layer_names; /* registered_layer_names, e.g. "model.layers.0.self_attn.attn" */
	size_t nlayer_names;
	int64_t *layer_indices; /* registered_layer_indices */
	size_t nlayer_indices;
	int64_t *group_indices; /* registered_group_indices */
	size_t ngroup_indices;
	/* Bl, prefill-side SWA replay (opt-in, DeepSeek-V4.1): kept as sent, not acted on */
	int64_t replay_protocol;              /* prefix_replay_protocol, default 0 */
	char *replay_layout;                  /* prefix_replay_layout, NULL = None */
	struct kv1_replay_ckpt *replay_ckpts; /* prefix_replay_checkpoints, default {} */
	size_t nreplay_ckpts;
};

struct kv1_xfer_resp {
	int status; /* enum kv1_status */
	bool has_ok, has_err;
	char **ok;
	size_t nok;
	char **err;
	size_t nerr;
	char *err_msg; /* NULL = omitted */
};

/* Encoders: *out malloc'd (free()), 0 or -ENOMEM / -EINVAL. */
int kv1_agent_meta_encode(const struct kv1_agent_meta *m, char **out, size_t *len);
int kv1_xfer_meta_encode(const struct kv1_xfer_meta *m, enum kv1_shape shape, char **out,
                         size_t *len);
int kv1_xfer_resp_encode(const struct kv1_xfer_resp *r, char **out, size_t *len);

/* Decoders: 0, or -EBADMSG with err set to a message that names the struct and the field
 * ("MooncakeXferMetadata: missing required field `block_lens`"). Any key order, unknown keys
 * ignored, every length bounded by the KV1_MAX_* above. On error *m is left freed/zeroed. */
int kv1_agent_meta_decode(const void *buf, size_t len, struct kv1_agent_meta *m, char *err,
                          size_t errsz);
int kv1_xfer_meta_decode(const void *buf, size_t len, enum kv1_shape shape, struct kv1_xfer_meta *m,
                         char *err, size_t errsz);
int kv1_xfer_resp_decode(const void *buf, size_t len, struct kv1_xfer_resp *r, char *err,
                         size_t errsz);
void kv1_agent_meta_free(struct kv1_agent_meta *m);
void kv1_xfer_meta_free(struct kv1_xfer_meta *m);
void kv1_xfer_resp_free(struct kv1_xfer_resp *r);

/* msgpack-c allocates a container's elements from the declared count before reading them: this
 * walks one value at p[*pos..n), checking each count against the bytes left and the depth
 * against KV1_MAX_DEPTH. 0 (then *pos is past the value) or -1. */
int kv1_wire_walk(const uint8_t *p, size_t n, size_t *pos, int depth);

/* The text msgspec puts in str(ValidationError) for a decode err from kv1_*_decode: the part
 * after "Struct: ", with "missing required field" spelt "Object missing required field". */
void kv1_wire_err_to_msgspec(const char *err, char *out, size_t outsz);

#endif
