/* SPDX-License-Identifier: Apache-2.0 */
/* te_rdma: private types shared by the RDMA transport's files — device contexts (te_rdma_dev.c),
 * endpoints and the QP handshake (te_rdma_ep.c), slicing and workers (te_rdma.c). */
#ifndef TE_RDMA_H
#define TE_RDMA_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "te_internal.h"

#define TE_RDMA_MAX_QP_PER_EP 64

/* Knobs read once at install from MC_* (docs/rdma.md); defaults as Mooncake [P2]. */
struct te_rdma_cfg {
	int ib_port;       /* MC_IB_PORT 1 */
	int gid_index;     /* MC_GID_INDEX / NCCL_IB_GID_INDEX; -1 = auto */
	int mtu;           /* MC_MTU 4096 (bytes) */
	int num_qp_per_ep; /* MC_NUM_QP_PER_EP 2 */
	int max_wr;        /* MC_MAX_WR 256 */
	int max_sge;       /* MC_MAX_SGE 4 */
	int max_inline;    /* MC_MAX_INLINE 64 */
	int max_cqe;       /* MC_MAX_CQE_PER_CTX 4096 */
	size_t slice_size; /* MC_SLICE_SIZE 65536 */
	int retry_cnt;     /* MC_RETRY_CNT 9 */
	int hs_timeout_ms; /* MC_HANDSHAKE_CONNECT_TIMEOUT 5 s */
	int stall_ms;      /* PDKV_RDMA_STALL_S 5 s: reset an endpoint whose WRs make no progress */
	int fault_reset;   /* PDKV_RDMA_FAULT_RESET 0: reset the endpoint after every N-th WR posted
	                    * (fault injection: the retry path on demand) */
	int busy_poll;     /* PDKV_RDMA_BUSY_POLL 0: 1 = workers spin (yielding) instead of sleeping
	                    * on their queue and CQ: one request in flight, as ib_*_lat polls */
};

struct te_rdma;
struct te_rdma_ep;

/* One opened device (Mooncake's RdmaContext). */
struct te_rdma_ctx {
	struct te_rdma *tr;
	int index; /* position in devices[] of the published descriptor */
	char name[64];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *chan; /* the worker sleeps on it when WRs are in flight */
	int cq_armed;                  /* ibv_req_notify_cq issued, event not yet consumed */
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	char gid_str[48];
	uint16_t lid;
	int numa; /* NUMA node of the device (sysfs), -1 = none (rxe) */
	enum ibv_mtu path_mtu;
	int max_rd_atomic;
	int cq_depth;

	/* worker: one thread per context posts queued slices and polls the CQ */
	pthread_t worker;
	bool worker_started;
	pthread_mutex_t mu; /* queue + endpoint list */
	pthread_cond_t cv;
	struct te_rdma_slice *q_head, *q_tail;
	struct te_rdma_ep *eps;  /* live endpoints (lookup by peer NIC path) */
	unsigned long posted;    /* WRs posted (worker only): PDKV_RDMA_FAULT_RESET counts them */
	struct te_rdma_ep *dead; /* endpoints in ERR state, freed once their WRs have drained */
	int outstanding;         /* WRs posted on this CQ and not yet polled */
	uint64_t stall_scan_ns;
	bool stop;
	/* failover (docs/rdma.md): the worker checks the port every 100 ms; while it is not
	 * ACTIVE (link down under rxe, cable pulled) new slices go to the other devices, and this
	 * context's queued and flushed slices move there */
	atomic_bool down;
	uint64_t port_scan_ns;
	/* rails: this device's IPv4 (from its RoCEv2 GID) and the netmask of the interface that
	 * holds it (host order; mask 0 = unknown: no rail rule), looked up by the worker */
	uint32_t ip4, mask4;
	/* counters for te_rdma_stats.h (any thread reads them) */
	atomic_ullong st_bytes, st_slices, st_moved_in, st_moved_out;
};

enum te_rdma_ep_state { EP_NEW, EP_CONNECTED, EP_DEAD };

struct te_rdma_ep {
	struct te_rdma_ep *next;
	struct te_rdma_ctx *c;
	char peer_path[TE_NAME_MAX + 72]; /* "<server>@<dev>" */
	int state;
	int nqp;
	struct ibv_qp *qp[TE_RDMA_MAX_QP_PER_EP];
	int qp_outstanding[TE_RDMA_MAX_QP_PER_EP];
	int outstanding;
	unsigned rr;
	uint64_t progress_ns; /* last completion (or first post after idle) */
	char peer_gid[48];
	uint32_t peer_qpn[TE_RDMA_MAX_QP_PER_EP]; /* the peer's QPs, to match its ready ACK */
};

struct te_rdma_slice {
	struct te_rdma_slice *next;
	struct te_task *task;
	const struct te_buffer_desc *rb; /* remote buffer in task->peer holding the range */
	struct te_rdma_ep *ep;           /* while posted */
	int qp_idx;
	int lctx;     /* index of the local context of the current attempt */
	int rdev;     /* remote device index (into peer->devices) of the current attempt */
	unsigned idx; /* slice number, spreads slices over NICs */
	uint64_t local, remote;
	uint32_t len;
	int retries;
	int moved_from; /* context it left because that device went down; -1 = none */
	int last_wc;    /* ibv_wc_status of the last failed attempt; -1 = not a completion error */
	uint8_t ncand, cand[TE_MAX_DEVICES]; /* remote device candidates (peer's matrix) */
	uint32_t lkey[TE_MAX_DEVICES];       /* per local context */
};

struct te_rdma_mr {
	struct te_rdma_mr *next;
	uintptr_t addr;
	size_t len;
	struct ibv_mr *mr[TE_MAX_DEVICES];
};

struct te_rdma {
	struct te_engine *eng;
	struct te_rdma_cfg cfg;
	int nctx;
	struct te_rdma_ctx ctxs[TE_MAX_DEVICES];
	pthread_rwlock_t mr_lock;
	struct te_rdma_mr *mrs;
	unsigned rr; /* local device round robin */
};

/* te_rdma_dev.c */
void te_rdma_cfg_load(struct te_rdma_cfg *cfg);
/* Opens every device in names (comma list; NULL/"" = all found). On error pd_err()s a message
 * with the fix and returns TE_ERR_DEVICE_NOT_FOUND / TE_ERR_CONTEXT. */
int te_rdma_open_devices(struct te_rdma *tr, const char *names);
void te_rdma_close_ctx(struct te_rdma_ctx *c);
/* ibv_reg_mr on every context; RLIMIT_MEMLOCK diagnosis on failure. */
int te_rdma_reg(struct te_rdma *tr, void *addr, size_t len, struct te_rdma_mr **out);
void te_rdma_dereg(struct te_rdma_mr *m);
void te_rdma_gid_str(const union ibv_gid *g, char out[48]);
int te_rdma_gid_parse(const char *s, union ibv_gid *g);
/* Auto GID choice (docs/rdma.md): first RoCEv2 IPv4-mapped entry or IB type, else 0; -1 on no
 * table. */
int te_rdma_pick_gid(struct ibv_context *ctx, uint8_t port, int tbl_len);
const char *te_rdma_mtu_str(enum ibv_mtu m);

/* te_rdma_ep.c */
/* Finds or creates (and connects, active side) the endpoint to peer_path for context c.
 * Called by c's worker without c->mu held. NULL + errbuf on failure. */
struct te_rdma_ep *te_rdma_ep_get(struct te_rdma_ctx *c, const struct te_segment_desc *peer,
                                  int peer_dev, char *errbuf, size_t errlen);
/* Marks ep dead (QPs to ERR so its WRs flush) and unlinks it; caller holds c->mu. */
void te_rdma_ep_kill(struct te_rdma_ep *ep);
void te_rdma_ep_free(struct te_rdma_ep *ep);
/* Passive side of the Connection handshake (docs/handshake.md). */
char *te_rdma_on_connection(struct te_rdma *tr, const char *json, size_t len);

/* te_rdma_wire.c: the Connection handshake body. Current form (0.3.11+): local_gid, local_lid,
 * local_nic_path, payload "", peer_nic_path, qp_num, ready_ack, reply_msg; older form: the 4
 * keys local_nic_path, peer_nic_path, qp_num, reply_msg. Both are parsed. */
struct te_rdma_hs {
	char local_path[TE_NAME_MAX + 72], peer_path[TE_NAME_MAX + 72];
	uint32_t qpn[TE_RDMA_MAX_QP_PER_EP];
	int nqpn; /* as sent (may exceed TE_RDMA_MAX_QP_PER_EP; only that many are kept) */
	char reply_msg[256];
	char gid[48]; /* local_gid, "" = not sent */
	bool has_gid;
	uint16_t lid;
	bool ready_ack_supported; /* the key was there */
	bool ready_ack;           /* true: this frame is the active side's ready ACK */
};
char *te_rdma_hs_encode(const struct te_rdma_hs *h, bool current);
int te_rdma_hs_parse(const char *json, size_t len, struct te_rdma_hs *h);
/* The priority matrix text (compact, no "\n") for NICs nic[i] on NUMA node nic_numa[i] (-1 =
 * none), the host's nodes, and extra buffer locations. */
char *te_rdma_matrix_json(const char *const *nic, const int *nic_numa, int nnic, const int *node,
                          int nnode, const char *const *extra, int nextra);

#endif
