/* SPDX-License-Identifier: Apache-2.0 */
/* px_fault: router faults for detector self-tests (pdkv-proxy --fault). */
#ifndef PX_FAULT_H
#define PX_FAULT_H

#include <stdbool.h>
#include <stddef.h>

#include "px_contract.h"

enum {
	PX_FAULT_DROP_TRANSFER_ID = 1,
	PX_FAULT_NO_COPY_PARAMS = 2,
	PX_FAULT_IGNORE_PREFILL_ERRORS = 4,
	PX_FAULT_REUSE_TRANSFER_ID = 8
};

/* reuse-transfer-id: every second request gets the transfer_id of the one before it (tid is
 * rewritten in place), so two prefills with the same id can be pending at once (vLLM #49796).
 * 1 or 2 for the first and the second request of the first pair, which go through
 * px_fault_first_pair_prefill; 0 for the others. */
int px_fault_transfer_id(char *tid, size_t n);
/* reuse-transfer-id, the first pair (who: 1 or 2), called before its prefill call
 * (answered_now false) and once it has answered (true): the second's prefill goes after the
 * first's has answered (a non-streamed prefill answers after its blocks are ready), so it
 * finds the id pending and its blocks are freed, as vLLM does; then the first's decode goes
 * and takes the first's own KV, then the second's (after px_fault_first_pair_decoded), which
 * finds the id gone and times out: one failed request, every time. Each wait ends after ms.
 * Without this the collision was a race that a busy host or hosts on a network missed now
 * and then, and which decode took the KV was a coin toss (integrity then failed too). */
void px_fault_first_pair_prefill(int who, bool answered_now, int ms);
void px_fault_first_pair_decoded(void);
/* how long one of the pair waits for the other (a workload of one request at a time has no
 * second: it goes on alone, and the self-test fails as it should) */
#define PX_FAULT_MEET_MS 5000

/* Comma list of fault names into *out (bits ORed). 0 or -EINVAL with err naming the value. */
int px_fault_parse(const char *spec, unsigned *out, char *err, size_t errsz);
/* The contract row with the faults applied (k itself when faults == 0). */
const struct px_contract *px_fault_contract(const struct px_contract *k, unsigned faults);

#endif
