/* SPDX-License-Identifier: Apache-2.0 */
/* px_opts: pdkv-proxy's command line — the guide/PROXY-16 spellings (--prefill/--decode URL)
 * and the toy proxy's (--prefiller-host/--prefiller-port/...), normalised to base URLs. */
#include "px.h"
#include "px_fault.h"
#include "pd_util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PX_DEFAULT_PREFILL "http://localhost:8100"
#define PX_DEFAULT_DECODE  "http://localhost:8200"

void px_usage(const char *prog)
{
	printf(
	    "Usage: %s [--contract v0|toy|mooncake|auto] [--host ADDR] [--port N]\n"
	    "       --prefill URL [BOOTSTRAP_PORT|none]... --decode URL... [options]\n"
	    "\n"
	    "OpenAI-compatible disaggregated-prefill proxy, strict about failures. Each POST\n"
	    "/v1/completions or /v1/chat/completions goes to a prefill instance (max_tokens=1,\n"
	    "stream=false, drained) and to a decode instance whose answer streams back as is.\n"
	    "\n"
	    "  --contract NAME          the router to behave as (default v0):\n"
	    "      v0        the integration guide's proxy (V0 pipe): prefill, then the original\n"
	    "                request to decode; the client's X-Request-Id and Authorization\n"
	    "      toy       vLLM's toy_proxy_server.py (V1 gen A, vLLM 0.12-0.15): uuid4\n"
	    "                X-Request-Id, prefill with kv_transfer_params {do_remote_decode:\n"
	    "                true,...}, then decode with prefill's returned kv_transfer_params;\n"
	    "                Authorization: Bearer $OPENAI_API_KEY (\"None\" when unset)\n"
	    "      mooncake  vLLM's mooncake_connector_proxy.py (V1 gen B, vLLM >= 0.16): waits\n"
	    "                for each prefill's /health and bootstrap /query (503 until then),\n"
	    "                transfer_id \"xfer-<uuid4>\" in both bodies, X-data-parallel-rank,\n"
	    "                round robin over (prefill, dp rank); prefill and decode at once\n"
	    "      auto      mooncake when a --prefill carries a bootstrap port (or none), toy\n"
	    "                when the toy spellings are used, else v0\n"
	    "  --host ADDR              bind address (default 0.0.0.0)\n"
	    "  --port N                 listen port (default 8000; 0 = any free port)\n"
	    "  --prefill URL [BP|none]  prefill instance; repeat (or comma-separate) for round\n"
	    "                           robin. URL: http://host:port, host:port, or an endpoint\n"
	    "                           such as http://host:port/v1/completions. BP: its\n"
	    "                           bootstrap port for mooncake (none or absent = 8998)\n"
	    "  --decode URL             decode instance; same forms, round robin\n"
	    "  --prefiller-host(s) H..  toy-proxy spelling: hosts (repeat, comma or space list)\n"
	    "  --prefiller-port(s) P..  toy-proxy spelling: ports (paired with the hosts; one\n"
	    "                           host or one port is used for every entry of the other)\n"
	    "  --decoder-host(s) H..    toy-proxy spelling for decode\n"
	    "  --decoder-port(s) P..\n"
	    "  --prefill-timeout SEC    whole prefill request (default 600; 0 = none)\n"
	    "  --decode-timeout SEC     whole decode request incl. streaming (default 21600; 0 = "
	    "none)\n"
	    "  --connect-timeout SEC    TCP connect to a backend (default 10)\n"
	    "  --max-body SIZE          request body limit, e.g. 64MiB (default); larger -> 413\n"
	    "  --stream-buffer SIZE     per-request decode->client queue (default 64KiB)\n"
	    "  --max-connections N      client connections held at once (default 2048); more\n"
	    "                           are refused at accept, with a WARNING once a second\n"
	    "  --max-connections-per-client N  the same per client address (default 1024)\n"
	    "  --idle-timeout SEC       close a client connection idle this long (default 300)\n"
	    "  --fault F[,F]            behave like a broken router, for detector self-tests:\n"
	    "                           drop-transfer-id (mooncake: no transfer_id in either\n"
	    "                           body), no-copy-params (toy: decode gets no params),\n"
	    "                           ignore-prefill-errors (mooncake: a failed prefill is\n"
	    "                           only logged, as mooncake_connector_proxy.py does),\n"
	    "                           reuse-transfer-id (mooncake: every second request\n"
	    "                           reuses the previous transfer_id)\n"
	    "  -h, --help               this text\n"
	    "\n"
	    "Defaults when no backend is named (the toy proxy's): prefill %s,\ndecode %s.\n"
	    "Prefill failure: a 4xx is passed to the client as is; any other failure is a 502\n"
	    "JSON error and logged; decode is not called (mooncake: the decode call already\n"
	    "running is aborted, or its stream cut if it had started). Decode errors pass\n"
	    "through; a decode stream that breaks ends with an SSE error event and no [DONE].\n"
	    "GET /health and /healthcheck answer 200 with the backends and failure counters\n"
	    "(mooncake: 503 until ready; toy: /healthcheck as the toy proxy answers it).\n"
	    "GET /v1/models goes to the first decode. v0 with no Authorization from the\n"
	    "client sends OPENAI_API_KEY (if set) as a Bearer token.\n"
	    "Log level: PDKV_LOG=error|warn|info|debug; one access line per request at info.\n",
	    prog, PX_DEFAULT_PREFILL, PX_DEFAULT_DECODE);
}

static int fail(char *err, size_t errsz, const char *fmt, const char *a, const char *b)
{
	snprintf(err, errsz, fmt, a, b);
	return -EINVAL;
}

static int valid_host(const char *h, size_t n, int bracketed)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)h[i];
		if (isalnum(c) || c == '-' || c == '.' || c == '_')
			continue;
		if (bracketed && (c == ':' || c == '%'))
			continue;
		return 0;
	}
	return 1;
}

/* Removes OpenAI endpoint suffixes so "/v1/completions" and "/v1/" both give the base. */
static void strip_endpoint(char *path)
{
	static const char *const sfx[] = {"/v1/chat/completions", "/v1/completions", "/v1/models",
	                                  "/healthcheck",         "/health",         "/v1"};
	int again = 1;
	while (again) {
		size_t n = strlen(path);
		again = 0;
		while (n && path[n - 1] == '/') {
			path[--n] = '\0';
			again = 1;
		}
		for (size_t i = 0; i < PD_ARRAY_SIZE(sfx); i++) {
			size_t m = strlen(sfx[i]);
			if (n >= m && !strcmp(path + n - m, sfx[i])) {
				path[n - m] = '\0';
				again = 1;
				break;
			}
		}
	}
}

int px_normalize_url(const char *in, char *out, size_t outsz, char *err, size_t errsz)
{
	const char *scheme = "http", *p = in, *auth, *slash, *hp;
	char path[PX_URL_MAX], authority[300];
	size_t alen;
	int has_scheme = 0;

	if (!in || !*in)
		return fail(err, errsz,
		            "expected http://host:port, host:port or an endpoint URL, got \"%s\"%s",
		            in ? in : "", "");
	for (const char *c = in; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return fail(err, errsz,
			            "URL \"%s\" contains a space or control character%s", in, "");
	if (strlen(in) >= PX_URL_MAX - 1)
		return fail(err, errsz, "URL \"%.64s...\" is too long%s", in, "");
	if (!strncasecmp(p, "http://", 7)) {
		p += 7;
		has_scheme = 1;
	} else if (!strncasecmp(p, "https://", 8)) {
		scheme = "https";
		p += 8;
		has_scheme = 1;
	} else if (strstr(p, "://")) {
		return fail(err, errsz, "URL \"%s\": only http:// and https:// are supported%s", in,
		            "");
	}
	auth = p;
	slash = strchr(auth, '/');
	alen = slash ? (size_t)(slash - auth) : strlen(auth);
	if (alen == 0 || alen >= sizeof(authority))
		return fail(err, errsz, "URL \"%s\": expected host:port after the scheme%s", in,
		            "");
	memcpy(authority, auth, alen);
	authority[alen] = '\0';
	if (strchr(authority, '@'))
		return fail(err, errsz, "URL \"%s\": user info (user@host) is not supported%s", in,
		            "");
	if (strpbrk(in, "?#"))
		return fail(err, errsz,
		            "URL \"%s\": a query or fragment is not allowed in a backend URL%s", in,
		            "");

	/* host and optional port */
	hp = authority;
	{
		const char *colon, *host = hp;
		size_t hlen;
		int bracketed = 0;
		if (*hp == '[') {
			const char *rb = strchr(hp, ']');
			if (!rb)
				return fail(err, errsz, "URL \"%s\": unterminated [IPv6] host%s",
				            in, "");
			host = hp + 1;
			hlen = (size_t)(rb - host);
			bracketed = 1;
			colon = rb[1] == ':' ? rb + 1 : NULL;
			if (rb[1] && rb[1] != ':')
				return fail(err, errsz, "URL \"%s\": junk after ]%s", in, "");
		} else {
			colon = strrchr(hp, ':');
			hlen = colon ? (size_t)(colon - hp) : strlen(hp);
		}
		if (!valid_host(host, hlen, bracketed))
			return fail(err, errsz, "URL \"%s\": bad host name%s", in, "");
		if (colon) {
			int64_t port;
			if (pd_parse_i64(colon + 1, &port) || port < 1 || port > 65535)
				return fail(err, errsz,
				            "URL \"%s\": port must be 1..65535, got \"%s\"", in,
				            colon + 1);
		} else if (!has_scheme) {
			return fail(
			    err, errsz,
			    "expected http://host:port or host:port, got \"%s\" (no port)%s", in,
			    "");
		}
	}
	snprintf(path, sizeof(path), "%s", slash ? slash : "");
	strip_endpoint(path);
	if ((size_t)snprintf(out, outsz, "%s://%s%s", scheme, authority, path) >= outsz)
		return fail(err, errsz, "URL \"%s\" is too long%s", in, "");
	return 0;
}

/* Seconds as a decimal ("0.5", "600"); 0 allowed only where zero means "no limit". */
static int parse_secs(const char *flag, const char *v, int zero_ok, long *ms, char *err,
                      size_t errsz)
{
	char *end;
	double d;
	errno = 0;
	d = strtod(v, &end);
	if (!*v || *end || errno || !isfinite(d) || d < 0 || d > 1e7 || (!zero_ok && d <= 0)) {
		snprintf(err, errsz, "%s: expected seconds (a number %s), got \"%s\"", flag,
		         zero_ok ? ">= 0, 0 = no limit" : "> 0", v);
		return -EINVAL;
	}
	*ms = (long)llround(d * 1000.0);
	if (d > 0 && *ms == 0)
		*ms = 1;
	return 0;
}

/* A whole number 1..hi (connection limits, idle seconds). */
static int parse_count(const char *flag, const char *v, unsigned hi, unsigned *out, char *err,
                       size_t errsz)
{
	char *end;
	unsigned long n;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (!*v || *v == '-' || *end || errno || n < 1 || n > hi) {
		snprintf(err, errsz, "%s: expected a whole number 1..%u, got \"%s\"", flag, hi, v);
		return -EINVAL;
	}
	*out = (unsigned)n;
	return 0;
}

/* Values of one list flag: repeated flags, comma lists and space lists all land here. */
struct strlist {
	char *v[PX_MAX_BACKENDS];
	int n;
};

static int list_add(struct strlist *l, const char *flag, const char *val, char *err, size_t errsz)
{
	const char *p = val;
	if (!*val) {
		snprintf(err, errsz, "%s: empty value", flag);
		return -EINVAL;
	}
	while (1) {
		size_t n = strcspn(p, ",");
		if (n == 0) {
			snprintf(err, errsz, "%s: empty entry in \"%s\"", flag, val);
			return -EINVAL;
		}
		if (l->n >= PX_MAX_BACKENDS) {
			snprintf(err, errsz, "%s: more than %d entries", flag, PX_MAX_BACKENDS);
			return -EINVAL;
		}
		l->v[l->n] = strndup(p, n);
		if (!l->v[l->n])
			return -ENOMEM;
		l->n++;
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

static void list_free(struct strlist *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

static int is_port_or_none(const char *s)
{
	int64_t v;
	return !strcasecmp(s, "none") || (pd_parse_i64(s, &v) == 0 && v >= 1 && v <= 65535);
}

const char *px_contract_name(int id)
{
	static const char *const names[] = {"v0", "toy", "mooncake", "auto"};
	return id >= 0 && id < 4 ? names[id] : "?";
}

int px_url_host(const char *url, char *out, size_t outsz)
{
	const char *a = strstr(url, "://"), *end;
	size_t n;
	a = a ? a + 3 : url;
	if (*a == '[') {
		end = strchr(a, ']');
		if (!end)
			return -EINVAL;
		end++;
	} else {
		end = a + strcspn(a, ":/");
	}
	n = (size_t)(end - a);
	if (!n || n >= outsz)
		return -EINVAL;
	memcpy(out, a, n);
	out[n] = '\0';
	return 0;
}

static int add_url(char (*dst)[PX_URL_MAX], int *n, const char *flag, const char *url, char *err,
                   size_t errsz)
{
	char why[400];
	if (*n >= PX_MAX_BACKENDS) {
		snprintf(err, errsz, "%s: more than %d backends", flag, PX_MAX_BACKENDS);
		return -EINVAL;
	}
	if (px_normalize_url(url, dst[*n], PX_URL_MAX, why, sizeof(why))) {
		snprintf(err, errsz, "%s: %s", flag, why);
		return -EINVAL;
	}
	(*n)++;
	return 0;
}

/* The toy proxy's host and port lists, paired index by index (a single host or port is used
 * for every entry of the other list). */
static int add_toy(char (*dst)[PX_URL_MAX], int *n, const char *what, struct strlist *hosts,
                   struct strlist *ports, const char *def_host, const char *def_port, char *err,
                   size_t errsz)
{
	int count, ret;
	if (!hosts->n && !ports->n)
		return 0;
	if (!hosts->n && (ret = list_add(hosts, what, def_host, err, errsz)))
		return ret;
	if (!ports->n && (ret = list_add(ports, what, def_port, err, errsz)))
		return ret;
	if (hosts->n != ports->n && hosts->n != 1 && ports->n != 1) {
		snprintf(err, errsz, "Number of %s hosts (%d) must match number of %s ports (%d)",
		         what, hosts->n, what, ports->n);
		return -EINVAL;
	}
	count = hosts->n > ports->n ? hosts->n : ports->n;
	for (int i = 0; i < count; i++) {
		const char *h = hosts->v[hosts->n == 1 ? 0 : i],
		           *p = ports->v[ports->n == 1 ? 0 : i];
		char url[PX_URL_MAX + 16], flag[64];
		int64_t port;
		if (pd_parse_i64(p, &port) || port < 1 || port > 65535) {
			snprintf(err, errsz, "--%s-port: expected 1..65535, got \"%s\"", what, p);
			return -EINVAL;
		}
		if (strlen(h) > 255 || strchr(h, '/')) {
			snprintf(err, errsz,
			         "--%s-host: expected a host name or address, got \"%.64s\"", what,
			         h);
			return -EINVAL;
		}
		snprintf(url, sizeof(url),
		         strchr(h, ':') && h[0] != '[' ? "http://[%s]:%s" : "http://%s:%s", h, p);
		snprintf(flag, sizeof(flag), "--%s-host", what);
		if ((ret = add_url(dst, n, flag, url, err, errsz)))
			return ret;
	}
	return 0;
}

enum {
	F_HOST,
	F_PORT,
	F_PREFILL,
	F_DECODE,
	F_PH,
	F_PP,
	F_DH,
	F_DP,
	F_PTMO,
	F_DTMO,
	F_CTMO,
	F_BODY,
	F_QUEUE,
	F_CONTRACT,
	F_FAULT,
	F_MAXC,
	F_MAXCPC,
	F_IDLE,
	F_HELP
};

static const struct {
	const char *name;
	int id;
} flags[] = {
    {"--host", F_HOST},
    {"--port", F_PORT},
    {"--prefill", F_PREFILL},
    {"--decode", F_DECODE},
    {"--prefiller-host", F_PH},
    {"--prefiller-hosts", F_PH},
    {"--prefiller-port", F_PP},
    {"--prefiller-ports", F_PP},
    {"--decoder-host", F_DH},
    {"--decoder-hosts", F_DH},
    {"--decoder-port", F_DP},
    {"--decoder-ports", F_DP},
    {"--prefill-timeout", F_PTMO},
    {"--decode-timeout", F_DTMO},
    {"--connect-timeout", F_CTMO},
    {"--max-body", F_BODY},
    {"--stream-buffer", F_QUEUE},
    {"--contract", F_CONTRACT},
    {"--fault", F_FAULT},
    {"--max-connections", F_MAXC},
    {"--max-connections-per-client", F_MAXCPC},
    {"--idle-timeout", F_IDLE},
    {"--help", F_HELP},
    {"-h", F_HELP},
};

static int parse_contract(const char *val, struct px_opts *o, char *err, size_t errsz)
{
	int k = 0;
	while (k < 4 && strcmp(val, px_contract_name(k)))
		k++;
	if (k == 4) {
		snprintf(err, errsz,
		         "--contract: expected v0, toy, mooncake or auto, got \"%.64s\"", val);
		return -EINVAL;
	}
	o->contract = k;
	return 0;
}

/* --max-body (body) or --stream-buffer. */
static int parse_size_flag(const char *name, int body, const char *val, struct px_opts *o,
                           char *err, size_t errsz)
{
	uint64_t v;
	if (pd_parse_size(val, &v) || v < 1024 || v > (body ? (4ull << 30) : (64ull << 20))) {
		snprintf(err, errsz, "%s: expected a size from 1KiB to %s, got \"%s\"", name,
		         body ? "4GiB" : "64MiB", val);
		return -EINVAL;
	}
	if (body)
		o->max_body = v;
	else
		o->queue_bytes = (size_t)v;
	return 0;
}

/* What the flag loop collected, turned into backends once every flag is known. */
struct args {
	struct strlist ph, pp, dh, dp;
	char *urls_p[PX_MAX_BACKENDS], *urls_d[PX_MAX_BACKENDS];
	int bp_p[PX_MAX_BACKENDS], np, nd, bp_given, toy_spelled;
};

/* Expands the URL lists (comma lists share a bootstrap port), pairs the toy host/port lists,
 * fills the toy defaults and resolves --contract auto. 0 or -EINVAL / -ENOMEM. */
static int finish(struct args *a, struct px_opts *o, char *err, size_t errsz)
{
	int ret = 0;
	for (int i = 0; i < a->np; i++) {
		struct strlist l = {0};
		if ((ret = list_add(&l, "--prefill", a->urls_p[i], err, errsz)) == 0)
			for (int k = 0; k < l.n && !ret; k++) {
				/* a comma list shares the bootstrap port that follows it */
				o->bootstrap[o->n_prefill < PX_MAX_BACKENDS ? o->n_prefill : 0] =
				    a->bp_p[i];
				ret = add_url(o->prefill, &o->n_prefill, "--prefill", l.v[k], err,
				              errsz);
			}
		list_free(&l);
		if (ret)
			return ret;
	}
	for (int i = 0; i < a->nd; i++) {
		struct strlist l = {0};
		if ((ret = list_add(&l, "--decode", a->urls_d[i], err, errsz)) == 0)
			for (int k = 0; k < l.n && !ret; k++)
				ret = add_url(o->decode, &o->n_decode, "--decode", l.v[k], err,
				              errsz);
		list_free(&l);
		if (ret)
			return ret;
	}
	if ((ret = add_toy(o->prefill, &o->n_prefill, "prefiller", &a->ph, &a->pp, "localhost",
	                   "8100", err, errsz)))
		return ret;
	if ((ret = add_toy(o->decode, &o->n_decode, "decoder", &a->dh, &a->dp, "localhost", "8200",
	                   err, errsz)))
		return ret;
	if (!o->n_prefill)
		add_url(o->prefill, &o->n_prefill, "--prefill", PX_DEFAULT_PREFILL, err, errsz);
	if (!o->n_decode)
		add_url(o->decode, &o->n_decode, "--decode", PX_DEFAULT_DECODE, err, errsz);
	if (o->contract == PX_CONTRACT_AUTO) {
		o->contract = a->bp_given      ? PX_CONTRACT_MOONCAKE
		              : a->toy_spelled ? PX_CONTRACT_TOY
		                               : PX_CONTRACT_V0;
		snprintf(o->contract_why, sizeof(o->contract_why), "%s",
		         a->bp_given      ? "a --prefill carries a bootstrap port"
		         : a->toy_spelled ? "the toy proxy's --prefiller/--decoder flags are used"
		                          : "no bootstrap port and no toy flags");
	}
	return 0;
}

/* The defaults px_parse_args starts from (the upstream proxies' own). */
static void set_defaults(struct px_opts *o)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->host, sizeof(o->host), "0.0.0.0");
	o->port = 8000;
	o->prefill_timeout_ms = 600 * 1000L;
	o->decode_timeout_ms = 21600 * 1000L;
	o->connect_timeout_ms = 10 * 1000L;
	o->max_body = 64ull << 20;
	o->queue_bytes = 64 << 10;
	o->max_conns = 2048;
	o->max_conns_per_client = 1024;
	o->idle_timeout_s = 300;
	o->contract = PX_CONTRACT_V0;
}

/* The F_* id of "--name" or "--name=value" (name copied into name[64]), -1 if unknown. */
static int flag_id(const char *a, const char **eq, char name[64])
{
	size_t nl;
	int id = -1;
	*eq = a[1] == '-' ? strchr(a, '=') : NULL;
	nl = *eq ? (size_t)(*eq - a) : strlen(a);
	snprintf(name, 64, "%.*s", (int)(nl < 63 ? nl : 63), a);
	for (size_t k = 0; k < PD_ARRAY_SIZE(flags); k++)
		if (!strcmp(name, flags[k].name))
			id = flags[k].id;
	return id;
}

/* --prefill / --decode URL; a --prefill given as a separate word may be followed by its
 * bootstrap port (consumed by advancing *i). */
static int add_backend(struct args *ca, int id, const char *name, const char *val, int eq, int argc,
                       char **argv, int *i, char *err, size_t errsz)
{
	char **dst = id == F_PREFILL ? ca->urls_p : ca->urls_d;
	int *n = id == F_PREFILL ? &ca->np : &ca->nd;
	if (*n >= PX_MAX_BACKENDS) {
		snprintf(err, errsz, "%s: more than %d backends", name, PX_MAX_BACKENDS);
		return -EINVAL;
	}
	if (id == F_PREFILL)
		ca->bp_p[*n] = 0;
	dst[(*n)++] = (char *)val;
	/* "--prefill URL [BOOTSTRAP_PORT|none]" (mooncake_connector_proxy.py); the
	 * V0 pipe and gen A have no bootstrap server, so only mooncake uses it */
	if (id == F_PREFILL && !eq && *i + 1 < argc && is_port_or_none(argv[*i + 1])) {
		int64_t v = 0;
		(*i)++;
		if (strcasecmp(argv[*i], "none"))
			pd_parse_i64(argv[*i], &v);
		ca->bp_p[*n - 1] = (int)v;
		ca->bp_given = 1;
	}
	return 0;
}

/* The toy proxy's --prefiller-host/-port, --decoder-host/-port (nargs="+"). */
static int add_toy_words(struct args *ca, int id, const char *name, const char *val, int eq,
                         int argc, char **argv, int *i, char *err, size_t errsz)
{
	struct strlist *lst = id == F_PH   ? &ca->ph
	                      : id == F_PP ? &ca->pp
	                      : id == F_DH ? &ca->dh
	                                   : &ca->dp;
	int ret;
	ca->toy_spelled = 1;
	if ((ret = list_add(lst, name, val, err, errsz)))
		return ret;
	/* argparse nargs="+": "--prefiller-port 8100 8101" */
	while (!eq && *i + 1 < argc && argv[*i + 1][0] != '-')
		if ((ret = list_add(lst, name, argv[++*i], err, errsz)))
			return ret;
	return 0;
}

/* --host and --port. */
static int parse_listen(int id, const char *val, struct px_opts *o, char *err, size_t errsz)
{
	int64_t v;
	if (id == F_HOST) {
		if (!*val || strlen(val) >= sizeof(o->host)) {
			snprintf(err, errsz, "--host: expected an address, got \"%s\"", val);
			return -EINVAL;
		}
		snprintf(o->host, sizeof(o->host), "%s", val);
		return 0;
	}
	if (pd_parse_i64(val, &v) || v < 0 || v > 65535) {
		snprintf(err, errsz, "--port: expected 0..65535, got \"%s\"", val);
		return -EINVAL;
	}
	o->port = (int)v;
	return 0;
}

/* Timeouts, connection counts and buffer sizes. */
static int parse_limit(int id, const char *name, const char *val, struct px_opts *o, char *err,
                       size_t errsz)
{
	switch (id) {
	case F_PTMO:
	case F_DTMO:
	case F_CTMO: {
		long *ms = id == F_PTMO   ? &o->prefill_timeout_ms
		           : id == F_DTMO ? &o->decode_timeout_ms
		                          : &o->connect_timeout_ms;
		return parse_secs(name, val, id != F_CTMO, ms, err, errsz);
	}
	case F_MAXC:
	case F_MAXCPC:
	case F_IDLE: {
		unsigned *dst = id == F_MAXC     ? &o->max_conns
		                : id == F_MAXCPC ? &o->max_conns_per_client
		                                 : &o->idle_timeout_s;
		return parse_count(name, val, id == F_IDLE ? 86400 : 1000000, dst, err, errsz);
	}
	case F_BODY:
	case F_QUEUE:
		return parse_size_flag(name, id == F_BODY, val, o, err, errsz);
	}
	return 0;
}

/* One flag with its value; *i moves past any extra words the flag takes. */
static int apply_flag(struct args *ca, struct px_opts *o, int id, const char *name, const char *val,
                      int eq, int argc, char **argv, int *i, char *err, size_t errsz)
{
	switch (id) {
	case F_HOST:
	case F_PORT:
		return parse_listen(id, val, o, err, errsz);
	case F_PREFILL:
	case F_DECODE:
		return add_backend(ca, id, name, val, eq, argc, argv, i, err, errsz);
	case F_PH:
	case F_PP:
	case F_DH:
	case F_DP:
		return add_toy_words(ca, id, name, val, eq, argc, argv, i, err, errsz);
	case F_CONTRACT:
		return parse_contract(val, o, err, errsz);
	case F_FAULT:
		return px_fault_parse(val, &o->faults, err, errsz);
	}
	return parse_limit(id, name, val, o, err, errsz);
}

int px_parse_args(int argc, char **argv, struct px_opts *o, char *err, size_t errsz)
{
	struct args A = {0}, *ca = &A;
	int ret = 0;

	set_defaults(o);
	err[0] = '\0';

	for (int i = 1; i < argc && !ret; i++) {
		const char *a = argv[i], *val = NULL, *eq = NULL;
		char name[64];
		int id;
		if (a[0] != '-') {
			snprintf(err, errsz, "unexpected argument \"%s\"", a);
			ret = -EINVAL;
			break;
		}
		id = flag_id(a, &eq, name);
		if (id < 0) {
			snprintf(err, errsz, "unknown flag \"%s\"", name);
			ret = -EINVAL;
			break;
		}
		if (id == F_HELP) {
			px_usage(strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0]);
			ret = 1;
			break;
		}
		if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			snprintf(err, errsz, "%s: missing value", name);
			ret = -EINVAL;
			break;
		}
		ret = apply_flag(ca, o, id, name, val, eq != NULL, argc, argv, &i, err, errsz);
	}
	if (!ret)
		ret = finish(ca, o, err, errsz);
	list_free(&ca->ph);
	list_free(&ca->pp);
	list_free(&ca->dh);
	list_free(&ca->dp);
	if (ret == -ENOMEM)
		snprintf(err, errsz, "out of memory");
	return ret;
}
