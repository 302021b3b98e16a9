/* SPDX-License-Identifier: Apache-2.0 */
/* kvc_pipe: the MooncakePipe (docs/v0-pipe.md) — engine segment named own_url, the managed-buffer
 * pool, the four ZMQ sockets, send (PUSH (ptr,len), FIFO ACK release on a cleaner thread) and
 * receive (PULL (ptr,len), TE READ from the peer's buffer, ACK). Every wait is bounded and
 * abortable. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kvc/kvc_internal.h"
#include "pd_env.h"
#include "pd_log.h"
#include "pd_tsan.h"
#include "pd_util.h"
#include "te/te.h"

#define SLICE_MS      100
#define ACK_SEND_MS   2000
#define MAX_MSG_BYTES (4ull << 30) /* a (ptr,len) asking for more is refused unread */

static int reg_cb(void *ctx, void *addr, size_t len)
{
	return te_register(ctx, addr, len, "cpu:0");
}

static int unreg_cb(void *ctx, void *addr)
{
	return te_unregister(ctx, addr);
}

/* remaining ms to a deadline (ns); deadline 0 = none -> SLICE_MS */
static long slice_left(uint64_t deadline)
{
	uint64_t now;
	if (!deadline)
		return SLICE_MS;
	now = pd_now_ns();
	if (now >= deadline)
		return 0;
	return (long)((deadline - now) / 1000000 < SLICE_MS ? (deadline - now) / 1000000 + 1
	                                                    : SLICE_MS);
}

static uint64_t deadline_of(int timeout_ms)
{
	return timeout_ms > 0 ? pd_now_ns() + (uint64_t)timeout_ms * 1000000ull : 0;
}

/* Waits for ev on sock: 0 ready, KVC_ERR_TIMEOUT, KVC_ERR_CLOSED (abort/stop). */
static int zwait(struct kvc_pipe *p, void *sock, short ev, uint64_t deadline,
                 const atomic_bool *abort)
{
	for (;;) {
		zmq_pollitem_t it = {.socket = sock, .events = ev};
		long ms;
		if ((abort && atomic_load(abort)) || atomic_load(&p->stop))
			return KVC_ERR_CLOSED;
		ms = slice_left(deadline);
		if (ms == 0)
			return KVC_ERR_TIMEOUT;
		int r = zmq_poll(&it, 1, ms);
		if (r < 0 && zmq_errno() != EINTR) {
			pd_err("kvc: zmq_poll: %s", zmq_strerror(zmq_errno()));
			return KVC_ERR_CLOSED;
		}
		if (r > 0 && (it.revents & ev))
			return 0;
	}
}

/* Sends a message of n parts (all-or-nothing once the first part is queued). */
static int zsend(struct kvc_pipe *p, void *sock, const uint8_t *const *parts, const size_t *lens,
                 int n, uint64_t deadline, const atomic_bool *abort)
{
	int rc = zwait(p, sock, ZMQ_POLLOUT, deadline, abort);
	if (rc)
		return rc;
	PD_TSAN_WIRE_SEND(); /* a (ptr, len) or ACK hands buffers over: see pd_tsan.h */
	for (int i = 0; i < n; i++) {
		int fl = ZMQ_DONTWAIT | (i + 1 < n ? ZMQ_SNDMORE : 0);
		if (zmq_send(sock, parts[i], lens[i], fl) < 0) {
			pd_err("kvc: zmq_send part %d of %d: %s", i + 1, n,
			       zmq_strerror(zmq_errno()));
			return KVC_ERR_CLOSED;
		}
	}
	return 0;
}

struct zframes {
	uint8_t b[2][KVC_FRAME_MAX];
	size_t len[2]; /* real lengths (copied at most KVC_FRAME_MAX) */
	int n;         /* number of parts in the message */
};

static int zrecv(struct kvc_pipe *p, void *sock, struct zframes *f, uint64_t deadline,
                 const atomic_bool *abort)
{
	int rc = zwait(p, sock, ZMQ_POLLIN, deadline, abort);
	memset(f, 0, sizeof(*f));
	if (rc)
		return rc;
	for (;;) {
		zmq_msg_t m;
		int more;
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, sock, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&m);
			if (f->n)
				break;
			return zmq_errno() == EAGAIN ? KVC_ERR_TIMEOUT : KVC_ERR_CLOSED;
		}
		if (f->n < 2) {
			size_t sz = zmq_msg_size(&m);
			f->len[f->n] = sz;
			memcpy(f->b[f->n], zmq_msg_data(&m),
			       sz < KVC_FRAME_MAX ? sz : KVC_FRAME_MAX);
		}
		f->n++;
		more = zmq_msg_more(&m);
		zmq_msg_close(&m);
		if (!more) /* drain every part: a message is delivered whole */
			break;
	}
	PD_TSAN_WIRE_RECV();
	return 0;
}

static void log_frame(const char *what, const char *peer, const struct zframes *f,
                      const char *expected)
{
	char h0[160], h1[160] = "";
	kvc_hex(f->b[0], f->len[0] < KVC_FRAME_MAX ? f->len[0] : KVC_FRAME_MAX, h0, sizeof(h0));
	if (f->n > 1)
		kvc_hex(f->b[1], f->len[1] < KVC_FRAME_MAX ? f->len[1] : KVC_FRAME_MAX, h1,
		        sizeof(h1));
	pd_err(
	    "kvc: side channel: rejected %s from %s: %d part(s), [%zu bytes] %s%s%s%s; expected %s",
	    what, peer, f->n, f->len[0], h0, f->n > 1 ? " | " : "", f->n > 1 ? h1 : "",
	    f->n > 2 ? " | ..." : "", expected);
}

static int parse_ptrlen(struct kvc_pipe *p, const struct zframes *f, uint64_t *ptr, uint64_t *len)
{
	if (p->fmt == KVC_FRAME_PICKLE) {
		if (f->n == 1 && f->len[0] <= KVC_FRAME_MAX &&
		    kvc_unpickle_tuple2(f->b[0], f->len[0], ptr, len) == 0)
			return 0;
		log_frame("data frame", p->v0.remote_url, f,
		          "one pickled (ptr, len) tuple: 80 04 95 <u64 len> <int> <int> 86 94 2e");
	} else {
		if (f->n == 2 && kvc_u64be_get(f->b[0], f->len[0], ptr) == 0 &&
		    kvc_u64be_get(f->b[1], f->len[1], len) == 0)
			return 0;
		log_frame("data frame", p->v0.remote_url, f, "two 8-byte big-endian u64 frames");
	}
	atomic_fetch_add(&p->protocol_errors, 1);
	return KVC_ERR_PROTOCOL;
}

static bool is_ack(struct kvc_pipe *p, const struct zframes *f)
{
	if (f->n != 1)
		return false;
	if (p->fmt == KVC_FRAME_PICKLE)
		return f->len[0] <= KVC_FRAME_MAX && kvc_is_pickled_ack(f->b[0], f->len[0]);
	return f->len[0] == 3 && memcmp(f->b[0], "ACK", 3) == 0;
}

static void *cleaner_main(void *arg)
{
	struct kvc_pipe *p = arg;
	for (;;) {
		struct zframes f;
		struct kvc_ackq *q;
		int rc;
		bool acked;
		pthread_mutex_lock(&p->ack_mu);
		while (!atomic_load(&p->stop) && p->ack_n == 0)
			pthread_cond_wait(&p->ack_cv, &p->ack_mu);
		pthread_mutex_unlock(&p->ack_mu);
		if (atomic_load(&p->stop))
			break;
		rc = zrecv(p, p->ack_in, &f, pd_now_ns() + SLICE_MS * 1000000ull, NULL);
		if (rc == KVC_ERR_TIMEOUT)
			continue;
		if (rc)
			break;
		if (!is_ack(p, &f)) {
			log_frame("ACK", p->v0.remote_url, &f,
			          p->fmt == KVC_FRAME_PICKLE ? "pickled b'ACK'" : "raw \"ACK\"");
			pd_err("kvc: Failed to receive ACK from the receiver");
			atomic_fetch_add(&p->protocol_errors, 1);
		}
		/* like vLLM: the oldest buffer is released in either case (FIFO, no ids) */
		acked = is_ack(p, &f);
		pthread_mutex_lock(&p->ack_mu);
		q = p->ack_head;
		if (q) {
			p->ack_head = q->next;
			if (!p->ack_head)
				p->ack_tail = NULL;
			/* counted before the pending count drops: whoever sees no pending ACKs also
			 * sees the bytes they acknowledged */
			if (acked)
				atomic_fetch_add(&p->bytes_sent, q->len);
			p->ack_n--;
		}
		pthread_cond_broadcast(&p->ack_cv);
		pthread_mutex_unlock(&p->ack_mu);
		if (q) {
			kvc_pool_free(p->pool, q->ptr);
			free(q);
		}
	}
	return NULL;
}

static int zsock(struct kvc_pipe *p, int type, void **out)
{
	int zero = 0;
	*out = zmq_socket(p->zctx, type);
	if (!*out) {
		pd_err("kvc: zmq_socket: %s", zmq_strerror(zmq_errno()));
		return KVC_ERR_CONFIG;
	}
	zmq_setsockopt(*out, ZMQ_LINGER, &zero, sizeof(zero));
	/* Every socket, PUSH included: libzmq decodes what any connected peer sends, and a
	 * frame header may announce up to 2^63 bytes, allocated before the data arrives. */
	if (zmq_setsockopt(*out, ZMQ_MAXMSGSIZE, &p->max_msg, sizeof(p->max_msg)) < 0) {
		pd_err("kvc: ZMQ_MAXMSGSIZE %lld: %s", (long long)p->max_msg,
		       zmq_strerror(zmq_errno()));
		return KVC_ERR_CONFIG;
	}
	return 0;
}

/* NULL: the own URL's host when it is an IP address (PIPE-c's rule; the peer connects to
 * exactly that address), else "*" as PIPE-a/b. "*" keeps PIPE-a/b's bind on every address. */
static const char *bind_host(const struct kvc_pipe *p, const struct kvc_opts *o)
{
	unsigned char a[sizeof(struct in6_addr)];
	if (o->zmq_bind_host && *o->zmq_bind_host)
		return o->zmq_bind_host;
	if (inet_pton(AF_INET, p->v0.own_host, a) == 1 ||
	    inet_pton(AF_INET6, p->v0.own_host, a) == 1)
		return p->v0.own_host;
	return "*";
}

static int zaddr(char *buf, size_t n, const char *host, int port)
{
	if (port < 1 || port > 65535) {
		pd_err("kvc: side-channel port %d out of range 1..65535 (check the URL ports in "
		       "mooncake.json)",
		       port);
		return KVC_ERR_CONFIG;
	}
	snprintf(buf, n, strchr(host, ':') ? "tcp://[%s]:%d" : "tcp://%s:%d", host, port);
	return 0;
}

/* binds (bind) or connects socket s to host:port; what names it in the error */
static int zattach(void *s, const char *host, int port, const char *what, bool bind)
{
	char a[300];
	int rc = zaddr(a, sizeof(a), host, port);
	if (rc)
		return rc;
	if ((bind ? zmq_bind(s, a) : zmq_connect(s, a)) < 0) {
		pd_err("kvc: %s: zmq %s %s: %s", what, bind ? "bind" : "connect", a,
		       zmq_strerror(zmq_errno()));
		return KVC_ERR_CONFIG;
	}
	if (bind)
		pd_dbg("kvc: %s bound %s", what, a);
	return 0;
}

static size_t pool_size(const struct kvc_opts *o)
{
	uint64_t v;

	if (o->pool_bytes)
		return o->pool_bytes;
	if (pd_env_size("PDKV_KVC_POOL_BYTES", &v) == 1) /* 8K (KVC_POOL_MIN_BLOCK)..1T */
		return (size_t)v;
	return kvc_pool_default_bytes(o->kt ? o->kt->kv_buffer_size : 1e9);
}

int kvc_pipe_open(struct kvc_pipe *p, const struct kvc_opts *o)
{
	struct cfg_diags d = {0};
	struct te_engine_opts eo = {0};
	const char *bh;
	int rc;

	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->ack_mu, NULL);
	pthread_cond_init(&p->ack_cv, NULL);
	pthread_mutex_init(&p->quar_mu, NULL);
	p->fmt = o->frame_format;
	p->transfer_timeout_ms = o->transfer_timeout_ms;
	{
		bool on;

		pd_env_bool("PDKV_KVC_READ_AHEAD", &on); /* default 1; bad: warned, stays on */
		p->read_ahead = on;
	}
	p->max_msg = o->zmq_max_msg_bytes ? o->zmq_max_msg_bytes : KVC_ZMQ_MAXMSG_DEFAULT;
	if (p->max_msg < KVC_FRAME_MAX || p->max_msg > (1ll << 30)) {
		pd_err("kvc: zmq_max_msg_bytes %lld: expected %d .. 1GiB (a side-channel message "
		       "is at most %d bytes)",
		       (long long)p->max_msg, KVC_FRAME_MAX, KVC_FRAME_MAX);
		return KVC_ERR_CONFIG;
	}
	if (cfg_v0_pipe(o->mc, o->kt, o->local_rank, &p->v0, &d) < 0) {
		for (size_t i = 0; i < d.n; i++)
			pd_err("kvc: %s: %s", d.v[i].field ? d.v[i].field : "config",
			       d.v[i].message);
		cfg_diags_free(&d);
		pd_err("kvc: cannot derive the V0 pipe's URLs and ports for local_rank %d",
		       o->local_rank);
		return KVC_ERR_CONFIG;
	}
	cfg_diags_free(&d);
	bh = bind_host(p, o);
	if (!o->mc->conn_string) {
		pd_err("kvc: mooncake.json: metadata_server \"%s\" does not resolve to a metadata "
		       "connection string",
		       o->mc->metadata_server ? o->mc->metadata_server : "(null)");
		return KVC_ERR_CONFIG;
	}
	/* Side channel first (vLLM builds the engine first): a port clash then fails before
	 * this instance publishes a segment under a name another live instance may own. */
	p->zctx = zmq_ctx_new();
	if (!p->zctx) {
		rc = KVC_ERR_CONFIG;
		goto fail;
	}
	if ((rc = zsock(p, ZMQ_PUSH, &p->data_out)) || (rc = zsock(p, ZMQ_PULL, &p->data_in)) ||
	    (rc = zsock(p, ZMQ_PUSH, &p->ack_out)) || (rc = zsock(p, ZMQ_PULL, &p->ack_in)))
		goto fail;
	/* the monitor (and its reader) before the bind: a consumer that connects at once must be
	 * counted, or a later rogue peer would look like the only one */
	if ((rc = kvc_mon_start(p)) ||
	    (rc = zattach(p->data_out, bh, p->v0.bind_data_port, "data PUSH (B+9+2r)", true)) ||
	    (rc = zattach(p->ack_out, bh, p->v0.bind_ack_port, "ACK PUSH (B+10+2r)", true)) ||
	    (rc = zattach(p->data_in, p->v0.remote_host, p->v0.connect_data_port, "data PULL",
	                  false)) ||
	    (rc = zattach(p->ack_in, p->v0.remote_host, p->v0.connect_ack_port, "ACK PULL", false)))
		goto fail;
	eo.metadata_conn = o->mc->conn_string;
	eo.local_server_name = p->v0.own_url;
	eo.protocol = o->mc->protocol;
	eo.device_names = o->mc->device_name && *o->mc->device_name ? o->mc->device_name : NULL;
	rc = te_engine_create(&eo, &p->eng);
	if (rc < 0) {
		pd_err("kvc: engine for segment %s (metadata %s, protocol %s): %s", p->v0.own_url,
		       eo.metadata_conn, eo.protocol ? eo.protocol : "auto", te_strerror(rc));
		p->eng = NULL;
		rc = KVC_ERR_CONFIG;
		goto fail;
	}
	rc = kvc_pool_create(pool_size(o), KVC_DEDICATED_CAP, reg_cb, unreg_cb, p->eng, &p->pool);
	if (rc < 0)
		goto fail;
	{
		uint64_t v = o->pool_cache_bytes;

		if (!v)
			pd_env_size("PDKV_KVC_POOL_CACHE_BYTES", &v); /* unset or bad (warned): 0 */
		if (v)
			kvc_pool_set_cache_cap(p->pool, (size_t)v);
	}
	{
		double kb = o->kt ? o->kt->kv_buffer_size : 0;
		size_t pk = o->parked_bytes;

		if (!pk)
			pk = kb > (double)KVC_DEDICATED_CAP ? (size_t)kb : KVC_DEDICATED_CAP;
		kvc_pool_set_parked_cap(p->pool, pk);
	}
	if (pthread_create(&p->cleaner, NULL, cleaner_main, p) != 0) {
		rc = KVC_ERR_CONFIG;
		goto fail;
	}
	p->cleaner_started = true;
	pd_info("kvc: pipe %s end: segment %s (pool %zu MiB), peer %s, zmq bind %s:%d/%d, connect "
	        "%s:%d/%d, frames %s, ZMQ_MAXMSGSIZE %lld",
	        p->v0.prefill_end ? "prefill" : "decode", te_engine_name(p->eng),
	        kvc_pool_region_bytes(p->pool) >> 20, p->v0.remote_url, bh, p->v0.bind_data_port,
	        p->v0.bind_ack_port, p->v0.remote_host, p->v0.connect_data_port,
	        p->v0.connect_ack_port, p->fmt == KVC_FRAME_PICKLE ? "pickle" : "u64be",
	        (long long)p->max_msg);
	return 0;
fail:
	kvc_pipe_close(p);
	return rc;
}

void kvc_pipe_close(struct kvc_pipe *p)
{
	void **socks[4] = {&p->data_out, &p->data_in, &p->ack_out, &p->ack_in};
	pthread_mutex_lock(&p->ack_mu);
	atomic_store(&p->stop, true);
	pthread_cond_broadcast(&p->ack_cv);
	pthread_mutex_unlock(&p->ack_mu);
	if (p->cleaner_started)
		pthread_join(p->cleaner, NULL);
	p->cleaner_started = false;
	kvc_mon_stop(p);
	for (int i = 0; i < 4; i++) {
		if (*socks[i])
			zmq_close(*socks[i]);
		*socks[i] = NULL;
	}
	if (p->zctx)
		zmq_ctx_term(p->zctx);
	p->zctx = NULL;
	while (p->ack_head) {
		struct kvc_ackq *q = p->ack_head;
		p->ack_head = q->next;
		free(q); /* its buffer goes with the pool */
	}
	p->ack_tail = NULL;
	p->ack_n = 0;
	/* engine first (it deregisters, stops serving reads and joins the threads that could
	 * still write into an abandoned READ's buffer), then the memory */
	te_engine_destroy(p->eng);
	p->eng = NULL;
	if (p->ahead.on) { /* read ahead, never taken: no writer is left */
		kvc_pool_free(p->pool, p->ahead.rd.dst);
		kvc_read_land_free(&p->ahead.rd);
	}
	memset(&p->ahead, 0, sizeof(p->ahead));
	kvc_pool_detach(p->pool);
	kvc_read_quar_drop(p);
	kvc_pool_destroy(p->pool);
	p->pool = NULL;
}

/* Pushes (buf, len) and queues buf for release on its ACK; q is consumed on 0. */
static int push(struct kvc_pipe *p, void *buf, size_t len, struct kvc_ackq *q, int timeout_ms,
                const atomic_bool *abort)
{
	uint8_t f0[KVC_FRAME_MAX], f1[8];
	const uint8_t *parts[2] = {f0, f1};
	size_t lens[2];
	int rc;

	if (p->fmt == KVC_FRAME_PICKLE) {
		lens[0] = kvc_pickle_tuple2((uint64_t)(uintptr_t)buf, len, f0);
		rc = zsend(p, p->data_out, parts, lens, 1, deadline_of(timeout_ms), abort);
	} else {
		kvc_u64be_put(f0, (uint64_t)(uintptr_t)buf);
		kvc_u64be_put(f1, len);
		lens[0] = lens[1] = 8;
		rc = zsend(p, p->data_out, parts, lens, 2, deadline_of(timeout_ms), abort);
	}
	if (rc)
		return rc;
	q->ptr = buf;
	q->len = len;
	pthread_mutex_lock(&p->ack_mu);
	if (p->ack_tail)
		p->ack_tail->next = q;
	else
		p->ack_head = q;
	p->ack_tail = q;
	p->ack_n++;
	pthread_cond_broadcast(&p->ack_cv);
	pthread_mutex_unlock(&p->ack_mu);
	return 0;
}

int kvc_pipe_send(struct kvc_pipe *p, const struct kvc_tensor *t, int timeout_ms,
                  const atomic_bool *abort)
{
	size_t len = kvc_blob_size(t);
	struct kvc_ackq *q;
	void *buf;
	int rc;

	q = calloc(1, sizeof(*q));
	buf = kvc_pool_alloc(p->pool, len);
	if (!q || !buf) {
		atomic_fetch_add(&p->alloc_failures, 1);
		pd_err(
		    "kvc: Allocation Return Error: managed buffer of %zu bytes (pool in use %zu)",
		    len, kvc_pool_in_use(p->pool));
		free(q);
		kvc_pool_free(p->pool, buf);
		return KVC_ERR_ALLOC;
	}
	rc = kvc_blob_encode(t, buf, len);
	if (!rc)
		rc = push(p, buf, len, q, timeout_ms, abort);
	if (rc) {
		free(q);
		kvc_pool_free(p->pool, buf);
	}
	return rc;
}

int kvc_pipe_send_move(struct kvc_pipe *p, struct kvc_tensor *t, int timeout_ms,
                       const atomic_bool *abort)
{
	uint8_t *buf;
	struct kvc_ackq *q;
	int rc;

	if (kvc_tensor_is_none(t) || t->pool != p->pool) {
		rc = kvc_pipe_send(p, t, timeout_ms, abort);
		if (!rc)
			kvc_tensor_free(t);
		return rc;
	}
	/* the tensor already sits in a registered buffer behind room for its header */
	buf = (uint8_t *)t->data - KVC_BLOB_HDR;
	q = calloc(1, sizeof(*q));
	if (!q)
		return KVC_ERR_ALLOC;
	rc = kvc_blob_encode_header(t, buf);
	if (!rc)
		rc = push(p, buf, KVC_BLOB_HDR + t->nbytes, q, timeout_ms, abort);
	if (rc) {
		free(q);
		return rc;
	}
	kvc_pool_unref(p->pool); /* the buffer is the ACK queue's now (the pipe's reference) */
	memset(t, 0, sizeof(*t));
	return 0;
}

static void send_ack(struct kvc_pipe *p)
{
	uint8_t a[KVC_FRAME_MAX];
	const uint8_t *parts[1] = {a};
	size_t lens[1];
	if (p->fmt == KVC_FRAME_PICKLE) {
		lens[0] = kvc_pickle_ack(a);
	} else {
		memcpy(a, "ACK", 3);
		lens[0] = 3;
	}
	if (zsend(p, p->ack_out, parts, lens, 1, deadline_of(ACK_SEND_MS), NULL))
		pd_warn("kvc: could not send the ACK to %s within %d ms", p->v0.remote_url,
		        ACK_SEND_MS);
}

/* One announcement taken off the socket: its (ptr, len) checked, a buffer taken and the READ
 * started; a->rc (after the ACK) or a->start_rc (kvc_read_start's) say what went wrong. */
static void announce(struct kvc_pipe *p, const struct zframes *f, struct kvc_ann *a, int piece_i)
{
	void *dst;

	memset(a, 0, sizeof(*a));
	a->on = true;
	a->rc = parse_ptrlen(p, f, &a->ptr, &a->len);
	if (a->rc)
		return;
	if (a->ptr == 0 || a->len < KVC_BLOB_HDR || a->len > MAX_MSG_BYTES ||
	    a->len > kvc_pool_region_bytes(p->pool) + KVC_DEDICATED_CAP) {
		pd_err(
		    "kvc: side channel: peer %s offers (ptr 0x%llx, len %llu); expected a non-null "
		    "address and %d <= len <= %llu",
		    p->v0.remote_url, (unsigned long long)a->ptr, (unsigned long long)a->len,
		    KVC_BLOB_HDR, (unsigned long long)MAX_MSG_BYTES);
		atomic_fetch_add(&p->protocol_errors, 1);
		a->rc = KVC_ERR_PROTOCOL;
		return;
	}
	dst = kvc_pool_alloc(p->pool, a->len);
	if (!dst) {
		atomic_fetch_add(&p->alloc_failures, 1);
		pd_err("kvc: Allocation Return Error: receive buffer of %llu bytes",
		       (unsigned long long)a->len);
		a->rc = KVC_ERR_ALLOC;
		return;
	}
	a->t_read = pd_now_ns();
	a->start_rc = kvc_read_start(p, dst, a->ptr, a->len, piece_i, &a->rd); /* sets a->rd.dst */
}

/* The peer pushes its (ptr, len)s without waiting for ACKs (vLLM's send_bytes does too), so the
 * next tensor's announcement is often queued while this one is read: its READ starts now and
 * runs beside this one. Only what is already queued is taken; ACKs stay in order. Only behind
 * READs of up to KVC_AHEAD_MAX: a long READ keeps the lanes busy on its own, and the stand-in
 * hashes a tensor while the next one is read, which two READs at once would only delay (16k
 * tokens on 2 cores: 444 ms with read-ahead against 395 without; 1k: 32 against 38 ms). */
#define KVC_AHEAD_MAX (256ull << 20)
static void read_ahead(struct kvc_pipe *p, uint64_t cur_len)
{
	zmq_pollitem_t it = {.socket = p->data_in, .events = ZMQ_POLLIN};
	struct zframes f;

	/* the quarantine's bound holds with the READ ahead counted: no read-ahead near it */
	if (!p->read_ahead || p->ahead.on || cur_len > KVC_AHEAD_MAX ||
	    kvc_read_quar_count(p) + 1 >= KVC_QUAR_MAX || zmq_poll(&it, 1, 0) <= 0 ||
	    !(it.revents & ZMQ_POLLIN))
		return;
	if (zrecv(p, p->data_in, &f, deadline_of(1000), NULL))
		return;
	/* its pieces go to the select's hook as the next tensor, if the answer has one */
	announce(p, &f, &p->ahead,
	         p->piece_fn && p->piece_i + 1 < p->piece_n ? p->piece_i + 1 : -1);
	atomic_fetch_add(&p->reads_ahead, 1);
}

int kvc_pipe_recv(struct kvc_pipe *p, struct kvc_tensor *out, int timeout_ms,
                  const atomic_bool *abort)
{
	struct kvc_ann a;
	bool lost = false;
	void *dst;
	int rc;

	memset(out, 0, sizeof(*out));
	if (p->ahead.on) {
		a = p->ahead;
		memset(&p->ahead, 0, sizeof(p->ahead));
		kvc_read_rearm(p, &a.rd); /* its deadline runs from now, as if started now */
	} else {
		struct zframes f;

		rc = zrecv(p, p->data_in, &f, deadline_of(timeout_ms), abort);
		if (rc)
			return rc;
		announce(p, &f, &a, p->piece_fn ? p->piece_i : -1);
	}
	/* From here on one peer send is consumed: always ACK so its FIFO of buffers stays in step
	 * (vLLM raises before ACKing, leaving the peer's buffer and ACK order behind). */
	dst = a.rd.dst;
	rc = a.rc;
	if (rc)
		goto ack;
	if (!a.start_rc)
		read_ahead(p, a.len);
	rc = a.start_rc ? a.start_rc : kvc_read_finish(p, &a.rd, &lost);
	if (rc < 0 && !lost && rc != TE_ERR_TIMEOUT && rc != TE_ERR_TOO_MANY_REQUESTS &&
	    !atomic_load(&p->stop)) {
		/* the peer may have registered a dedicated buffer after we cached its segment,
		 * or restarted: refresh its descriptor and try once more */
		pd_dbg("kvc: READ from %s failed (%s); re-syncing its segment", p->v0.remote_url,
		       te_strerror(rc));
		te_sync_segment(p->eng, p->v0.remote_url);
		rc = kvc_read(p, dst, a.ptr, a.len, &lost);
	}
	if (lost)
		dst = NULL; /* the engine may still write into it: the quarantine frees it */
	if (rc < 0) {
		atomic_fetch_add(&p->transfer_failures, 1);
		pd_err("kvc: Transfer Return Error: READ %llu bytes at 0x%llx from segment %s: %s",
		       (unsigned long long)a.len, (unsigned long long)a.ptr, p->v0.remote_url,
		       te_strerror(rc));
		rc = KVC_ERR_TRANSFER;
		goto ack;
	}
	atomic_fetch_add(&p->transfers, 1);
	atomic_fetch_add(&p->bytes_received, a.len);
	pd_dbg("kvc: READ %llu bytes from %s in %.2f ms", (unsigned long long)a.len,
	       p->v0.remote_url, (double)(pd_now_ns() - a.t_read) / 1e6);
	/* the tensor stays where it was read: its buffer goes with it (kvc_tensor_free) */
	rc = kvc_blob_decode_inplace(dst, a.len, out);
	if (rc == 0) {
		out->pool = p->pool;
		kvc_pool_ref(p->pool);
		dst = NULL;
	} else if (rc == 1) {
		rc = 0; /* None */
	} else {
		atomic_fetch_add(&p->protocol_errors, 1);
	}
ack:
	send_ack(p);
	kvc_pool_free(p->pool, dst);
	return rc;
}

int kvc_pipe_flush(struct kvc_pipe *p, int timeout_ms)
{
	uint64_t dl = deadline_of(timeout_ms > 0 ? timeout_ms : 1);
	int rc = 0;
	pthread_mutex_lock(&p->ack_mu);
	while (p->ack_n > 0 && !atomic_load(&p->stop)) {
		struct timespec ts;
		uint64_t now = pd_now_ns();
		if (now >= dl) {
			rc = KVC_ERR_TIMEOUT;
			break;
		}
		pd_deadline_in(&ts, CLOCK_REALTIME, 20);
		pthread_cond_timedwait(&p->ack_cv, &p->ack_mu, &ts);
	}
	pthread_mutex_unlock(&p->ack_mu);
	return rc;
}

size_t kvc_pipe_forget_peer(struct kvc_pipe *p, int quiet_ms)
{
	struct kvc_ackq *q;
	size_t n = 0;
	/* its ACKs for what it read may still be on the wire: let them land first */
	kvc_pipe_flush(p, quiet_ms);
	pthread_mutex_lock(&p->ack_mu);
	q = p->ack_head;
	p->ack_head = p->ack_tail = NULL;
	n = p->ack_n;
	p->ack_n = 0;
	pthread_cond_broadcast(&p->ack_cv);
	pthread_mutex_unlock(&p->ack_mu);
	while (q) {
		struct kvc_ackq *next = q->next;
		kvc_pool_free(p->pool, q->ptr);
		free(q);
		q = next;
	}
	return n;
}
