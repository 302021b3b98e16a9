/* SPDX-License-Identifier: Apache-2.0 */
/* hr_hosts: scenario fields "hosts", "faults", "mtu"; the namespaces a scenario runs in, its
 * roles' addresses there, and the fault thread that cuts and restores links mid-workload. */
#include "hr_hosts.h"
#include "hr_deploy.h"
#include "pd_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const roles[] = {"prefill", "decode", "proxy", "metadata", "reference"};
#define NROLES (sizeof(roles) / sizeof(roles[0]))

static bool is_role(const char *k)
{
	for (size_t i = 0; i < NROLES; i++)
		if (!strcmp(k, roles[i]))
			return true;
	return false;
}

static bool names_host(const cJSON *hosts, const char *name)
{
	for (const cJSON *h = hosts ? hosts->child : NULL; h; h = h->next)
		if (!strcmp(h->valuestring, name))
			return true;
	return false;
}

static int parse_faults(const char *path, const cJSON *f, const cJSON *hosts, char *err, size_t sz)
{
	int i = 0;
	if (!cJSON_IsArray(f))
		return pd_field_err(path, err, sz, "faults",
		                    "expected an array of {\"at\", \"link\", "
		                    "\"action\"}");
	for (const cJSON *e = f->child; e; e = e->next, i++) {
		const cJSON *at = cJSON_GetObjectItemCaseSensitive(e, "at");
		if (hr_faults_is_process(e)) { /* {"kill": ...}: hr_faults.c */
			char pf[32];
			snprintf(pf, sizeof(pf), "faults[%d]", i);
			if (hr_faults_parse_entry(path, pf, e, err, sz))
				return -1;
			continue;
		}
		if (!hosts)
			return pd_field_err(path, err, sz, "faults", "link faults need \"hosts\"");
		const cJSON *link = cJSON_GetObjectItemCaseSensitive(e, "link");
		const cJSON *act = cJSON_GetObjectItemCaseSensitive(e, "action");
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(e, "after_ms");
		char field[32];
		snprintf(field, sizeof(field), "faults[%d]", i);
		for (const cJSON *k = cJSON_IsObject(e) ? e->child : NULL; k; k = k->next)
			if (strcmp(k->string, "at") && strcmp(k->string, "link") &&
			    strcmp(k->string, "action") && strcmp(k->string, "after_ms"))
				return pd_field_err(
				    path, err, sz, field,
				    "unknown key \"%s\" (expected at, link, action, after_ms)",
				    k->string);
		if (!cJSON_IsObject(e) || !cJSON_IsString(at) ||
		    strcmp(at->valuestring, "during_transfer"))
			return pd_field_err(path, err, sz, field,
			                    "expected \"at\": \"during_transfer\"");
		if (!cJSON_IsString(link) || !names_host(hosts, link->valuestring))
			return pd_field_err(path, err, sz, field,
			                    "\"link\": expected a host named in \"hosts\"");
		if (!cJSON_IsString(act) ||
		    (strcmp(act->valuestring, "down") && strcmp(act->valuestring, "up")))
			return pd_field_err(path, err, sz, field,
			                    "\"action\": expected \"down\" or \"up\"");
		if (ms && (!cJSON_IsNumber(ms) || ms->valuedouble < 0 || ms->valuedouble > 600000))
			return pd_field_err(path, err, sz, field,
			                    "\"after_ms\": expected 0..600000");
	}
	return 0;
}

int hr_scenario_parse_hosts(const char *path, const cJSON *root, struct hr_scenario *sc, char *err,
                            size_t errsz)
{
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "hosts");
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "faults");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "mtu");
	if (h && !cJSON_IsObject(h))
		return pd_field_err(path, err, errsz, "hosts",
		                    "expected an object of role -> host name");
	for (const cJSON *e = h ? h->child : NULL; e; e = e->next) {
		char field[64];
		snprintf(field, sizeof(field), "hosts.%s", e->string);
		if (!is_role(e->string))
			return pd_field_err(
			    path, err, errsz, field,
			    "unknown role (expected prefill, decode, proxy, metadata, "
			    "reference)");
		if (!cJSON_IsString(e) || !hr_netns_name_ok(e->valuestring))
			return pd_field_err(
			    path, err, errsz, field,
			    "expected a host name of 1..20 letters, digits, _ or -");
	}
	if (f && parse_faults(path, f, h, err, errsz))
		return -1;
	if (m && (!h || !cJSON_IsNumber(m) || m->valuedouble < 576 || m->valuedouble > 9000))
		return pd_field_err(path, err, errsz, "mtu", "expected 576..9000, with \"hosts\"");
	sc->hosts = h ? cJSON_Duplicate(h, 1) : NULL;
	sc->faults = f ? cJSON_Duplicate(f, 1) : NULL;
	sc->mtu = m ? m->valueint : 0;
	return 0;
}

const char *hr_role_host(const struct hr_scenario *sc, const char *role)
{
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(sc->hosts, role);
	if (cJSON_IsString(h))
		return h->valuestring;
	if (!strcmp(role, "metadata") || !strcmp(role, "reference"))
		return hr_role_host(sc, "proxy");
	return NULL;
}

int hr_net_setup(struct hr_net *net, const struct hr_scenario *sc, char *why, size_t sz)
{
	const char *names[NROLES];
	size_t n = 0;
	memset(net, 0, sizeof(*net));
	net->run = *sc;
	if (!sc->hosts)
		return 0;
	if (hr_netns_probe(why, sz))
		return 77;
	hr_netns_cleanup_stale();
	for (size_t i = 0; i < NROLES; i++)
		if (hr_role_host(sc, roles[i]))
			names[n++] = hr_role_host(sc, roles[i]);
	if (hr_netns_create(&net->nn, names, n, sc->mtu, why, sz))
		return -1;
	net->on = true;
	/* the three addresses the deployment is built from; a role left out is the runner's */
	char **outs[] = {&net->run.prefill_host, &net->run.decode_host, &net->run.proxy_host};
	for (size_t i = 0; i < 3; i++) {
		const struct hr_nshost *x = hr_netns_find(&net->nn, hr_role_host(sc, roles[i]));
		snprintf(net->addr[i], sizeof(net->addr[i]), "%s", x ? x->addr : net->nn.root_addr);
		*outs[i] = net->addr[i];
	}
	return 0;
}

const char *hr_net_ns_of(const struct hr_net *net, const char *addr)
{
	for (size_t i = 0; net && net->on && addr && i < net->nn.n; i++)
		if (!strcmp(net->nn.h[i].addr, addr))
			return net->nn.h[i].ns;
	return NULL;
}

#define note(net, ...) hr_note_add((net)->applied, sizeof((net)->applied), __VA_ARGS__)

/* Applies the faults in order, each after_ms (default 200) after the workload's start. */
static void *fault_thread(void *ud)
{
	struct hr_net *net = ud;
	for (const cJSON *e = net->run.faults->child; e && !net->stop; e = e->next) {
		if (hr_faults_is_process(e))
			continue; /* hr_faults.c runs those */
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(e, "after_ms");
		const char *link = cJSON_GetObjectItemCaseSensitive(e, "link")->valuestring;
		bool up = !strcmp(cJSON_GetObjectItemCaseSensitive(e, "action")->valuestring, "up");
		double at = net->t0 + (ms ? ms->valuedouble : 200) / 1000.0;
		char err[400];
		while (!net->stop && pd_now_s() < at)
			pd_sleep_ms(20);
		if (net->stop)
			break;
		if (hr_netns_link(&net->nn, link, up, err, sizeof(err))) {
			note(net, "link %s %s failed: %s", link, up ? "up" : "down", err);
			continue;
		}
		note(net, "link %s %s at +%.1fs", link, up ? "up" : "down", pd_now_s() - net->t0);
		for (size_t i = 0; i < net->nn.n; i++)
			if (!strcmp(net->nn.h[i].name, link))
				net->down[i] = !up;
	}
	return NULL;
}

/* After the workload, as an operator would after an outage: every link the faults left down
 * comes back up, so /metrics of the node behind it can be read and the checks judged. */
static void restore_links(struct hr_net *net)
{
	for (size_t i = 0; i < net->nn.n; i++) {
		char err[400];
		if (!net->down[i])
			continue;
		if (hr_netns_link(&net->nn, net->nn.h[i].name, true, err, sizeof(err))) {
			note(net, "link %s restored after the workload: failed: %s",
			     net->nn.h[i].name, err);
			continue;
		}
		net->down[i] = false;
		note(net, "link %s restored (up) after the workload, before /metrics",
		     net->nn.h[i].name);
	}
}

void hr_net_faults_start(struct hr_net *net)
{
	if (!net->on || !net->run.faults || net->faults_on)
		return;
	net->stop = 0;
	net->t0 = pd_now_s();
	memset(net->down, 0, sizeof(net->down));
	net->faults_on = pthread_create(&net->faults, NULL, fault_thread, net) == 0;
}

void hr_net_faults_stop(struct hr_net *net)
{
	if (!net->faults_on)
		return;
	net->stop = 1;
	pthread_join(net->faults, NULL);
	net->faults_on = false;
	restore_links(net);
}

void hr_net_teardown(struct hr_net *net)
{
	hr_net_faults_stop(net);
	if (net->on)
		hr_netns_destroy(&net->nn);
	net->on = false;
}
