/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_recovered: after the scenario's process faults ("kill" with "restart"), the system
 * works again — every fault was carried out, a request sent afterwards was answered in full, and a
 * restarted decode reused KV again (its own counters, which restart at 0). */
#include "hr.h"

#include <math.h>
#include <string.h>

static bool recovered(const struct hr_run_data *rd, char *detail, size_t sz)
{
	bool decode_restarted = strstr(rd->pf_notes, "decode restarted") != NULL;
	double reused =
	    rd->have_metrics ? hr_metrics_get(&rd->d_after, "pdkv_kv_reused_tokens_total") : NAN;

	if (!rd->pf_notes[0]) {
		snprintf(detail, sz, "no process fault was carried out");
		return false;
	}
	if (strstr(rd->pf_notes, "failed") || strstr(rd->pf_notes, "not healthy") ||
	    strstr(rd->pf_notes, "not running")) {
		snprintf(detail, sz, "a fault did not go as planned: %.900s", rd->pf_notes);
		return false;
	}
	if (!strstr(rd->pf_notes, "probe after the faults: HTTP 200 complete")) {
		snprintf(detail, sz,
		         "the request sent after the faults was not answered in full: "
		         "%.900s",
		         rd->pf_notes);
		return false;
	}
	if (decode_restarted && !(reused > 0)) {
		snprintf(detail, sz,
		         "the restarted decode reused no KV (pdkv_kv_reused_tokens_total "
		         "%.0f): the connector did not recover; faults: %.600s",
		         reused, rd->pf_notes);
		return false;
	}
	snprintf(detail, sz, "a request after the faults answered in full%s; faults: %.800s",
	         decode_restarted ? ", the restarted decode reused KV" : "", rd->pf_notes);
	return true;
}

const struct hr_check hr_check_recovered = {
    .name = "recovered",
    .what = "after process faults (kill, restart) a new request is answered in full and a "
            "restarted decode reuses KV again",
    .fn = recovered,
};
