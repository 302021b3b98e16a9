/* SPDX-License-Identifier: Apache-2.0 */
/* te_engine_priv: the engine's state, shared by te_engine.c (lifecycle, registration,
 * publishing, cleanup), te_segment.c (local and peer segments) and te_batch.c (batches). */
#ifndef TE_ENGINE_PRIV_H
#define TE_ENGINE_PRIV_H

#include <stdatomic.h>
#include "te_internal.h"

struct te_local_buf {
	uint64_t addr, len;
	int gpu;                    /* 1 + CUDA device for location "cuda:N", 0 = host memory */
	struct te_buffer_desc desc; /* what is published for it */
};

struct te_seg_entry {
	char name[TE_NAME_MAX];
	const struct te_segment_desc *desc; /* current; old ones stay alive (te_engine.descs) */
	char rpc_host[256];
	int rpc_port; /* 0 = not resolved yet */
};

struct te_engine {
	char name[TE_NAME_MAX];
	char local_ip[128];
	char conn[1024];
	char device_names[512];
	int rpc_port;
	int rpc_fd, data_fd;
	bool p2p;
	struct te_meta *meta;
	const struct te_transport_ops *ops;
	struct te_transport *tp;
	struct te_hs_server *hs;
	struct te_batch_table *batches;
	int slice_timeout_s;
	bool disable_metacache;
	_Atomic(te_landed_fn) landed_fn; /* te_engine_set_landed */
	void *_Atomic landed_ud;

	pthread_rwlock_t buf_lock; /* bufs (sorted by addr); read on every remote request */
	struct te_local_buf *bufs;
	size_t nbufs, bufcap;

	pthread_mutex_t pub_lock; /* local_desc, local_json, descs, key state */
	struct te_segment_desc *local_desc;
	char *local_json;
	bool rpc_published, seg_published;
	uint64_t
	    rpc_version; /* metadata_version of the published rpc_meta (the keeper reuses it) */

	pthread_mutex_t seg_lock;   /* segs, descs */
	struct te_seg_entry **segs; /* id = index + 1 */
	size_t nsegs, segcap;
	struct te_segment_desc **descs; /* every descriptor ever handed out; freed at destroy */
	size_t ndescs, desccap;

	struct { /* te_republish.c: puts lost metadata keys back */
		pthread_t thr;
		pthread_mutex_t mu;
		pthread_cond_t cv;
		int period_s;
		bool running, stop, unreachable;
		atomic_bool meta_ok; /* the last check reached the store */
	} keeper;
};

/* te_republish.c: start after the keys are published, stop before they are removed. */
void te_keeper_start(struct te_engine *eng);
void te_keeper_stop(struct te_engine *eng);

/* te_segment.c. Keeps d alive until destroy; caller holds seg_lock. 0 or TE_ERR_MEMORY. */
int te_engine_keep_desc(struct te_engine *eng, struct te_segment_desc *d);
/* Current local descriptor snapshot (id 0). */
const struct te_segment_desc *te_engine_local_desc(struct te_engine *eng);
void te_engine_free_segments(struct te_engine *eng);
/* Index of the first registered buffer with addr > a (bufs sorted by addr); caller holds
 * buf_lock. */
size_t te_local_buf_upper(const struct te_engine *eng, uint64_t a);

#endif
