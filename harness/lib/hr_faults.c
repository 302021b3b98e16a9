/* SPDX-License-Identifier: Apache-2.0 */
/* hr_faults: process faults of a scenario's "faults" list — {"at": "during_workload",
 * "after_ms": N, "kill": "decode"|"prefill"|"metadata", "signal": "TERM"|"KILL", "restart":
 * true, "restart_after_ms": M}, and the hostile peers of hr_fault_hostile.c ("rogue", "flood")
 * — run on one thread while the workload runs, each noted. That thread lives until the
 * deployment stops (hr_faults_release): a node or metadata service it restarted was forked
 * from it, and PR_SET_PDEATHSIG (pd_proc) signals a child when the thread that forked it
 * exits, not the process — a thread that ended after its probe took the restarted decode
 * down with it, just before the runner read its /metrics. */
#include "hr_deploy.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"

#define RESTART_HEALTH_S 60 /* a restarted node must be healthy within this */

struct hr_pfaults {
	struct hr_deploy *d;
	pthread_t thr;
	volatile sig_atomic_t stop;
	volatile sig_atomic_t opened; /* a flood's connections are open (hr_fault_flood_run) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;    /* the faults and the probe are over (hr_faults_stop waits for it) */
	bool release; /* the deployment has stopped: the thread may end (hr_faults_release) */
	double t0;
	char notes[2048];
};

bool hr_faults_is_process(const cJSON *e)
{
	return cJSON_IsObject(e) &&
	       (cJSON_GetObjectItemCaseSensitive(e, "kill") || hr_fault_is_hostile(e));
}

static bool one_of(const cJSON *v, const char *a, const char *b, const char *c)
{
	return cJSON_IsString(v) && (!strcmp(v->valuestring, a) || !strcmp(v->valuestring, b) ||
	                             (c && !strcmp(v->valuestring, c)));
}

static bool ms_ok(const cJSON *v)
{
	return !v || (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 600000);
}

int hr_faults_parse_entry(const char *path, const char *field, const cJSON *e, char *err,
                          size_t errsz)
{
	static const char *const keys[] = {"at",     "after_ms", "kill",
	                                   "signal", "restart",  "restart_after_ms"};
	const cJSON *rs = cJSON_GetObjectItemCaseSensitive(e, "restart");
	if (hr_fault_is_hostile(e))
		return hr_fault_hostile_parse(path, field, e, err, errsz);
	for (const cJSON *k = e->child; k; k = k->next) {
		bool known = false;
		for (size_t i = 0; i < PD_ARRAY_SIZE(keys); i++)
			known |= !strcmp(k->string, keys[i]);
		if (!known)
			return pd_field_err(
			    path, err, errsz, field,
			    "unknown key \"%s\" (a process fault has at, after_ms, kill, "
			    "signal, restart, restart_after_ms)",
			    k->string);
	}
	if (!one_of(cJSON_GetObjectItemCaseSensitive(e, "at"), "during_workload", "during_transfer",
	            NULL))
		return pd_field_err(path, err, errsz, field,
		                    "expected \"at\": \"during_workload\"");
	if (!one_of(cJSON_GetObjectItemCaseSensitive(e, "kill"), "decode", "prefill", "metadata"))
		return pd_field_err(path, err, errsz, field,
		                    "\"kill\": expected \"decode\", \"prefill\" or \"metadata\"");
	if (cJSON_GetObjectItemCaseSensitive(e, "signal") &&
	    !one_of(cJSON_GetObjectItemCaseSensitive(e, "signal"), "TERM", "KILL", NULL))
		return pd_field_err(path, err, errsz, field,
		                    "\"signal\": expected \"TERM\" or \"KILL\"");
	if (rs && !cJSON_IsBool(rs))
		return pd_field_err(path, err, errsz, field, "\"restart\": expected true or false");
	if (!ms_ok(cJSON_GetObjectItemCaseSensitive(e, "after_ms")) ||
	    !ms_ok(cJSON_GetObjectItemCaseSensitive(e, "restart_after_ms")))
		return pd_field_err(path, err, errsz, field,
		                    "\"after_ms\" / \"restart_after_ms\": expected 0..600000");
	return 0;
}

#define note(f, ...) hr_note_add((f)->notes, sizeof((f)->notes), __VA_ARGS__)

static bool wait_until(struct hr_pfaults *f, double at)
{
	while (!f->stop && pd_now_s() < at)
		pd_sleep_ms(20);
	return !f->stop;
}

/* A stand-in: signal its group, reap it; restart with what hr_spawn ran, and wait for health. */
static void node_fault(struct hr_pfaults *f, struct hr_node *n, int sig, bool restart,
                       double restart_at)
{
	char why[800] = "";
	cJSON *argv;
	int hret;
	if (n->proc.pid <= 0) {
		note(f, "%s not running at +%.1fs", n->name, pd_now_s() - f->t0);
		return;
	}
	kill(-n->proc.pid, sig);
	if (pd_proc_wait(&n->proc, 10000)) {
		note(f, "%s ignored SIG%s for 10 s; killed", n->name,
		     sig == SIGTERM ? "TERM" : "KILL");
		pd_proc_stop(&n->proc, 0);
	}
	note(f, "%s SIG%s at +%.1fs", n->name, sig == SIGTERM ? "TERM" : "KILL",
	     pd_now_s() - f->t0);
	if (!restart || !wait_until(f, restart_at))
		return;
	char name[sizeof(n->name)];
	snprintf(name, sizeof(name), "%s", n->name); /* hr_spawn rewrites n->name */
	argv = cJSON_Duplicate(n->spawn_argv, 1);
	if (!argv || hr_spawn(f->d, n, name, argv, n->spawn_env)) {
		note(f, "%s restart failed", n->name);
		cJSON_Delete(argv);
		return;
	}
	cJSON_Delete(argv);
	hret =
	    hr_wait_healthy(f->d, &n, 1, pd_now_s() + RESTART_HEALTH_S, &f->stop, why, sizeof(why));
	if (hret && !f->stop && !hr_node_alive(f->d, n)) {
		/* as with Mooncake, an engine that finds its own stale rpc_meta key (re-published
		 * by its killed predecessor's keeper) removes it and fails; the next start works */
		note(f, "%s exited while restarting (%.120s); started once more", name, why);
		argv = cJSON_Duplicate(n->spawn_argv, 1);
		if (!argv || hr_spawn(f->d, n, name, argv, n->spawn_env)) {
			note(f, "%s restart failed", name);
			cJSON_Delete(argv);
			return;
		}
		cJSON_Delete(argv);
		hret = hr_wait_healthy(f->d, &n, 1, pd_now_s() + RESTART_HEALTH_S, &f->stop, why,
		                       sizeof(why));
	}
	if (hret)
		note(f, "%s restarted but not healthy: %.200s", n->name, why);
	else
		note(f, "%s restarted, healthy at +%.1fs", n->name, pd_now_s() - f->t0);
}

static void meta_fault(struct hr_pfaults *f, int sig, bool restart, double restart_at)
{
	struct hr_deploy *d = f->d;
	if (!d->meta_up) {
		note(f, "no metadata service to kill (P2PHANDSHAKE)");
		return;
	}
	pd_svc_kill(&d->meta, sig);
	note(f, "metadata (%s) SIG%s at +%.1fs", pd_svc_kind_name(d->meta.kind),
	     sig == SIGTERM ? "TERM" : "KILL", pd_now_s() - f->t0);
	if (!restart || !wait_until(f, restart_at))
		return;
	if (pd_svc_restart(&d->meta))
		note(f, "metadata restart failed");
	else
		note(f, "metadata restarted empty at +%.1fs", pd_now_s() - f->t0);
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
		hostile |= hr_fault_is_hostile(e);
		restart |= cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "restart"));
	}
	if (hostile && !restart) /* a restart's probe ran already, before /metrics */
		probe_into(d, notes, nsz);
}

static void *fault_main(void *ud)
{
	struct hr_pfaults *f = ud;
	bool restarted = false;
	for (const cJSON *e = f->d->sc->faults->child; e && !f->stop; e = e->next) {
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(e, "after_ms");
		const cJSON *rms = cJSON_GetObjectItemCaseSensitive(e, "restart_after_ms");
		const cJSON *sg = cJSON_GetObjectItemCaseSensitive(e, "signal");
		const char *who;
		double at;
		int sig;
		bool restart;
		if (!hr_faults_is_process(e))
			continue;
		at = f->t0 + (ms ? ms->valuedouble : 200) / 1000.0;
		if (hr_fault_is_hostile(e)) {
			if (!wait_until(f, at))
				break;
			if (cJSON_GetObjectItemCaseSensitive(e, "rogue"))
				hr_fault_rogue_run(f->d, e, &f->stop, f->notes, sizeof(f->notes));
			else
				hr_fault_flood_run(f->d, e, &f->stop, &f->opened, f->notes,
				                   sizeof(f->notes));
			continue;
		}
		who = cJSON_GetObjectItemCaseSensitive(e, "kill")->valuestring;
		sig = sg && !strcmp(sg->valuestring, "TERM") ? SIGTERM : SIGKILL;
		restart = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "restart"));
		if (!wait_until(f, at))
			break;
		restarted |= restart;
		if (!strcmp(who, "metadata"))
			meta_fault(f, sig, restart,
			           pd_now_s() + (rms ? rms->valuedouble : 500) / 1e3);
		else
			node_fault(f, !strcmp(who, "decode") ? &f->d->decode : &f->d->prefill, sig,
			           restart, pd_now_s() + (rms ? rms->valuedouble : 500) / 1e3);
	}
	if (restarted && !f->stop)
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
