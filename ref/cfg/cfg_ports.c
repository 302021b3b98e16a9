/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_ports: the port planner — every port each prefill/decode/proxy process binds or connects
 * (V0 pipe, TE RPC/TCP, V1 side channel, HTTP), and the binds that collide on one machine. */
#include "cfg_internal.h"
#include "pd_util.h"

#include <cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct plan {
	struct cfg_port *v;
	size_t n, cap;
	int err;
};

static void add(struct plan *p, const char *host, int port, const char *side, int rank, bool binds,
                const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void add(struct plan *p, const char *host, int port, const char *side, int rank, bool binds,
                const char *fmt, ...)
{
	va_list ap;
	struct cfg_port *e;

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 32;
		struct cfg_port *nv;
		if (cap > 1u << 20 || !(nv = realloc(p->v, cap * sizeof(*nv)))) {
			p->err = -ENOMEM;
			return;
		}
		p->v = nv;
		p->cap = cap;
	}
	e = &p->v[p->n++];
	memset(e, 0, sizeof(*e));
	snprintf(e->host, sizeof(e->host), "%s", host ? host : "");
	e->port = port;
	snprintf(e->side, sizeof(e->side), "%s", side);
	e->rank = rank;
	e->binds = binds;
	va_start(ap, fmt);
	vsnprintf(e->purpose, sizeof(e->purpose), fmt, ap);
	va_end(ap);
}

static bool loopback(const char *h)
{
	return !strcmp(h, "localhost") || !strncmp(h, "127.", 4) || !strcmp(h, "::1") ||
	       !strcmp(h, "[::1]") || !strcmp(h, "localhost.localdomain") || !strcmp(h, "0.0.0.0");
}

bool cfg_same_machine(const char *a, const char *b)
{
	return !strcmp(a, b) || (loopback(a) && loopback(b));
}

static int env_int(const char *s, int def)
{
	int64_t v;
	bool huge;

	if (!s || cfg_py_int(s, &v, &huge) || huge || v < 0 || v > 65535)
		return def;
	return (int)v;
}

/* TE random RPC range in effect (docs/engine.md). V0 needs TE <= 0.3.3.post2, which
 * knows no range variables. */
void cfg_te_rpc_range(const struct cfg_env *env, enum cfg_vllm vllm, int *lo, int *hi)
{
	*lo = 15000;
	*hi = 17000;
	if (!env || vllm == CFG_VLLM_V0)
		return;
	*lo = env_int(env->min_rpc ? env->min_rpc : env->min_prc, 15000);
	*hi = env_int(env->max_rpc ? env->max_rpc : env->max_prc, 17000);
}

static void host_of(const char *url, const char *over, char *out, size_t n)
{
	char *h = NULL, *p = NULL;

	if (over) {
		snprintf(out, n, "%s", over);
		return;
	}
	if (url && !cfg_py_split2(url, ':', &h, &p))
		snprintf(out, n, "%s", h);
	else
		snprintf(out, n, "127.0.0.1");
	free(h);
	free(p);
}

static void meta_connect(struct plan *p, const struct cfg_mooncake *mc, const char *side)
{
	const char *cs = mc ? mc->conn_string : NULL, *rest;
	char host[256];
	int port = 0;
	size_t hl;
	const char *c;

	if (!cs || !(rest = strstr(cs, "://")))
		return;
	rest += 3;
	hl = strcspn(rest, ",;/");
	c = memchr(rest, ':', hl);
	if (!c || (size_t)(c - rest) >= sizeof(host))
		return;
	snprintf(host, sizeof(host), "%.*s", (int)(c - rest), rest);
	port = atoi(c + 1);
	if (port > 0 && port < 65536)
		add(p, host, port, side, 0, false, "TE metadata server connect (%.*s)",
		    (int)(strstr(cs, "://") - cs), cs);
}

static void plan_v0(struct plan *p, const struct cfg_deploy *dep, struct cfg_diags *d)
{
	const struct cfg_mooncake *mc = dep->mc;
	const struct cfg_env *env = dep->env;
	bool legacy = env && env->legacy_rpc;
	bool tcp = mc->protocol && !strcmp(mc->protocol, "tcp");
	int lo, hi, s, r;
	struct cfg_kv_transfer kp, kd;

	cfg_te_rpc_range(env, dep->vllm, &lo, &hi);
	memset(&kp, 0, sizeof(kp));
	memset(&kd, 0, sizeof(kd));
	kp.kv_rank_set = kd.kv_rank_set = true;
	kp.kv_rank = 0;
	kd.kv_rank = 1;
	for (s = 0; s < 2; s++) {
		const char *side = s ? "decode" : "prefill";
		for (r = 0; r < dep->tp; r++) {
			struct cfg_v0_pipe o;
			if (cfg_v0_pipe(mc, s ? &kd : &kp, r, &o, r == 0 && s == 0 ? d : NULL))
				return;
			if (legacy) {
				add(p, o.own_host, o.own_base + r, side, r, true,
				    "TE RPC/handshake listen (legacy binding, URL port B+r)");
				if (tcp)
					add(p, o.own_host, o.own_base + r + 1, side, r, true,
					    "TE TCP data listen (RPC port + 1)");
			} else {
				add(p, o.own_host, o.own_base + r, side, r, false,
				    "TE segment name %s (a name only, not bound)", o.own_url);
				add(p, o.own_host, 0, side, r, true,
				    "TE RPC/handshake listen (random port in [%d,%d])", lo, hi);
				if (tcp)
					add(p, o.own_host, 0, side, r, true,
					    "TE TCP data listen (random RPC port + 1)");
			}
			add(p, o.own_host, o.bind_data_port, side, r, true,
			    "v0 zmq data PUSH bind (B+9+2r)");
			add(p, o.own_host, o.bind_ack_port, side, r, true,
			    "v0 zmq ack PUSH bind (B+10+2r)");
			add(p, o.remote_host, o.connect_data_port, side, r, false,
			    "v0 zmq data PULL connect to peer (B+9+2r)");
			add(p, o.remote_host, o.connect_ack_port, side, r, false,
			    "v0 zmq ack PULL connect to peer (B+10+2r)");
		}
		meta_connect(p, mc, side);
	}
}

static bool extra_str(const char *json, const char *key, char *out, size_t n)
{
	char *err = NULL;
	struct cJSON *root = json ? cfg_pyjson_parse(json, strlen(json), &err) : NULL;
	const struct cJSON *v = cfg_pyjson_get(root, key);
	bool ok = false;

	if (v && cJSON_IsString(v)) {
		snprintf(out, n, "%s", v->valuestring);
		ok = true;
	}
	free(err);
	cJSON_Delete(root);
	return ok;
}

bool cfg_v1_is_oot(const struct cfg_kv_transfer *kt)
{
	/* a registered kv_connector name wins over the module path in vLLM's factory */
	return kt && kt->kv_connector_module_path &&
	       !strcmp(kt->kv_connector_module_path, "mooncake.mooncake_connector_v1") &&
	       !cfg_connector_registered(kt->kv_connector, true);
}

/* One V1 worker's transfer engine: P2PHANDSHAKE, so the RPC (handshake) port is random. */
static void plan_te(struct plan *p, const char *host, const char *side, int rank, bool tcp,
                    bool legacy, int lo, int hi)
{
	if (legacy)
		add(p, host, 0, side, rank, true,
		    "TE RPC/handshake listen, P2PHANDSHAKE (random: the segment name get_ip() "
		    "carries no port, so MC_LEGACY_RPC_PORT_BINDING fixes none)");
	else
		add(p, host, 0, side, rank, true,
		    "TE RPC/handshake listen, P2PHANDSHAKE (random port in [%d,%d])", lo, hi);
	if (tcp)
		add(p, host, 0, side, rank, true, "TE TCP data listen (random port in [%d,%d])", lo,
		    hi);
}

struct v1plan {
	const struct cfg_deploy *dep;
	const char *host[2]; /* prefill, decode */
	bool binds[2];       /* the side launches the server side (producer roles) */
	bool oot, tcp, legacy;
	int base, lo, hi;
	char ext_host[256]; /* bootstrap_server_address's host, "" = the prefill runs the server */
	int ext_port;
};

/* gen A (docs/wire-v1.md, docs/vllm-versions.md): each producer worker binds its ROUTER at BASE +
 * dp*tp + r on get_ip(); decode's REQ of the same rank connects there. */
static void plan_gen_a(struct plan *p, const struct v1plan *v)
{
	const struct cfg_deploy *dep = v->dep;

	for (int s = 0; s < 2; s++) {
		const char *side = s ? "decode" : "prefill";
		for (int dp = 0; dp < dep->dp; dp++)
			for (int r = 0; r < dep->tp; r++) {
				int rank = dp * dep->tp + r, port = v->base + dp * dep->tp + r;
				if (v->binds[s])
					add(p, v->host[s], port, side, rank, true,
					    "v1 side channel ZMQ ROUTER bind (%s + dp_rank*tp_size "
					    "+ tp_rank)",
					    v->oot ? "VLLM_MOONCAKE_SIDE_CHANNEL_PORT"
					           : "VLLM_MOONCAKE_BOOTSTRAP_PORT");
				if (s == 1)
					add(p, v->host[0], port, side, rank, false,
					    "v1 side channel REQ connect to prefill (remote_port + "
					    "tp_rank)");
				plan_te(p, v->host[s], side, rank, v->tcp, v->legacy, v->lo, v->hi);
			}
	}
}

/* gen B (docs/wire-v1.md): the producer's dp-rank-0 worker serves the HTTP bootstrap server
 * on 0.0.0.0:BASE; every producer worker binds a ROUTER on a random port (pyzmq's
 * bind_to_random_port range) and registers it; decode queries /query and connects a DEALER. */
static void plan_gen_b(struct plan *p, const struct v1plan *v)
{
	const struct cfg_deploy *dep = v->dep;
	/* with bootstrap_server_address the prefill binds no server; everyone talks to that one */
	const char *bh = v->ext_host[0] ? v->ext_host : v->host[0];
	int bp = v->ext_host[0] ? v->ext_port : v->base;

	for (int s = 0; s < 2; s++) {
		const char *side = s ? "decode" : "prefill";
		if (v->binds[s] && !v->ext_host[0])
			add(p, v->host[s], v->base, side, 0, true,
			    "v1 gen B bootstrap HTTP server bind on 0.0.0.0 "
			    "(VLLM_MOONCAKE_BOOTSTRAP_PORT, dp rank 0 only)");
		for (int dp = 0; dp < dep->dp; dp++)
			for (int r = 0; r < dep->tp; r++) {
				int rank = dp * dep->tp + r;
				if (v->binds[s]) {
					add(p, v->host[s], 0, side, rank, true,
					    "v1 gen B worker ZMQ ROUTER bind (random "
					    "(49152-65535))");
					add(p, v->ext_host[0] ? bh : v->host[s], bp, side, rank,
					    false,
					    v->ext_host[0] ? "v1 gen B POST /register to "
					                     "bootstrap_server_address"
					                   : "v1 gen B POST /register to the "
					                     "bootstrap server");
				}
				if (s == 1 && r == 0)
					add(p, bh, bp, side, rank, false,
					    "v1 gen B GET /query on prefill's bootstrap server");
				if (s == 1)
					add(p, v->host[0], 0, side, rank, false,
					    "v1 gen B DEALER connect to the prefill worker's "
					    "ROUTER "
					    "(random (49152-65535), from /query)");
				plan_te(p, v->host[s], side, rank, v->tcp, v->legacy, v->lo, v->hi);
			}
	}
	if (dep->proxy_port > 0)
		add(p, bh, bp, "proxy", 0, false,
		    "v1 gen B router GET /query (readiness, engine ids)");
}

static void plan_v1(struct plan *p, const struct cfg_deploy *dep, const char *hp, const char *hd)
{
	const struct cfg_kv_transfer *kt = dep->kt;
	const struct cfg_env *env = dep->env;
	struct v1plan v = {.dep = dep, .host = {hp, hd}, .binds = {true, false}};
	char proto[32] = "rdma", addr[300];

	v.oot = cfg_v1_is_oot(kt);
	v.legacy = env && env->legacy_rpc;
	if (v.oot)
		v.base = env_int(env ? env->side_channel_port : NULL, 6557);
	else
		v.base = env_int(env ? env->bootstrap_port : NULL, 8998);
	if (v.oot && env && env->protocol)
		snprintf(proto, sizeof(proto), "%s", env->protocol);
	else if (kt)
		extra_str(kt->kv_connector_extra_config, "mooncake_protocol", proto, sizeof(proto));
	v.tcp = !strcmp(proto, "tcp");
	if (kt && !v.oot &&
	    extra_str(kt->kv_connector_extra_config, "bootstrap_server_address", addr,
	              sizeof(addr)) &&
	    pd_split_hostport(addr, v.ext_host, sizeof(v.ext_host), &v.ext_port))
		v.ext_host[0] = '\0'; /* invalid: cfg_check reports it */
	if (kt && kt->kv_role && !strcmp(kt->kv_role, "kv_both"))
		v.binds[1] = true; /* the other side is assumed to mirror this config */
	cfg_te_rpc_range(env, dep->vllm, &v.lo, &v.hi);
	if (!v.oot && cfg_gen_is_b(dep->gen))
		plan_gen_b(p, &v);
	else
		plan_gen_a(p, &v);
}

int cfg_ports_plan(const struct cfg_deploy *dep, struct cfg_port **ports, size_t *n,
                   struct cfg_diags *d)
{
	struct plan p = {0};
	char hp[256], hd[256], hx[256];
	const struct cfg_mooncake *mc = dep->mc;

	*ports = NULL;
	*n = 0;
	if (dep->tp < 1 || dep->tp > 1024 || dep->dp < 1 || dep->dp > 1024)
		return -EINVAL;
	host_of(mc ? mc->prefill_url : NULL, dep->prefill_host, hp, sizeof(hp));
	host_of(mc ? mc->decode_url : NULL, dep->decode_host, hd, sizeof(hd));
	snprintf(hx, sizeof(hx), "%s", dep->proxy_host ? dep->proxy_host : hp);
	if (dep->vllm == CFG_VLLM_V0) {
		if (mc)
			plan_v0(&p, dep, d);
	} else {
		plan_v1(&p, dep, hp, hd);
	}
	if (dep->prefill_http_port > 0)
		add(&p, hp, dep->prefill_http_port, "prefill", 0, true, "vLLM HTTP API (--port)");
	if (dep->decode_http_port > 0)
		add(&p, hd, dep->decode_http_port, "decode", 0, true, "vLLM HTTP API (--port)");
	if (dep->proxy_port > 0) {
		add(&p, hx, dep->proxy_port, "proxy", 0, true, "proxy HTTP listen");
		if (dep->prefill_http_port > 0)
			add(&p, hp, dep->prefill_http_port, "proxy", 0, false,
			    "proxy connect to prefill HTTP");
		if (dep->decode_http_port > 0)
			add(&p, hd, dep->decode_http_port, "proxy", 0, false,
			    "proxy connect to decode HTTP");
	}
	if (p.err) {
		free(p.v);
		return p.err;
	}
	*ports = p.v;
	*n = p.n;
	return 0;
}

int cfg_ports_conflicts(const struct cfg_port *p, size_t n, struct cfg_conflict **out, size_t *nout)
{
	struct cfg_conflict *c = NULL;
	size_t nc = 0, i, j, k;
	bool *done = calloc(n + 1, sizeof(bool));

	*out = NULL;
	*nout = 0;
	if (!done)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		size_t cnt = 1;
		struct cfg_conflict *e, *nv;
		if (done[i] || !p[i].binds || p[i].port <= 0)
			continue;
		for (j = i + 1; j < n; j++)
			if (!done[j] && p[j].binds && p[j].port == p[i].port &&
			    cfg_same_machine(p[i].host, p[j].host))
				cnt++;
		if (cnt < 2)
			continue;
		nv = realloc(c, (nc + 1) * sizeof(*c));
		if (!nv)
			break;
		c = nv;
		e = &c[nc++];
		memset(e, 0, sizeof(*e));
		snprintf(e->host, sizeof(e->host), "%s", p[i].host);
		e->port = p[i].port;
		e->purposes = calloc(cnt, sizeof(char *));
		for (j = i, k = 0; j < n && e->purposes && k < cnt; j++) {
			if (done[j] || !p[j].binds || p[j].port != p[i].port ||
			    !cfg_same_machine(p[i].host, p[j].host))
				continue;
			done[j] = true;
			if (asprintf(&e->purposes[k], "%s rank %d: %s", p[j].side, p[j].rank,
			             p[j].purpose) < 0)
				e->purposes[k] = NULL;
			else
				k++;
		}
		e->npurposes = k;
	}
	free(done);
	*out = c;
	*nout = nc;
	return 0;
}

void cfg_conflicts_free(struct cfg_conflict *c, size_t n)
{
	size_t i, k;

	for (i = 0; c && i < n; i++) {
		for (k = 0; k < c[i].npurposes; k++)
			free(c[i].purposes[k]);
		free(c[i].purposes);
	}
	free(c);
}
