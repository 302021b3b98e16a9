/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_check_ports: the port half of cfg_check — plan, ZMQ bind/connect validity as libzmq sees
 * it, collisions between processes, and the same-host gap analysis ("≥ 50 apart" vs real). */
#include "cfg_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void first_errf(struct cfg_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void first_errf(struct cfg_report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->vllm_error)
		return;
	va_start(ap, fmt);
	if (vasprintf(&r->vllm_error, fmt, ap) < 0)
		r->vllm_error = NULL;
	va_end(ap);
}

/* Offsets (from an instance's base port B) one V0 instance with TP size T binds. */
static int footprint(int T, bool legacy, bool tcp, int *off, int max)
{
	int n = 0, r;

	for (r = 0; r < T && n + 4 <= max; r++) {
		off[n++] = 9 + 2 * r;
		off[n++] = 10 + 2 * r;
		if (legacy) {
			off[n++] = r;
			if (tcp)
				off[n++] = r + 1;
		}
	}
	return n;
}

/* Appends "a-b, c" ranges of the set deltas[1..max] to buf. */
static void ranges(const bool *hit, int max, char *buf, size_t n)
{
	int i = 1, j;
	size_t k = 0;

	buf[0] = 0;
	while (i <= max) {
		if (!hit[i]) {
			i++;
			continue;
		}
		for (j = i; j + 1 <= max && hit[j + 1]; j++)
			;
		if (k < n)
			k += (size_t)snprintf(buf + k, n - k, "%s%d", k ? ", " : "", i);
		if (j > i && k < n)
			k += (size_t)snprintf(buf + k, n - k, "%s%d", j == i + 1 ? ", " : "-", j);
		i = j + 1;
	}
	if (k >= n && n > 4)
		strcpy(buf + n - 4, "...");
}

static void gap_analysis(struct cfg_report *r, int T, bool legacy, bool tcp, int bp, int bd,
                         const char *hp, const char *hd)
{
	int off[4 * 1024 + 8], n, i, j, max, delta = bd - bp, safe = 1;
	bool *hit;
	char list[512];
	bool collide, ok50, ok100;

	if (T > 1024)
		return;
	n = footprint(T, legacy, tcp, off, (int)(sizeof(off) / sizeof(off[0])));
	max = 10 + 2 * T + T;
	hit = calloc((size_t)max + 2, sizeof(bool));
	if (!hit)
		return;
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			if (off[i] - off[j] > 0 && off[i] - off[j] <= max)
				hit[off[i] - off[j]] = true;
	for (i = 1; i <= max; i++)
		if (hit[i])
			safe = i + 1;
	ranges(hit, max, list, sizeof(list));
	if (delta < 0)
		delta = -delta;
	collide = delta == 0 || (delta <= max && hit[delta]);
	ok50 = safe <= 50;
	ok100 = safe <= 100;
	cfg_diag_add(&r->diags, collide ? CFG_ERROR : CFG_INFO, "ports",
	             "prefill (%s) and decode (%s) share a machine; base ports %d and %d are %d "
	             "apart. With TP=%d and %s, two instances collide exactly when the bases are "
	             "0 or {%s} apart; any gap >= %d is safe. The guide's \"at least 50 apart\" is "
	             "%s for TP=%d; the automatic +100 (identical URLs only) is %s.%s",
	             hp, hd, bp, bd, delta, T,
	             legacy ? (tcp ? "legacy TE binding (RPC on B+r, TCP data on B+r+1)"
	                           : "legacy TE binding (RPC on B+r)")
	                    : "TE's random RPC ports (only the ZMQ ports B+9..B+8+2T are fixed)",
	             list, safe, ok50 ? "sufficient" : "NOT sufficient", T,
	             ok100 ? "sufficient" : "NOT sufficient",
	             collide ? " These bases collide: move decode_url's port at least that far "
	                       "from prefill_url's."
	                     : "");
	free(hit);
}

static void zmq_checks(struct cfg_report *r, const struct cfg_check_opts *o)
{
	size_t i;

	for (i = 0; i < r->nports; i++) {
		const struct cfg_port *p = &r->ports[i];
		if (strncmp(p->purpose, "v0 zmq", 6))
			continue;
		if (p->port < 1 || p->port > 65535) {
			first_errf(r, "zmq.error.ZMQError: Invalid argument");
			cfg_diag_add(&r->diags, CFG_ERROR, "ports",
			             "%s rank %d: ZMQ port %d (%s) is outside 1..65535; lower the "
			             "base port in %s",
			             p->side, p->rank, p->port, p->purpose,
			             strcmp(p->side, "prefill") ? "decode_url" : "prefill_url");
			return;
		}
		if (!p->binds && !cfg_zmq_host_ok(p->host)) {
			first_errf(r, "zmq.error.ZMQError: Invalid argument");
			cfg_diag_add(&r->diags, CFG_ERROR, "ports",
			             "%s: host \"%s\" is not a valid ZMQ tcp:// address (libzmq "
			             "rejects the connect); write an IP address or plain host name",
			             p->side, p->host);
			return;
		}
	}
	(void)o;
}

void cfg_check_ports(struct cfg_report *r, const struct cfg_check_opts *o)
{
	struct cfg_deploy dep = {0};
	struct cfg_v0_pipe pp;
	struct cfg_kv_transfer k0;
	size_t i;
	int lo, hi;
	bool v0 = o->vllm == CFG_VLLM_V0, legacy = o->env.legacy_rpc != NULL, zmq_clash = false;

	dep.mc = r->mc.loaded ? &r->mc : NULL;
	dep.kt = &r->kt;
	dep.vllm = o->vllm;
	dep.tp = o->tp;
	dep.dp = o->dp;
	dep.prefill_http_port = o->prefill_http_port;
	dep.decode_http_port = o->decode_http_port;
	dep.proxy_port = o->proxy_port;
	dep.env = &o->env;
	dep.prefill_host = o->prefill_host;
	dep.decode_host = o->decode_host;
	dep.proxy_host = o->proxy_host;
	dep.gen = r->release_pinned ? r->gen : CFG_GEN_V0;
	if (v0 && o->dp > 1)
		cfg_diag_add(
		    &r->diags, CFG_WARNING, "--dp",
		    "vLLM V0's Mooncake pipe has no data-parallel pairing; --dp is ignored");
	if (v0)
		dep.dp = 1;
	if (cfg_ports_plan(&dep, &r->ports, &r->nports, &r->diags) < 0)
		return;
	r->ports_planned = !v0;
	for (i = 0; i < r->nports; i++)
		r->ports_planned |= !strncmp(r->ports[i].purpose, "v0 zmq", 6);
	memset(&k0, 0, sizeof(k0));
	k0.kv_rank_set = true;
	if (v0 && dep.mc && !cfg_v0_pipe(dep.mc, &k0, 0, &pp, NULL)) {
		if (asprintf(&r->eff_prefill_url, "%s", pp.own_url) < 0)
			r->eff_prefill_url = NULL;
		if (asprintf(&r->eff_decode_url, "%s", pp.remote_url) < 0)
			r->eff_decode_url = NULL;
	}
	if (v0)
		zmq_checks(r, o);
	cfg_ports_conflicts(r->ports, r->nports, &r->conflicts, &r->nconflicts);
	for (i = 0; i < r->nconflicts; i++) {
		const struct cfg_conflict *c = &r->conflicts[i];
		size_t k;
		bool p = false, d = false, z = false;
		for (k = 0; k < c->npurposes; k++) {
			p |= !strncmp(c->purposes[k], "prefill", 7);
			d |= !strncmp(c->purposes[k], "decode", 6);
			z |= strstr(c->purposes[k], "zmq") != NULL;
		}
		if (p && d && z)
			zmq_clash = true;
		cfg_diag_add(
		    &r->diags, CFG_ERROR, "ports", "%s:%d is bound %zu times: %s%s%s%s", c->host,
		    c->port, c->npurposes, c->purposes[0], c->npurposes > 1 ? " AND " : "",
		    c->npurposes > 1 ? c->purposes[1] : "", c->npurposes > 2 ? " ..." : "");
	}
	if (zmq_clash)
		first_errf(r, "zmq.error.ZMQError: Address already in use");
	if (v0 && dep.mc && dep.mc->prefill_url && dep.mc->decode_url) {
		struct cfg_kv_transfer k1 = k0;
		struct cfg_v0_pipe dd;
		k1.kv_rank = 1;
		if (!cfg_v0_pipe(dep.mc, &k0, 0, &pp, NULL) &&
		    !cfg_v0_pipe(dep.mc, &k1, 0, &dd, NULL) &&
		    cfg_same_machine(pp.own_host, dd.own_host)) {
			if (strcmp(pp.own_host, dd.own_host) && pp.own_base == dd.own_base)
				cfg_diag_add(
				    &r->diags, CFG_WARNING, "mooncake.json: decode_url",
				    "prefill_url host \"%s\" and decode_url host \"%s\" are "
				    "the same machine but different strings, so vLLM's +100 "
				    "rule (a string compare) does not fire and both instances "
				    "use base port %d. Write the same host string in both, or "
				    "give decode_url a port >= %d",
				    pp.own_host, dd.own_host, pp.own_base,
				    pp.own_base + 9 + 2 * o->tp);
			else if (!strcmp(pp.own_host, dd.own_host) && pp.own_base == dd.own_base)
				cfg_diag_add(
				    &r->diags, CFG_WARNING, "mooncake.json: decode_url",
				    "prefill_url and decode_url ports are the same number "
				    "written differently (\"%s\" vs \"%s\"), so the +100 rule "
				    "(a string compare) does not fire",
				    dep.mc->prefill_url, dep.mc->decode_url);
			gap_analysis(r, o->tp, legacy,
			             dep.mc->protocol && !strcmp(dep.mc->protocol, "tcp"),
			             pp.own_base, dd.own_base, pp.own_host, dd.own_host);
		}
	}
	/* a loopback URL on one side only: the peer dials its own loopback */
	if (v0 && dep.mc && !cfg_v0_pipe(dep.mc, &k0, 0, &pp, NULL)) {
		bool lp = cfg_same_machine(pp.own_host, "127.0.0.1");
		bool ld = cfg_same_machine(pp.remote_host, "127.0.0.1");
		if (lp != ld)
			cfg_diag_add(
			    &r->diags, CFG_WARNING,
			    lp ? "mooncake.json: prefill_url" : "mooncake.json: decode_url",
			    "%s uses the loopback host \"%s\" while the other side is \"%s\": "
			    "unless both run on one machine, the peer dials its own loopback "
			    "(ZMQ connects forever, TE cannot reach the segment). Write the "
			    "address the other host can reach",
			    lp ? "prefill_url" : "decode_url", lp ? pp.own_host : pp.remote_host,
			    lp ? pp.remote_host : pp.own_host);
	}
	/* a bind on the metadata server's own port (etcd/redis/http on the same machine) */
	for (i = 0; i < r->nports; i++) {
		const struct cfg_port *m = &r->ports[i];
		size_t k;
		if (m->binds || strncmp(m->purpose, "TE metadata server", 18))
			continue;
		for (k = 0; k < r->nports; k++) {
			const struct cfg_port *b = &r->ports[k];
			if (b->binds && b->port == m->port && cfg_same_machine(b->host, m->host)) {
				cfg_diag_add(
				    &r->diags, CFG_ERROR, "ports",
				    "%s rank %d binds %s:%d (%s), the metadata server's own "
				    "port; one of them cannot start. Move the base port",
				    b->side, b->rank, b->host, b->port, b->purpose);
				break;
			}
		}
		break;
	}
	/* fixed ports inside TE's random RPC range can be taken by an engine first */
	cfg_te_rpc_range(&o->env, o->vllm, &lo, &hi);
	for (i = 0; i < r->nports; i++) {
		const struct cfg_port *p = &r->ports[i];
		if (p->binds && p->port >= lo && p->port <= hi && !strstr(p->purpose, "random")) {
			cfg_diag_add(
			    &r->diags, CFG_WARNING, "ports",
			    "%s rank %d binds %s:%d (%s), inside the transfer engine's random "
			    "RPC range [%d,%d]; an engine on the same machine may take it "
			    "first (intermittent \"Address already in use\"). Move it below "
			    "%d or above %d",
			    p->side, p->rank, p->host, p->port, p->purpose, lo, hi, lo, hi);
			break;
		}
	}
}
