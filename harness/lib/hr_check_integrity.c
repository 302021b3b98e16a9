/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_integrity: no KV block arrived with a checksum that did not match what prefill
 * computed (a corrupted byte on the wire or in a reused buffer). */
#include "hr.h"

#include <math.h>

static bool integrity(const struct hr_run_data *rd, char *detail, size_t sz)
{
	double d, p;
	if (!rd->have_metrics) {
		snprintf(detail, sz, "no /metrics from the stand-ins");
		return false;
	}
	if (isnan(hr_metrics_get(&rd->d_after, "pdkv_kv_checksum_failures_total"))) {
		snprintf(detail, sz, "decode /metrics has no pdkv_kv_checksum_failures_total");
		return false;
	}
	d = hr_metric_delta(&rd->d_before, &rd->d_after, "pdkv_kv_checksum_failures_total");
	p = hr_metric_delta(&rd->p_before, &rd->p_after, "pdkv_kv_checksum_failures_total");
	snprintf(detail, sz,
	         "checksum failures: decode %.0f, prefill %.0f (KV received %.0f bytes)", d, p,
	         hr_metric_delta(&rd->d_before, &rd->d_after, "pdkv_kv_bytes_received_total"));
	if (d || p)
		hr_note_dup_transfer_ids(rd->reqs, rd->nreqs, detail, sz);
	return d == 0 && p == 0;
}

const struct hr_check hr_check_integrity = {
    .name = "integrity",
    .what = "no checksum failures on the KV decode received",
    .fn = integrity,
};
