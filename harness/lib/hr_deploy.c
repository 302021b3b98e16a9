/* SPDX-License-Identifier: Apache-2.0 */
/* hr_deploy: the processes of one scenario — metadata service, prefill / decode / plain
 * stand-ins, proxy — started in a work dir with their logs, health-waited, and always stopped. */
#include "hr_deploy.h"
#include "hr_hosts.h"
#include "hr_launch.h"
#include "hr_router.h"
#include "cfg/cfg_vllm.h"
#include "testsvc/pd_svc.h"
#include "pd_log.h"
#include "pd_env.h"
#include "pd_util.h"

#include <curl/curl.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* CUDA devices this host shows the stand-ins: the runtime (PDKV_CUDART, else libcudart .13/.12)
 * asked at run time, as te_gpu does; 0 with the reason in why. */
static int cuda_devices(char *why, size_t sz)
{
	const char *env = pd_env_str("PDKV_CUDART");
	const char *names[] = {env && *env ? env : "libcudart.so.13", "libcudart.so.12",
	                       "libcudart.so"};
	void *h = NULL;
	int n = 0, e;

	for (size_t i = 0; !h && i < (env && *env ? 1u : PD_ARRAY_SIZE(names)); i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, sz, "no CUDA runtime library (%s)", dlerror());
		return 0;
	}
	int (*count)(int *) = (int (*)(int *))dlsym(h, "cudaGetDeviceCount");
	e = count ? count(&n) : -1;
	if (e || n < 1)
		snprintf(why, sz, "cudaGetDeviceCount: %s",
		         e ? "error (no usable device/driver)" : "0");
	dlclose(h);
	return e ? 0 : n;
}

const char *hr_capability_missing(const struct hr_scenario *sc, char *buf, size_t sz)
{
	const char *sys = pd_env_str("PDKV_SYS_INFINIBAND"); /* tests point this elsewhere */
	DIR *dir;
	struct dirent *e;
	int n = 0;
	if (sc->needs_gpu) {
		char why[400];
		if (cuda_devices(why, sizeof(why)) > 0)
			return NULL;
		snprintf(buf, sz, "the scenario needs a CUDA GPU (\"needs\": [\"gpu\"]%s): %s",
		         strcmp(sc->protocol, "nvlink_intra") ? "" : " / protocol nvlink_intra",
		         why);
		return buf;
	}
	if (strcmp(sc->protocol, "rdma"))
		return NULL;
	if (!sys || !*sys)
		sys = "/sys/class/infiniband";
	dir = opendir(sys);
	while (dir && (e = readdir(dir)))
		if (e->d_name[0] != '.')
			n++;
	if (dir)
		closedir(dir);
	if (n)
		return NULL;
	snprintf(buf, sz,
	         "protocol rdma needs an RDMA device and %s lists none on this host "
	         "(Soft-RoCE runs in the rxe tier: make test-rxe)",
	         sys);
	return buf;
}

#define PORT_SPAN 16 /* B .. B+10+2r for TP up to 2, and B+100.. for identical URLs */

void hr_deploy_reset(struct hr_deploy *d)
{
	d->npicked = 0;
	memset(&d->vars, 0, sizeof(d->vars));
}

/* Ports are picked by binding here; a fresh namespace has every port free, so for an address in
 * one (not bindable here) the same free port of this host's loopback serves. A remote host's
 * ports cannot be tried from here: the same guess, and a start that loses it is retried once. */
static const char *pick_on(const struct hr_deploy *d, const char *host)
{
	return hr_addr_elsewhere(d, host) ? "127.0.0.1" : host;
}

int hr_deploy_start_meta(struct hr_deploy *d)
{
	int ret;
	d->why[0] = '\0';
	if (d->sc->meta == HR_META_P2P)
		return 0;
	/* with "hosts": on the metadata role's host (default the proxy's), like any other node */
	if ((d->net && d->net->on) || (d->rem && d->rem->on))
		return hr_launch_meta(d, d->why, sizeof(d->why));
	ret = pd_svc_start(hr_meta_svc(d->sc->meta), "127.0.0.1", d->workdir, &d->meta);
	if (ret == 0)
		d->meta_up = true;
	return ret;
}

/* ${PORT_X}: a fresh block per name, far enough from the others that B+100 stays clear too */
static int port_var(const char *name, void *ud)
{
	struct hr_deploy *d = ud;
	char val[16];
	int base = -1;
	if (strncmp(name, "PORT_", 5) || hr_vars_get(&d->vars, name))
		return 0;
	for (int tries = 0; tries < 50 && base < 0; tries++) {
		base = hr_pick_port_block(pick_on(d, d->sc->prefill_host), PORT_SPAN);
		for (size_t i = 0; base >= 0 && i < d->npicked; i++)
			if (abs(base - d->picked[i]) < 100 + 2 * PORT_SPAN)
				base = -1;
	}
	if (base < 0)
		return -1;
	if (d->npicked < HR_MAX_VARS)
		d->picked[d->npicked++] = base;
	snprintf(val, sizeof(val), "%d", base);
	return hr_vars_set(&d->vars, name, val) ? -1 : 0;
}

static int scan_json(struct hr_deploy *d, const cJSON *j)
{
	if (cJSON_IsString(j))
		return hr_vars_scan(j->valuestring, port_var, d);
	for (const cJSON *c = j ? j->child : NULL; c; c = c->next)
		if (scan_json(d, c))
			return -1;
	return 0;
}

int hr_deploy_setup_vars(struct hr_deploy *d)
{
	const struct hr_scenario *sc = d->sc;
	struct hr_vars *v = &d->vars;
	char hp[128];
	hr_vars_set(v, "PREFILL_HOST", sc->prefill_host);
	hr_vars_set(v, "DECODE_HOST", sc->decode_host);
	hr_vars_set(v, "PROXY_HOST", sc->proxy_host);
	hr_vars_set(v, "WORKDIR", d->workdir);
	if (sc->meta == HR_META_P2P) {
		hr_vars_set(v, "METADATA", PD_META_P2P);
		hr_vars_set(v, "METADATA_HOSTPORT", PD_META_P2P);
	} else {
		hr_vars_set(v, "METADATA", d->meta.conn);
		snprintf(hp, sizeof(hp), "%s:%d", d->meta.host, d->meta.port);
		hr_vars_set(v, "METADATA_HOSTPORT", hp);
	}
	if (scan_json(d, sc->mooncake) || scan_json(d, sc->kv_prefill) ||
	    scan_json(d, sc->kv_decode) || scan_json(d, sc->standin_args) ||
	    scan_json(d, sc->prefill_args) || scan_json(d, sc->decode_args) ||
	    scan_json(d, sc->proxy_args))
		return -1;
	return 0;
}

/* V1: each side's bootstrap port (gen A binds BASE + dp*tp + r, so a whole block is kept free) */
static int pick_bootstrap(struct hr_deploy *d, char *err, size_t errsz)
{
	const char *hosts[2] = {d->sc->prefill_host, d->sc->decode_host};
	d->env[0] = '\0';
	for (int i = 0; i < 2; i++) {
		int base = -1;
		for (int tries = 0; tries < 50 && base < 0; tries++) {
			base = hr_pick_port_block(pick_on(d, hosts[i]), PORT_SPAN);
			for (size_t k = 0; base >= 0 && k < d->npicked; k++)
				if (abs(base - d->picked[k]) < 100 + 2 * PORT_SPAN)
					base = -1;
			if (i && base >= 0 && abs(base - d->bootstrap_port[0]) < 2 * PORT_SPAN)
				base = -1;
		}
		if (base < 0) {
			snprintf(err, errsz, "no free port block for VLLM_MOONCAKE_BOOTSTRAP_PORT");
			return -EADDRINUSE;
		}
		d->bootstrap_port[i] = base;
	}
	return 0;
}

int hr_deploy_write_mooncake(struct hr_deploy *d, char *err, size_t errsz)
{
	cJSON *mc;
	char path[700], *txt;
	int ret;
	if (cfg_gen_is_v1((enum cfg_gen)d->sc->gen))
		return pick_bootstrap(d, err, errsz);
	mc = hr_subst_json(&d->vars, d->sc->mooncake, err, errsz);
	if (!mc)
		return -EINVAL;
	txt = cJSON_Print(mc);
	cJSON_Delete(mc);
	if (!txt)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/mooncake.json", d->workdir);
	ret = pd_write_file(path, txt, strlen(txt));
	free(txt);
	snprintf(d->env, sizeof(d->env), "MOONCAKE_CONFIG_PATH=%s/mooncake.json", d->workdir);
	return ret;
}

static int node_init(struct hr_deploy *d, struct hr_node *n, int role)
{
	const char *host = hr_role_addr(d, role);
	int port = pd_free_port(pick_on(d, host));
	if (port < 0)
		return port;
	hr_node_place(d, n, role);
	snprintf(n->host, sizeof(n->host), "%s", host);
	n->port = port;
	snprintf(n->base_url, sizeof(n->base_url), "http://%s:%d", host, port);
	snprintf(n->health_url, sizeof(n->health_url), "%s/health", n->base_url);
	snprintf(n->metrics_url, sizeof(n->metrics_url), "%s/metrics", n->base_url);
	return 0;
}

int hr_deploy_init_nodes(struct hr_deploy *d)
{
	if (node_init(d, &d->prefill, HR_ROLE_PREFILL) ||
	    node_init(d, &d->decode, HR_ROLE_DECODE) || node_init(d, &d->proxy, HR_ROLE_PROXY) ||
	    (d->plain_on && node_init(d, &d->plain, HR_ROLE_REFERENCE)))
		return -EADDRINUSE;
	return 0;
}

static void add_str(cJSON *a, const char *s)
{
	cJSON_AddItemToArray(a, cJSON_CreateString(s));
}

static void add_int(cJSON *a, int v)
{
	char num[32];
	snprintf(num, sizeof(num), "%d", v);
	add_str(a, num);
}

/* Appends the strings of a template array after substituting ${...}; -1 (and err) on failure */
static int add_subst(cJSON *a, const struct hr_vars *v, const cJSON *tmpl, char *err, size_t errsz)
{
	cJSON *more;
	if (!tmpl)
		return 0;
	more = hr_subst_json(v, tmpl, err, errsz);
	if (!more)
		return -1;
	for (const cJSON *m = more->child; m; m = m->next)
		add_str(a, m->valuestring);
	cJSON_Delete(more);
	return 0;
}

cJSON *hr_standin_argv(struct hr_deploy *d, const struct hr_node *n, const cJSON *kv,
                       const cJSON *side_args, char *err, size_t errsz)
{
	const struct hr_scenario *sc = d->sc;
	cJSON *a = cJSON_CreateArray();
	add_str(a, d->standin_exe);
	add_str(a, "--model");
	add_str(a, sc->model);
	add_str(a, "--host");
	add_str(a, n->host);
	add_str(a, "--port");
	add_int(a, n->port);
	add_str(a, "--max-model-len");
	add_int(a, sc->max_model_len);
	if (kv) {
		cJSON *k = hr_subst_json(&d->vars, kv, err, errsz);
		char *txt = k ? cJSON_PrintUnformatted(k) : NULL;
		cJSON_Delete(k);
		if (!txt)
			goto fail;
		add_str(a, "--kv-transfer-config");
		add_str(a, txt);
		free(txt);
		/* each side its own release (a rolling upgrade mixes them) */
		int side = n == &d->decode ? 1 : 0;
		const char *ver = sc->vllm_side[side] ? sc->vllm_side[side] : sc->vllm;
		enum cfg_gen gen =
		    (enum cfg_gen)(sc->vllm_side[side] ? sc->gen_side[side] : sc->gen);
		add_str(a, "--vllm-version");
		add_str(a, ver);
		if (cfg_gen_is_b(gen)) {
			add_str(a, "--v1-shape");
			add_str(a, cfg_gen_name(gen));
		}
	}
	if (kv && hr_router_wanted(sc)) { /* what reached it, for the router_* checks */
		char path[700];
		hr_router_record_path(d, n == &d->prefill, path, sizeof(path));
		add_str(a, "--record-requests");
		add_str(a, path);
		if (n == &d->prefill && hr_scenario_has_check(sc, "router_prefill_failure")) {
			/* the failure phase's prompts carry the marker: prefill answers them 500 */
			snprintf(path, sizeof(path), "fail-marker=%s", HR_ROUTER_FAIL_MARKER);
			add_str(a, "--fault");
			add_str(a, path);
		}
	}
	if (add_subst(a, &d->vars, sc->standin_args, err, errsz) ||
	    add_subst(a, &d->vars, side_args, err, errsz))
		goto fail;
	return a;
fail:
	cJSON_Delete(a);
	return NULL;
}

cJSON *hr_proxy_argv(struct hr_deploy *d, char *err, size_t errsz)
{
	cJSON *a;
	if (d->sc->proxy_cmd) /* the user's router */
		return hr_router_argv(d, err, errsz);
	a = cJSON_CreateArray();
	add_str(a, d->proxy_exe);
	add_str(a, "--host");
	add_str(a, d->proxy.host);
	add_str(a, "--port");
	add_int(a, d->proxy.port);
	add_str(a, "--contract");
	add_str(a, d->sc->proxy_contract);
	add_str(a, "--prefill");
	add_str(a, d->prefill.base_url);
	/* mooncake_connector_proxy.py's BOOTSTRAP_PORT; also for a mooncake router forced in front
	 * of a gen-A prefill (an upgrade's mixed cell): it then asks the port that prefill owns */
	if (cfg_gen_is_b((enum cfg_gen)d->sc->gen) ||
	    (!strcmp(d->sc->proxy_contract, "mooncake") && d->bootstrap_port[0] > 0))
		add_int(a, d->bootstrap_port[0]);
	add_str(a, "--decode");
	add_str(a, d->decode.base_url);
	if (add_subst(a, &d->vars, d->sc->proxy_args, err, errsz)) {
		cJSON_Delete(a);
		return NULL;
	}
	return a;
}

static int env_add(char **v, size_t *n, const char *name, const char *value)
{
	if (asprintf(&v[*n], "%s=%s", name, value) < 0) {
		v[*n] = NULL;
		return -1;
	}
	(*n)++;
	return 0;
}

/* A local scenario (no "hosts", no --hosts) binds and announces its role's topology address
 * (127.0.0.x; 127.0.0.1 by default), not the host's first non-loopback address (issue 34, N11),
 * unless the scenario's env or the user's set the name. */
static bool env_given(const struct hr_deploy *d, const char *name)
{
	const char *mine = pd_env_str(name);

	return (mine && *mine) || cJSON_GetObjectItemCaseSensitive(d->sc->env, name);
}

/* The two go together: a stand-in that binds one address and announces another is refused by
 * its peers (-1005), so when the user or the scenario gives either, pdkv pins neither. */
static int pin_loopback(const struct hr_deploy *d, int side, char **v, size_t *n)
{
	const char *host = side ? d->sc->decode_host : d->sc->prefill_host;

	if (d->sc->hosts || d->rem || env_given(d, "VLLM_HOST_IP") ||
	    env_given(d, "MC_TCP_BIND_ADDRESS"))
		return 0;
	host = host && *host ? host : "127.0.0.1";
	return env_add(v, n, "VLLM_HOST_IP", host) || env_add(v, n, "MC_TCP_BIND_ADDRESS", host);
}

char **hr_standin_env(const struct hr_deploy *d, int side)
{
	size_t n = 0, max = (size_t)cJSON_GetArraySize(d->sc->env) + 4;
	char **v = calloc(max, sizeof(char *)), port[16];
	if (!v)
		return NULL;
	if (cfg_gen_is_v1((enum cfg_gen)d->sc->gen)) {
		snprintf(port, sizeof(port), "%d", d->bootstrap_port[side ? 1 : 0]);
		if (env_add(v, &n, "VLLM_MOONCAKE_BOOTSTRAP_PORT", port))
			goto fail;
	} else if ((v[n] = strdup(d->env)) == NULL) {
		goto fail;
	} else {
		n++;
	}
	if (pin_loopback(d, side, v, &n))
		goto fail;
	for (const cJSON *e = d->sc->env ? d->sc->env->child : NULL; e; e = e->next)
		if (env_add(v, &n, e->string, e->valuestring))
			goto fail;
	return v;
fail:
	hr_env_free(v);
	return NULL;
}

static void copy_file(const char *from, const char *to)
{
	char *buf = NULL;
	size_t len = 0;
	if (pd_read_file(from, 64 << 20, &buf, &len) == 0)
		pd_write_file(to, buf, len);
	free(buf);
}

void hr_deploy_stop(struct hr_deploy *d)
{
	/* proxy first so no new work reaches the stand-ins, metadata last so they can unregister */
	struct hr_node *order[] = {&d->proxy, &d->decode, &d->prefill, &d->plain, &d->metanode};
	for (size_t i = 0; i < PD_ARRAY_SIZE(order); i++) {
		if (!order[i]->started)
			continue;
		order[i]->ops->stop(d, order[i], 3000);
		order[i]->started = false;
	}
	for (size_t i = 0; i < PD_ARRAY_SIZE(order); i++) {
		cJSON_Delete(order[i]->spawn_argv);
		hr_env_free(order[i]->spawn_env);
		order[i]->spawn_argv = NULL;
		order[i]->spawn_env = NULL;
	}
	if (d->meta_up) {
		char to[700];
		snprintf(to, sizeof(to), "%s/metadata-%s.log", d->workdir,
		         pd_svc_kind_name(d->meta.kind));
		copy_file(d->meta.log, to);
		pd_svc_stop(&d->meta);
		d->meta_up = false;
	}
	hr_faults_release(d); /* after what its thread restarted is stopped */
}

/* Every process this deployment started is gone (reaped, and its group empty). */
bool hr_deploy_all_gone(const struct hr_deploy *d)
{
	const struct hr_node *nodes[] = {&d->proxy, &d->decode, &d->prefill, &d->plain,
	                                 &d->metanode};
	for (size_t i = 0; i < PD_ARRAY_SIZE(nodes); i++)
		if (nodes[i]->proc.pid > 0 || nodes[i]->rpid > 0)
			return false;
	return !d->meta_up;
}

/* Counts pd_log WARN / ERROR lines of one log and keeps the first of each: the observables a
 * person greps for ("KV not received ... recomputing", "exceeds kv_buffer_size"). */
static cJSON *log_summary(const char *path)
{
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	int warns = 0, errs = 0;
	cJSON *o;
	if (pd_read_file(path, 64 << 20, &buf, &len))
		return NULL;
	o = cJSON_CreateObject();
	for (line = strtok_r(buf, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		bool w = strstr(line, " WARN ") != NULL, e = strstr(line, " ERROR ") != NULL;
		if (w && !warns++)
			cJSON_AddStringToObject(o, "first_warning", line);
		if (e && !errs++)
			cJSON_AddStringToObject(o, "first_error", line);
	}
	cJSON_AddNumberToObject(o, "warnings", warns);
	cJSON_AddNumberToObject(o, "errors", errs);
	free(buf);
	return o;
}

cJSON *hr_deploy_logs(const struct hr_deploy *d)
{
	const struct hr_node *nodes[] = {&d->prefill, &d->decode, &d->plain, &d->proxy};
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < PD_ARRAY_SIZE(nodes); i++) {
		cJSON *s;
		if (!nodes[i]->proc.log[0] || !(s = log_summary(nodes[i]->proc.log)))
			continue;
		cJSON_AddItemToObject(o, nodes[i]->name, s);
	}
	return o;
}
