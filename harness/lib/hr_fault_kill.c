/* SPDX-License-Identifier: Apache-2.0 */
/* hr_fault_kill: the fault kind {"at": "during_workload", "after_ms": N, "kill":
 * "decode"|"prefill"|"metadata", "signal": "TERM"|"KILL", "restart": true, "restart_after_ms":
 * M} — signal a stand-in's group or the metadata service, and start it again when asked. */
#include "hr_faults.h"
#include "hr_launch.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define RESTART_HEALTH_S 60 /* a restarted node must be healthy within this */

static bool one_of(const cJSON *v, const char *a, const char *b, const char *c)
{
	return cJSON_IsString(v) && (!strcmp(v->valuestring, a) || !strcmp(v->valuestring, b) ||
	                             (c && !strcmp(v->valuestring, c)));
}

static bool ms_ok(const cJSON *v)
{
	return !v || (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 600000);
}

static int kill_parse(const char *path, const char *field, const cJSON *e, char *err, size_t errsz)
{
	static const char *const keys[] = {"at",     "after_ms", "kill",
	                                   "signal", "restart",  "restart_after_ms"};
	const cJSON *rs = cJSON_GetObjectItemCaseSensitive(e, "restart");
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

/* A stand-in: signal its group, reap it; restart with what hr_spawn ran, and wait for health. */
static void node_fault(struct hr_pfaults *f, struct hr_node *n, int sig, bool restart,
                       double restart_at)
{
	char why[800] = "";
	cJSON *argv;
	int hret;
	if (n->proc.pid <= 0) {
		hr_fault_note(f, "%s not running at +%.1fs", n->name, pd_now_s() - f->t0);
		return;
	}
	if (n->ops && n->ops->signal)
		n->ops->signal(f->d, n, sig);
	else
		kill(-n->proc.pid, sig);
	if (pd_proc_wait(&n->proc, 10000)) {
		hr_fault_note(f, "%s ignored SIG%s for 10 s; killed", n->name,
		              sig == SIGTERM ? "TERM" : "KILL");
		pd_proc_stop(&n->proc, 0);
	}
	hr_fault_note(f, "%s SIG%s at +%.1fs", n->name, sig == SIGTERM ? "TERM" : "KILL",
	              pd_now_s() - f->t0);
	if (!restart || !hr_fault_wait_until(f, restart_at))
		return;
	char name[sizeof(n->name)];
	snprintf(name, sizeof(name), "%s", n->name); /* hr_spawn rewrites n->name */
	argv = cJSON_Duplicate(n->spawn_argv, 1);
	if (!argv || hr_spawn(f->d, n, name, argv, n->spawn_env)) {
		hr_fault_note(f, "%s restart failed", n->name);
		cJSON_Delete(argv);
		return;
	}
	cJSON_Delete(argv);
	hret =
	    hr_wait_healthy(f->d, &n, 1, pd_now_s() + RESTART_HEALTH_S, &f->stop, why, sizeof(why));
	if (hret && !f->stop && !hr_node_alive(f->d, n)) {
		/* as with Mooncake, an engine that finds its own stale rpc_meta key (re-published
		 * by its killed predecessor's keeper) removes it and fails; the next start works */
		hr_fault_note(f, "%s exited while restarting (%.120s); started once more", name,
		              why);
		argv = cJSON_Duplicate(n->spawn_argv, 1);
		if (!argv || hr_spawn(f->d, n, name, argv, n->spawn_env)) {
			hr_fault_note(f, "%s restart failed", name);
			cJSON_Delete(argv);
			return;
		}
		cJSON_Delete(argv);
		hret = hr_wait_healthy(f->d, &n, 1, pd_now_s() + RESTART_HEALTH_S, &f->stop, why,
		                       sizeof(why));
	}
	if (hret)
		hr_fault_note(f, "%s restarted but not healthy: %.200s", n->name, why);
	else
		hr_fault_note(f, "%s restarted, healthy at +%.1fs", n->name, pd_now_s() - f->t0);
}

static void meta_fault(struct hr_pfaults *f, int sig, bool restart, double restart_at)
{
	struct hr_deploy *d = f->d;
	if (!d->meta_up) {
		hr_fault_note(f, "no metadata service to kill (P2PHANDSHAKE)");
		return;
	}
	pd_svc_kill(&d->meta, sig);
	hr_fault_note(f, "metadata (%s) SIG%s at +%.1fs", pd_svc_kind_name(d->meta.kind),
	              sig == SIGTERM ? "TERM" : "KILL", pd_now_s() - f->t0);
	if (!restart || !hr_fault_wait_until(f, restart_at))
		return;
	if (pd_svc_restart(&d->meta))
		hr_fault_note(f, "metadata restart failed");
	else
		hr_fault_note(f, "metadata restarted empty at +%.1fs", pd_now_s() - f->t0);
}

static void kill_run(struct hr_pfaults *f, const cJSON *e)
{
	const cJSON *rms = cJSON_GetObjectItemCaseSensitive(e, "restart_after_ms");
	const cJSON *sg = cJSON_GetObjectItemCaseSensitive(e, "signal");
	const char *who = cJSON_GetObjectItemCaseSensitive(e, "kill")->valuestring;
	int sig = sg && !strcmp(sg->valuestring, "TERM") ? SIGTERM : SIGKILL;
	bool restart = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "restart"));

	f->restarted |= restart;
	if (!strcmp(who, "metadata"))
		meta_fault(f, sig, restart, pd_now_s() + (rms ? rms->valuedouble : 500) / 1e3);
	else
		node_fault(f, !strcmp(who, "decode") ? &f->d->decode : &f->d->prefill, sig, restart,
		           pd_now_s() + (rms ? rms->valuedouble : 500) / 1e3);
}

const struct hr_fault_kind hr_fault_kill = {
    .key = "kill",
    .hostile = false,
    .parse = kill_parse,
    .run = kill_run,
};
