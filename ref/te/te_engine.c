/* SPDX-License-Identifier: Apache-2.0 */
/* te_engine: engine lifecycle — RPC endpoint selection (docs/engine.md), transport choice, the
 * handshake server, local registration, rpc_meta/descriptor publishing and key cleanup. */
#include "te_engine_priv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_meta_scheme.h"
#include "pd_log.h"
#include "pd_util.h"
#include "te_gpu.h"

/* Linked in only when a binary pulls lib terdma in; a NULL address = "rdma not built in". */
extern const struct te_transport_ops te_rdma_transport_ops __attribute__((weak));

static void cleanup_track(struct te_engine *eng, bool add);

/* ---------------------------------------------------------------- RPC endpoint */
/* Port rows (1024..65535, a bad value warns and reads as the default): a, else when a is unset
 * its older spelling b (Mooncake's MC_MIN_PRC_PORT). */
static int env_port(const char *a, const char *b)
{
	int64_t v;

	pd_env_int_or(a, b, &v);
	return (int)v;
}

static int bind_port(const char *host, int port)
{
	struct sockaddr_storage ss = {0};
	socklen_t sl;
	int one = 1, fd;

	if (host && strchr(host, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return -EINVAL;
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		if (host && inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return -EINVAL;
		sl = sizeof(*s4);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl)) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* Binds rpc_port (and rpc_port+1 for tcp data) and keeps both fds for the listeners. */
static int choose_endpoint(struct te_engine *eng, const char *given_name, bool want_data)
{
	const char *bind_host = pd_env_str("MC_TCP_BIND_ADDRESS"); /* NULL when unset or empty */
	int fd = -1, dfd = -1;

	if (pd_env_set("MC_LEGACY_RPC_PORT_BINDING")) {
		char host[128];
		int port;
		if (pd_split_hostport(given_name, host, sizeof(host), &port)) {
			snprintf(host, sizeof(host), "%s", given_name);
			port = env_port("MC_HANDSHAKE_PORT", NULL);
		}
		snprintf(eng->local_ip, sizeof(eng->local_ip), "%s", host);
		fd = bind_port(bind_host, port);
		if (fd >= 0 && want_data && (dfd = bind_port(bind_host, port + 1)) < 0) {
			close(fd);
			fd = dfd;
		}
		if (fd < 0) {
			pd_err(
			    "te: MC_LEGACY_RPC_PORT_BINDING: cannot bind port %d%s of \"%s\": %s",
			    port, want_data ? " and the next one" : "", given_name, strerror(-fd));
			return TE_ERR_SOCKET;
		}
		eng->rpc_port = port;
	} else {
		int lo = env_port("MC_MIN_RPC_PORT", "MC_MIN_PRC_PORT");
		int hi = env_port("MC_MAX_RPC_PORT", "MC_MAX_PRC_PORT");
		unsigned seed = (unsigned)(pd_now_ns() ^ ((uint64_t)getpid() << 16));

		if (hi < lo + (want_data ? 1 : 0)) {
			pd_err("te: RPC port range %d..%d is empty", lo, hi);
			return TE_ERR_INVALID_ARGUMENT;
		}
		te_net_local_ip(eng->local_ip, sizeof(eng->local_ip));
		for (int tries = 0; tries < 500; tries++) {
			int span = hi - lo + 1 - (want_data ? 1 : 0);
			int port = lo + (int)(rand_r(&seed) % (unsigned)span);
			fd = bind_port(bind_host, port);
			if (fd < 0)
				continue;
			if (want_data && (dfd = bind_port(bind_host, port + 1)) < 0) {
				close(fd);
				fd = -1;
				continue;
			}
			eng->rpc_port = port;
			break;
		}
		if (fd < 0) {
			pd_err("te: no free RPC port%s in %d..%d after 500 tries",
			       want_data ? " pair" : "", lo, hi);
			return TE_ERR_SOCKET;
		}
	}
	eng->rpc_fd = fd;
	eng->data_fd = dfd;
	return 0;
}

/* ---------------------------------------------------------------- transport choice */
static bool rdma_device_present(const char *filter)
{
	struct ibv_device **l;
	int n = 0;
	bool found = false;

	l = ibv_get_device_list(&n);
	for (int i = 0; l && i < n && !found; i++) {
		const char *nm = ibv_get_device_name(l[i]);
		if (!filter || !*filter) {
			found = true;
			continue;
		}
		for (const char *p = filter; *p;) {
			size_t k = strcspn(p, ",");
			if (k == strlen(nm) && !strncmp(p, nm, k))
				found = true;
			p += k;
			if (*p == ',')
				p++;
		}
	}
	if (l)
		ibv_free_device_list(l);
	return found;
}

static int choose_transport(struct te_engine *eng, const struct te_engine_opts *o)
{
	const struct te_transport_ops *rdma = &te_rdma_transport_ops;
	const char *p = o->protocol;

	if (p && *p && strcmp(p, "tcp") && strcmp(p, "rdma") && strcmp(p, "nvlink_intra")) {
		pd_err("te: protocol \"%s\" is not supported (expected tcp, rdma or nvlink_intra)",
		       p);
		return TE_ERR_NOT_SUPPORTED_TRANSPORT;
	}
	/* Mooncake's intra-node GPU transport: asked for by name, or, with no protocol given, by
	 * MC_INTRANODE_NVLINK being set (Mooncake's auto-discovery checks it first) */
	if ((p && !strcmp(p, "nvlink_intra")) ||
	    ((!p || !*p) && pd_env_set("MC_INTRANODE_NVLINK"))) {
		eng->ops = &te_ipc_transport_ops;
	} else if (p && !strcmp(p, "rdma")) {
		if (!rdma) {
			pd_err("te: protocol rdma requested but this binary has no RDMA transport");
			return TE_ERR_NOT_SUPPORTED_TRANSPORT;
		}
		eng->ops = rdma;
	} else if (p && !strcmp(p, "tcp")) {
		eng->ops = &te_tcp_transport_ops;
	} else if (rdma && !pd_env_set("MC_FORCE_TCP") && rdma_device_present(o->device_names)) {
		eng->ops = rdma;
	} else {
		eng->ops = &te_tcp_transport_ops;
	}
	return 0;
}

/* ---------------------------------------------------------------- publishing */
/* A refused rpc_meta PUT with the key already there (pdkv-metaserver and Mooncake's HTTP servers
 * reject a second one): the start fails, and the key goes, as Mooncake's failed init removes it
 * in freeEngine, so that the next start under this name succeeds. */
static void drop_refused_rpc_meta(struct te_engine *eng, const char *key, int err)
{
	char *old = NULL;

	if (err == TE_ERR_UNREACHABLE || te_meta_get(eng->meta, key, &old))
		return;
	pd_err("te: %s already exists in %s (%.120s): another engine runs under the name "
	       "\"%s\", or one did not exit cleanly. Removing the stale key, as Mooncake does "
	       "when its start fails this way; start the engine again.",
	       key, eng->conn, old, eng->name);
	free(old);
	if (te_meta_del(eng->meta, key))
		pd_err("te: removing the stale %s failed too; delete it from the store by hand",
		       key);
}

static int publish_rpc_meta(struct te_engine *eng)
{
	char *key = te_meta_rpc_key(eng->name), *val;
	int ret = TE_ERR_MEMORY;

	eng->rpc_version = te_desc_next_version();
	val = te_rpcmeta_encode(eng->local_ip, eng->rpc_port, eng->rpc_version);

	if (key && val) {
		ret = te_meta_put(eng->meta, key, val);
		if (ret) {
			pd_err("te: cannot publish %s to %s: %s", key, eng->conn, te_strerror(ret));
			drop_refused_rpc_meta(eng, key, ret);
		} else {
			eng->rpc_published = true;
		}
	}
	free(key);
	free(val);
	return ret;
}

/* Rebuilds the local descriptor from the registered buffers and publishes it. */
static int publish_segment(struct te_engine *eng)
{
	struct te_segment_desc *d = calloc(1, sizeof(*d));
	char *json = NULL, *key = NULL;
	int ret = TE_ERR_MEMORY;

	if (!d)
		return TE_ERR_MEMORY;
	snprintf(d->name, sizeof(d->name), "%s", eng->name);
	snprintf(d->protocol, sizeof(d->protocol), "%s", eng->ops->name);
	te_desc_timestamp(d->timestamp);
	/* Mooncake #3837: every store publish bumps the version; the P2P handshake sends 0 */
	d->metadata_version = eng->p2p ? 0 : te_desc_next_version();
	pthread_rwlock_rdlock(&eng->buf_lock);
	d->buffers = calloc(eng->nbufs ? eng->nbufs : 1, sizeof(*d->buffers));
	if (d->buffers) {
		for (size_t i = 0; i < eng->nbufs; i++)
			d->buffers[i] = eng->bufs[i].desc;
		d->nbuffers = (int)eng->nbufs;
	}
	pthread_rwlock_unlock(&eng->buf_lock);
	if (!d->buffers)
		goto fail;
	if (eng->tp && eng->ops->fill_desc && (ret = eng->ops->fill_desc(eng->tp, d)))
		goto fail;
	json = te_desc_encode(d);
	if (!json) {
		ret = TE_ERR_MEMORY;
		goto fail;
	}
	pthread_mutex_lock(&eng->pub_lock);
	ret = 0;
	if (eng->meta) {
		key = te_meta_segment_key(eng->name);
		ret = key ? te_meta_put(eng->meta, key, json) : TE_ERR_MEMORY;
		if (ret)
			pd_err("te: cannot publish segment %s to %s: %s", eng->name, eng->conn,
			       te_strerror(ret));
		else
			eng->seg_published = true;
	}
	if (!ret) {
		pthread_mutex_lock(&eng->seg_lock);
		ret = te_engine_keep_desc(eng, d);
		pthread_mutex_unlock(&eng->seg_lock);
	}
	if (!ret) {
		eng->local_desc = d;
		free(eng->local_json);
		eng->local_json = json;
		d = NULL;
		json = NULL;
	}
	pthread_mutex_unlock(&eng->pub_lock);
fail:
	free(key);
	free(json);
	te_desc_free(d);
	return ret;
}

/* Deletes key k (malloc'd, freed here; NULL: nothing deleted) and clears *published; 0 also
 * when the key was gone already. */
static int unpublish(struct te_engine *eng, char *k, bool *published)
{
	int r = k ? te_meta_del(eng->meta, k) : 0;

	free(k);
	*published = false;
	return r == TE_ERR_NOT_FOUND ? 0 : r;
}

/* rpc_meta first, then the segment: Mooncake's freeEngine removes rpc_meta, its transport's
 * destructor the segment afterwards. */
int te_engine_remove_keys(struct te_engine *eng)
{
	int ret = 0, r;

	if (!eng)
		return TE_ERR_INVALID_ARGUMENT;
	pthread_mutex_lock(&eng->pub_lock);
	if (eng->meta && eng->rpc_published &&
	    (r = unpublish(eng, te_meta_rpc_key(eng->name), &eng->rpc_published)))
		ret = r;
	if (eng->meta && eng->seg_published &&
	    (r = unpublish(eng, te_meta_segment_key(eng->name), &eng->seg_published)))
		ret = r;
	pthread_mutex_unlock(&eng->pub_lock);
	if (ret)
		pd_warn("te: removing the keys of %s from %s failed: %s", eng->name, eng->conn,
		        te_strerror(ret));
	return ret;
}

/* ---------------------------------------------------------------- handshake dispatch */
static char *hs_dispatch(void *ctx, int type, const char *json, size_t len)
{
	struct te_engine *eng = ctx;

	switch (type) {
	case TE_HS_METADATA:
		return te_engine_local_desc_json(eng);
	case TE_HS_CONNECTION:
	case TE_HS_LEGACY:
		if (eng->ops->on_connection)
			return eng->ops->on_connection(eng->tp, json, len);
		return NULL;
	default: /* Notify / Probe: acknowledged, nothing to do for pdkv */
		return strdup("{}");
	}
}

/* ---------------------------------------------------------------- create / destroy */
int te_engine_create(const struct te_engine_opts *o, struct te_engine **out)
{
	struct te_engine *eng;
	char errbuf[256] = "";
	int64_t v;
	int ret;

	if (!out)
		return TE_ERR_INVALID_ARGUMENT;
	*out = NULL;
	if (!o || !o->metadata_conn || !*o->metadata_conn || !o->local_server_name ||
	    !*o->local_server_name || strlen(o->local_server_name) >= TE_NAME_MAX - 8) {
		pd_err("te: engine needs a metadata connection string and a local server name "
		       "(under %d chars)",
		       TE_NAME_MAX - 8);
		return TE_ERR_INVALID_ARGUMENT;
	}
	eng = calloc(1, sizeof(*eng));
	if (!eng)
		return TE_ERR_MEMORY;
	eng->rpc_fd = eng->data_fd = -1;
	pthread_rwlock_init(&eng->buf_lock, NULL);
	pthread_mutex_init(&eng->pub_lock, NULL);
	pthread_mutex_init(&eng->seg_lock, NULL);
	snprintf(eng->conn, sizeof(eng->conn), "%s", o->metadata_conn);
	snprintf(eng->name, sizeof(eng->name), "%s", o->local_server_name);
	if (o->device_names)
		snprintf(eng->device_names, sizeof(eng->device_names), "%s", o->device_names);
	if (pd_env_int("MC_SLICE_TIMEOUT", &v) == 1) /* 1..65535 s; unset: none */
		eng->slice_timeout_s = (int)v;
	eng->disable_metacache = pd_env_set("MC_DISABLE_METACACHE");

	ret = te_batch_table_create(&eng->batches);
	if (ret)
		goto fail;
	eng->p2p = !strcmp(o->metadata_conn, PD_META_P2P);
	if (!eng->p2p) {
		ret = te_meta_open(o->metadata_conn, &eng->meta, errbuf, sizeof(errbuf));
		if (ret) {
			pd_err("te: metadata \"%s\": %s", o->metadata_conn,
			       *errbuf ? errbuf : te_strerror(ret));
			goto fail;
		}
	}
	ret = choose_transport(eng, o);
	if (ret)
		goto fail;
	/* nvlink_intra keeps a TCP data port: its fallback for host memory and other hosts */
	ret = choose_endpoint(eng, o->local_server_name, eng->ops != &te_rdma_transport_ops);
	if (ret)
		goto fail;
	if (eng->p2p)
		snprintf(eng->name, sizeof(eng->name), "%s:%d", eng->local_ip, eng->rpc_port);
	ret = eng->ops->install(eng, &eng->tp);
	if (ret) {
		pd_err("te: installing the %s transport failed: %s", eng->ops->name,
		       te_strerror(ret));
		eng->tp = NULL;
		goto fail;
	}
	/* P2P: the descriptor exists before the handshake server answers Metadata requests.
	 * A store: rpc_meta before the segment key (as Mooncake's init), so no peer sees a
	 * segment without its address. */
	if (!eng->meta && (ret = publish_segment(eng)))
		goto fail;
	ret = te_hs_server_start(eng->rpc_fd, eng->rpc_port, hs_dispatch, eng, &eng->hs);
	eng->rpc_fd = -1; /* owned by the server (or closed by it on failure) */
	if (ret)
		goto fail;
	if (eng->meta && ((ret = publish_rpc_meta(eng)) || (ret = publish_segment(eng))))
		goto fail;
	te_keeper_start(eng);
	cleanup_track(eng, true);
	pd_dbg("te: engine %s up (%s, rpc %s:%d, metadata %s)", eng->name, eng->ops->name,
	       eng->local_ip, eng->rpc_port, eng->conn);
	*out = eng;
	return 0;
fail:
	te_engine_destroy(eng);
	return ret;
}

void te_engine_destroy(struct te_engine *eng)
{
	if (!eng)
		return;
	cleanup_track(eng, false);
	te_keeper_stop(eng);
	te_engine_remove_keys(eng);
	te_hs_server_stop(eng->hs);
	if (eng->tp)
		eng->ops->destroy(eng->tp);
	te_batch_table_destroy(eng->batches);
	if (eng->rpc_fd >= 0)
		close(eng->rpc_fd);
	if (eng->data_fd >= 0)
		close(eng->data_fd);
	te_engine_free_segments(eng);
	free(eng->local_json);
	free(eng->bufs);
	if (eng->meta)
		te_meta_close(eng->meta);
	pthread_rwlock_destroy(&eng->buf_lock);
	pthread_mutex_destroy(&eng->pub_lock);
	pthread_mutex_destroy(&eng->seg_lock);
	free(eng);
}

/* ---------------------------------------------------------------- registration */
/* "cuda:N": CUDA must be loadable, N below the device count and addr device memory of N.
 * "*": device memory is recognised when the process already uses CUDA (Mooncake classifies "*"
 * with cudaPointerGetAttributes too); the published name stays "*". */
static int check_location(const char *location, void *addr, size_t len, int *gpu)
{
	char why[256] = "";
	int dev, ret = te_gpu_parse_location(location, &dev);

	*gpu = 0;
	if (!strcmp(location, "*") && (dev = te_gpu_probe(addr)) >= 0)
		ret = 1;
	if (ret < 0) {
		pd_err("te: register %p+%zu: location \"%s\" is malformed (expected cuda:N, "
		       "cpu:N or *)",
		       addr, len, location);
		return ret;
	}
	if (ret == 0)
		return 0;
	ret = te_gpu_check_buffer(addr, len, dev, why, sizeof(why));
	if (ret) {
		pd_err("te: register %p+%zu at location \"%s\": %s", addr, len, location, why);
		return ret;
	}
	*gpu = dev + 1;
	return 0;
}

int te_register(struct te_engine *eng, void *addr, size_t len, const char *location)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	struct te_local_buf nb = {0};
	size_t i;
	int ret;

	if (!eng || !addr || !len || a + len < a) {
		pd_err("te: register %p+%zu: need a non-NULL address and a non-zero length", addr,
		       len);
		return TE_ERR_INVALID_ARGUMENT;
	}
	if (!location || !*location)
		location = "*";
	ret = check_location(location, addr, len, &nb.gpu);
	if (ret)
		return ret;
	nb.addr = a;
	nb.len = len;
	nb.desc.addr = a;
	nb.desc.length = len;
	snprintf(nb.desc.name, sizeof(nb.desc.name), "%s", location);

	pthread_rwlock_wrlock(&eng->buf_lock);
	i = te_local_buf_upper(eng, a);
	if ((i > 0 && eng->bufs[i - 1].addr + eng->bufs[i - 1].len > a) ||
	    (i < eng->nbufs && eng->bufs[i].addr < a + len)) {
		pthread_rwlock_unlock(&eng->buf_lock);
		pd_err("te: register %p+%zu overlaps an already registered buffer", addr, len);
		return TE_ERR_ADDRESS_OVERLAPPED;
	}
	if (eng->nbufs == eng->bufcap) {
		size_t n = eng->bufcap ? eng->bufcap * 2 : 8;
		struct te_local_buf *p = realloc(eng->bufs, n * sizeof(*p));
		if (!p) {
			pthread_rwlock_unlock(&eng->buf_lock);
			return TE_ERR_MEMORY;
		}
		eng->bufs = p;
		eng->bufcap = n;
	}
	ret = eng->ops->register_mem
	          ? eng->ops->register_mem(eng->tp, addr, len, location, &nb.desc)
	          : 0;
	if (ret) {
		pthread_rwlock_unlock(&eng->buf_lock);
		pd_err("te: %s transport refused to register %p+%zu: %s", eng->ops->name, addr, len,
		       te_strerror(ret));
		return ret;
	}
	memmove(&eng->bufs[i + 1], &eng->bufs[i], (eng->nbufs - i) * sizeof(*eng->bufs));
	eng->bufs[i] = nb;
	eng->nbufs++;
	pthread_rwlock_unlock(&eng->buf_lock);
	return publish_segment(eng);
}

int te_unregister(struct te_engine *eng, void *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	size_t i, len;

	if (!eng)
		return TE_ERR_INVALID_ARGUMENT;
	pthread_rwlock_wrlock(&eng->buf_lock);
	i = te_local_buf_upper(eng, a);
	if (i == 0 || eng->bufs[i - 1].addr != a) {
		pthread_rwlock_unlock(&eng->buf_lock);
		pd_err("te: unregister %p: not the start of a registered buffer", addr);
		return TE_ERR_ADDRESS_NOT_REGISTERED;
	}
	i--;
	len = eng->bufs[i].len;
	memmove(&eng->bufs[i], &eng->bufs[i + 1], (eng->nbufs - i - 1) * sizeof(*eng->bufs));
	eng->nbufs--;
	pthread_rwlock_unlock(&eng->buf_lock);
	if (eng->ops->unregister_mem)
		eng->ops->unregister_mem(eng->tp, addr, len);
	return publish_segment(eng);
}

/* ---------------------------------------------------------------- signal / exit cleanup */
#define CLEANUP_MAX 32
static pthread_mutex_t g_cl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct te_engine *g_cl_engs[CLEANUP_MAX];
static bool g_cl_atexit, g_cl_sig_installed;
static int g_cl_pipe[2] = {-1, -1};

static void cleanup_all_locked(void)
{
	for (int i = 0; i < CLEANUP_MAX; i++)
		if (g_cl_engs[i])
			te_engine_remove_keys(g_cl_engs[i]);
}

static void cleanup_atexit(void)
{
	pthread_mutex_lock(&g_cl_lock);
	cleanup_all_locked();
	pthread_mutex_unlock(&g_cl_lock);
}

static void cleanup_track(struct te_engine *eng, bool add)
{
	pthread_mutex_lock(&g_cl_lock);
	for (int i = 0; i < CLEANUP_MAX; i++) {
		if (add && !g_cl_engs[i]) {
			g_cl_engs[i] = eng;
			break;
		}
		if (!add && g_cl_engs[i] == eng)
			g_cl_engs[i] = NULL;
	}
	if (add && !g_cl_atexit) {
		atexit(cleanup_atexit);
		g_cl_atexit = true;
	}
	pthread_mutex_unlock(&g_cl_lock);
}

static void cleanup_signal_handler(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	if (write(g_cl_pipe[1], &b, 1) < 0) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	errno = saved;
}

/* Network I/O is not async-signal-safe, so the keys are removed here, not in the handler. */
static void *cleanup_thread(void *arg)
{
	unsigned char b;
	sigset_t ss;

	(void)arg;
	while (read(g_cl_pipe[0], &b, 1) != 1) {
		if (errno != EINTR)
			return NULL;
	}
	pthread_mutex_lock(&g_cl_lock);
	cleanup_all_locked();
	pthread_mutex_unlock(&g_cl_lock);
	signal(b, SIG_DFL);
	sigemptyset(&ss);
	sigaddset(&ss, b);
	pthread_sigmask(SIG_UNBLOCK, &ss, NULL);
	raise(b);
	return NULL;
}

int te_engine_install_signal_cleanup(struct te_engine *eng)
{
	static const int sigs[] = {SIGINT, SIGTERM};
	int ret = 0;

	if (!eng)
		return TE_ERR_INVALID_ARGUMENT;
	pthread_mutex_lock(&g_cl_lock);
	if (!g_cl_sig_installed) {
		pthread_t t;
		pthread_attr_t at;
		if (pipe2(g_cl_pipe, O_CLOEXEC)) {
			ret = TE_ERR_SOCKET;
			goto out;
		}
		sigset_t block, old_mask;
		int cr;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		/* The thread inherits SIGINT/SIGTERM blocked: the handler must run on a thread that
		 * is not this one, blocked in read() waiting for it (under ThreadSanitizer a
		 * handler is deferred until its thread leaves the read, which never happened: a
		 * hang). */
		sigemptyset(&block);
		for (size_t i = 0; i < PD_ARRAY_SIZE(sigs); i++)
			sigaddset(&block, sigs[i]);
		pthread_sigmask(SIG_BLOCK, &block, &old_mask);
		cr = pthread_create(&t, &at, cleanup_thread, NULL);
		pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
		pthread_attr_destroy(&at);
		if (cr) {
			ret = TE_ERR_MEMORY;
			goto out;
		}
		for (size_t i = 0; i < PD_ARRAY_SIZE(sigs); i++) {
			struct sigaction sa = {0}, old;
			sigaction(sigs[i], NULL, &old);
			if (old.sa_handler != SIG_DFL)
				continue; /* the program handles (or ignores) it itself */
			sa.sa_handler = cleanup_signal_handler;
			sa.sa_flags = SA_RESTART; /* the program's blocking calls go on */
			sigemptyset(&sa.sa_mask);
			sigaction(sigs[i], &sa, NULL);
		}
		g_cl_sig_installed = true;
	}
out:
	pthread_mutex_unlock(&g_cl_lock);
	return ret;
}
