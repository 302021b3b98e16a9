/* SPDX-License-Identifier: Apache-2.0 */
/* hr_k8s: the Kubernetes manifests of a scenario (pdkv run --launcher k8s --dry-run): a ConfigMap
 * (mooncake.json, the scenario), a headless Service, one Pod per role with the command lines a
 * local run uses, and a Job that runs the scenario's checks against them (pdkv run --external). */
#include "hr_k8s.h"
#include "cfg/cfg_vllm.h"
#include "hr_deploy.h"
#include "pd_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define K8S_IMAGE "pdkv:latest" /* an image with the pdkv package (and etcd/redis) installed */

enum { P_PROXY = 8000, P_PREFILL = 8100, P_DECODE = 8200, P_PLAIN = 8300, P_BOOT = 8998 };

/* a DNS label from the scenario's name: lower case, [a-z0-9-], at most 40 characters */
static void svc_name(const char *name, char *out, size_t sz)
{
	size_t n = snprintf(out, sz, "pdkv-");
	for (const char *p = name; *p && n + 1 < sz && n < 45; p++) {
		char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
		out[n++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
	}
	while (n > 5 && out[n - 1] == '-')
		n--;
	out[n] = '\0';
}

/* argv[0] ".../pdkv-X" as the package's "pdkv X" (the image's PATH) */
static cJSON *command(const cJSON *argv)
{
	cJSON *c = cJSON_CreateArray();
	for (const cJSON *a = argv ? argv->child : NULL; a; a = a->next) {
		const char *base = strrchr(a->valuestring, '/');
		base = base ? base + 1 : a->valuestring;
		if (a == argv->child && !strncmp(base, "pdkv-", 5)) {
			cJSON_AddItemToArray(c, cJSON_CreateString("pdkv"));
			cJSON_AddItemToArray(c, cJSON_CreateString(base + 5));
		} else {
			cJSON_AddItemToArray(
			    c, cJSON_CreateString(a == argv->child ? base : a->valuestring));
		}
	}
	return c;
}

static void env_kv(cJSON *env, const char *name, const char *value)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "name", name);
	cJSON_AddStringToObject(e, "value", value);
	cJSON_AddItemToArray(env, e);
}

/* VLLM_HOST_IP and MC_TCP_BIND_ADDRESS: the Pod's own address */
static void env_pod_ip(cJSON *env, const char *name)
{
	cJSON *e = cJSON_CreateObject(), *from = cJSON_AddObjectToObject(e, "valueFrom");
	cJSON_AddStringToObject(e, "name", name);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(from, "fieldRef"), "fieldPath",
	                        "status.podIP");
	cJSON_AddItemToArray(env, e);
}

static cJSON *meta_obj(const char *name, const char *svc, const char *role)
{
	cJSON *m = cJSON_CreateObject(), *l;
	cJSON_AddStringToObject(m, "name", name);
	l = cJSON_AddObjectToObject(m, "labels");
	cJSON_AddStringToObject(l, "app.kubernetes.io/name", "pdkv");
	cJSON_AddStringToObject(l, "pdkv/scenario", svc);
	if (role)
		cJSON_AddStringToObject(l, "pdkv/role", role);
	return m;
}

/* One Pod: hostname ROLE in the Service's subdomain (DNS ROLE.SVC), the config mounted at
 * /etc/pdkv, /health as its readiness when it serves HTTP. */
static cJSON *pod(const char *svc, const char *role, cJSON *cmd, char **env, int port, bool http)
{
	char name[80];
	cJSON *p = cJSON_CreateObject(), *spec, *c, *e, *ports, *vm, *vol;
	snprintf(name, sizeof(name), "%s-%s", svc, role);
	cJSON_AddStringToObject(p, "apiVersion", "v1");
	cJSON_AddStringToObject(p, "kind", "Pod");
	cJSON_AddItemToObject(p, "metadata", meta_obj(name, svc, role));
	spec = cJSON_AddObjectToObject(p, "spec");
	cJSON_AddStringToObject(spec, "hostname", role);
	cJSON_AddStringToObject(spec, "subdomain", svc);
	cJSON_AddStringToObject(spec, "restartPolicy", "Never");
	c = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(spec, "containers"), c);
	cJSON_AddStringToObject(c, "name", role);
	cJSON_AddStringToObject(c, "image", K8S_IMAGE);
	cJSON_AddItemToObject(c, "command", cmd);
	e = cJSON_AddArrayToObject(c, "env");
	env_pod_ip(e, "VLLM_HOST_IP");
	env_pod_ip(e, "MC_TCP_BIND_ADDRESS");
	for (size_t i = 0; env && env[i]; i++) {
		char *eq = strchr(env[i], '=');
		/* the Pod's own address (above), not the loopback a local run pins */
		if (!eq || !strncmp(env[i], "VLLM_HOST_IP=", 13) ||
		    !strncmp(env[i], "MC_TCP_BIND_ADDRESS=", 20))
			continue;
		*eq = '\0';
		env_kv(e, env[i], eq + 1);
		*eq = '=';
	}
	ports = cJSON_AddArrayToObject(c, "ports");
	cJSON *pt = cJSON_CreateObject();
	cJSON_AddNumberToObject(pt, "containerPort", port);
	cJSON_AddStringToObject(pt, "name", "serve");
	cJSON_AddItemToArray(ports, pt);
	if (http) {
		cJSON *probe = cJSON_AddObjectToObject(c, "readinessProbe");
		cJSON *get = cJSON_AddObjectToObject(probe, "httpGet");
		cJSON_AddStringToObject(get, "path", "/health");
		cJSON_AddNumberToObject(get, "port", port);
	}
	vm = cJSON_CreateObject();
	cJSON_AddStringToObject(vm, "name", "config");
	cJSON_AddStringToObject(vm, "mountPath", "/etc/pdkv");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "volumeMounts"), vm);
	vol = cJSON_CreateObject();
	cJSON_AddStringToObject(vol, "name", "config");
	snprintf(name, sizeof(name), "%s-config", svc);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(vol, "configMap"), "name", name);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(spec, "volumes"), vol);
	return p;
}

static void add_port(cJSON *ports, const char *name, int port)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "name", name);
	cJSON_AddNumberToObject(p, "port", port);
	cJSON_AddItemToArray(ports, p);
}

/* the headless Service: no cluster IP, every Pod of the scenario by its ROLE.SVC name */
static cJSON *service(const char *svc, int meta_port)
{
	cJSON *s = cJSON_CreateObject(), *spec, *sel, *ports;
	cJSON_AddStringToObject(s, "apiVersion", "v1");
	cJSON_AddStringToObject(s, "kind", "Service");
	cJSON_AddItemToObject(s, "metadata", meta_obj(svc, svc, NULL));
	spec = cJSON_AddObjectToObject(s, "spec");
	cJSON_AddStringToObject(spec, "clusterIP", "None");
	cJSON_AddBoolToObject(spec, "publishNotReadyAddresses", true);
	sel = cJSON_AddObjectToObject(spec, "selector");
	cJSON_AddStringToObject(sel, "pdkv/scenario", svc);
	ports = cJSON_AddArrayToObject(spec, "ports");
	add_port(ports, "proxy", P_PROXY);
	add_port(ports, "prefill", P_PREFILL);
	add_port(ports, "decode", P_DECODE);
	if (meta_port)
		add_port(ports, "metadata", meta_port);
	return s;
}

static cJSON *config_map(const char *svc, const struct hr_scenario *sc, const char *mooncake)
{
	cJSON *m = cJSON_CreateObject(), *data;
	char name[80], *text = NULL;
	size_t len = 0;
	snprintf(name, sizeof(name), "%s-config", svc);
	cJSON_AddStringToObject(m, "apiVersion", "v1");
	cJSON_AddStringToObject(m, "kind", "ConfigMap");
	cJSON_AddItemToObject(m, "metadata", meta_obj(name, svc, NULL));
	data = cJSON_AddObjectToObject(m, "data");
	if (mooncake)
		cJSON_AddStringToObject(data, "mooncake.json", mooncake);
	if (sc->path && pd_read_file(sc->path, 4 << 20, &text, &len) == 0)
		cJSON_AddStringToObject(data, "scenario.json", text);
	free(text);
	return m;
}

/* the checks: pdkv run --external against the Pods, once they are up */
static cJSON *job(const char *svc, const char *ns_urls)
{
	cJSON *j = cJSON_CreateObject(), *spec, *tspec, *c, *cmd;
	char name[80];
	snprintf(name, sizeof(name), "%s-check", svc);
	cJSON_AddStringToObject(j, "apiVersion", "batch/v1");
	cJSON_AddStringToObject(j, "kind", "Job");
	cJSON_AddItemToObject(j, "metadata", meta_obj(name, svc, "check"));
	spec = cJSON_AddObjectToObject(j, "spec");
	cJSON_AddNumberToObject(spec, "backoffLimit", 0);
	tspec = cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "template"), "spec");
	cJSON_AddStringToObject(tspec, "restartPolicy", "Never");
	c = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(tspec, "containers"), c);
	cJSON_AddStringToObject(c, "name", "check");
	cJSON_AddStringToObject(c, "image", K8S_IMAGE);
	cmd = cJSON_AddArrayToObject(c, "command");
	const char *words[] = {"pdkv", "run", "--external", ns_urls, "/etc/pdkv/scenario.json"};
	for (size_t i = 0; i < PD_ARRAY_SIZE(words); i++)
		cJSON_AddItemToArray(cmd, cJSON_CreateString(words[i]));
	cJSON *vm = cJSON_CreateObject(), *vol = cJSON_CreateObject();
	cJSON_AddStringToObject(vm, "name", "config");
	cJSON_AddStringToObject(vm, "mountPath", "/etc/pdkv");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "volumeMounts"), vm);
	cJSON_AddStringToObject(vol, "name", "config");
	snprintf(name, sizeof(name), "%s-config", svc);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(vol, "configMap"), "name", name);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(tspec, "volumes"), vol);
	return j;
}

/* the metadata server's Pod command: etcd / redis-server / pdkv metaserver on all addresses */
static cJSON *meta_cmd(enum hr_meta m, const char *host, int port)
{
	char buf[3][160];
	cJSON *c;
	snprintf(buf[0], sizeof(buf[0]), "http://0.0.0.0:%d", port);
	snprintf(buf[1], sizeof(buf[1]), "http://%s:%d", host, port);
	snprintf(buf[2], sizeof(buf[2]), "%d", port);
	if (m == HR_META_ETCD) {
		const char *w[] = {"etcd",      "--data-dir",
		                   "/tmp/etcd", "--listen-client-urls",
		                   buf[0],      "--advertise-client-urls",
		                   buf[1]};
		c = cJSON_CreateStringArray(w, (int)PD_ARRAY_SIZE(w));
	} else if (m == HR_META_REDIS) {
		const char *w[] = {"redis-server",     "--port", buf[2],   "--bind", "0.0.0.0",
		                   "--protected-mode", "no",     "--save", ""};
		c = cJSON_CreateStringArray(w, (int)PD_ARRAY_SIZE(w));
	} else {
		const char *w[] = {"pdkv", "metaserver", "--host", "0.0.0.0", "--port", buf[2]};
		c = cJSON_CreateStringArray(w, (int)PD_ARRAY_SIZE(w));
	}
	return c;
}

struct k8s {
	struct hr_scenario run; /* the scenario on the Pods' DNS names */
	struct hr_deploy d;
	char svc[48], host[4][60]; /* prefill, decode, proxy, metadata: ROLE.SVC */
	char *mooncake;            /* V0 */
	int meta_port;
};

/* the deployment plan on DNS names and fixed ports: what hr_run would start, as argv */
static int plan(struct k8s *k, const struct hr_scenario *sc, char *err, size_t sz)
{
	static const char *const roles[] = {"prefill", "decode", "proxy", "metadata"};
	static const int ports[] = {P_PREFILL, P_DECODE, P_PROXY, P_PLAIN};
	struct hr_deploy *d = &k->d;
	struct hr_node *nodes[] = {&d->prefill, &d->decode, &d->proxy, &d->plain};
	svc_name(sc->name, k->svc, sizeof(k->svc));
	for (int i = 0; i < 4; i++)
		snprintf(k->host[i], sizeof(k->host[i]), "%s.%s", roles[i], k->svc);
	k->run = *sc;
	/* ${PORT_X} blocks are picked by binding: on this host's loopback, then the names */
	k->run.prefill_host = k->run.decode_host = k->run.proxy_host = "127.0.0.1";
	d->sc = &k->run;
	snprintf(d->workdir, sizeof(d->workdir), "/tmp");
	snprintf(d->standin_exe, sizeof(d->standin_exe), "pdkv-standin");
	snprintf(d->proxy_exe, sizeof(d->proxy_exe), "pdkv-proxy");
	k->meta_port = sc->meta == HR_META_ETCD ? 2379 : sc->meta == HR_META_REDIS ? 6379 : 8090;
	if (sc->meta != HR_META_P2P) {
		d->meta.port = k->meta_port;
		snprintf(d->meta.host, sizeof(d->meta.host), "%s", k->host[3]);
		pd_meta_url(d->meta.conn, sizeof(d->meta.conn), pd_svc_store(hr_meta_svc(sc->meta)),
		            k->host[3], k->meta_port);
	}
	if (hr_deploy_setup_vars(d)) {
		snprintf(err, sz, "no free port blocks for the ${PORT_...} variables");
		return -1;
	}
	k->run.prefill_host = k->host[0];
	k->run.decode_host = k->host[1];
	k->run.proxy_host = k->host[2];
	hr_vars_set(&d->vars, "PREFILL_HOST", k->host[0]);
	hr_vars_set(&d->vars, "DECODE_HOST", k->host[1]);
	hr_vars_set(&d->vars, "PROXY_HOST", k->host[2]);
	if (cfg_gen_is_v1((enum cfg_gen)sc->gen)) {
		d->bootstrap_port[0] = d->bootstrap_port[1] = P_BOOT;
	} else {
		cJSON *mc = hr_subst_json(&d->vars, sc->mooncake, err, sz);
		if (!mc)
			return -1;
		k->mooncake = cJSON_Print(mc);
		cJSON_Delete(mc);
		snprintf(d->env, sizeof(d->env), "MOONCAKE_CONFIG_PATH=/etc/pdkv/mooncake.json");
	}
	for (int i = 0; i < 4; i++) { /* binds every address; the others reach it by name */
		snprintf(nodes[i]->host, sizeof(nodes[i]->host), "0.0.0.0");
		nodes[i]->port = ports[i];
		snprintf(nodes[i]->base_url, sizeof(nodes[i]->base_url), "http://%s:%d",
		         k->host[i < 3 ? i : 2], ports[i]);
	}
	return 0;
}

static cJSON *manifests(const struct hr_scenario *sc, char *err, size_t sz)
{
	struct k8s *k = calloc(1, sizeof(*k));
	cJSON *list = NULL, *items, *argv;
	char urls[600];
	int ret = k ? plan(k, sc, err, sz) : -1;
	if (ret)
		goto out;
	struct hr_deploy *d = &k->d;
	list = cJSON_CreateObject();
	cJSON_AddStringToObject(list, "apiVersion", "v1");
	cJSON_AddStringToObject(list, "kind", "List");
	items = cJSON_AddArrayToObject(list, "items");
	cJSON_AddItemToArray(items, config_map(k->svc, sc, k->mooncake));
	cJSON_AddItemToArray(items, service(k->svc, sc->meta != HR_META_P2P ? k->meta_port : 0));
	if (sc->meta != HR_META_P2P)
		cJSON_AddItemToArray(items, pod(k->svc, "metadata",
		                                meta_cmd(sc->meta, k->host[3], k->meta_port), NULL,
		                                k->meta_port, false));
	for (int side = 0; side < 2 && !ret; side++) {
		struct hr_node *n = side ? &d->decode : &d->prefill;
		argv = hr_standin_argv(d, n, side ? sc->kv_decode : sc->kv_prefill,
		                       side ? sc->decode_args : sc->prefill_args, err, sz);
		char **env = hr_standin_env(d, side);
		if (argv)
			cJSON_AddItemToArray(items, pod(k->svc, side ? "decode" : "prefill",
			                                command(argv), env, n->port, true));
		ret = argv ? 0 : -1;
		cJSON_Delete(argv);
		hr_env_free(env);
	}
	argv = ret ? NULL : hr_proxy_argv(d, err, sz);
	if (argv)
		cJSON_AddItemToArray(
		    items, pod(k->svc, "proxy", command(argv), NULL, d->proxy.port, true));
	cJSON_Delete(argv);
	snprintf(urls, sizeof(urls), "prefill=%s,decode=%s,proxy=%s", d->prefill.base_url,
	         d->decode.base_url, d->proxy.base_url);
	if (argv)
		cJSON_AddItemToArray(items, job(k->svc, urls));
	else
		ret = -1;
out:
	if (ret) {
		cJSON_Delete(list);
		list = NULL;
	}
	if (k)
		free(k->mooncake);
	free(k);
	return list;
}

int hr_k8s_write(const struct hr_scenario *sc, size_t n, const char *outdir, FILE *f)
{
	int bad = 0;
	if (outdir && pd_mkdir_p(outdir)) {
		fprintf(stderr, "pdkv run: --out %s: cannot create it: %s\n", outdir,
		        strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char err[600] = "", path[1200], svc[48];
		cJSON *m = manifests(&sc[i], err, sizeof(err));
		char *txt = m ? cJSON_Print(m) : NULL;
		cJSON_Delete(m);
		if (!txt) {
			fprintf(stderr, "pdkv run: --launcher k8s: %s: %s\n", sc[i].name,
			        err[0] ? err : "out of memory");
			bad++;
			continue;
		}
		svc_name(sc[i].name, svc, sizeof(svc));
		snprintf(path, sizeof(path), "%s/%s.json", outdir ? outdir : ".", svc);
		if (!outdir)
			fprintf(f, "%s\n", txt);
		else if (pd_write_file(path, txt, strlen(txt))) {
			fprintf(stderr, "pdkv run: cannot write %s\n", path);
			bad++;
		} else {
			fprintf(f, "%s: wrote %s (kubectl apply -f %s)\n", sc[i].name, path, path);
		}
		free(txt);
	}
	return bad ? -1 : 0;
}
