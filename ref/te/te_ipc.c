/* SPDX-License-Identifier: Apache-2.0 */
/* te_ipc: the "nvlink_intra" transport (Mooncake's intra-node GPU transport) — cuda:N buffers
 * published with their CUDA IPC handle, opened by peers on the same host and copied device to
 * device on streams, completion through events; host memory and other hosts take TCP staging. */
#include "te_internal.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"
#include "te_gpu.h"

#define IPC_MAX_DEV     64
#define IPC_STREAMS     2           /* per device; consecutive groups alternate */
#define IPC_GROUP_TASKS 64          /* most tasks behind one event (PDKV_TE_IPC_GROUP) */
#define IPC_GROUP_BYTES (64u << 20) /* bytes behind one event */

enum { PATH_IPC = 1, PATH_TCP = 2 };

struct ipc_map { /* a peer's buffer as opened here */
	char seg[TE_NAME_MAX];
	uint64_t addr, len;
	char shm[TE_SHM_NAME_MAX];
	char *base; /* its start in this process; NULL = could not be opened (TCP) */
	int dev;    /* its device as this process numbers them */
};

struct ipc_peer { /* the path one segment got, decided once per host id it published */
	char name[TE_NAME_MAX];
	char host_id[64];
	int path;
};

struct ipc_done { /* one event behind which n tasks end */
	void *ev;
	int dev;
	size_t n;
	uint64_t t_submit, t_post; /* PDKV_TE_IPC_PHASES: the submit's start, the post (ns) */
	struct te_task *t[IPC_GROUP_TASKS];
	size_t len[IPC_GROUP_TASKS];
};

struct te_transport {
	struct te_engine *eng;
	struct te_transport *tcp; /* the fallback, with the engine's data port */
	char host_id[64];
	int hint_dev; /* current device for opening handles: the first cuda buffer's */
	bool hint_set;
	pthread_mutex_t mu; /* peers, maps, peer_ok */
	struct ipc_peer *peers;
	size_t npeers;
	struct ipc_map *maps;
	size_t nmaps;
	signed char peer_ok[IPC_MAX_DEV][IPC_MAX_DEV]; /* 0 unknown, 1 enabled, -1 not */
	/* copies: streams made on first use; completion thread over a FIFO of groups */
	pthread_mutex_t smu;
	void *streams[IPC_MAX_DEV][IPC_STREAMS];
	atomic_uint rr;
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	struct ipc_done **q;
	size_t qhead, qn, qcap;
	void **evfree[IPC_MAX_DEV];
	size_t nevfree[IPC_MAX_DEV], evcap[IPC_MAX_DEV];
	bool stop, th_started;
	pthread_t th;
	size_t group; /* copies behind one event and one cudaMemcpyBatchAsync */
	bool phases;  /* PDKV_TE_IPC_PHASES=1: a log line per submit */
};

/* One submit's moments for PDKV_TE_IPC_PHASES=1 (ns). */
struct ipc_phases {
	uint64_t queue, event, post;
	unsigned groups;
};

/* ---------------------------------------------------------------- host identity */
/* The kernel's boot id: shared by every process (and container) of one running host. Tests
 * play "another host" with PDKV_IPC_HOST_ID. */
static void local_host_id(char *out, size_t len)
{
	const char *e = pd_env_str("PDKV_IPC_HOST_ID");
	char *txt = NULL;

	if (e && *e) {
		snprintf(out, len, "%s", e);
		return;
	}
	if (!pd_read_file("/proc/sys/kernel/random/boot_id", 256, &txt, NULL)) {
		txt[strcspn(txt, " \n")] = '\0';
		snprintf(out, len, "%s", txt);
		free(txt);
		if (*out)
			return;
	}
	if (gethostname(out, len - 1))
		snprintf(out, len, "unknown");
}

/* A peer that published no host id (Mooncake's own descriptors): same host when its rpc
 * address is one of this host's. */
static bool host_is_local(const char *host)
{
	struct ifaddrs *ifa = NULL;
	unsigned char want[16], have[16];
	bool v6 = strchr(host, ':') != NULL, found = false;
	char name[256] = "";

	if (!strcmp(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "::1"))
		return true;
	if (inet_pton(v6 ? AF_INET6 : AF_INET, host, want) != 1)
		return !gethostname(name, sizeof(name) - 1) && !strcmp(name, host);
	if (getifaddrs(&ifa))
		return false;
	for (struct ifaddrs *i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (!v6 && i->ifa_addr->sa_family == AF_INET) {
			memcpy(have, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
			found = !memcmp(have, want, 4);
		} else if (v6 && i->ifa_addr->sa_family == AF_INET6) {
			memcpy(have, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
			found = !memcmp(have, want, 16);
		}
	}
	freeifaddrs(ifa);
	return found;
}

/* The path requests to segment d take; decided and logged once per (segment, host id).
 * Caller holds mu. */
static int peer_path_locked(struct te_transport *tp, const struct te_segment_desc *d)
{
	struct ipc_peer *p = NULL, *np;
	char host[256] = "", why[400];
	int rpc_port, path;

	for (size_t i = 0; i < tp->npeers; i++)
		if (!strcmp(tp->peers[i].name, d->name)) {
			p = &tp->peers[i];
			if (!strcmp(p->host_id, d->host_id))
				return p->path;
		}
	if (d->host_id[0]) {
		path = strcmp(d->host_id, tp->host_id) ? PATH_TCP : PATH_IPC;
		snprintf(why, sizeof(why), "%s boot id %s",
		         path == PATH_IPC ? "same" : "other host's", d->host_id);
	} else if (te_engine_peer_rpc(tp->eng, d->name, host, sizeof(host), &rpc_port)) {
		path = PATH_TCP;
		snprintf(why, sizeof(why), "no host id and no rpc address published");
	} else {
		path = host_is_local(host) ? PATH_IPC : PATH_TCP;
		snprintf(why, sizeof(why), "no host id published; rpc address %s is %s", host,
		         path == PATH_IPC ? "this host's" : "not an address of this host");
	}
	if (!p) {
		np = realloc(tp->peers, (tp->npeers + 1) * sizeof(*np));
		if (!np)
			return path;
		tp->peers = np;
		p = &tp->peers[tp->npeers++];
		snprintf(p->name, sizeof(p->name), "%s", d->name);
	}
	snprintf(p->host_id, sizeof(p->host_id), "%s", d->host_id);
	p->path = path;
	pd_info("te: nvlink_intra: segment %s gets %s (%s)", d->name,
	        path == PATH_IPC ? "CUDA IPC device-to-device copies"
	                         : "the TCP staging path (another host)",
	        why);
	return path;
}

/* ---------------------------------------------------------------- remote buffers */
static int unhex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c - 'A' + 10;
}

/* The opened mapping of peer buffer b of segment seg; NULL = TCP for it. Caller holds mu. */
static struct ipc_map *map_locked(struct te_transport *tp, const char *seg,
                                  const struct te_buffer_desc *b)
{
	unsigned char h[TE_GPU_IPC_HANDLE_LEN];
	struct ipc_map *m, *nm;
	char why[256] = "";

	for (size_t i = 0; i < tp->nmaps; i++) {
		m = &tp->maps[i];
		if (m->addr == b->addr && m->len == b->length && !strcmp(m->seg, seg) &&
		    !strcmp(m->shm, b->shm_name))
			return m->base ? m : NULL;
	}
	nm = realloc(tp->maps, (tp->nmaps + 1) * sizeof(*nm));
	if (!nm)
		return NULL;
	tp->maps = nm;
	m = &tp->maps[tp->nmaps++];
	memset(m, 0, sizeof(*m));
	snprintf(m->seg, sizeof(m->seg), "%s", seg);
	m->addr = b->addr;
	m->len = b->length;
	snprintf(m->shm, sizeof(m->shm), "%s", b->shm_name);
	m->dev = -1;
	if (strlen(b->shm_name) != 2 * TE_GPU_IPC_HANDLE_LEN) {
		snprintf(why, sizeof(why), "its shm_name holds no %d-byte CUDA IPC handle",
		         TE_GPU_IPC_HANDLE_LEN);
	} else {
		for (int i = 0; i < TE_GPU_IPC_HANDLE_LEN; i++)
			h[i] = (unsigned char)(unhex(b->shm_name[2 * i]) << 4 |
			                       unhex(b->shm_name[2 * i + 1]));
		if (!te_gpu_ipc_open(tp->hint_dev, h, (void **)&m->base, &m->dev, why,
		                     sizeof(why)) &&
		    m->dev < 0) {
			snprintf(why, sizeof(why), "the opened handle is not device memory here");
			te_gpu_ipc_close(m->base);
			m->base = NULL;
		}
	}
	if (m->base && (m->dev < 0 || m->dev >= IPC_MAX_DEV)) {
		snprintf(why, sizeof(why), "its device cuda:%d is past cuda:%d", m->dev,
		         IPC_MAX_DEV - 1);
		te_gpu_ipc_close(m->base);
		m->base = NULL;
	}
	if (m->base)
		pd_info("te: nvlink_intra: segment %s buffer 0x%llx+%llu opened on cuda:%d", seg,
		        (unsigned long long)b->addr, (unsigned long long)b->length, m->dev);
	else if (b->shm_name[0])
		pd_warn("te: nvlink_intra: segment %s buffer 0x%llx: %s; it takes the TCP staging "
		        "path (a GPU that this process cannot see, CUDA_VISIBLE_DEVICES?)",
		        seg, (unsigned long long)b->addr, why);
	return m->base ? m : NULL;
}

/* ---------------------------------------------------------------- copies */
static void *stream_of(struct te_transport *tp, int dev)
{
	unsigned k = atomic_fetch_add(&tp->rr, 1) % IPC_STREAMS;
	void *s;

	pthread_mutex_lock(&tp->smu);
	if (!tp->streams[dev][k] && te_gpu_stream_new(dev, &tp->streams[dev][k]))
		tp->streams[dev][k] = NULL;
	s = tp->streams[dev][k];
	pthread_mutex_unlock(&tp->smu);
	return s;
}

static void *event_get(struct te_transport *tp, int dev)
{
	void *ev = NULL;
	pthread_mutex_lock(&tp->qmu);
	if (tp->nevfree[dev])
		ev = tp->evfree[dev][--tp->nevfree[dev]];
	pthread_mutex_unlock(&tp->qmu);
	if (!ev && te_gpu_event_new(dev, &ev))
		ev = NULL;
	return ev;
}

/* caller holds qmu */
static void event_put_locked(struct te_transport *tp, int dev, void *ev)
{
	if (tp->nevfree[dev] == tp->evcap[dev]) {
		size_t n = tp->evcap[dev] ? tp->evcap[dev] * 2 : 16;
		void **p = realloc(tp->evfree[dev], n * sizeof(*p));
		if (!p) {
			te_gpu_event_free(ev);
			return;
		}
		tp->evfree[dev] = p;
		tp->evcap[dev] = n;
	}
	tp->evfree[dev][tp->nevfree[dev]++] = ev;
}

/* The completion thread: waits on each posted group's event in turn and ends its tasks. */
static void *completer(void *arg)
{
	struct te_transport *tp = arg;

	pthread_mutex_lock(&tp->qmu);
	for (;;) {
		struct ipc_done *d;
		uint64_t t0 = 0, t1 = 0;
		bool ok;
		while (!tp->qn && !tp->stop)
			pthread_cond_wait(&tp->qcv, &tp->qmu);
		if (!tp->qn)
			break;
		d = tp->q[tp->qhead];
		tp->qhead = (tp->qhead + 1) % tp->qcap;
		tp->qn--;
		pthread_mutex_unlock(&tp->qmu);
		if (tp->phases)
			t0 = pd_now_ns();
		ok = !te_gpu_event_wait(d->ev);
		if (tp->phases)
			t1 = pd_now_ns();
		for (size_t i = 0; i < d->n; i++)
			te_task_slice_done(d->t[i], ok ? d->len[i] : 0, ok);
		if (tp->phases)
			pd_info(
			    "te: nvlink_intra completion: %zu copies, picked up %.3f ms after the "
			    "post, event %.3f ms, tasks ended %.3f ms after the submit began",
			    d->n, (double)(t0 - d->t_post) / 1e6, (double)(t1 - t0) / 1e6,
			    (double)(pd_now_ns() - d->t_submit) / 1e6);
		pthread_mutex_lock(&tp->qmu);
		event_put_locked(tp, d->dev, d->ev);
		free(d);
	}
	pthread_mutex_unlock(&tp->qmu);
	return NULL;
}

/* Hands a group whose event is recorded to the completion thread; on failure ends its tasks. */
static void group_post(struct te_transport *tp, struct ipc_done *d)
{
	bool ok = false;

	d->t_post = pd_now_ns();
	pthread_mutex_lock(&tp->qmu);
	if (tp->qn == tp->qcap) {
		size_t n = tp->qcap ? tp->qcap * 2 : 64;
		struct ipc_done **q = malloc(n * sizeof(*q));
		if (q) {
			for (size_t i = 0; i < tp->qn; i++)
				q[i] = tp->q[(tp->qhead + i) % tp->qcap];
			free(tp->q);
			tp->q = q;
			tp->qhead = 0;
			tp->qcap = n;
		}
	}
	if (tp->qn < tp->qcap) {
		tp->q[(tp->qhead + tp->qn++) % tp->qcap] = d;
		ok = true;
		pthread_cond_signal(&tp->qcv);
	}
	pthread_mutex_unlock(&tp->qmu);
	if (!ok) { /* no room to wait on it: wait here */
		bool done = !te_gpu_event_wait(d->ev);
		for (size_t i = 0; i < d->n; i++)
			te_task_slice_done(d->t[i], done ? d->len[i] : 0, done);
		te_gpu_event_free(d->ev);
		free(d);
	}
}

/* One task's copy, planned at submit. */
struct ipc_copy {
	struct te_task *t;
	char *dst, *src;
	int ddev, sdev, sdevice; /* sdevice: the stream's device */
};

/* Queues group d's copies v[0..n) on stream s: one cudaMemcpyBatchAsync where the runtime has
 * it, else (or when it refuses them) one call per copy; a copy that cannot be queued ends its
 * task failed. Returns the copies queued into d. */
static size_t queue_group(struct ipc_done *d, const struct ipc_copy *v, size_t n, int dev, void *s)
{
	void *dst[IPC_GROUP_TASKS] = {0};
	const void *src[IPC_GROUP_TASKS] = {0};
	size_t len[IPC_GROUP_TASKS] = {0};

	for (size_t i = 0; i < n; i++) {
		dst[i] = v[i].dst;
		src[i] = v[i].src;
		len[i] = v[i].t->req.length;
	}
	/* a batch between devices is left to cudaMemcpyPeerAsync, as a single copy is */
	bool same = true;
	for (size_t i = 0; i < n && same; i++)
		same = v[i].ddev < 0 || v[i].sdev < 0 || v[i].ddev == v[i].sdev;
	if (same && !te_gpu_copy_batch_async(dev, dst, src, len, n, s)) {
		for (size_t i = 0; i < n; i++) {
			d->t[d->n] = v[i].t;
			d->len[d->n++] = len[i];
		}
		return n;
	}
	for (size_t i = 0; i < n; i++) {
		if (te_gpu_copy_async(dev, dst[i], v[i].ddev, src[i], v[i].sdev, len[i], s)) {
			te_task_slice_done(v[i].t, 0, false);
			continue;
		}
		d->t[d->n] = v[i].t;
		d->len[d->n++] = len[i];
	}
	return d->n;
}

/* Queues the copies of plan v (all of stream device dev) in groups of tp->group behind one
 * event each. */
static void issue(struct te_transport *tp, struct ipc_copy *v, size_t n, struct ipc_phases *ph,
                  uint64_t t_submit)
{
	size_t i = 0;

	while (i < n) {
		int dev = v[i].sdevice;
		struct ipc_done *d = calloc(1, sizeof(*d));
		void *s = stream_of(tp, dev);
		uint64_t bytes = 0, t0 = pd_now_ns(), t1, t2;
		size_t j = i;

		/* the group: one device, at most tp->group copies and about IPC_GROUP_BYTES */
		for (; j < n && v[j].sdevice == dev && j - i < tp->group && bytes < IPC_GROUP_BYTES;
		     j++)
			bytes += v[j].t->req.length;
		if (!d || !s) { /* no memory or no stream: this group's tasks fail */
			for (; i < j; i++)
				te_task_slice_done(v[i].t, 0, false);
			free(d);
			continue;
		}
		d->dev = dev;
		d->t_submit = t_submit;
		queue_group(d, v + i, j - i, dev, s);
		i = j;
		t1 = pd_now_ns();
		ph->queue += t1 - t0;
		ph->groups++;
		if (d->n && (d->ev = event_get(tp, dev)) && !te_gpu_event_record(d->ev, s)) {
			t2 = pd_now_ns();
			ph->event += t2 - t1;
			group_post(tp, d);
			ph->post += pd_now_ns() - t2;
			continue;
		}
		/* no event: the stream itself is the completion */
		if (d->n) {
			bool ok = !te_gpu_stream_sync(s);
			for (size_t k = 0; k < d->n; k++)
				te_task_slice_done(d->t[k], ok ? d->len[k] : 0, ok);
		}
		te_gpu_event_free(d->ev);
		free(d);
	}
}

/* Plans t as a device copy (true) or leaves it to TCP (false). Caller holds mu. */
static bool plan_locked(struct te_transport *tp, struct te_task *t, struct ipc_copy *c)
{
	uint64_t ra = t->req.target_offset;
	int ldev = t->src_gpu - 1, rdev, rgpu = 0;
	char *remote;

	if (t->req.target_id == TE_LOCAL_SEGMENT) {
		if (!te_engine_local_range_gpu(tp->eng, ra, t->req.length, &rgpu) ||
		    (!rgpu && ldev < 0))
			return false; /* host to host: the TCP path's loopback */
		remote = (char *)(uintptr_t)ra;
		rdev = rgpu - 1;
	} else {
		const struct te_buffer_desc *b = te_desc_find_range(t->peer, ra, t->req.length);
		struct ipc_map *m;
		if (!b || !b->shm_name[0] || peer_path_locked(tp, t->peer) != PATH_IPC ||
		    !(m = map_locked(tp, t->peer->name, b)))
			return false;
		remote = m->base + (ra - b->addr);
		rdev = m->dev;
	}
	c->t = t;
	c->dst = t->req.opcode == TE_WRITE ? remote : t->req.source;
	c->src = t->req.opcode == TE_WRITE ? t->req.source : remote;
	c->ddev = t->req.opcode == TE_WRITE ? rdev : ldev;
	c->sdev = t->req.opcode == TE_WRITE ? ldev : rdev;
	c->sdevice = ldev >= 0 ? ldev : rdev;
	if (ldev >= 0 && rdev >= 0 && ldev != rdev && ldev < IPC_MAX_DEV &&
	    !tp->peer_ok[ldev][rdev])
		tp->peer_ok[ldev][rdev] = te_gpu_enable_peer(ldev, rdev) ? 1 : -1;
	return c->sdevice >= 0 && c->sdevice < IPC_MAX_DEV;
}

static int cmp_copy(const void *a, const void *b)
{
	const struct ipc_copy *x = a, *y = b;
	return (x->sdevice > y->sdevice) - (x->sdevice < y->sdevice);
}

static int ipc_submit(struct te_transport *tp, struct te_task *const *tasks, size_t n)
{
	struct ipc_copy *cv = malloc(n * sizeof(*cv));
	struct te_task **tv = malloc(n * sizeof(*tv));
	struct ipc_phases ph = {0};
	uint64_t t0 = pd_now_ns(), t1, t2;
	size_t nc = 0, nt = 0;
	int ret = 0;

	if (!cv || !tv) {
		ret = TE_ERR_MEMORY;
		goto out;
	}
	pthread_mutex_lock(&tp->mu);
	for (size_t i = 0; i < n; i++)
		if (plan_locked(tp, tasks[i], &cv[nc]))
			nc++;
		else
			tv[nt++] = tasks[i];
	pthread_mutex_unlock(&tp->mu);
	t1 = pd_now_ns();
	/* TCP first: its submit fails only with nothing started, and no copy is queued yet */
	if (nt && (ret = te_tcp_transport_ops.submit(tp->tcp, tv, nt)))
		goto out;
	for (size_t i = 0; i < nc; i++)
		atomic_store(&cv[i].t->slice_count, 1);
	qsort(cv, nc, sizeof(*cv), cmp_copy);
	t2 = pd_now_ns();
	issue(tp, cv, nc, &ph, t0);
	if (tp->phases)
		pd_info(
		    "te: nvlink_intra submit phases: %zu copies, %zu to TCP: plan %.3f tcp %.3f "
		    "queue %.3f (%u groups) event %.3f post %.3f = %.3f ms",
		    nc, nt, (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6,
		    (double)ph.queue / 1e6, ph.groups, (double)ph.event / 1e6,
		    (double)ph.post / 1e6, (double)(pd_now_ns() - t0) / 1e6);
out:
	free(cv);
	free(tv);
	return ret;
}

/* ---------------------------------------------------------------- ops */
static void ipc_destroy(struct te_transport *tp)
{
	if (!tp)
		return;
	if (tp->th_started) {
		pthread_mutex_lock(&tp->qmu);
		tp->stop = true;
		pthread_cond_signal(&tp->qcv);
		pthread_mutex_unlock(&tp->qmu);
		pthread_join(tp->th, NULL);
	}
	if (tp->tcp)
		te_tcp_transport_ops.destroy(tp->tcp);
	for (int d = 0; d < IPC_MAX_DEV; d++) {
		for (int k = 0; k < IPC_STREAMS; k++)
			te_gpu_stream_free(d, tp->streams[d][k]);
		for (size_t i = 0; i < tp->nevfree[d]; i++)
			te_gpu_event_free(tp->evfree[d][i]);
		free(tp->evfree[d]);
	}
	for (size_t i = 0; i < tp->nmaps; i++)
		te_gpu_ipc_close(tp->maps[i].base);
	free(tp->maps);
	free(tp->peers);
	free(tp->q);
	pthread_mutex_destroy(&tp->mu);
	pthread_mutex_destroy(&tp->smu);
	pthread_mutex_destroy(&tp->qmu);
	pthread_cond_destroy(&tp->qcv);
	free(tp);
}

static int ipc_install(struct te_engine *eng, struct te_transport **out)
{
	struct te_transport *tp = calloc(1, sizeof(*tp));
	char why[256] = "";
	int ret;

	*out = NULL;
	if (!tp)
		return TE_ERR_MEMORY;
	tp->eng = eng;
	pthread_mutex_init(&tp->mu, NULL);
	pthread_mutex_init(&tp->smu, NULL);
	pthread_mutex_init(&tp->qmu, NULL);
	pthread_cond_init(&tp->qcv, NULL);
	local_host_id(tp->host_id, sizeof(tp->host_id));
	int64_t group; /* the row's default (16) when unset or bad */
	pd_env_int("PDKV_TE_IPC_GROUP", &group);
	tp->group = (size_t)group;
	pd_env_bool("PDKV_TE_IPC_PHASES", &tp->phases);
	if (te_gpu_device_count(why, sizeof(why)) <= 0) {
		pd_err("te: nvlink_intra needs a CUDA device: %s", why);
		ret = TE_ERR_DEVICE_NOT_FOUND;
		goto fail;
	}
	ret = te_tcp_transport_ops.install(eng, &tp->tcp);
	if (ret) {
		tp->tcp = NULL;
		goto fail;
	}
	if (pthread_create(&tp->th, NULL, completer, tp)) {
		ret = TE_ERR_MEMORY;
		goto fail;
	}
	tp->th_started = true;
	pd_dbg("te: nvlink_intra up (host id %s)", tp->host_id);
	*out = tp;
	return 0;
fail:
	ipc_destroy(tp);
	return ret;
}

static void to_hex(const unsigned char *h, size_t n, char *out)
{
	static const char digits[] = "0123456789ABCDEF"; /* Mooncake writes upper case */
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[h[i] >> 4];
		out[2 * i + 1] = digits[h[i] & 15];
	}
	out[2 * n] = '\0';
}

static int ipc_register(struct te_transport *tp, void *addr, size_t len, const char *location,
                        struct te_buffer_desc *b)
{
	unsigned char h[TE_GPU_IPC_HANDLE_LEN];
	char why[256] = "";
	size_t off = 0;
	int dev = te_gpu_ptr_device(addr);

	(void)location;
	b->nkeys = 0;
	b->shm_name[0] = '\0';
	if (dev < 0)
		return 0; /* host memory: the TCP path reaches it */
	if (te_gpu_ipc_export(addr, h, &off, why, sizeof(why))) {
		pd_warn(
		    "te: nvlink_intra: %p+%zu gets no CUDA IPC handle (%s); peers reach it over "
		    "TCP",
		    addr, len, why);
		return 0;
	}
	if (off) { /* the handle opens the allocation's start; the descriptor has no offset */
		pd_warn(
		    "te: nvlink_intra: %p+%zu starts %zu bytes into its cudaMalloc allocation; "
		    "register the allocation's start for CUDA IPC (peers reach this one over TCP)",
		    addr, len, off);
		return 0;
	}
	to_hex(h, sizeof(h), b->shm_name);
	pthread_mutex_lock(&tp->mu);
	if (!tp->hint_set)
		tp->hint_dev = dev;
	tp->hint_set = true;
	pthread_mutex_unlock(&tp->mu);
	return 0;
}

static int ipc_unregister(struct te_transport *tp, void *addr, size_t len)
{
	(void)tp;
	(void)addr;
	(void)len;
	return 0;
}

static int ipc_fill_desc(struct te_transport *tp, struct te_segment_desc *d)
{
	int ret = te_tcp_transport_ops.fill_desc(tp->tcp, d);
	snprintf(d->host_id, sizeof(d->host_id), "%s", tp->host_id);
	return ret;
}

static const char *ipc_peer_path(struct te_transport *tp, const struct te_segment_desc *d)
{
	int path;
	pthread_mutex_lock(&tp->mu);
	path = peer_path_locked(tp, d);
	pthread_mutex_unlock(&tp->mu);
	return path == PATH_IPC ? "cuda-ipc" : "tcp";
}

const struct te_transport_ops te_ipc_transport_ops = {
    .name = "nvlink_intra",
    .install = ipc_install,
    .register_mem = ipc_register,
    .unregister_mem = ipc_unregister,
    .fill_desc = ipc_fill_desc,
    .submit = ipc_submit,
    .on_connection = NULL,
    .destroy = ipc_destroy,
    .peer_path = ipc_peer_path,
};
