/* te_segment: the remote-segment cache (open/sync, rpc_meta lookups, P2P metadata exchange),
 * request validation before a transport sees it, the sync-transfer helper and error names. */
#include "te_engine_priv.h"

#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"
#include "pd_util.h"

#define P2P_META_TIMEOUT_MS 10000

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

/* Fetches a peer descriptor from the store, or in P2P mode from the peer itself (§2.5). */
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
	ret = te_engine_keep_desc(eng, d);
	if (ret)
		goto out;
	e->desc = d;
	e->rpc_port = 0; /* re-resolve too: unlike Mooncake, a restarted peer is found again */
	d = NULL;
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

const char *te_engine_segment_name(struct te_engine *eng, uint64_t id)
{
	const char *n = NULL;
	if (id == TE_LOCAL_SEGMENT)
		return eng->name;
	pthread_mutex_lock(&eng->seg_lock);
	if (id <= eng->nsegs)
		n = eng->segs[id - 1]->name;
	pthread_mutex_unlock(&eng->seg_lock);
	return n;
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

/* Validates every request before any is started (te.h: all or nothing), then hands the
 * non-empty ones to the transport. */
int te_engine_start_tasks(struct te_engine *eng, struct te_task *tasks, size_t n)
{
	struct te_task *stackv[64], **v = stackv;
	size_t m = 0;
	int ret = 0;

	if (n > PD_ARRAY_SIZE(stackv) && !(v = malloc(n * sizeof(*v))))
		return TE_ERR_MEMORY;
	for (size_t i = 0; i < n; i++) {
		struct te_task *t = &tasks[i];
		const struct te_request *r = &t->req;
		const struct te_segment_desc *peer = NULL;
		const char *segname = NULL;

		if (r->opcode != TE_READ && r->opcode != TE_WRITE) {
			pd_err("te: request %zu: opcode %d is neither READ(0) nor WRITE(1)", i,
			       r->opcode);
			ret = TE_ERR_INVALID_ARGUMENT;
			goto out;
		}
		if (r->target_id == TE_LOCAL_SEGMENT) {
			peer = te_engine_local_desc(eng);
			segname = eng->name;
		} else {
			pthread_mutex_lock(&eng->seg_lock);
			if (r->target_id <= eng->nsegs) {
				peer = eng->segs[r->target_id - 1]->desc;
				segname = eng->segs[r->target_id - 1]->name;
			}
			pthread_mutex_unlock(&eng->seg_lock);
		}
		if (!peer) {
			pd_err("te: request %zu: segment id %llu was never opened", i,
			       (unsigned long long)r->target_id);
			ret = TE_ERR_INVALID_ARGUMENT;
			goto out;
		}
		if (strcmp(peer->protocol, eng->ops->name)) {
			pd_err("te: request %zu: segment %s speaks %s, this engine %s", i, segname,
			       peer->protocol, eng->ops->name);
			ret = TE_ERR_NOT_SUPPORTED_TRANSPORT;
			goto out;
		}
		t->peer = peer;
		if (r->length == 0)
			continue;
		if (!te_engine_local_range_gpu(eng, (uint64_t)(uintptr_t)r->source, r->length,
		                               &t->src_gpu)) {
			pd_err("te: request %zu: source %p+%zu is not inside one registered buffer",
			       i, r->source, r->length);
			ret = TE_ERR_ADDRESS_NOT_REGISTERED;
			goto out;
		}
		if (!te_desc_find_range(peer, r->target_offset, r->length)) {
			/* the descriptor may be stale: re-fetch once, like Mooncake's workers */
			if (r->target_id != TE_LOCAL_SEGMENT && !te_sync_segment(eng, segname)) {
				pthread_mutex_lock(&eng->seg_lock);
				peer = eng->segs[r->target_id - 1]->desc;
				pthread_mutex_unlock(&eng->seg_lock);
				t->peer = peer;
			}
			if (!te_desc_find_range(peer, r->target_offset, r->length)) {
				pd_err("te: request %zu: remote range 0x%llx+%zu is not inside one "
				       "buffer of segment %s",
				       i, (unsigned long long)r->target_offset, r->length, segname);
				ret = TE_ERR_OUT_OF_RANGE;
				goto out;
			}
		}
		v[m++] = t;
	}
	if (m)
		ret = eng->ops->submit(eng->tp, v, m);
	if (!ret)
		for (size_t i = 0; i < n; i++)
			if (tasks[i].req.length == 0)
				atomic_store(&tasks[i].slice_count, 0);
out:
	if (v != stackv)
		free(v);
	return ret;
}

static int transfer_timeout_ms(size_t len)
{
	const char *e = getenv("MC_TRANSFER_TIMEOUT");
	int64_t s = 30;
	if (e && (pd_parse_i64(e, &s) || s < 5))
		s = 30;
	return (int)(s * 1000 + (int64_t)(len / 1000000));
}

int te_transfer_sync(struct te_engine *eng, int opcode, const char *segment, void *local,
                     uint64_t remote_addr, size_t len, int timeout_ms)
{
	struct te_request r = {opcode, local, 0, remote_addr, len};
	struct te_task_status st = {0, 0};
	uint64_t batch, end;
	long nap_ns = 10000;
	int ret, spins = 0;

	if (!eng || !segment)
		return TE_ERR_INVALID_ARGUMENT;
	ret = te_open_segment(eng, segment, &r.target_id);
	if (ret)
		return ret;
	ret = te_batch_alloc(eng, 1, &batch);
	if (ret)
		return ret;
	ret = te_batch_submit(eng, batch, &r, 1);
	if (ret)
		goto out;
	if (timeout_ms <= 0)
		timeout_ms = transfer_timeout_ms(len);
	end = pd_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		ret = te_batch_status(eng, batch, 0, &st);
		if (ret)
			goto out;
		if (st.status == TE_COMPLETED || st.status == TE_FAILED)
			break;
		if (pd_now_ns() > end) {
			pd_err("te: transfer of %zu bytes to %s timed out after %d ms", len,
			       segment, timeout_ms);
			/* the batch stays allocated (still busy); the engine frees it at destroy */
			return TE_ERR_TIMEOUT;
		}
		/* short transfers end within microseconds; back off to 1 ms for long ones */
		if (++spins < 50) {
			sched_yield();
		} else {
			struct timespec ts = {0, nap_ns};
			nanosleep(&ts, NULL);
			if (nap_ns < 1000000)
				nap_ns *= 2;
		}
	}
	ret = st.status == TE_COMPLETED ? 0 : TE_ERR_ENDPOINT;
out:
	if (te_batch_free(eng, batch))
		pd_warn("te: sync transfer left batch %llx busy", (unsigned long long)batch);
	return ret;
}

const char *te_strerror(int err)
{
	switch (err) {
	case TE_OK:
		return "success";
	case TE_ERR_INVALID_ARGUMENT:
		return "invalid argument";
	case TE_ERR_TOO_MANY_REQUESTS:
		return "too many requests for the batch";
	case TE_ERR_ADDRESS_NOT_REGISTERED:
		return "address not registered";
	case TE_ERR_BATCH_BUSY:
		return "batch busy (tasks not all observed finished)";
	case TE_ERR_DEVICE_NOT_FOUND:
		return "device not found";
	case TE_ERR_ADDRESS_OVERLAPPED:
		return "address overlaps a registered buffer";
	case TE_ERR_NOT_SUPPORTED_TRANSPORT:
		return "transport not supported";
	case TE_ERR_DNS:
		return "name resolution failed";
	case TE_ERR_SOCKET:
		return "socket error";
	case TE_ERR_MALFORMED_JSON:
		return "malformed JSON";
	case TE_ERR_REJECT_HANDSHAKE:
		return "handshake rejected";
	case TE_ERR_METADATA:
		return "metadata store error";
	case TE_ERR_ENDPOINT:
		return "endpoint error (transfer failed)";
	case TE_ERR_CONTEXT:
		return "context error";
	case TE_ERR_MEMORY:
		return "out of memory";
	case TE_ERR_NOT_IMPLEMENTED:
		return "not implemented";
	case TE_ERR_NOT_FOUND:
		return "not found";
	case TE_ERR_OUT_OF_RANGE:
		return "remote range outside every registered buffer";
	case TE_ERR_TIMEOUT:
		return "timed out";
	case TE_ERR_BAD_BATCH:
		return "unknown batch id";
	case TE_ERR_UNREACHABLE:
		return "metadata store or peer unreachable";
	default:
		return "unknown error";
	}
}

const char *te_status_name(int status)
{
	static const char *const names[] = {"WAITING",   "PENDING", "INVALID", "CANCELED",
	                                    "COMPLETED", "TIMEOUT", "FAILED"};
	if (status < 0 || status >= (int)PD_ARRAY_SIZE(names))
		return "UNKNOWN";
	return names[status];
}
