/* SPDX-License-Identifier: Apache-2.0 */
/* te_rdma_stats: per-device counters of the RDMA transport for tools (pdkv bench's multi-device
 * share and failover report) — bytes and slices completed per local device, slices moved. */
#ifndef TE_RDMA_STATS_H
#define TE_RDMA_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "te.h"

struct te_rdma_dev_stat {
	char name[64];
	uint64_t bytes;     /* completed on this device (WRITE or READ payload) */
	uint64_t slices;    /* slices completed on it */
	uint64_t moved_in;  /* slices that completed here after leaving a down or failed device */
	uint64_t moved_out; /* slices that left this device (port down, completion error) */
	bool down;          /* port not ACTIVE at the last check */
};

/* Fills out[0..max) with the engine's RDMA devices in --device_name order; returns how many,
 * 0 when the engine does not run the rdma transport. Counters only grow: diff two calls. */
int te_rdma_device_stats(struct te_engine *eng, struct te_rdma_dev_stat *out, int max);

#endif
