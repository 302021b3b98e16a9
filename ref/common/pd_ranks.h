/* SPDX-License-Identifier: Apache-2.0 */
/* pd_ranks: the data-parallel rank bound shared by the gen B bootstrap server (ref/kv1/kv1_boot.c
 * accepts dp_rank 0..PD_MAX_DP_RANKS-1) and pdkv-proxy's mooncake contract (routes over them). */
#ifndef PD_RANKS_H
#define PD_RANKS_H

/* vLLM bounds neither (RegisterWorkerPayload.dp_rank: int, mooncake_utils.py; the router takes
 * len(/query)); pdkv needs one number so that what its server takes its router can route. */
#define PD_MAX_DP_RANKS 1024

#endif
