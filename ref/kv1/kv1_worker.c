/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_worker: one V1 connector worker's lifetime — engine set-up as vLLM does it, lazily mapped
 * KV buffers, the parts below wired together at create and torn down in order; accessors, stats. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>
#include <zmq.h>

#include "kv1_internal.h"
#include "te/te_gpu.h"
#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"

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

int kv1_worker_create(const struct kv1_opts *o, struct kv1_worker **out, char *err, size_t errsz)
{
	struct kv1_worker *w = calloc(1, sizeof(*w));
	struct te_engine_opts eo;
	const char *ip = o->ip ? o->ip : pd_env_str("VLLM_HOST_IP");
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
	kv1_handler_threads_init(w);
	if (o->nbufs < 1 || o->nbufs > KV1_MAX_BUFS || !o->block_len || !o->num_blocks) {
		kv1_set_err(err, errsz,
		            "kv1: bad KV layout (%d buffers, block_len %zu, %zu blocks)", o->nbufs,
		            o->block_len, o->num_blocks);
		goto fail;
	}
	if (o->pp_rank < 0 || o->pp_rank >= KV1_BOOT_MAX_PP || o->first_layer < 0 ||
	    o->first_layer > 1 << 20) {
		kv1_set_err(err, errsz, "kv1: bad PP stage (pp_rank %d of 0..%d, first layer %d)",
		            o->pp_rank, KV1_BOOT_MAX_PP - 1, o->first_layer);
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
	eo.metadata_conn = CFG_META_P2P;
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
	if (o->kv_groups > 1 &&
	    (o->kv_groups > KV1_MAX_KV_GROUPS || !o->buf_group || o->gen < CFG_GEN_B2)) {
		kv1_set_err(err, errsz,
		            "kv1: %d KV-cache groups need a gen-B shape from b2 on, a group per "
		            "buffer and at most %d groups",
		            o->kv_groups, KV1_MAX_KV_GROUPS);
		goto fail;
	}
	for (int i = 0; o->kv_groups > 1 && i < o->nbufs; i++) {
		if (o->buf_group[i] >= o->kv_groups) {
			kv1_set_err(err, errsz,
			            "kv1: buffer %d's KV-cache group %d is not below %d", i,
			            o->buf_group[i], o->kv_groups);
			goto fail;
		}
		w->grp[i] = o->buf_group[i];
	}
	w->o.buf_group = NULL; /* copied into w->grp */
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
	if (o->producer && kv1_router_start(w, err, errsz))
		goto fail;
	if (o->producer && cfg_gen_is_b(o->gen) && o->bootstrap_url &&
	    kv1_boot_register(o->bootstrap_url, w->engine_id, o->dp_index, o->tp_rank, o->pp_rank,
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
	/* kept handler threads hold PUSH sockets: they close them before the context ends */
	kv1_handler_threads_stop(w);
	if (atomic_load(&w->handlers) > 0 || atomic_load(&w->pool_live) > 0) {
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
	kv1_handler_threads_fini(w);
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
	st->recv_p_timeouts = atomic_load(&w->recv_p_timeouts);
	st->recv_no_answer = atomic_load(&w->recv_no_answer);
	st->recv_held_blocks = kv1_rhold_count(w);
	st->landed_idle_wakes = atomic_load(&w->landed_idle_wakes);
	st->handler_threads_started = atomic_load(&w->pool_started);
	pthread_mutex_lock(&w->pmu);
	st->handler_threads_waiting = (uint64_t)w->pool_idle;
	pthread_mutex_unlock(&w->pmu);
}
