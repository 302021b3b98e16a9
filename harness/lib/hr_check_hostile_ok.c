/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_hostile_ok: after a rogue side-channel peer or a connection flood ("faults" with
 * "rogue" / "flood"), nothing hung and nothing went unsaid — every request ended with a full
 * answer or an HTTP error, a request afterwards was answered in full, and prefill noticed a
 * rogue peer (a WARNING in its log, a counter on /metrics). */
#include "hr.h"

#include <string.h>

/* 200 in full, or an error status with a body that says why. */
static bool clear_end(const struct hr_req *q, bool stream)
{
	if (q->status == 200)
		return !q->invalid && (!stream || q->done_marker);
	return q->status >= 400 && q->body && q->body[0];
}

static bool hostile_ok(const struct hr_run_data *rd, char *detail, size_t sz)
{
	const char *n = rd->pf_notes;
	bool rogue = strstr(n, "rogue on prefill") != NULL;
	int ok = 0, refused = 0, unclear = -1;
	double counted;

	if (!rogue && !strstr(n, "flood (")) {
		snprintf(detail, sz, "no rogue or flood fault was carried out: %.900s", n);
		return false;
	}
	if (strstr(n, "could not")) {
		snprintf(detail, sz, "a hostile fault could not run: %.900s", n);
		return false;
	}
	for (size_t i = 0; i < rd->nreqs; i++) {
		const struct hr_req *q = &rd->reqs[i];
		if (!clear_end(q, rd->sc && rd->sc->wl.stream)) {
			if (unclear < 0)
				unclear = (int)i;
			continue;
		}
		q->status == 200 ? ok++ : refused++;
	}
	if (unclear >= 0) {
		const struct hr_req *q = &rd->reqs[unclear];
		snprintf(detail, sz,
		         "request #%d ended without a full answer or an error (HTTP %ld%s%s, "
		         "%.1f s%s%s); faults: %.700s",
		         unclear, q->status, q->curl_err[0] ? ", " : "", q->curl_err, q->secs,
		         q->invalid ? ", " : "", q->invalid ? q->invalid : "", n);
		return false;
	}
	if (!strstr(n, "probe after the faults: HTTP 200 complete")) {
		snprintf(detail, sz,
		         "the request sent after the faults was not answered in full: %.900s", n);
		return false;
	}
	counted =
	    hr_metric_delta(&rd->p_before, &rd->p_after,
	                    "pdkv_kvc_side_channel_extra_peers_total") +
	    hr_metric_delta(&rd->p_before, &rd->p_after, "pdkv_kv_side_channel_rejected_total");
	if (rogue && (strstr(n, "logged 0 warning") || !(counted > 0))) {
		snprintf(detail, sz,
		         "prefill did not say so: %s (side-channel counters +%.0f); faults: %.700s",
		         strstr(n, "logged 0 warning") ? "no WARNING in its log" : "it logged",
		         counted, n);
		return false;
	}
	snprintf(detail, sz,
	         "%d answered in full, %d refused with an HTTP error, none hung%s; %.800s", ok,
	         refused, rogue ? ", prefill counted the rogue peer" : "", n);
	if (rogue) {
		size_t l = strlen(detail);
		snprintf(detail + l, sz - l, " (side-channel counters +%.0f)", counted);
	}
	return true;
}

const struct hr_check hr_check_hostile_ok = {
    .name = "hostile_ok",
    .what = "after a rogue side-channel peer or a connection flood every request ended with a "
            "full answer or an HTTP error, a later request is answered in full, and prefill "
            "logged and counted a rogue peer",
    .fn = hostile_ok,
};
