/* kv1_worker: one V1 connector worker — engine set-up as vLLM does it, lazily mapped KV buffers,
 * the producer's send table and the ROUTER thread (engine writes: kv1_write.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <zmq.h>

#include "kv1_internal.h"
#include "te/te_gpu.h"
#include "pd_log.h"
#include "pd_tsan.h"
#include "pd_util.h"

void kv1_set_err(char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
}

void *kv1_zsock(struct kv1_worker *w, int type, int rcvtimeo_ms)
{
	void *s = zmq_socket(w->zctx, type);
	int zero = 0;
	int64_t max = KV1_MAX_MSG;

	if (!s)
		return NULL;
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max, sizeof(max));
	if (rcvtimeo_ms > 0)
		zmq_setsockopt(s, ZMQ_RCVTIMEO, &rcvtimeo_ms, sizeof(rcvtimeo_ms));
	return s;
}

/* ------------------------------------------------------------------ send table */

struct kv1_send *kv1_send_find_locked(struct kv1_worker *w, const char *key)
{
	for (struct kv1_send *s = w->sends; s; s = s->next)
		if (!strcmp(s->key, key))
			return s;
	return NULL;
}

struct kv1_send *kv1_send_add_locked(struct kv1_worker *w, const char *key)
{
	struct kv1_send *s = calloc(1, sizeof(*s));

	if (!s || !(s->key = strdup(key))) {
		free(s);
		return NULL;
	}
	s->next = w->sends;
	w->sends = s;
	return s;
}

void kv1_send_remove_locked(struct kv1_worker *w, struct kv1_send *s)
{
	for (struct kv1_send **p = &w->sends; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	if (s->ids)
		kv1_free(w, s->ids, s->n);
	free(s->ids);
	free(s->key);
	free(s);
}

void kv1_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_ns)
{
	uint64_t now = pd_now_ns(), step = 100000000ull;
	struct timespec ts;

	if (now >= deadline_ns)
		return;
	if (deadline_ns - now < step)
		step = deadline_ns - now;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)step;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(cv, mu, &ts);
}

void kv1_cv_wait_locked(struct kv1_worker *w, uint64_t deadline_ns)
{
	kv1_cond_wait_until(&w->cv, &w->mu, deadline_ns);
}

struct kv1_send *kv1_send_wait_locked(struct kv1_worker *w, const char *key, uint64_t deadline_ns)
{
	for (;;) {
		struct kv1_send *s = kv1_send_find_locked(w, key);

		if (!s)
			return NULL; /* discarded while we waited */
		if (s->ready && !s->busy)
			return s;
		if (atomic_load(&w->stop) || pd_now_ns() >= deadline_ns)
			return NULL;
		kv1_cv_wait_locked(w, deadline_ns);
	}
}

int kv1_send_expect(struct kv1_worker *w, const char *key)
{
	int ret = 0;

	pthread_mutex_lock(&w->mu);
	if (!kv1_send_find_locked(w, key) && !kv1_send_add_locked(w, key))
		ret = -ENOMEM;
	pthread_mutex_unlock(&w->mu);
	return ret;
}

int kv1_send_ready(struct kv1_worker *w, const char *key, const int64_t *ids, size_t n)
{
	struct kv1_send *s;
	int64_t *cp = malloc((n ? n : 1) * sizeof(*cp));
	size_t woken;

	if (!cp)
		return -ENOMEM;
	memcpy(cp, ids, n * sizeof(*cp));
	pthread_mutex_lock(&w->mu);
	s = kv1_send_find_locked(w, key);
	if (!s)
		s = kv1_send_add_locked(w, key);
	if (!s || s->ready) {
		pthread_mutex_unlock(&w->mu);
		kv1_free(w, ids, n);
		free(cp);
		return s ? -EEXIST : -ENOMEM;
	}
	s->ids = cp;
	s->n = n;
	s->ready = true;
	s->dropped = false;
	s->expire_ns = pd_now_ns() + (uint64_t)w->o.abort_timeout_s * 1000000000ull;
	pthread_cond_broadcast(&w->cv);
	woken = kv1_park_wake_locked(w, key);
	pthread_mutex_unlock(&w->mu);
	if (woken)
		kv1_park_kick(w);
	return 0;
}

void kv1_send_discard(struct kv1_worker *w, const char *key)
{
	struct kv1_send *s;
	size_t woken = 0;

	pthread_mutex_lock(&w->mu);
	s = kv1_send_find_locked(w, key);
	if (!s && cfg_gen_is_b(w->o.gen))
		s = kv1_send_add_locked(w, key);
	if (s && !s->busy && cfg_gen_is_b(w->o.gen)) {
		/* gen B: D's handshake for this transfer id (already waiting, or still to come)
		 * would otherwise wait abort_timeout_s for a push that never comes, holding D's
		 * blocks and its client: keep a marker that answers it with an error at once */
		free(s->ids);
		s->ids = NULL;
		s->n = 0;
		s->ready = false;
		s->dropped = true;
		s->expire_ns = pd_now_ns() + (uint64_t)w->o.abort_timeout_s * 1000000000ull;
		pthread_cond_broadcast(&w->cv);
		woken = kv1_park_wake_locked(w, key);
	} else if (s && !s->busy) {
		kv1_send_remove_locked(w, s);
	}
	pthread_mutex_unlock(&w->mu);
	if (woken)
		kv1_park_kick(w);
}

static void reap_expired(struct kv1_worker *w)
{
	uint64_t now = pd_now_ns();

	pthread_mutex_lock(&w->mu);
	for (struct kv1_send *s = w->sends, *nx; s; s = nx) {
		nx = s->next;
		if (s->dropped && !s->busy && now >= s->expire_ns) {
			kv1_send_remove_locked(w, s);
			continue;
		}
		if (!s->ready || s->busy || now < s->expire_ns)
			continue;
		pd_warn("Request %s timed out after %d seconds without being sent. Freeing its "
		        "blocks on the producer side.",
		        s->key, w->o.abort_timeout_s);
		atomic_fetch_add(&w->expired, 1);
		kv1_send_remove_locked(w, s);
	}
	pthread_mutex_unlock(&w->mu);
}

/* ------------------------------------------------------------------ ROUTER thread */

void *kv1_job_push_open(struct kv1_worker *w)
{
	void *p = kv1_zsock(w, ZMQ_PUSH, 0);

	if (p && zmq_connect(p, w->inproc)) {
		zmq_close(p);
		return NULL;
	}
	return p;
}

int kv1_job_reply(struct kv1_job *j, void *push, const void *body, size_t len, bool delim)
{
	if (!push)
		return -EIO;
	PD_TSAN_WIRE_SEND(); /* pd_tsan.h: the requester uses the blocks after this reply */
	if (zmq_send(push, j->ident, j->ident_len, ZMQ_SNDMORE) < 0 ||
	    (delim && zmq_send(push, "", 0, ZMQ_SNDMORE) < 0) || zmq_send(push, body, len, 0) < 0)
		return -EIO;
	return 0;
}

/* Receives one whole multipart message; frames beyond max are dropped (the caller then rejects
 * the message by its frame count). */
static int recv_frames(void *s, zmq_msg_t *m, int max, int *n)
{
	int more = 1;

	*n = 0;
	while (more) {
		zmq_msg_t t;

		zmq_msg_init(&t);
		if (pd_tsan_recv_rc(zmq_msg_recv(&t, s, ZMQ_DONTWAIT)) < 0) {
			zmq_msg_close(&t);
			return -1;
		}
		more = zmq_msg_more(&t);
		if (*n < max)
			m[(*n)++] = t;
		else
			zmq_msg_close(&t); /* too many frames: dropped, message rejected below */
	}
	return 0;
}

/* Hands woken (parked, now ready) handshakes, then queued ones, to handler threads while fewer
 * than KV1_MAX_HANDLERS run. */
static void start_pending(struct kv1_worker *w)
{
	kv1_park_kick(w);
	while (w->pend_head && kv1_handler_reserve(w)) {
		struct kv1_job *j = w->pend_head;

		w->pend_head = j->next;
		if (!w->pend_head)
			w->pend_tail = NULL;
		w->npend--;
		j->next = NULL;
		kv1_handler_spawn(w, j);
	}
}

static void dispatch(struct kv1_worker *w, zmq_msg_t *m, int n)
{
	bool a = w->o.gen == CFG_GEN_A;
	int want = a ? 3 : 2;
	struct kv1_job *j;

	if (n != want || (a && zmq_msg_size(&m[1]) != 0)) {
		atomic_fetch_add(&w->rejected, 1);
		pd_warn("kv1: side channel %s: dropped a message of %d frames (expected %s)",
		        w->side_addr, n, a ? "identity, empty, payload" : "identity, payload");
		return;
	}
	if (w->npend >= KV1_MAX_PENDING) {
		pd_warn("kv1: %d handshakes in progress and %d queued on %s; refusing one (the "
		        "decode will time out and apply its kv_load_failure_policy)",
		        KV1_MAX_HANDLERS, w->npend, w->side_addr);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return;
	j->w = w;
	j->ident_len = zmq_msg_size(&m[0]);
	j->ident = malloc(j->ident_len + 1);
	j->len = j->cost = zmq_msg_size(&m[n - 1]);
	j->payload = malloc(j->len + 1);
	if (!j->ident || !j->payload)
		goto fail;
	memcpy(j->ident, zmq_msg_data(&m[0]), j->ident_len);
	memcpy(j->payload, zmq_msg_data(&m[n - 1]), j->len);
	{
		const char *pa = zmq_msg_gets(&m[n - 1], "Peer-Address");

		snprintf(j->peer, sizeof(j->peer), "%s", pa ? pa : "?");
	}
	atomic_fetch_add(&w->handshakes, 1);
	/* beyond KV1_MAX_HANDLERS a handshake waits its turn instead of being lost: a decode
	 * whose request got no answer would only learn of it after its receive timeout */
	if (w->pend_tail)
		w->pend_tail->next = j;
	else
		w->pend_head = j;
	w->pend_tail = j;
	w->npend++;
	start_pending(w);
	return;
fail:
	kv1_job_free(j);
}

/* Forwards handlers' replies to the ROUTER; takes the handshakes they park. */
static void pump_pull(struct kv1_worker *w, void *pull)
{
	zmq_msg_t m[4];
	struct kv1_job *pj;
	int n;

	if (recv_frames(pull, m, 4, &n))
		return;
	if (n == 1 && zmq_msg_size(&m[0]) == sizeof(pj)) {
		/* a gen B handler parks its handshake (kv1_park_request) */
		memcpy(&pj, zmq_msg_data(&m[0]), sizeof(pj));
		zmq_msg_close(&m[0]);
		kv1_park_admit(w, pj);
		return;
	}
	PD_TSAN_WIRE_SEND();
	for (int i = 0; i < n; i++) {
		zmq_msg_send(&m[i], w->router, i + 1 < n ? ZMQ_SNDMORE : 0);
		zmq_msg_close(&m[i]);
	}
}

static void *router_main(void *arg)
{
	struct kv1_worker *w = arg;
	void *pull = kv1_zsock(w, ZMQ_PULL, 0);

	if (!pull || zmq_bind(pull, w->inproc)) {
		pd_err("kv1: inproc %s: %s", w->inproc, zmq_strerror(zmq_errno()));
		return NULL;
	}
	while (!atomic_load(&w->stop)) {
		zmq_pollitem_t it[2] = {{w->router, 0, ZMQ_POLLIN, 0}, {pull, 0, ZMQ_POLLIN, 0}};
		zmq_msg_t m[4];
		int n;

		if (zmq_poll(it, 2, 100) < 0 && zmq_errno() != EINTR)
			break;
		if (it[0].revents & ZMQ_POLLIN && !recv_frames(w->router, m, 4, &n)) {
			dispatch(w, m, n);
			for (int i = 0; i < n; i++)
				zmq_msg_close(&m[i]);
		}
		if (it[1].revents & ZMQ_POLLIN)
			pump_pull(w, pull);
		start_pending(w);
		kv1_park_sweep(w, false);
		reap_expired(w);
		kv1_hold_reap(w);
	}
	/* stopping: the last replies and park requests of running handlers (which no longer
	 * park), then every parked handshake gets its timeout answer */
	for (uint64_t end = pd_now_ns() + 3000000000ull;
	     atomic_load(&w->handlers) > 0 && pd_now_ns() < end;) {
		zmq_pollitem_t it = {pull, 0, ZMQ_POLLIN, 0};

		if (zmq_poll(&it, 1, 10) > 0)
			pump_pull(w, pull);
	}
	for (zmq_pollitem_t it = {pull, 0, ZMQ_POLLIN, 0}; zmq_poll(&it, 1, 0) > 0;)
		pump_pull(w, pull);
	kv1_park_sweep(w, true);
	while (w->pend_head) {
		struct kv1_job *j = w->pend_head;
		w->pend_head = j->next;
		kv1_job_free(j);
	}
	w->pend_tail = NULL;
	w->npend = 0;
	zmq_close(pull);
	return NULL;
}

/* ------------------------------------------------------------------ lifetime */

static bool rdma_present(void)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);

	if (l)
		ibv_free_device_list(l);
	return n > 0;
}

static int map_buffers(struct kv1_worker *w, char *err, size_t errsz)
{
	const char *loc = w->o.location && *w->o.location ? w->o.location : "cpu:0";

	w->buf_bytes = w->o.block_len * w->o.num_blocks;
	w->gpu_dev = -1;
	if (te_gpu_parse_location(loc, &w->gpu_dev) < 0) {
		kv1_set_err(err, errsz, "KV buffer location \"%s\": expected cpu:0 or cuda:N", loc);
		return -1;
	}
	for (int i = 0; i < w->o.nbufs; i++) {
		void *p = MAP_FAILED;
		int ret;

		if (w->gpu_dev >= 0) {
			/* one allocation per buffer: CUDA IPC exports whole allocations */
			if (te_gpu_malloc(w->gpu_dev, w->buf_bytes, &p)) {
				kv1_set_err(err, errsz,
				            "cudaMalloc of KV buffer %d (%zu bytes) on %s failed",
				            i, w->buf_bytes, loc);
				return -1;
			}
			w->bufs[i] = p;
			ret = te_register(w->te, p, w->buf_bytes, loc);
			if (ret) {
				kv1_set_err(err, errsz,
				            "Mooncake batch memory registration failed. (buffer %d "
				            "on %s: %s)",
				            i, loc, te_strerror(ret));
				return -1;
			}
			continue;
		}
		p = mmap(NULL, w->buf_bytes, PROT_READ | PROT_WRITE,
		         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			kv1_set_err(err, errsz, "mmap of KV buffer %d (%zu bytes): %s", i,
			            w->buf_bytes, strerror(errno));
			return -1;
		}
		w->bufs[i] = p;
		ret = te_register(w->te, p, w->buf_bytes, "cpu:0");
		if (ret) {
			kv1_set_err(err, errsz,
			            "Mooncake batch memory registration failed. (buffer "
			            "%d: %s)",
			            i, te_strerror(ret));
			return -1;
		}
	}
	w->freeq = calloc(w->o.num_blocks, sizeof(int64_t));
	if (!w->freeq) {
		kv1_set_err(err, errsz, "out of memory for %zu block ids", w->o.num_blocks);
		return -1;
	}
	for (size_t b = 0; b < w->o.num_blocks; b++)
		w->freeq[b] = (int64_t)b;
	w->fq_n = w->o.num_blocks;
	return 0;
}

static int bind_side(struct kv1_worker *w, char *err, size_t errsz)
{
	char ep[160];
	size_t len = sizeof(w->side_addr);

	w->router = kv1_zsock(w, ZMQ_ROUTER, 0);
	if (!w->router) {
		kv1_set_err(err, errsz, "zmq_socket(ROUTER): %s", zmq_strerror(zmq_errno()));
		return -1;
	}
	if (w->o.gen == CFG_GEN_A) {
		w->side_port = w->o.base_port + w->o.dp_index * w->o.tp_size + w->o.tp_rank;
		snprintf(ep, sizeof(ep), "tcp://%s:%d", w->ip, w->side_port);
	} else {
		snprintf(ep, sizeof(ep), "tcp://%s:*", w->ip);
	}
	if (zmq_bind(w->router, ep)) {
		kv1_set_err(err, errsz, "side channel ROUTER bind %s: %s%s", ep,
		            zmq_strerror(zmq_errno()),
		            w->o.gen == CFG_GEN_A ? " (gen A port = VLLM_MOONCAKE_BOOTSTRAP_PORT + "
		                                    "dp*tp + tp_rank)"
		                                  : "");
		return -1;
	}
	zmq_getsockopt(w->router, ZMQ_LAST_ENDPOINT, w->side_addr, &len);
	if (w->o.gen != CFG_GEN_A) {
		const char *c = strrchr(w->side_addr, ':');

		w->side_port = c ? atoi(c + 1) : 0;
	}
	snprintf(w->inproc, sizeof(w->inproc), "inproc://kv1-%p", (void *)w);
	if (pthread_create(&w->thr, NULL, router_main, w)) {
		kv1_set_err(err, errsz, "cannot start the side-channel thread");
		return -1;
	}
	w->thr_started = true;
	return 0;
}

int kv1_worker_create(const struct kv1_opts *o, struct kv1_worker **out, char *err, size_t errsz)
{
	struct kv1_worker *w = calloc(1, sizeof(*w));
	struct te_engine_opts eo;
	const char *ip = o->ip ? o->ip : getenv("VLLM_HOST_IP");
	int ret;

	*out = NULL;
	if (!w)
		return -1;
	w->o = *o;
	pthread_mutex_init(&w->amu, NULL);
	pthread_mutex_init(&w->mu, NULL);
	pthread_mutex_init(&w->bmu, NULL);
	pthread_mutex_init(&w->hmu, NULL);
	pthread_cond_init(&w->cv, NULL);
	pthread_cond_init(&w->acv, NULL);
	pthread_cond_init(&w->hcv, NULL);
	if (o->nbufs < 1 || o->nbufs > KV1_MAX_BUFS || !o->block_len || !o->num_blocks) {
		kv1_set_err(err, errsz,
		            "kv1: bad KV layout (%d buffers, block_len %zu, %zu blocks)", o->nbufs,
		            o->block_len, o->num_blocks);
		goto fail;
	}
	if (o->protocol && !strcmp(o->protocol, "rdma") && !rdma_present()) {
		kv1_set_err(
		    err, errsz,
		    "kv_connector_extra_config.mooncake_protocol: \"rdma\" (vLLM's default) "
		    "needs an RDMA device and this host has none; set "
		    "\"kv_connector_extra_config\":{\"mooncake_protocol\":\"tcp\"} "
		    "(vLLM: RuntimeError: Mooncake Transfer Engine initialization failed.)");
		goto fail;
	}
	memset(&eo, 0, sizeof(eo));
	eo.metadata_conn = "P2PHANDSHAKE";
	eo.local_server_name = ip ? ip : "127.0.0.1";
	eo.protocol = o->protocol;
	eo.device_names = o->device_name && *o->device_name ? o->device_name : NULL;
	ret = te_engine_create(&eo, &w->te);
	if (ret) {
		kv1_set_err(err, errsz,
		            "Mooncake Transfer Engine initialization failed. (%s, "
		            "protocol %s)",
		            te_strerror(ret), o->protocol ? o->protocol : "auto");
		goto fail;
	}
	snprintf(w->seg, sizeof(w->seg), "%s", te_engine_name(w->te));
	if (ip) {
		snprintf(w->ip, sizeof(w->ip), "%s", ip);
	} else {
		char *c;

		snprintf(w->ip, sizeof(w->ip), "%s", w->seg);
		c = strrchr(w->ip, ':');
		if (c)
			*c = 0;
	}
	if (o->engine_id)
		snprintf(w->engine_id, sizeof(w->engine_id), "%s", o->engine_id);
	for (int i = 0; i < KV1_MAX_BUFS; i++)
		w->order[i] = i;
	if (o->write_order) {
		bool seen[KV1_MAX_BUFS] = {false};

		for (int i = 0; i < o->nbufs && i < KV1_MAX_BUFS; i++) {
			int b = o->write_order[i];

			if (b < 0 || b >= o->nbufs || seen[b]) {
				kv1_set_err(err, errsz,
				            "write_order: entry %d (%d) is not a new buffer index "
				            "below %d",
				            i, b, o->nbufs);
				goto fail;
			}
			seen[b] = true;
			w->order[i] = b;
		}
	}
	if (map_buffers(w, err, errsz) || kv1_hold_init(w, err, errsz) ||
	    kv1_rhold_init(w, err, errsz))
		goto fail;
	if (kv1_landed_init(w)) {
		kv1_set_err(err, errsz, "out of memory for the landed-block table");
		goto fail;
	}
	w->zctx = zmq_ctx_new();
	if (!w->zctx) {
		kv1_set_err(err, errsz, "zmq_ctx_new failed");
		goto fail;
	}
	if (kv1_park_init(w, o->gen == CFG_GEN_A ? &kv1_gena_park_ops : &kv1_genb_park_ops, err,
	                  errsz))
		goto fail;
	if (o->producer && bind_side(w, err, errsz))
		goto fail;
	if (o->producer && cfg_gen_is_b(o->gen) && o->bootstrap_url &&
	    kv1_boot_register(o->bootstrap_url, w->engine_id, o->dp_index, o->tp_rank, 0,
	                      w->side_addr, kv1_shape_of(o->gen), 5000, err, errsz))
		goto fail;
	*out = w;
	return 0;
fail:
	kv1_worker_destroy(w);
	return -1;
}

void kv1_worker_destroy(struct kv1_worker *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	pthread_mutex_lock(&w->mu);
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_mutex_lock(&w->amu);
	pthread_cond_broadcast(&w->acv);
	pthread_mutex_unlock(&w->amu);
	pthread_mutex_lock(&w->hmu);
	pthread_cond_broadcast(&w->hcv);
	pthread_mutex_unlock(&w->hmu);
	for (int i = 0; i < 300 && atomic_load(&w->handlers) > 0; i++)
		pd_sleep_ms(10);
	if (w->thr_started)
		pthread_join(w->thr, NULL);
	if (atomic_load(&w->handlers) > 0) {
		/* A handler is stuck in an engine call: leave the worker to the process exit
		 * rather than free memory it still uses. */
		pd_warn("kv1: %d handshake(s) still running at shutdown",
		        atomic_load(&w->handlers));
		return;
	}
	if (w->router)
		zmq_close(w->router);
	if (w->zctx)
		zmq_ctx_term(w->zctx);
	kv1_park_free_all(w);
	while (w->sends)
		kv1_send_remove_locked(w, w->sends);
	/* the engine first: its lanes may still read the blocks of held WRITEs */
	te_engine_destroy(w->te);
	kv1_hold_fini(w);
	kv1_rhold_fini(w);
	kv1_landed_fini(w);
	for (int i = 0; i < w->o.nbufs && i < KV1_MAX_BUFS; i++)
		if (w->bufs[i] && w->gpu_dev >= 0)
			te_gpu_free(w->bufs[i]);
		else if (w->bufs[i])
			munmap(w->bufs[i], w->buf_bytes);
	kv1_boot_table_free(&w->boot);
	free(w->freeq);
	pthread_mutex_destroy(&w->amu);
	pthread_mutex_destroy(&w->mu);
	pthread_mutex_destroy(&w->bmu);
	pthread_mutex_destroy(&w->hmu);
	pthread_cond_destroy(&w->cv);
	pthread_cond_destroy(&w->acv);
	pthread_cond_destroy(&w->hcv);
	free(w);
}

const char *kv1_worker_segment(const struct kv1_worker *w)
{
	return w->seg;
}

const char *kv1_worker_ip(const struct kv1_worker *w)
{
	return w->ip;
}

const char *kv1_worker_side_addr(const struct kv1_worker *w)
{
	return w->side_addr;
}

int kv1_worker_side_port(const struct kv1_worker *w)
{
	return w->side_port;
}

size_t kv1_worker_num_blocks(const struct kv1_worker *w)
{
	return w->o.num_blocks;
}

void kv1_worker_stats(struct kv1_worker *w, struct kv1_stats *st)
{
	st->bytes_sent = atomic_load(&w->bytes_sent);
	st->xfers = atomic_load(&w->xfers);
	st->xfer_failures = atomic_load(&w->xfer_failures);
	st->handshakes = atomic_load(&w->handshakes);
	st->unknown_ids = atomic_load(&w->unknown_ids);
	st->expired = atomic_load(&w->expired);
	st->rejected = atomic_load(&w->rejected);
	st->alloc_waits = atomic_load(&w->alloc_waits);
	st->bytes_received_blocks = atomic_load(&w->bytes_recv);
	st->writes_abandoned = atomic_load(&w->writes_abandoned);
	st->writes_refused = atomic_load(&w->writes_refused);
	st->writes_abandoned_held = kv1_hold_count(w);
	st->recv_holds = atomic_load(&w->recv_holds);
	st->recvs_refused = atomic_load(&w->recvs_refused);
	st->recv_held_blocks = kv1_rhold_count(w);
}
