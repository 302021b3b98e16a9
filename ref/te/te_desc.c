/* SPDX-License-Identifier: Apache-2.0 */
/* te_desc: segment descriptors and rpc_meta values as Mooncake writes them (docs/metadata.md):
 * encode to FastWriter bytes with exact u64 numbers, decode with [P2] validation. */
#include "te_internal.h"

#include <cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "pd_log.h"

void te_desc_timestamp(char out[32])
{
	struct timeval tv;
	struct tm tm;
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	size_t n = strftime(out, 32, "%Y-%m-%d %H:%M:%S", &tm);
	if (n == 0 || n > 20)
		n = 0;
	snprintf(out + n, 32 - n, ".%06u", (unsigned)(tv.tv_usec % 1000000));
}

uint64_t te_desc_next_version(void)
{
	static _Atomic uint64_t last;
	struct timespec ts;
	uint64_t now, prev, v;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	prev = atomic_load(&last);
	do
		v = now > prev ? now : prev + 1;
	while (!atomic_compare_exchange_weak(&last, &prev, v));
	return v;
}

int te_desc_version_check(const struct te_segment_desc *cached, const struct te_segment_desc *fresh)
{
	struct te_segment_desc a, b;
	char *ea, *eb;
	int same;

	if (!cached || !fresh || !cached->metadata_version || !fresh->metadata_version ||
	    fresh->metadata_version > cached->metadata_version)
		return 1;
	if (fresh->metadata_version < cached->metadata_version)
		return -1;
	a = *cached;
	b = *fresh;
	snprintf(a.timestamp, sizeof(a.timestamp), "-");
	snprintf(b.timestamp, sizeof(b.timestamp), "-");
	ea = te_desc_encode(&a);
	eb = te_desc_encode(&b);
	same = ea && eb && !strcmp(ea, eb);
	free(ea);
	free(eb);
	return same ? 0 : -2;
}

const struct te_buffer_desc *te_desc_find_range(const struct te_segment_desc *d, uint64_t addr,
                                                uint64_t len)
{
	if (!d)
		return NULL;
	for (int i = 0; i < d->nbuffers; i++) {
		const struct te_buffer_desc *b = &d->buffers[i];
		/* addr - b->addr cannot wrap once addr >= b->addr; no addr + len anywhere */
		if (addr >= b->addr && len <= b->length && addr - b->addr <= b->length - len)
			return b;
	}
	return NULL;
}

void te_desc_free(struct te_segment_desc *d)
{
	if (!d)
		return;
	free(d->buffers);
	free(d->priority_matrix);
	free(d);
}

/* ------------------------------------------------------------------ encode */
static cJSON *u64_item(uint64_t v)
{
	char tmp[24];
	snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
	return cJSON_CreateRaw(tmp);
}

static int add(cJSON *obj, const char *key, cJSON *item)
{
	if (!item)
		return -1;
	cJSON_AddItemToObject(obj, key, item);
	return 0;
}

char *te_desc_encode(const struct te_segment_desc *d)
{
	cJSON *root = cJSON_CreateObject(), *bufs, *devs;
	char ts[32], *out = NULL;
	int rdma = d && !strcmp(d->protocol, "rdma"), err = 0;
	int ipc = d && !strcmp(d->protocol, "nvlink_intra");

	if (!root || !d || d->nbuffers < 0 || d->ndevices < 0 || d->ndevices > TE_MAX_DEVICES)
		goto out;
	err |= add(root, "name", cJSON_CreateString(d->name));
	err |= add(root, "protocol", cJSON_CreateString(d->protocol));
	if (!d->timestamp[0])
		te_desc_timestamp(ts);
	err |= add(root, "timestamp", cJSON_CreateString(d->timestamp[0] ? d->timestamp : ts));
	if (rdma && te_compat_rdma_tcp_fields()) {
		/* Mooncake 0.3.12+ writes both for every protocol: an RDMA segment has no TCP data
		 * port (0) and the default framing version (1) */
		err |= add(root, "tcp_data_port",
		           u64_item(d->tcp_data_port > 0 ? (uint64_t)d->tcp_data_port : 0));
		err |= add(root, "tcp_proto_version",
		           u64_item(d->tcp_proto_version > 0 ? (uint64_t)d->tcp_proto_version : 1));
	} else {
		if (d->tcp_data_port > 0)
			err |= add(root, "tcp_data_port", u64_item((uint64_t)d->tcp_data_port));
		if (d->tcp_proto_version > 0)
			err |= add(root, "tcp_proto_version",
			           u64_item((uint64_t)d->tcp_proto_version));
	}
	if (ipc && d->host_id[0])
		err |= add(root, "pdkv_host_id", cJSON_CreateString(d->host_id));
	if (te_compat_metadata_version()) /* Mooncake #3837; 0 over the P2P handshake */
		err |= add(root, "metadata_version", u64_item(d->metadata_version));
	bufs = cJSON_CreateArray();
	err |= add(root, "buffers", bufs);
	for (int i = 0; bufs && i < d->nbuffers; i++) {
		const struct te_buffer_desc *b = &d->buffers[i];
		cJSON *o = cJSON_CreateObject(), *lk, *rk;
		if (!o || b->nkeys < 0 || b->nkeys > TE_MAX_DEVICES) {
			cJSON_Delete(o);
			err = 1;
			break;
		}
		cJSON_AddItemToArray(bufs, o);
		err |= add(o, "name", cJSON_CreateString(b->name));
		err |= add(o, "addr", u64_item(b->addr));
		err |= add(o, "length", u64_item(b->length));
		if (ipc) /* Mooncake's nvlink_intra writes it for every buffer, "" included */
			err |= add(o, "shm_name", cJSON_CreateString(b->shm_name));
		if (!rdma)
			continue;
		err |= add(o, "lkey", lk = cJSON_CreateArray());
		err |= add(o, "rkey", rk = cJSON_CreateArray());
		for (int k = 0; lk && rk && k < b->nkeys; k++) {
			cJSON_AddItemToArray(lk, u64_item(b->lkey[k]));
			cJSON_AddItemToArray(rk, u64_item(b->rkey[k]));
		}
	}
	if (rdma) {
		cJSON *pm;
		char why[128];
		err |= add(root, "devices", devs = cJSON_CreateArray());
		for (int i = 0; devs && i < d->ndevices; i++) {
			cJSON *o = cJSON_CreateObject();
			if (!o) {
				err = 1;
				break;
			}
			cJSON_AddItemToArray(devs, o);
			err |= add(o, "name", cJSON_CreateString(d->devices[i].name));
			err |= add(o, "lid", u64_item(d->devices[i].lid));
			err |= add(o, "gid", cJSON_CreateString(d->devices[i].gid));
		}
		if (d->priority_matrix && *d->priority_matrix) {
			pm = te_json_parse(d->priority_matrix, strlen(d->priority_matrix), why,
			                   sizeof(why));
			if (!pm || !cJSON_IsObject(pm)) {
				pd_err("te_desc_encode: priority_matrix of %s is not a JSON "
				       "object: %s",
				       d->name, pm ? "wrong type" : why);
				cJSON_Delete(pm);
				goto out;
			}
		} else {
			pm = cJSON_CreateObject();
		}
		err |= add(root, "priority_matrix", pm);
	}
	if (!err)
		out = te_json_fast_write(root);
out:
	cJSON_Delete(root);
	return out;
}

/* ------------------------------------------------------------------ decode */
static int fail(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return TE_ERR_MALFORMED_JSON;
}

/* Copies a string member (must be a string; required => non-empty). -1 if absent/bad. */
static int get_str(const cJSON *o, const char *key, char *dst, size_t dsz, int required)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	size_t n;
	if (!it)
		return required ? -1 : 0;
	if (!cJSON_IsString(it) || !it->valuestring)
		return -1;
	n = strlen(it->valuestring);
	if (n >= dsz || (required && n == 0))
		return -1;
	memcpy(dst, it->valuestring, n + 1);
	return 0;
}

static int get_uint(const cJSON *o, const char *key, uint64_t max, uint64_t *v, int required)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!it) {
		*v = 0;
		return required ? -1 : 0;
	}
	return te_json_get_uint(it, max, v) ? -1 : 0;
}

static int decode_keys(const cJSON *b, const char *key, uint32_t *keys, int *n)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(b, key), *k;
	int i = 0;
	uint64_t v;
	if (!arr) {
		*n = 0;
		return 0;
	}
	if (!cJSON_IsArray(arr))
		return -1;
	cJSON_ArrayForEach(k, arr)
	{
		if (i >= TE_MAX_DEVICES || te_json_get_uint(k, UINT32_MAX, &v))
			return -1;
		keys[i++] = (uint32_t)v;
	}
	*n = i;
	return 0;
}

/* nvlink_intra's shm_name: absent or "" (memory the TCP path reaches), else an even number of
 * hex digits, at most a 64-byte handle's 128 */
static int shm_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n % 2 || n >= TE_SHM_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return 0;
	return 1;
}

static int decode_buffers(const cJSON *root, struct te_segment_desc *d, int rdma, char *errbuf,
                          size_t errlen)
{
	int ipc = !strcmp(d->protocol, "nvlink_intra");
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "buffers"), *b;
	int i = 0, nl, nr;
	if (!arr || cJSON_IsNull(arr))
		return 0; /* a segment with nothing registered yet */
	if (!cJSON_IsArray(arr))
		return fail(errbuf, errlen, "segment %s: \"buffers\" is not an array", d->name);
	d->nbuffers = cJSON_GetArraySize(arr);
	d->buffers = calloc(d->nbuffers ? (size_t)d->nbuffers : 1, sizeof(*d->buffers));
	if (!d->buffers)
		return fail(errbuf, errlen, "segment %s: out of memory for %d buffers", d->name,
		            d->nbuffers);
	cJSON_ArrayForEach(b, arr)
	{
		struct te_buffer_desc *bd = &d->buffers[i];
		if (!cJSON_IsObject(b))
			return fail(errbuf, errlen, "segment %s: buffers[%d] is not an object",
			            d->name, i);
		if (get_str(b, "name", bd->name, sizeof(bd->name), 1))
			return fail(errbuf, errlen,
			            "segment %s: buffers[%d].name: expected a non-empty string",
			            d->name, i);
		if (get_uint(b, "addr", UINT64_MAX, &bd->addr, 1) || !bd->addr)
			return fail(errbuf, errlen,
			            "segment %s: buffers[%d].addr: expected a non-zero unsigned "
			            "integer",
			            d->name, i);
		if (get_uint(b, "length", UINT64_MAX, &bd->length, 1) || !bd->length)
			return fail(errbuf, errlen,
			            "segment %s: buffers[%d].length: expected a non-zero unsigned "
			            "integer",
			            d->name, i);
		if (bd->length - 1 > UINT64_MAX - bd->addr) /* end == 2^64 is fine */
			return fail(errbuf, errlen,
			            "segment %s: buffers[%d]: addr %" PRIu64 " + length %" PRIu64
			            " wraps the address space",
			            d->name, i, bd->addr, bd->length);
		if (ipc && (get_str(b, "shm_name", bd->shm_name, sizeof(bd->shm_name), 0) ||
		            !shm_name_ok(bd->shm_name)))
			return fail(errbuf, errlen,
			            "segment %s: buffers[%d].shm_name: expected \"\" or the hex "
			            "digits of a cudaIpcMemHandle_t (at most %d)",
			            d->name, i, TE_SHM_NAME_MAX - 1);
		if (rdma) {
			if (decode_keys(b, "rkey", bd->rkey, &nr) ||
			    decode_keys(b, "lkey", bd->lkey, &nl))
				return fail(errbuf, errlen,
				            "segment %s: buffers[%d]: rkey/lkey must be arrays of "
				            "at most %d u32",
				            d->name, i, TE_MAX_DEVICES);
			if (nr == 0)
				return fail(errbuf, errlen, "segment %s: buffers[%d].rkey is empty",
				            d->name, i);
			if (nr != nl)
				return fail(errbuf, errlen,
				            "segment %s: buffers[%d]: %d rkeys but %d lkeys",
				            d->name, i, nr, nl);
			bd->nkeys = nr;
		}
		i++;
	}
	return 0;
}

/* 16 groups of 1-2 hex digits separated by ':' (what the reader's %x parse needs). */
static int gid_ok(const char *g)
{
	for (int grp = 0; grp < 16; grp++) {
		int n = 0;
		while (n < 2 && ((*g >= '0' && *g <= '9') || (*g >= 'a' && *g <= 'f') ||
		                 (*g >= 'A' && *g <= 'F')))
			g++, n++;
		if (!n || *g != (grp == 15 ? '\0' : ':'))
			return 0;
		if (grp < 15)
			g++;
	}
	return 1;
}

static int decode_devices(const cJSON *root, struct te_segment_desc *d, char *errbuf, size_t errlen)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "devices"), *dv;
	uint64_t lid;
	int i = 0;
	if (!arr || cJSON_IsNull(arr))
		return 0;
	if (!cJSON_IsArray(arr))
		return fail(errbuf, errlen, "segment %s: \"devices\" is not an array", d->name);
	if (cJSON_GetArraySize(arr) > TE_MAX_DEVICES)
		return fail(errbuf, errlen, "segment %s: %d devices (at most %d supported)",
		            d->name, cJSON_GetArraySize(arr), TE_MAX_DEVICES);
	cJSON_ArrayForEach(dv, arr)
	{
		struct te_device_desc *dd = &d->devices[i];
		if (!cJSON_IsObject(dv) || get_str(dv, "name", dd->name, sizeof(dd->name), 1))
			return fail(errbuf, errlen,
			            "segment %s: devices[%d].name: expected a non-empty string",
			            d->name, i);
		if (get_str(dv, "gid", dd->gid, sizeof(dd->gid), 1) || !gid_ok(dd->gid))
			return fail(
			    errbuf, errlen,
			    "segment %s: devices[%d].gid: expected 16 hex bytes joined by ':' "
			    "(e.g. 00:00:...:ff:ff:0a:00:00:02)",
			    d->name, i);
		if (get_uint(dv, "lid", UINT16_MAX, &lid, 0))
			return fail(errbuf, errlen, "segment %s: devices[%d].lid: expected a u16",
			            d->name, i);
		dd->lid = (uint16_t)lid;
		i++;
	}
	d->ndevices = i;
	return 0;
}

int te_desc_decode(const char *json, size_t len, struct te_segment_desc **out, char *errbuf,
                   size_t errlen)
{
	struct te_segment_desc *d = NULL;
	cJSON *root;
	char why[160];
	uint64_t v;
	int ret, rdma;

	*out = NULL;
	root = te_json_parse(json, len, why, sizeof(why));
	if (!root)
		return fail(errbuf, errlen, "segment descriptor: %s", why);
	ret = fail(errbuf, errlen, "segment descriptor: out of memory");
	d = calloc(1, sizeof(*d));
	if (!d)
		goto out;
	if (!cJSON_IsObject(root)) {
		ret = fail(errbuf, errlen, "segment descriptor: expected a JSON object");
		goto out;
	}
	if (get_str(root, "name", d->name, sizeof(d->name), 1)) {
		ret = fail(errbuf, errlen,
		           "segment descriptor: \"name\": expected a non-empty "
		           "string shorter than %d",
		           TE_NAME_MAX);
		goto out;
	}
	if (get_str(root, "protocol", d->protocol, sizeof(d->protocol), 1)) {
		ret = fail(errbuf, errlen, "segment %s: \"protocol\": expected a string", d->name);
		goto out;
	}
	rdma = !strcmp(d->protocol, "rdma");
	if (!rdma && strcmp(d->protocol, "tcp") && strcmp(d->protocol, "nvlink_intra")) {
		ret = fail(errbuf, errlen,
		           "segment %s: protocol \"%s\" not supported (expected \"tcp\", "
		           "\"rdma\" or \"nvlink_intra\")",
		           d->name, d->protocol);
		goto out;
	}
	if (!strcmp(d->protocol, "nvlink_intra") &&
	    get_str(root, "pdkv_host_id", d->host_id, sizeof(d->host_id), 0)) {
		ret = fail(errbuf, errlen, "segment %s: pdkv_host_id: expected a string under %zu",
		           d->name, sizeof(d->host_id));
		goto out;
	}
	/* informational; a long or odd timestamp is cut, not rejected */
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(root, "timestamp");
	if (cJSON_IsString(ts) && ts->valuestring)
		snprintf(d->timestamp, sizeof(d->timestamp), "%s", ts->valuestring);
	if (get_uint(root, "tcp_data_port", 65535, &v, 0)) {
		ret = fail(errbuf, errlen, "segment %s: tcp_data_port: expected 0..65535", d->name);
		goto out;
	}
	d->tcp_data_port = (int)v;
	if (get_uint(root, "tcp_proto_version", 255, &v, 0)) {
		ret =
		    fail(errbuf, errlen, "segment %s: tcp_proto_version: expected 0..255", d->name);
		goto out;
	}
	d->tcp_proto_version = (int)v;
	if (get_uint(root, "metadata_version", UINT64_MAX, &d->metadata_version, 0)) {
		ret = fail(errbuf, errlen,
		           "segment %s: metadata_version: expected an unsigned 64-bit integer "
		           "(microseconds)",
		           d->name);
		goto out;
	}
	if (rdma && (ret = decode_devices(root, d, errbuf, errlen)))
		goto out;
	if ((ret = decode_buffers(root, d, rdma, errbuf, errlen)))
		goto out;
	if (rdma) {
		const cJSON *pm = cJSON_GetObjectItemCaseSensitive(root, "priority_matrix");
		if (cJSON_IsObject(pm)) {
			d->priority_matrix = te_json_fast_write(pm);
			if (!d->priority_matrix) {
				ret = fail(errbuf, errlen, "segment %s: out of memory", d->name);
				goto out;
			}
			d->priority_matrix[strlen(d->priority_matrix) - 1] = '\0'; /* the "\n" */
		} else {
			/* [P2] only warns; path selection then fails per slice */
			pd_warn("segment %s: priority_matrix missing or not an object", d->name);
		}
	}
	*out = d;
	d = NULL;
	ret = 0;
out:
	te_desc_free(d);
	cJSON_Delete(root);
	return ret;
}

/* ------------------------------------------------------------------ rpc_meta */
char *te_rpcmeta_encode(const char *ip_or_host_name, int rpc_port, uint64_t version)
{
	cJSON *o = cJSON_CreateObject();
	char *out = NULL;
	if (o && ip_or_host_name && rpc_port > 0 && rpc_port <= 65535 &&
	    !add(o, "ip_or_host_name", cJSON_CreateString(ip_or_host_name)) &&
	    !add(o, "rpc_port", u64_item((uint64_t)rpc_port)) &&
	    (!te_compat_metadata_version() || !add(o, "metadata_version", u64_item(version))))
		out = te_json_fast_write(o);
	cJSON_Delete(o);
	return out;
}

int te_rpcmeta_decode(const char *json, size_t len, char *host, size_t hostlen, int *rpc_port,
                      char *errbuf, size_t errlen)
{
	char why[160];
	uint64_t port, version;
	int ret = 0;
	cJSON *root = te_json_parse(json, len, why, sizeof(why));
	if (!root)
		return fail(errbuf, errlen, "rpc_meta: %s", why);
	if (!cJSON_IsObject(root))
		ret = fail(errbuf, errlen, "rpc_meta: expected a JSON object");
	else if (get_str(root, "ip_or_host_name", host, hostlen, 1))
		ret = fail(errbuf, errlen,
		           "rpc_meta: \"ip_or_host_name\": expected a non-empty "
		           "string shorter than %zu",
		           hostlen);
	else if (get_uint(root, "rpc_port", 65535, &port, 1) || port == 0)
		ret = fail(errbuf, errlen, "rpc_meta: \"rpc_port\": expected 1..65535");
	else if (get_uint(root, "metadata_version", UINT64_MAX, &version, 0))
		ret = fail(errbuf, errlen,
		           "rpc_meta: \"metadata_version\": expected an unsigned 64-bit integer");
	else
		*rpc_port = (int)port;
	cJSON_Delete(root);
	return ret;
}
