/* SPDX-License-Identifier: Apache-2.0 */
/* te_segment: the segments a request can target — the local one (registered-buffer lookups, the
 * published descriptor) and the peer cache (open/sync, rpc_meta lookups, P2P metadata). */
#include "te_engine_priv.h"

#include <inttypes.h>
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"
#include "pd_util.h"

#define P2P_META_TIMEOUT_MS 10000

/* ---------------------------------------------------------------- the local segment */
char *te_engine_local_desc_json(struct te_engine *eng)
{
	char *s;
	pthread_mutex_lock(&eng->pub_lock);
	s = eng->local_json ? strdup(eng->local_json) : NULL;
	pthread_mutex_unlock(&eng->pub_lock);
	return s;
}

const struct te_segment_desc *te_engine_local_desc(struct te_engine *eng)
{
	const struct te_segment_desc *d;
	pthread_mutex_lock(&eng->pub_lock);
	d = eng->local_desc;
	pthread_mutex_unlock(&eng->pub_lock);
	return d;
}

/* Index of the first buffer with addr > a (bufs sorted by addr). */
size_t te_local_buf_upper(const struct te_engine *eng, uint64_t a)
{
	size_t lo = 0, hi = eng->nbufs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (eng->bufs[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void te_engine_set_landed(struct te_engine *eng, te_landed_fn fn, void *ud)
{
	atomic_store(&eng->landed_fn, NULL);
	atomic_store(&eng->landed_ud, ud);
	atomic_store(&eng->landed_fn, fn);
}

void te_engine_landed(struct te_engine *eng, uint64_t addr, uint64_t len)
{
	te_landed_fn fn = atomic_load(&eng->landed_fn);

	if (fn)
		fn(atomic_load(&eng->landed_ud), (const void *)(uintptr_t)addr, (size_t)len);
}

bool te_engine_local_range_gpu(struct te_engine *eng, uint64_t addr, uint64_t len, int *gpu)
{
	bool ok = false;
	size_t i;

	*gpu = 0;
	if (len == 0 || addr + len < addr)
		return false;
	pthread_rwlock_rdlock(&eng->buf_lock);
	i = te_local_buf_upper(eng, addr);
	if (i > 0) {
		const struct te_local_buf *b = &eng->bufs[i - 1];
		ok = addr - b->addr <= b->len && len <= b->len - (addr - b->addr);
		if (ok)
			*gpu = b->gpu;
	}
	pthread_rwlock_unlock(&eng->buf_lock);
	return ok;
}

bool te_engine_local_range_ok(struct te_engine *eng, uint64_t addr, uint64_t len)
{
	int gpu;
	return te_engine_local_range_gpu(eng, addr, len, &gpu);
}

/* ---------------------------------------------------------------- peer segments */
int te_engine_keep_desc(struct te_engine *eng, struct te_segment_desc *d)
{
	if (eng->ndescs == eng->desccap) {
		size_t n = eng->desccap ? eng->desccap * 2 : 16;
		struct te_segment_desc **p = realloc(eng->descs, n * sizeof(*p));
		if (!p)
			return TE_ERR_MEMORY;
		eng->descs = p;
		eng->desccap = n;
	}
	eng->descs[eng->ndescs++] = d;
	return 0;
}

void te_engine_free_segments(struct te_engine *eng)
{
	for (size_t i = 0; i < eng->ndescs; i++)
		te_desc_free(eng->descs[i]);
	free(eng->descs);
	for (size_t i = 0; i < eng->nsegs; i++)
		free(eng->segs[i]);
	free(eng->segs);
}

/* Fetches a peer descriptor from the store, or in P2P mode from the peer itself
 * (docs/handshake.md). */
static int fetch_desc(struct te_engine *eng, const char *name, struct te_segment_desc **out)
{
	char *json = NULL, errbuf[256] = "";
	int ret;

	*out = NULL;
	if (eng->p2p) {
		char host[256], *mine;
		int port;
		if (pd_split_hostport(name, host, sizeof(host), &port)) {
			pd_err("te: P2PHANDSHAKE segment names are host:rpc_port, got \"%s\"",
			       name);
			return TE_ERR_INVALID_ARGUMENT;
		}
		mine = te_engine_local_desc_json(eng);
		ret = te_hs_request(host, port, TE_HS_METADATA, mine ? mine : "{}", &json,
		                    P2P_META_TIMEOUT_MS);
		free(mine);
	} else {
		char *key = te_meta_segment_key(name);
		ret = key ? te_meta_get(eng->meta, key, &json) : TE_ERR_MEMORY;
		if (ret)
			pd_err("te: segment \"%s\": %s %s", name,
			       ret == TE_ERR_NOT_FOUND ? "no key" : "cannot read key",
			       key ? key : "");
		free(key);
	}
	if (ret)
		goto out;
	ret = te_desc_decode(json, strlen(json), out, errbuf, sizeof(errbuf));
	if (ret) {
		pd_err("te: descriptor of segment \"%s\" rejected: %s", name, errbuf);
		goto out;
	}
	if (strcmp((*out)->name, name))
		pd_warn("te: segment \"%s\" publishes the name \"%s\"", name, (*out)->name);
out:
	free(json);
	return ret;
}

/* Caller holds seg_lock. */
static struct te_seg_entry *find_seg(struct te_engine *eng, const char *name, uint64_t *id)
{
	for (size_t i = 0; i < eng->nsegs; i++) {
		if (!strcmp(eng->segs[i]->name, name)) {
			*id = i + 1;
			return eng->segs[i];
		}
	}
	return NULL;
}

/* Mooncake #3837's rule on a re-read: a newer metadata_version replaces the cached descriptor,
 * an older one is stale, the same one with other content means two publishers (or a missing
 * bump); unversioned (0) descriptors always replace. True when the fresh one is not taken. */
static bool version_refused(const char *name, const struct te_segment_desc *cached,
                            const struct te_segment_desc *fresh)
{
	int r = te_desc_version_check(cached, fresh);

	if (r == -1)
		pd_warn("te: segment \"%s\": metadata_version %" PRIu64 " is older than the cached "
		        "%" PRIu64 "; stale descriptor ignored",
		        name, fresh->metadata_version, cached->metadata_version);
	else if (r == -2)
		pd_warn("te: segment \"%s\": metadata_version %" PRIu64 " re-read with different "
		        "content (two publishers under one name, or a publish without a version "
		        "bump); keeping the cached descriptor",
		        name, fresh->metadata_version);
	return r <= 0;
}

/* Returns the entry for name (created and fetched if needed); refresh forces a re-fetch. */
static int get_seg(struct te_engine *eng, const char *name, bool refresh, uint64_t *id_out,
                   struct te_seg_entry **out)
{
	struct te_segment_desc *d = NULL;
	struct te_seg_entry *e;
	uint64_t id = 0;
	int ret;

	pthread_mutex_lock(&eng->seg_lock);
	e = find_seg(eng, name, &id);
	pthread_mutex_unlock(&eng->seg_lock);
	if (e && !refresh) {
		*id_out = id;
		*out = e;
		return 0;
	}
	/* fetched without the lock: a slow store must not block status polling or submits */
	ret = fetch_desc(eng, name, &d);
	if (ret)
		return ret;
	pthread_mutex_lock(&eng->seg_lock);
	e = find_seg(eng, name, &id);
	if (!e) {
		if (eng->nsegs == eng->segcap) {
			size_t n = eng->segcap ? eng->segcap * 2 : 8;
			struct te_seg_entry **p = realloc(eng->segs, n * sizeof(*p));
			if (!p) {
				ret = TE_ERR_MEMORY;
				goto out;
			}
			eng->segs = p;
			eng->segcap = n;
		}
		e = calloc(1, sizeof(*e));
		if (!e) {
			ret = TE_ERR_MEMORY;
			goto out;
		}
		snprintf(e->name, sizeof(e->name), "%s", name);
		eng->segs[eng->nsegs++] = e;
		id = eng->nsegs;
	}
	if (e->desc && version_refused(name, e->desc, d))
		goto keep; /* the cached descriptor (and its rpc_meta) stay */
	ret = te_engine_keep_desc(eng, d);
	if (ret)
		goto out;
	e->desc = d;
	e->rpc_port = 0; /* re-resolve too: unlike Mooncake, a restarted peer is found again */
	d = NULL;
keep:
	*id_out = id;
	*out = e;
out:
	pthread_mutex_unlock(&eng->seg_lock);
	te_desc_free(d);
	return ret;
}

int te_open_segment(struct te_engine *eng, const char *name, uint64_t *id)
{
	struct te_seg_entry *e;
	int ret;

	if (!eng || !id)
		return TE_ERR_INVALID_ARGUMENT;
	*id = TE_INVALID_SEGMENT;
	if (!name)
		return TE_ERR_INVALID_ARGUMENT;
	while (*name == '/')
		name++;
	if (!*name || strlen(name) >= TE_NAME_MAX) {
		pd_err("te: open_segment: empty or over-long segment name");
		return TE_ERR_INVALID_ARGUMENT;
	}
	if (!strcmp(name, eng->name)) {
		*id = TE_LOCAL_SEGMENT;
		return 0;
	}
	ret = get_seg(eng, name, eng->disable_metacache, id, &e);
	if (ret)
		*id = TE_INVALID_SEGMENT;
	return ret;
}

int te_sync_segment(struct te_engine *eng, const char *name)
{
	struct te_seg_entry *e;
	uint64_t id;
	int ret = 0;

	if (!eng)
		return TE_ERR_INVALID_ARGUMENT;
	if (name) {
		while (*name == '/')
			name++;
		pthread_mutex_lock(&eng->seg_lock);
		e = find_seg(eng, name, &id);
		pthread_mutex_unlock(&eng->seg_lock);
		if (!e)
			return TE_ERR_INVALID_ARGUMENT;
		return get_seg(eng, name, true, &id, &e);
	}
	for (size_t i = 0;; i++) {
		char nm[TE_NAME_MAX];
		int r;
		pthread_mutex_lock(&eng->seg_lock);
		if (i >= eng->nsegs) {
			pthread_mutex_unlock(&eng->seg_lock);
			break;
		}
		snprintf(nm, sizeof(nm), "%s", eng->segs[i]->name);
		pthread_mutex_unlock(&eng->seg_lock);
		r = get_seg(eng, nm, true, &id, &e);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

int te_engine_peer_desc(struct te_engine *eng, const char *name,
                        const struct te_segment_desc **desc)
{
	struct te_seg_entry *e;
	uint64_t id;
	int ret;

	if (!strcmp(name, eng->name)) {
		*desc = te_engine_local_desc(eng);
		return 0;
	}
	ret = get_seg(eng, name, false, &id, &e);
	if (ret)
		return ret;
	pthread_mutex_lock(&eng->seg_lock);
	*desc = e->desc;
	pthread_mutex_unlock(&eng->seg_lock);
	return 0;
}

static int parse_rpc_meta(const char *name, const char *json, char *host, size_t hostlen, int *port)
{
	char errbuf[256] = "";
	int ret =
	    te_rpcmeta_decode(json, strlen(json), host, hostlen, port, errbuf, sizeof(errbuf));
	if (ret)
		pd_err("te: rpc_meta of \"%s\" rejected: %s", name, errbuf);
	return ret;
}

int te_engine_peer_rpc(struct te_engine *eng, const char *name, char *host, size_t hostlen,
                       int *rpc_port)
{
	struct te_seg_entry *e = NULL;
	char *json = NULL, *key;
	uint64_t id;
	int ret;

	if (!strcmp(name, eng->name)) {
		snprintf(host, hostlen, "%s", eng->local_ip);
		*rpc_port = eng->rpc_port;
		return 0;
	}
	pthread_mutex_lock(&eng->seg_lock);
	e = find_seg(eng, name, &id);
	if (e && e->rpc_port) {
		snprintf(host, hostlen, "%s", e->rpc_host);
		*rpc_port = e->rpc_port;
		pthread_mutex_unlock(&eng->seg_lock);
		return 0;
	}
	pthread_mutex_unlock(&eng->seg_lock);
	if (eng->p2p) {
		if (pd_split_hostport(name, host, hostlen, rpc_port))
			return TE_ERR_INVALID_ARGUMENT;
		return 0;
	}
	key = te_meta_rpc_key(name);
	ret = key ? te_meta_get(eng->meta, key, &json) : TE_ERR_MEMORY;
	if (ret)
		pd_err("te: cannot read %s: %s", key ? key : "rpc_meta", te_strerror(ret));
	else
		ret = parse_rpc_meta(name, json, host, hostlen, rpc_port);
	free(key);
	free(json);
	if (ret)
		return ret;
	pthread_mutex_lock(&eng->seg_lock);
	if (e && strlen(host) < sizeof(e->rpc_host)) {
		snprintf(e->rpc_host, sizeof(e->rpc_host), "%s", host);
		e->rpc_port = *rpc_port;
	}
	pthread_mutex_unlock(&eng->seg_lock);
	return 0;
}
