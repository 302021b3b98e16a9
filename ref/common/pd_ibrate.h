/* SPDX-License-Identifier: Apache-2.0 */
/* pd_ibrate: InfiniBand/RoCE port rate tables — ibv_port_attr active_speed / active_width codes
 * to per-lane data rate and lane count (shared by pdkv doctor and pdkv bench's % of line rate). */
#ifndef PD_IBRATE_H
#define PD_IBRATE_H

#include <stdint.h>

/* Data rate per lane in Gb/s for an active_speed code (encoding overhead removed); 0 = unknown. */
double pd_ib_lane_gbps(uint8_t active_speed);
/* Lanes for an active_width code (1x, 2x, 4x, 8x, 12x); 0 = unknown. */
int pd_ib_lanes(uint8_t active_width);

#endif
