/* SPDX-License-Identifier: Apache-2.0 */
/* pd_tsan: the sync object behind PD_TSAN_WIRE_SEND / PD_TSAN_WIRE_RECV (pd_tsan.h); only its
 * address matters. Present in every build so that TSan and plain objects link together. */
#include "pd_tsan.h"

char pd_tsan_wire;
