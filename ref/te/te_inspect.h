/* SPDX-License-Identifier: Apache-2.0 */
/* te_inspect: a read-only window on the engine for tools (pdkv bench, pdkv doctor) — which
 * transports are built in, the local address, views of a segment, metadata-store lookups. */
#ifndef TE_INSPECT_H
#define TE_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "te.h"

/* Transports built into this binary, i = 0, 1, ...: "tcp", then "rdma" when linked, then
 * "nvlink_intra"; NULL past the end. */
const char *te_inspect_transport(int i);

/* The IPv4 address an engine publishes: MC_TCP_BIND_ADDRESS, else the first non-loopback
 * interface that is UP and RUNNING, else 127.0.0.1. */
void te_inspect_local_ip(char *out, size_t len);

/* A segment as the engine sees it (the local one by its own name, or a peer, fetched and
 * cached as te_open_segment does). */
struct te_segment_view {
	char name[256];
	char protocol[16]; /* "tcp" | "rdma" | "nvlink_intra" */
	int tcp_data_port; /* 0 = not published */
	int tcp_proto_version;
	int ndevices;
	int nbuffers;
};
struct te_buffer_view {
	char name[256]; /* location ("cpu:0") for rdma, server name for tcp */
	uint64_t addr, length;
};
int te_inspect_segment(struct te_engine *eng, const char *name, struct te_segment_view *v);
/* Buffer i (0-based) of that segment; TE_ERR_OUT_OF_RANGE past the last one. */
int te_inspect_buffer(struct te_engine *eng, const char *name, int i, struct te_buffer_view *b);

/* How this engine's requests to segment name travel: "cuda-ipc" (nvlink_intra to a peer on
 * this host), "tcp" (staging), "rdma"; "unknown" when the segment cannot be fetched. */
const char *te_inspect_peer_path(struct te_engine *eng, const char *name);

/* The rpc endpoint a segment published in a metadata store (conn as te_engine_opts.metadata,
 * not P2PHANDSHAKE), without creating an engine. The reason goes to err on failure. */
int te_inspect_rpc_meta(const char *conn, const char *segment, char *host, size_t hostlen,
                        int *rpc_port, char *err, size_t errlen);
/* Does the store behind conn answer? Opens it and reads one (absent) key. 0 = it answered;
 * else *opened tells whether the connection string was accepted at all, and err why not. */
int te_inspect_meta_probe(const char *conn, bool *opened, char *err, size_t errlen);

/* Tests only: fn(addr, len) runs on a TCP data server thread of this process before it answers
 * a READ of host memory, so a test can hold a target's answer back (a slow target). Nothing
 * changes on the wire. NULL (the default) removes it. */
typedef void (*te_test_read_fn)(uint64_t addr, uint64_t len);
void te_test_set_read_hook(te_test_read_fn fn);
/* Tests only: fn(addr, len) runs on a TCP data server thread of this process after a WRITE's
 * header into host memory was accepted and before its body is read off the socket, so a test
 * can hold a WRITE back (a slow target: the initiator's lane stays inside the body). Nothing
 * changes on the wire. NULL (the default) removes it. */
void te_test_set_write_hook(te_test_read_fn fn);

#endif
