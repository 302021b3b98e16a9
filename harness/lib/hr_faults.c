/* SPDX-License-Identifier: Apache-2.0 */
/* hr_faults: the table of process-fault kinds of a scenario's "faults" list (one file each:
 * hr_fault_kill.c, hr_fault_rogue.c, hr_fault_flood.c) and the thread that runs them while the
 * workload runs, each at its "after_ms" and noted. That thread lives until the
 * deployment stops (hr_faults_release): a node or metadata service it restarted was forked
 * from it, and PR_SET_PDEATHSIG (pd_proc) signals a child when the thread that forked it
 * exits, not the process — a thread that ended after its probe took the restarted decode
 * down with it, just before the runner read its /metrics. */
#include "hr_faults.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"

/* The kinds, in the order an entry is matched (a hostile key first, as before the table). */
#define HR_FAULT_KINDS(X)                                                                          \
	X(rogue)                                                                                   \
	X(flood)                                                                                   \
	X(kill)

#define DECLARE(n) extern const struct hr_fault_kind hr_fault_##n;
HR_FAULT_KINDS(DECLARE)
#define ROW(n) &hr_fault_##n,
static const struct hr_fault_kind *const kinds[] = {HR_FAULT_KINDS(ROW)};

/* The kind an entry names by its key, NULL when none. */
static const struct hr_fault_kind *kind_of(const cJSON *e)
{
	for (size_t i = 0; cJSON_IsObject(e) && i < PD_ARRAY_SIZE(kinds); i++)
		if (cJSON_GetObjectItemCaseSensitive(e, kinds[i]->key))
			return kinds[i];
	return NULL;
}

bool hr_faults_is_process(const cJSON *e)
{
	return kind_of(e) != NULL;
}

int hr_faults_parse_entry(const char *path, const char *field, const cJSON *e, char *err,
                          size_t errsz)
{
	const struct hr_fault_kind *k = kind_of(e);
	if (!k) /* hr_hosts.c sends only what hr_faults_is_process accepted */
		return pd_field_err(path, err, errsz, field,
		                    "expected \"kill\", \"rogue\" or \"flood\"");
	return k->parse(path, field, e, err, errsz);
}

/* One request through the proxy after the faults: did the system come back? */
static void probe_into(struct hr_deploy *d, char *notes, size_t nsz)
{
	struct hr_scenario one = *d->sc;
	struct hr_req q;
	volatile sig_atomic_t never = 0;
	bool full;

	memset(&q, 0, sizeof(q));
	one.wl.requests = one.wl.concurrency = 1;
	q.idx = 9999;
	q.planned_tokens = one.wl.prompt_tokens ? one.wl.prompt_tokens[0] : 300;
	q.usage_prompt = q.usage_completion = -1;
	q.prompt =
	    one.wl.prompts ? strdup(one.wl.prompts[0]) : hr_prompt_text(q.idx, q.planned_tokens, 7);
	if (!q.prompt)
		return;
	hr_workload_run(d->proxy.base_url, &one, &q, pd_now_s() + 60, &never, NULL, NULL);
	full = q.status == 200 && !q.invalid && (!one.wl.stream || q.done_marker);
	hr_note_add(notes, nsz, "probe after the faults: HTTP %ld %s", q.status,
	            full ? "complete" : "incomplete");
	free(q.prompt);
	free(q.body);
	free(q.text);
	free(q.invalid);
}

static void probe(struct hr_pfaults *f)
{
	probe_into(f->d, f->notes, sizeof(f->notes));
}

void hr_faults_probe_hostile(struct hr_deploy *d, char *notes, size_t nsz)
{
	bool hostile = false, restart = false;
	for (const cJSON *e = d->sc->faults ? d->sc->faults->child : NULL; e; e = e->next) {
		const struct hr_fault_kind *k = kind_of(e);
		hostile |= k && k->hostile;
		restart |= cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "restart"));
	}
	if (hostile && !restart) /* a restart's probe ran already, before /metrics */
		probe_into(d, notes, nsz);
}

static void *fault_main(void *ud)
{
	struct hr_pfaults *f = ud;
	for (const cJSON *e = f->d->sc->faults->child; e && !f->stop; e = e->next) {
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(e, "after_ms");
		const struct hr_fault_kind *k = kind_of(e);
		if (!k)
			continue;
		if (!hr_fault_wait_until(f, f->t0 + (ms ? ms->valuedouble : 200) / 1000.0))
			break;
		k->run(f, e);
	}
	if (f->restarted && !f->stop)
		probe(f);
	pthread_mutex_lock(&f->mu);
	f->done = true;
	pthread_cond_broadcast(&f->cv);
	while (!f->release) /* what it forked dies with it */
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

void hr_faults_start(struct hr_deploy *d)
{
	bool any = false;
	for (const cJSON *e = d->sc->faults ? d->sc->faults->child : NULL; e; e = e->next)
		any |= hr_faults_is_process(e);
	if (!any || d->pf)
		return;
	d->pf = calloc(1, sizeof(*d->pf));
	if (!d->pf)
		return;
	d->pf->d = d;
	d->pf->t0 = pd_now_s();
	pthread_mutex_init(&d->pf->mu, NULL);
	pthread_cond_init(&d->pf->cv, NULL);
	if (pthread_create(&d->pf->thr, NULL, fault_main, d->pf)) {
		pthread_mutex_destroy(&d->pf->mu);
		pthread_cond_destroy(&d->pf->cv);
		free(d->pf);
		d->pf = NULL;
		return;
	}
	/* a flood first and at after_ms 0 is in place before the first request (at most 3 s):
	 * the legitimate client then meets the servers already flooded */
	const cJSON *e0 = d->sc->faults->child;
	const cJSON *ms0 = e0 ? cJSON_GetObjectItemCaseSensitive(e0, "after_ms") : NULL;
	if (e0 && cJSON_GetObjectItemCaseSensitive(e0, "flood") && ms0 && ms0->valuedouble == 0)
		for (int i = 0; i < 300 && !d->pf->opened; i++)
			pd_sleep_ms(10);
}

void hr_faults_stop(struct hr_deploy *d, char *notes, size_t sz)
{
	struct hr_pfaults *f = d->pf;

	if (sz)
		notes[0] = '\0';
	if (!f)
		return;
	/* the workload is over: the faults still due run to the end (each bounded), so the
	 * restarts and the probe finish before the runner reads /metrics */
	pthread_mutex_lock(&f->mu);
	while (!f->done)
		pthread_cond_wait(&f->cv, &f->mu);
	snprintf(notes, sz, "%s", f->notes);
	pthread_mutex_unlock(&f->mu);
}

void hr_faults_release(struct hr_deploy *d)
{
	struct hr_pfaults *f = d->pf;

	if (!f)
		return;
	f->stop = 1; /* faults still due are skipped */
	pthread_mutex_lock(&f->mu);
	f->release = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->thr, NULL);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	free(f);
	d->pf = NULL;
}
