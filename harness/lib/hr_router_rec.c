/* SPDX-License-Identifier: Apache-2.0 */
/* hr_router_rec: reading the stand-ins' request records for the router_* checks — the prompt of
 * a recorded body, the record of a prompt, a body shown as evidence, the request it came from. */
#include "hr_router.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *hr_router_prompt(const cJSON *body)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(body, "prompt");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(body, "messages"), *last = NULL, *c;
	if (cJSON_IsString(p))
		return p->valuestring;
	for (const cJSON *e = cJSON_IsArray(m) ? m->child : NULL; e; e = e->next)
		last = e;
	c = last ? cJSON_GetObjectItemCaseSensitive(last, "content") : NULL;
	return cJSON_IsString(c) ? c->valuestring : NULL;
}

const cJSON *hr_router_find(const cJSON *rec, const char *prompt)
{
	for (const cJSON *r = rec ? rec->child : NULL; r && prompt; r = r->next) {
		const char *p = hr_router_prompt(cJSON_GetObjectItemCaseSensitive(r, "body"));
		if (p && !strcmp(p, prompt))
			return r;
	}
	return NULL;
}

char *hr_router_show(const cJSON *body, size_t max)
{
	cJSON *c = cJSON_Duplicate(body, 1);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(c, "prompt");
	char *s, note[64];
	if (!c)
		return strdup("(no body)");
	if (cJSON_IsString(p)) { /* the prompt is long and says nothing about the router */
		snprintf(note, sizeof(note), "<%zu bytes>", strlen(p->valuestring));
		cJSON_ReplaceItemInObjectCaseSensitive(c, "prompt", cJSON_CreateString(note));
	}
	if (cJSON_GetObjectItemCaseSensitive(c, "messages")) {
		cJSON_ReplaceItemInObjectCaseSensitive(c, "messages",
		                                       cJSON_CreateString("<messages>"));
	}
	s = cJSON_PrintUnformatted(c);
	cJSON_Delete(c);
	if (s && strlen(s) > max) {
		s[max - 3] = s[max - 2] = s[max - 1] = '.';
		s[max] = '\0';
	}
	return s;
}

const struct hr_req *hr_router_sent(const struct hr_run_data *rd, size_t i)
{
	const struct hr_req *q = i < rd->nreqs ? &rd->reqs[i] : i == rd->nreqs ? rd->probe : NULL;
	return q && (q->status || q->curl_err[0]) ? q : NULL;
}

void hr_router_evidence(char *out, size_t sz, const struct hr_run_data *rd, size_t i,
                        const char *what, const char *side, const cJSON *rec)
{
	const struct hr_req *q = i < rd->nreqs ? &rd->reqs[i] : rd->probe;
	char *body =
	    rec ? hr_router_show(cJSON_GetObjectItemCaseSensitive(rec, "body"), 400) : NULL;
	snprintf(out, sz, "%s request %d: %s%s%s%s%s", i < rd->nreqs ? "workload" : "streamed",
	         q->idx, what, body ? "; " : "", body ? side : "", body ? " got " : "",
	         body ? body : "");
	free(body);
}

bool hr_router_judge_sent(const struct hr_run_data *rd, hr_router_judge_fn judge, const char *side,
                          const char *noun, size_t *n, char *detail, size_t dsz)
{
	char why[400], first[900] = "";
	size_t bad = 0;
	*n = 0;
	if (!rd->router_phase) {
		snprintf(detail, dsz, "no request records (the router phases did not run)");
		return false;
	}
	for (size_t i = 0; i <= rd->nreqs; i++) {
		const struct hr_req *q = hr_router_sent(rd, i);
		const cJSON *rec = NULL;
		const char *w;
		if (!q)
			continue; /* never sent */
		(*n)++;
		w = judge(rd, i, q, &rec, why, sizeof(why));
		if (w && !bad++)
			hr_router_evidence(first, sizeof(first), rd, i, w, side, rec);
	}
	if (bad)
		snprintf(detail, dsz, "%zu of %zu %s wrong for the %s contract; first: %s", bad, *n,
		         noun, rd->contract, first);
	return !bad;
}
