/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_wire: msgpack encode/decode of the V1 connector's structs through msgpack-c. Encoding is
 * msgspec's: a map of field names in declaration order, defaults omitted, smallest forms. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "kv1_wire.h"

/* ------------------------------------------------------------------ encoding */

static void pk_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

static void pk_ids(msgpack_packer *pk, const struct kv1_ids *ids)
{
	msgpack_pack_array(pk, ids->n);
	for (size_t i = 0; i < ids->n; i++)
		msgpack_pack_int64(pk, ids->v[i]);
}

static void pk_strs(msgpack_packer *pk, char *const *v, size_t n)
{
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++)
		pk_str(pk, v[i]);
}

static void pk_u64s(msgpack_packer *pk, const uint64_t *v, size_t n)
{
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++)
		msgpack_pack_uint64(pk, v[i]);
}

static void pk_i64s(msgpack_packer *pk, const int64_t *v, size_t n)
{
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++)
		msgpack_pack_int64(pk, v[i]);
}

static int finish(msgpack_sbuffer *sb, char **out, size_t *len)
{
	if (!sb->data) {
		*out = NULL;
		return -ENOMEM;
	}
	*len = sb->size;
	*out = msgpack_sbuffer_release(sb);
	return 0;
}

int kv1_agent_meta_encode(const struct kv1_agent_meta *m, char **out, size_t *len)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	if (!m->remote_hostname || m->nblock_ids != m->nreq)
		return -EINVAL;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 5);
	pk_str(&pk, "remote_hostname");
	pk_str(&pk, m->remote_hostname);
	pk_str(&pk, "remote_port");
	msgpack_pack_int64(&pk, m->remote_port);
	pk_str(&pk, "request_ids");
	pk_strs(&pk, m->request_ids, m->nreq);
	pk_str(&pk, "kv_caches_base_addr");
	pk_u64s(&pk, m->bases, m->nbases);
	pk_str(&pk, "block_ids");
	msgpack_pack_array(&pk, m->nblock_ids);
	for (size_t i = 0; i < m->nblock_ids; i++)
		pk_ids(&pk, &m->block_ids[i]);
	return finish(&sb, out, len);
}

/* Map entries of a gen-B struct: the required ones, then each defaulted field not at its default
 * (msgspec's omit_defaults; a default_factory list / dict is at its default when empty). */
static uint32_t xfer_meta_entries(const struct kv1_xfer_meta *m, enum kv1_shape shape)
{
	uint32_t n = shape >= KV1_SHAPE_BN   ? 8 + (m->remote_pp_size != 1)
	             : shape >= KV1_SHAPE_B1 ? 7 /* B1 / B2: + block_lens */
	                                     : 6;

	if (shape >= KV1_SHAPE_BL)
		n += (m->nlayer_names > 0) + (m->nlayer_indices > 0) + (m->ngroup_indices > 0) +
		     (m->replay_protocol != 0) + (m->replay_layout != NULL) +
		     (m->nreplay_ckpts > 0);
	return n;
}

/* grouped (B2 on): one list per KV-cache group; before it (B0, B1) one flat list. */
static void pk_req_blocks(msgpack_packer *pk, const struct kv1_xfer_meta *m, bool grouped)
{
	msgpack_pack_map(pk, m->nreqs);
	for (size_t i = 0; i < m->nreqs; i++) {
		const struct kv1_req_blocks *rb = &m->reqs[i];

		pk_str(pk, rb->req_id);
		msgpack_pack_array(pk, 2);
		pk_str(pk, rb->transfer_id);
		if (!grouped) {
			pk_ids(pk, &rb->groups[0]);
			continue;
		}
		msgpack_pack_array(pk, rb->ngroups);
		for (size_t g = 0; g < rb->ngroups; g++)
			pk_ids(pk, &rb->groups[g]);
	}
}

/* Bl's defaulted fields, in declaration order, each only when not at its default. */
static void pk_bl_tail(msgpack_packer *pk, const struct kv1_xfer_meta *m, bool bl)
{
	if (bl && m->nlayer_names) {
		pk_str(pk, "registered_layer_names");
		pk_strs(pk, m->layer_names, m->nlayer_names);
	}
	if (bl && m->nlayer_indices) {
		pk_str(pk, "registered_layer_indices");
		pk_i64s(pk, m->layer_indices, m->nlayer_indices);
	}
	if (bl && m->ngroup_indices) {
		pk_str(pk, "registered_group_indices");
		pk_i64s(pk, m->group_indices, m->ngroup_indices);
	}
	if (m->remote_pp_size != 1) {
		pk_str(pk, "remote_pp_size");
		msgpack_pack_int64(pk, m->remote_pp_size);
	}
	if (!bl)
		return;
	if (m->replay_protocol) {
		pk_str(pk, "prefix_replay_protocol");
		msgpack_pack_int64(pk, m->replay_protocol);
	}
	if (m->replay_layout) {
		pk_str(pk, "prefix_replay_layout");
		pk_str(pk, m->replay_layout);
	}
	if (m->nreplay_ckpts) {
		pk_str(pk, "prefix_replay_checkpoints");
		msgpack_pack_map(pk, m->nreplay_ckpts);
		for (size_t i = 0; i < m->nreplay_ckpts; i++) {
			const struct kv1_replay_ckpt *c = &m->replay_ckpts[i];

			pk_str(pk, c->req_id);
			msgpack_pack_array(pk, 3); /* a tuple is an array */
			msgpack_pack_int64(pk, c->boundary);
			msgpack_pack_int64(pk, c->local_hits);
			pk_str(pk, c->digest);
		}
	}
}

int kv1_xfer_meta_encode(const struct kv1_xfer_meta *m, enum kv1_shape shape, char **out,
                         size_t *len)
{
	bool bn = shape >= KV1_SHAPE_BN, bl = shape >= KV1_SHAPE_BL;
	bool grouped = shape >= KV1_SHAPE_B2;
	msgpack_sbuffer sb;
	msgpack_packer pk;

	if (!m->remote_hostname)
		return -EINVAL;
	for (size_t i = 0; i < m->nreqs; i++)
		if (!m->reqs[i].req_id || !m->reqs[i].transfer_id || m->reqs[i].ngroups < 1 ||
		    (!grouped && m->reqs[i].ngroups != 1))
			return -EINVAL;
	for (size_t i = 0; bl && i < m->nlayer_names; i++)
		if (!m->layer_names[i])
			return -EINVAL;
	for (size_t i = 0; bl && i < m->nreplay_ckpts; i++)
		if (!m->replay_ckpts[i].req_id || !m->replay_ckpts[i].digest)
			return -EINVAL;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, xfer_meta_entries(m, shape));
	pk_str(&pk, "remote_hostname");
	pk_str(&pk, m->remote_hostname);
	pk_str(&pk, "remote_port");
	msgpack_pack_int64(&pk, m->remote_port);
	pk_str(&pk, "remote_tp_size");
	msgpack_pack_int64(&pk, m->remote_tp_size);
	pk_str(&pk, "remote_tp_rank");
	msgpack_pack_int64(&pk, m->remote_tp_rank);
	pk_str(&pk, "req_blocks");
	pk_req_blocks(&pk, m, grouped);
	pk_str(&pk, "kv_caches_base_addr");
	pk_u64s(&pk, m->bases, m->nbases);
	if (shape >= KV1_SHAPE_B1) {
		pk_str(&pk, "block_lens");
		pk_i64s(&pk, m->block_lens, m->nblock_lens);
	}
	if (bn) {
		pk_str(&pk, "kv_block_lens");
		pk_i64s(&pk, m->kv_block_lens, m->nkv_block_lens);
		/* Bn: the registered_layer_* lists are never filled (the decode predates them)
		 * and so always omitted; remote_pp_size follows them in declaration order. */
		pk_bl_tail(&pk, m, bl);
	}
	return finish(&sb, out, len);
}

int kv1_xfer_resp_encode(const struct kv1_xfer_resp *r, char **out, size_t *len)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1 + r->has_ok + r->has_err + (r->err_msg != NULL));
	pk_str(&pk, "status");
	msgpack_pack_int64(&pk, r->status);
	if (r->has_ok) {
		pk_str(&pk, "ok_reqs");
		pk_strs(&pk, r->ok, r->nok);
	}
	if (r->has_err) {
		pk_str(&pk, "err_reqs");
		pk_strs(&pk, r->err, r->nerr);
	}
	if (r->err_msg) {
		pk_str(&pk, "err_msg");
		pk_str(&pk, r->err_msg);
	}
	return finish(&sb, out, len);
}

/* ------------------------------------------------------------------ decoding */

struct dec {
	const char *st; /* struct name */
	char *err;
	size_t errsz;
};

static int fail(struct dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct dec *d, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(d->err, d->errsz, "%s: ", d->st);

	va_start(ap, fmt);
	if (k >= 0 && (size_t)k < d->errsz)
		vsnprintf(d->err + k, d->errsz - (size_t)k, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static const char *tname(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		return "null";
	case MSGPACK_OBJECT_BOOLEAN:
		return "bool";
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return "int";
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return "float";
	case MSGPACK_OBJECT_STR:
		return "str";
	case MSGPACK_OBJECT_ARRAY:
		return "array";
	case MSGPACK_OBJECT_MAP:
		return "object";
	case MSGPACK_OBJECT_BIN:
		return "bytes";
	default:
		return "ext";
	}
}

static int get_int(struct dec *d, const msgpack_object *o, const char *f, int64_t lo, int64_t hi,
                   int64_t *out)
{
	int64_t v;

	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		if (o->via.u64 > INT64_MAX)
			return fail(d, "`%s`: integer out of range", f);
		v = (int64_t)o->via.u64;
	} else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		v = o->via.i64;
	} else {
		return fail(d, "expected `int`, got `%s` - at `$.%s`", tname(o), f);
	}
	if (v < lo || v > hi)
		return fail(d, "`%s`: expected %lld..%lld, got %lld", f, (long long)lo,
		            (long long)hi, (long long)v);
	*out = v;
	return 0;
}

static int get_str(struct dec *d, const msgpack_object *o, const char *f, char **out)
{
	if (o->type != MSGPACK_OBJECT_STR)
		return fail(d, "expected `str`, got `%s` - at `$.%s`", tname(o), f);
	if (o->via.str.size > KV1_MAX_STR)
		return fail(d, "`%s`: string of %u bytes (limit %u)", f, o->via.str.size,
		            KV1_MAX_STR);
	if (memchr(o->via.str.ptr, 0, o->via.str.size))
		return fail(d, "`%s`: string contains a NUL byte", f);
	*out = strndup(o->via.str.ptr, o->via.str.size);
	return *out ? 0 : -ENOMEM;
}

static int get_arr(struct dec *d, const msgpack_object *o, const char *f, size_t max)
{
	if (o->type != MSGPACK_OBJECT_ARRAY)
		return fail(d, "expected `array`, got `%s` - at `$.%s`", tname(o), f);
	if (o->via.array.size > max)
		return fail(d, "`%s`: %u elements (limit %zu)", f, o->via.array.size, max);
	return 0;
}

static int get_ids(struct dec *d, const msgpack_object *o, const char *f, struct kv1_ids *out)
{
	int ret = get_arr(d, o, f, KV1_MAX_IDS);

	if (ret)
		return ret;
	out->n = o->via.array.size;
	out->v = calloc(out->n ? out->n : 1, sizeof(int64_t));
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < out->n; i++)
		if ((ret = get_int(d, &o->via.array.ptr[i], f, 0, INT32_MAX, &out->v[i])))
			return ret;
	return 0;
}

static int get_i64s(struct dec *d, const msgpack_object *o, const char *f, int64_t lo, int64_t **v,
                    size_t *n)
{
	int ret = get_arr(d, o, f, KV1_MAX_BASES);

	if (ret)
		return ret;
	*n = o->via.array.size;
	*v = calloc(*n ? *n : 1, sizeof(int64_t));
	if (!*v)
		return -ENOMEM;
	for (size_t i = 0; i < *n; i++)
		if ((ret = get_int(d, &o->via.array.ptr[i], f, lo, INT64_MAX, &(*v)[i])))
			return ret;
	return 0;
}

static int get_bases(struct dec *d, const msgpack_object *o, uint64_t **v, size_t *n)
{
	const char *f = "kv_caches_base_addr";
	int ret = get_arr(d, o, f, KV1_MAX_BASES);

	if (ret)
		return ret;
	*n = o->via.array.size;
	*v = calloc(*n ? *n : 1, sizeof(uint64_t));
	if (!*v)
		return -ENOMEM;
	for (size_t i = 0; i < *n; i++) {
		const msgpack_object *e = &o->via.array.ptr[i];

		if (e->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
			return fail(d, "expected `int` >= 0, got `%s` - at `$.%s[%zu]`", tname(e),
			            f, i);
		(*v)[i] = e->via.u64;
	}
	return 0;
}

static int get_strs(struct dec *d, const msgpack_object *o, const char *f, char ***v, size_t *n)
{
	int ret = get_arr(d, o, f, KV1_MAX_REQS);

	if (ret)
		return ret;
	*n = o->via.array.size;
	*v = calloc(*n ? *n : 1, sizeof(char *));
	if (!*v)
		return -ENOMEM;
	for (size_t i = 0; i < *n; i++)
		if ((ret = get_str(d, &o->via.array.ptr[i], f, &(*v)[i])))
			return ret;
	return 0;
}

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/* Field lookup: a bit per field seen; duplicate keys: the last one wins, as in msgspec. */
static int field_index(const msgpack_object *k, const char *const *names, int n)
{
	if (k->type != MSGPACK_OBJECT_STR)
		return -1;
	for (int i = 0; i < n; i++)
		if (strlen(names[i]) == k->via.str.size &&
		    !memcmp(names[i], k->via.str.ptr, k->via.str.size))
			return i;
	return -1;
}

/* Unpacks a top-level map into u and points fv[k] at the value of field names[k] (k < n) for each
 * k whose bit is set in keep, setting that bit in *seen; other keys are ignored. */
static int top_fields(struct dec *d, const void *buf, size_t len, msgpack_unpacked *u,
                      const char *const *names, int n, unsigned keep, const msgpack_object **fv,
                      unsigned *seen)
{
	size_t pos = 0, off = 0;
	const msgpack_object *o;

	if (!buf || len == 0 || len > KV1_MAX_MSG)
		return fail(d, "message of %zu bytes (expected 1..%u)", len, KV1_MAX_MSG);
	if (kv1_wire_walk(buf, len, &pos, 0) || pos != len)
		return fail(d, "not one well-formed msgpack value (%zu bytes)", len);
	if (msgpack_unpack_next(u, buf, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len)
		return fail(d, "msgpack-c could not unpack the message");
	if (u->data.type != MSGPACK_OBJECT_MAP)
		return fail(d, "expected `object`, got `%s`", tname(&u->data));
	o = &u->data;
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		int k = field_index(&o->via.map.ptr[i].key, names, n);

		if (k >= 0 && (keep & (1u << k))) {
			fv[k] = &o->via.map.ptr[i].val;
			*seen |= 1u << k;
		}
	}
	return 0;
}

static int missing(struct dec *d, unsigned seen, unsigned required, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if ((required & (1u << i)) && !(seen & (1u << i)))
			return fail(d, "missing required field `%s`", names[i]);
	return 0;
}

int kv1_agent_meta_decode(const void *buf, size_t len, struct kv1_agent_meta *m, char *err,
                          size_t errsz)
{
	static const char *const names[] = {"remote_hostname", "remote_port", "request_ids",
	                                    "kv_caches_base_addr", "block_ids"};
	struct dec d = {"MooncakeAgentMetadata", err, errsz};
	const msgpack_object *fv[5] = {0};
	msgpack_unpacked u;
	unsigned seen = 0;
	int ret;

	memset(m, 0, sizeof(*m));
	msgpack_unpacked_init(&u);
	if ((ret = top_fields(&d, buf, len, &u, names, 5, ~0u, fv, &seen)))
		goto out;
	if ((ret = missing(&d, seen, 0x1f, names, 5)) ||
	    (ret = get_str(&d, fv[0], names[0], &m->remote_hostname)) ||
	    (ret = get_int(&d, fv[1], names[1], 0, 65535, &m->remote_port)) ||
	    (ret = get_strs(&d, fv[2], names[2], &m->request_ids, &m->nreq)) ||
	    (ret = get_bases(&d, fv[3], &m->bases, &m->nbases)) ||
	    (ret = get_arr(&d, fv[4], names[4], KV1_MAX_REQS)))
		goto out;
	m->nblock_ids = fv[4]->via.array.size;
	m->block_ids = calloc(m->nblock_ids ? m->nblock_ids : 1, sizeof(*m->block_ids));
	ret = -ENOMEM;
	if (!m->block_ids)
		goto out;
	for (size_t i = 0; i < m->nblock_ids; i++)
		if ((ret = get_ids(&d, &fv[4]->via.array.ptr[i], names[4], &m->block_ids[i])))
			goto out;
	ret = 0;
out:
	msgpack_unpacked_destroy(&u);
	if (ret)
		kv1_agent_meta_free(m);
	return ret;
}

static int get_req_blocks(struct dec *d, const msgpack_object *o, bool grouped,
                          struct kv1_xfer_meta *m)
{
	const char *f = "req_blocks";
	int ret;

	if (o->type != MSGPACK_OBJECT_MAP)
		return fail(d, "expected `object`, got `%s` - at `$.%s`", tname(o), f);
	if (o->via.map.size > KV1_MAX_REQS)
		return fail(d, "`%s`: %u requests (limit %u)", f, o->via.map.size, KV1_MAX_REQS);
	m->nreqs = o->via.map.size;
	m->reqs = calloc(m->nreqs ? m->nreqs : 1, sizeof(*m->reqs));
	if (!m->reqs)
		return -ENOMEM;
	for (size_t i = 0; i < m->nreqs; i++) {
		const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
		struct kv1_req_blocks *rb = &m->reqs[i];
		const msgpack_object *lists;

		if ((ret = get_str(d, k, f, &rb->req_id)))
			return ret;
		if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size != 2)
			return fail(d, "expected a 2-element array (transfer_id, block ids) - at "
			               "`$.req_blocks[...]`");
		if ((ret = get_str(d, &v->via.array.ptr[0], f, &rb->transfer_id)))
			return ret;
		lists = &v->via.array.ptr[1];
		if (!grouped) {
			rb->ngroups = 1;
			rb->groups = calloc(1, sizeof(*rb->groups));
			if (!rb->groups)
				return -ENOMEM;
			if ((ret = get_ids(d, lists, f, &rb->groups[0])))
				return ret;
			continue;
		}
		if ((ret = get_arr(d, lists, f, KV1_MAX_GROUPS)))
			return ret;
		rb->ngroups = lists->via.array.size;
		rb->groups = calloc(rb->ngroups ? rb->ngroups : 1, sizeof(*rb->groups));
		if (!rb->groups)
			return -ENOMEM;
		for (size_t g = 0; g < rb->ngroups; g++)
			if ((ret = get_ids(d, &lists->via.array.ptr[g], f, &rb->groups[g])))
				return ret;
	}
	return 0;
}

/* prefix_replay_checkpoints: {D request id: [boundary, local-hit tokens, sha256 digest]}. */
static int get_replay_ckpts(struct dec *d, const msgpack_object *o, struct kv1_xfer_meta *m)
{
	const char *f = "prefix_replay_checkpoints";
	int ret;

	if (o->type != MSGPACK_OBJECT_MAP)
		return fail(d, "expected `object`, got `%s` - at `$.%s`", tname(o), f);
	if (o->via.map.size > KV1_MAX_REQS)
		return fail(d, "`%s`: %u entries (limit %u)", f, o->via.map.size, KV1_MAX_REQS);
	m->nreplay_ckpts = o->via.map.size;
	m->replay_ckpts = calloc(m->nreplay_ckpts ? m->nreplay_ckpts : 1, sizeof(*m->replay_ckpts));
	if (!m->replay_ckpts)
		return -ENOMEM;
	for (size_t i = 0; i < m->nreplay_ckpts; i++) {
		const msgpack_object *v = &o->via.map.ptr[i].val;
		struct kv1_replay_ckpt *c = &m->replay_ckpts[i];

		if ((ret = get_str(d, &o->via.map.ptr[i].key, f, &c->req_id)))
			return ret;
		if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size != 3)
			return fail(d,
			            "expected a 3-element array (boundary, local-hit tokens, "
			            "digest) - at `$.%s[...]`",
			            f);
		if ((ret =
		         get_int(d, &v->via.array.ptr[0], f, INT64_MIN, INT64_MAX, &c->boundary)) ||
		    (ret = get_int(d, &v->via.array.ptr[1], f, INT64_MIN, INT64_MAX,
		                   &c->local_hits)) ||
		    (ret = get_str(d, &v->via.array.ptr[2], f, &c->digest)))
			return ret;
	}
	return 0;
}

/* Bl's defaulted fields (fv[8..14], NULL when absent): registered_* lists, then the
 * prefix-replay triple, kept as sent. */
static int get_bl_fields(struct dec *d, const msgpack_object *const *fv, const char *const *names,
                         struct kv1_xfer_meta *m)
{
	int ret;

	if ((fv[8] && (ret = get_strs(d, fv[8], names[8], &m->layer_names, &m->nlayer_names))) ||
	    (fv[9] &&
	     (ret = get_i64s(d, fv[9], names[9], 0, &m->layer_indices, &m->nlayer_indices))) ||
	    (fv[10] &&
	     (ret = get_i64s(d, fv[10], names[10], 0, &m->group_indices, &m->ngroup_indices))) ||
	    (fv[12] &&
	     (ret = get_int(d, fv[12], names[12], INT64_MIN, INT64_MAX, &m->replay_protocol))) ||
	    (fv[13] && fv[13]->type != MSGPACK_OBJECT_NIL &&
	     (ret = get_str(d, fv[13], names[13], &m->replay_layout))) ||
	    (fv[14] && (ret = get_replay_ckpts(d, fv[14], m))))
		return ret;
	return 0;
}

int kv1_xfer_meta_decode(const void *buf, size_t len, enum kv1_shape shape, struct kv1_xfer_meta *m,
                         char *err, size_t errsz)
{
	/* declaration order of vLLM's MooncakeXferMetadata (mooncake_connector.py @ 00f4240e) */
	static const char *const names[] = {"remote_hostname",
	                                    "remote_port",
	                                    "remote_tp_size",
	                                    "remote_tp_rank",
	                                    "req_blocks",
	                                    "kv_caches_base_addr",
	                                    "block_lens",
	                                    "kv_block_lens",
	                                    "registered_layer_names",
	                                    "registered_layer_indices",
	                                    "registered_group_indices",
	                                    "remote_pp_size",
	                                    "prefix_replay_protocol",
	                                    "prefix_replay_layout",
	                                    "prefix_replay_checkpoints"};
	enum { NF = sizeof(names) / sizeof(names[0]) };
	struct dec d = {"MooncakeXferMetadata", err, errsz};
	const msgpack_object *fv[NF] = {0};
	bool bn = shape >= KV1_SHAPE_BN, b1 = shape >= KV1_SHAPE_B1;
	/* the fields this shape knows; the others are unknown keys to it, ignored (B1 / B2: the
	 * first seven, mooncake_connector.py @ b745e8b5d / 4d51588e2) */
	int nf = shape >= KV1_SHAPE_BL ? NF : bn ? 12 : b1 ? 7 : 6;
	msgpack_unpacked u;
	unsigned seen = 0;
	int ret;

	memset(m, 0, sizeof(*m));
	m->remote_pp_size = 1;
	msgpack_unpacked_init(&u);
	/* before BL: the first eight and remote_pp_size (11) only */
	if ((ret = top_fields(&d, buf, len, &u, names, nf,
	                      shape >= KV1_SHAPE_BL ? ~0u : 0xffu | 1u << 11, fv, &seen)))
		goto out;
	if ((ret = missing(&d, seen,
	                   bn   ? 0xff
	                   : b1 ? 0x7f
	                        : 0x3f,
	                   names, nf)) ||
	    (ret = get_str(&d, fv[0], names[0], &m->remote_hostname)) ||
	    (ret = get_int(&d, fv[1], names[1], 0, 65535, &m->remote_port)) ||
	    (ret = get_int(&d, fv[2], names[2], 1, 4096, &m->remote_tp_size)) ||
	    (ret = get_int(&d, fv[3], names[3], 0, 4095, &m->remote_tp_rank)) ||
	    (ret = get_req_blocks(&d, fv[4], shape >= KV1_SHAPE_B2, m)) ||
	    (ret = get_bases(&d, fv[5], &m->bases, &m->nbases)) ||
	    (b1 && (ret = get_i64s(&d, fv[6], names[6], 0, &m->block_lens, &m->nblock_lens))))
		goto out;
	if (bn &&
	    ((ret = get_i64s(&d, fv[7], names[7], 0, &m->kv_block_lens, &m->nkv_block_lens)) ||
	     (fv[11] && (ret = get_int(&d, fv[11], names[11], 1, 1024, &m->remote_pp_size))) ||
	     (ret = get_bl_fields(&d, fv, names, m))))
		goto out;
	ret = 0;
out:
	msgpack_unpacked_destroy(&u);
	if (ret)
		kv1_xfer_meta_free(m);
	return ret;
}

int kv1_xfer_resp_decode(const void *buf, size_t len, struct kv1_xfer_resp *r, char *err,
                         size_t errsz)
{
	static const char *const names[] = {"status", "ok_reqs", "err_reqs", "err_msg"};
	struct dec d = {"MooncakeXferResponse", err, errsz};
	const msgpack_object *fv[4] = {0};
	msgpack_unpacked u;
	unsigned seen = 0;
	int64_t st = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	msgpack_unpacked_init(&u);
	if ((ret = top_fields(&d, buf, len, &u, names, 4, ~0u, fv, &seen)))
		goto out;
	if ((ret = missing(&d, seen, 1, names, 4)) ||
	    (ret = get_int(&d, fv[0], names[0], 0, 2, &st)))
		goto out;
	r->status = (int)st;
	/* Optional fields: null is the same as absent. */
	if (fv[1] && fv[1]->type != MSGPACK_OBJECT_NIL) {
		r->has_ok = true;
		if ((ret = get_strs(&d, fv[1], names[1], &r->ok, &r->nok)))
			goto out;
	}
	if (fv[2] && fv[2]->type != MSGPACK_OBJECT_NIL) {
		r->has_err = true;
		if ((ret = get_strs(&d, fv[2], names[2], &r->err, &r->nerr)))
			goto out;
	}
	if (fv[3] && fv[3]->type != MSGPACK_OBJECT_NIL &&
	    (ret = get_str(&d, fv[3], names[3], &r->err_msg)))
		goto out;
	ret = 0;
out:
	msgpack_unpacked_destroy(&u);
	if (ret)
		kv1_xfer_resp_free(r);
	return ret;
}

void kv1_agent_meta_free(struct kv1_agent_meta *m)
{
	free(m->remote_hostname);
	free_strs(m->request_ids, m->nreq);
	free(m->bases);
	for (size_t i = 0; m->block_ids && i < m->nblock_ids; i++)
		free(m->block_ids[i].v);
	free(m->block_ids);
	memset(m, 0, sizeof(*m));
}

void kv1_xfer_meta_free(struct kv1_xfer_meta *m)
{
	free(m->remote_hostname);
	for (size_t i = 0; m->reqs && i < m->nreqs; i++) {
		free(m->reqs[i].req_id);
		free(m->reqs[i].transfer_id);
		for (size_t g = 0; m->reqs[i].groups && g < m->reqs[i].ngroups; g++)
			free(m->reqs[i].groups[g].v);
		free(m->reqs[i].groups);
	}
	free(m->reqs);
	free(m->bases);
	free(m->block_lens);
	free(m->kv_block_lens);
	free_strs(m->layer_names, m->nlayer_names);
	free(m->layer_indices);
	free(m->group_indices);
	free(m->replay_layout);
	for (size_t i = 0; m->replay_ckpts && i < m->nreplay_ckpts; i++) {
		free(m->replay_ckpts[i].req_id);
		free(m->replay_ckpts[i].digest);
	}
	free(m->replay_ckpts);
	memset(m, 0, sizeof(*m));
}

void kv1_xfer_resp_free(struct kv1_xfer_resp *r)
{
	free_strs(r->ok, r->nok);
	free_strs(r->err, r->nerr);
	free(r->err_msg);
	memset(r, 0, sizeof(*r));
}

void kv1_wire_err_to_msgspec(const char *err, char *out, size_t outsz)
{
	const char *p = strstr(err, ": ");

	p = p ? p + 2 : err;
	if (!strncmp(p, "missing required field", 22))
		snprintf(out, outsz, "Object %s", p);
	else if (!strncmp(p, "expected", 8))
		snprintf(out, outsz, "E%s", p + 1);
	else
		snprintf(out, outsz, "%s", p);
}
