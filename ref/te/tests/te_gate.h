/* SPDX-License-Identifier: Apache-2.0 */
/* te_gate: for tests, holds the engine's TCP server back on READ answers or WRITE bodies
 * (te_test_set_read_hook / te_test_set_write_hook) until released, so a transfer can be made
 * to time out while its bytes are still to come. One gate per process. */
#ifndef TE_GATE_H
#define TE_GATE_H

#include <stdbool.h>

enum te_gate_kind { TE_GATE_READ, TE_GATE_WRITE };

/* Hooks the server: the first `limit` READs (or WRITEs) it serves wait at the gate. */
void te_gate_arm(enum te_gate_kind kind, int limit);
/* How many are (or were) held since te_gate_arm. */
int te_gate_seen(void);
/* Waits until one is held, at most timeout_s seconds; false if none came. */
bool te_gate_wait_held(int timeout_s);
/* Lets the held ones (and every later one) through and unhooks the server. */
void te_gate_release(void);

#endif
