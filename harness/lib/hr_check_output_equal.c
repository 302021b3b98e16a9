/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_output_equal: the disaggregated answer to each request is byte-identical to the same
 * request on one plain (non-disaggregated) stand-in — greedy decoding makes that exact. */
#include "hr.h"

#include <string.h>

static void clip(char *dst, size_t sz, const char *s)
{
	size_t n = strlen(s);
	if (n < sz) {
		memcpy(dst, s, n + 1);
		return;
	}
	snprintf(dst, sz, "%.*s...", (int)(sz - 4), s);
}

void hr_note_dup_transfer_ids(const struct hr_req *reqs, size_t n, char *detail, size_t sz)
{
	size_t dups = 0;

	for (size_t i = 0; i < n; i++) {
		size_t first_j = 0, more = 0;

		if (!reqs[i].transfer_id[0])
			continue;
		for (size_t k = 0; k < i; k++) /* reported once, at its first request */
			if (!strcmp(reqs[k].transfer_id, reqs[i].transfer_id))
				goto next;
		for (size_t j = i + 1; j < n; j++)
			if (!strcmp(reqs[j].transfer_id, reqs[i].transfer_id) && !more++)
				first_j = j;
		if (more && dups++ < 2) {
			size_t k = strlen(detail);
			snprintf(
			    detail + k, sz > k ? sz - k : 0,
			    "; transfer_id %s was used by requests %zu and %zu%s (a router must "
			    "give each request its own)",
			    reqs[i].transfer_id, i, first_j, more > 1 ? " and more" : "");
		}
	next:;
	}
	if (dups > 2) {
		size_t k = strlen(detail);
		snprintf(detail + k, sz > k ? sz - k : 0, "; %zu transfer_ids reused in all", dups);
	}
}

static bool output_equal(const struct hr_run_data *rd, char *detail, size_t sz)
{
	size_t differ = 0, uncompared = 0, first = (size_t)-1, cut = 0;
	const char *ref = rd->external ? "reference instance" : "plain stand-in";
	if (!rd->plain) {
		snprintf(detail, sz, "no plain stand-in answers to compare with");
		return false;
	}
	for (size_t i = 0; i < rd->nreqs; i++) {
		const struct hr_req *a = &rd->reqs[i], *b = &rd->plain[i];
		if (a->cut || b->cut) { /* a client that hung up on purpose has no answer */
			cut++;
			continue;
		}
		if (!a->text || !b->text) {
			uncompared++;
			continue;
		}
		if (strcmp(a->text, b->text) && !differ++)
			first = i;
	}
	if (differ) {
		char got[100], want[100];
		clip(got, sizeof(got), rd->reqs[first].text);
		clip(want, sizeof(want), rd->plain[first].text);
		snprintf(detail, sz,
		         "%zu of %zu answers differ from the %s; first: request %zu "
		         "(%d prompt tokens): got \"%s\", plain \"%s\"",
		         differ, rd->nreqs, ref, first, rd->reqs[first].planned_tokens, got, want);
		hr_note_dup_transfer_ids(rd->reqs, rd->nreqs, detail, sz);
		return false;
	}
	if (uncompared) {
		snprintf(detail, sz, "%zu of %zu answers could not be compared (a request failed)",
		         uncompared, rd->nreqs);
		hr_note_dup_transfer_ids(rd->reqs, rd->nreqs, detail, sz);
		return false;
	}
	snprintf(detail, sz, "%zu of %zu answers identical to the %s%s", rd->nreqs - cut,
	         rd->nreqs - cut, ref, cut ? " (the clients that hung up aside)" : "");
	return true;
}

const struct hr_check hr_check_output_equal = {
    .name = "output_equal",
    .what = "each answer identical to the same request on a plain non-disaggregated stand-in",
    .needs_plain = true,
    .fn = output_equal,
};
