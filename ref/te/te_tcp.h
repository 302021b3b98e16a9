/* SPDX-License-Identifier: Apache-2.0 */
/* te_tcp: private seams of the TCP transport — wire constants, lanes/peers (client side,
 * te_tcp.c, te_tcp_lane.c) and the validating server (te_tcp_server.c). Socket helpers are
 * te_net.c's. */
#ifndef TE_TCP_H
#define TE_TCP_H

#include <sys/uio.h>

#include "te_internal.h"

#define TCP_HDR_LEN          24
#define TCP_OP_V2            0x80
#define TCP_STATUS_MAGIC     0x4D43545600000000ull /* "MCTV" in the high half */
#define TCP_SLICE_MAX        (8ull << 20)          /* larger requests are split over lanes */
#define TCP_MAX_LANES        16
#define TCP_MAX_SERVER_CONNS 256
#define TCP_IO_TIMEOUT_S     30
/* data server deadlines (env PDKV_TCP_HEADER_TIMEOUT_MS, PDKV_TCP_IDLE_TIMEOUT_S; 0 = no idle
 * limit): a new connection's first header and every started header must arrive within the
 * first; a persistent connection may sit idle between requests for the second */
#define TCP_HEADER_TIMEOUT_MS 10000
#define TCP_IDLE_TIMEOUT_S    900
#define TCP_IOV_MAX           64
#define TCP_GROUP_BYTES       (4u << 20)

struct tcp_slice {
	struct te_task *t;
	char *local;
	uint64_t raddr, len;
	uint64_t seq; /* order of hand-over to the sender's socket calls */
	uint8_t op;   /* TE_READ / TE_WRITE */
	bool ok;      /* deferred: how it ended */
	int gpu;      /* local memory: 1 + CUDA device (staged through pinned host), 0 = host */
};

struct slice_vec {
	struct tcp_slice *v;
	size_t n, cap, head; /* head: first unconsumed (used as a FIFO by the receiver) */
};

struct tcp_lane {
	struct tcp_peer *peer;
	int fd; /* -1 = not connected */
	pthread_t snd, rcv;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t snd_cv, rcv_cv;
	struct slice_vec sq; /* queued, not sent yet */
	struct slice_vec iq; /* sent (or being sent), awaiting a response, in wire order */
	bool broken, rcv_parked, stop;
	/* A WRITE whose status arrives while the sender is still inside the sendmsg that carried
	 * its body (seq > sent_seq) is not ended by the receiver: it waits in `deferred` and the
	 * sender ends it once that call has returned, so no engine thread (nor a sanitizer's
	 * post-call check) touches a source buffer after its task was reported finished. */
	uint64_t next_seq, sent_seq;
	struct slice_vec deferred;
	/* Send token: true while one thread (the sender, or a submitter sending inline) is in
	 * this lane's socket send calls. An inline send the socket did not fully take leaves its
	 * rest (numbered, queued in iq, the first one resume_off bytes on the wire) in resume,
	 * which the sender thread sends before anything in sq. */
	bool sending;
	struct slice_vec resume;
	uint64_t resume_off;
	struct te_gpu_stage *snd_stage, *rcv_stage; /* made on the first CUDA slice */
	/* receiver: a READ into CUDA memory (one staging chunk or less) whose copy is still queued
	 * on buffer rpend_k; it ends once the next body has been received (or before the receiver
	 * waits), so the copy overlaps that socket read. rpend.t NULL = none. */
	struct tcp_slice rpend;
	int rpend_k;
	int rcv_lowat; /* the socket's SO_RCVLOWAT (receiver); 1 on each new connection */
};

struct tcp_peer {
	struct te_transport *tp;
	char host[256];
	int port;
	bool v2;
	int nlanes;
	atomic_uint rr;
	struct tcp_lane lanes[TCP_MAX_LANES];
};

struct te_transport {
	struct te_engine *eng;
	int nlanes;
	bool proto_v1_only;
	/* client */
	pthread_mutex_t peers_mu;
	struct tcp_peer **peers;
	size_t npeers;
	/* server */
	int lfd; /* bound to rpc_port+1 by the engine; closed at destroy */
	struct te_net_server *srv;
	int hdr_timeout_ms, idle_timeout_ms;
	atomic_bool stopping; /* read by every server thread */
};

/* CUDA memory (te_tcp_gpu.c): body bytes between a socket and device memory of dev through
 * the thread's pinned double buffer (*sp, made on first use), chunk by chunk, the copy of one
 * chunk overlapping the socket I/O of the next. send: the npre iovecs (headers, statuses; at
 * most TCP_IOV_MAX) go out ahead of the body. 0, -errno (socket) or -EIO (CUDA, logged). */
struct te_gpu_stage;
/* recv: the first headlen bytes (< chunk) come from head (already read off the socket); drain =
 * false returns with the last copies still queued on the stage's stream (te_gpu_stage_drain). */
int te_tcp_gpu_recv(struct te_gpu_stage **sp, int dev, int fd, const void *head, size_t headlen,
                    char *dst, size_t len, bool drain);
int te_tcp_gpu_send(struct te_gpu_stage **sp, int dev, int fd, const struct iovec *pre, int npre,
                    const char *src, size_t len);
/* lanes (te_tcp_lane.c): start/stop a lane's threads (stop fails what is still queued);
 * send_inline sends host-memory slices from the caller's thread when the lane is connected and
 * idle (false: nothing done, queue them); queue hands slices to the sender thread. */
int te_tcp_lane_start(struct tcp_peer *p, struct tcp_lane *l);
void te_tcp_lane_stop(struct tcp_lane *l);
bool te_tcp_lane_send_inline(struct tcp_lane *l, struct tcp_slice *v, size_t n);
void te_tcp_lane_queue(struct tcp_lane *l, const struct tcp_slice *v, size_t n);
/* server (te_tcp_server.c): listens on tp->lfd (already bound), accept thread + one thread per
 * connection; stop closes every connection and waits for the threads. */
int te_tcp_server_start(struct te_transport *tp);
void te_tcp_server_stop(struct te_transport *tp);

#endif
