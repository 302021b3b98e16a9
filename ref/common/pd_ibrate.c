/* SPDX-License-Identifier: Apache-2.0 */
/* pd_ibrate: the IB speed/width code tables behind "line rate" (doctor and bench share them);
 * no verbs calls here, only the codes of ibv_port_attr. */
#include "pd_ibrate.h"

double pd_ib_lane_gbps(uint8_t s)
{
	switch (s) {
	case 1:
		return 2.0; /* SDR */
	case 2:
		return 4.0; /* DDR */
	case 4:
		return 8.0; /* QDR */
	case 8:
		return 10.0; /* FDR10 */
	case 16:
		return 13.64; /* FDR */
	case 32:
		return 25.0; /* EDR */
	case 64:
		return 50.0; /* HDR */
	case 128:
		return 100.0; /* NDR */
	}
	return 0;
}

int pd_ib_lanes(uint8_t w)
{
	switch (w) {
	case 1:
		return 1;
	case 2:
		return 4;
	case 4:
		return 8;
	case 8:
		return 12;
	case 16:
		return 2;
	}
	return 0;
}
