/* SPDX-License-Identifier: Apache-2.0 */
/* px_fault: router faults for detector self-tests (pdkv-proxy --fault). */
#ifndef PX_FAULT_H
#define PX_FAULT_H

#include <stddef.h>

#include "px_contract.h"

enum {
	PX_FAULT_DROP_TRANSFER_ID = 1,
	PX_FAULT_NO_COPY_PARAMS = 2,
	PX_FAULT_IGNORE_PREFILL_ERRORS = 4,
	PX_FAULT_REUSE_TRANSFER_ID = 8
};

/* reuse-transfer-id: every second request gets the transfer_id of the one before it (tid is
 * rewritten in place), so two prefills with the same id can be pending at once (vLLM #49796). */
void px_fault_transfer_id(char *tid, size_t n);

/* Comma list of fault names into *out (bits ORed). 0 or -EINVAL with err naming the value. */
int px_fault_parse(const char *spec, unsigned *out, char *err, size_t errsz);
/* The contract row with the faults applied (k itself when faults == 0). */
const struct px_contract *px_fault_contract(const struct px_contract *k, unsigned faults);

#endif
