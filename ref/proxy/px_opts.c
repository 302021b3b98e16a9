/* SPDX-License-Identifier: Apache-2.0 */
/* px_opts: pdkv-proxy's command line — the guide/PROXY-16 spellings (--prefill/--decode URL)
 * and the toy proxy's (--prefiller-host/--prefiller-port/...), normalised to base URLs. */
#include "px.h"
#include "px_fault.h"
#include "pd_opt.h"
#include "pd_util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PX_DEFAULT_PREFILL "http://localhost:8100"
#define PX_DEFAULT_DECODE  "http://localhost:8200"

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

/* What the flag rows collect, turned into backends once every flag is known (finish). */
enum { L_PH, L_PP, L_DH, L_DP, L_N };
struct args {
	struct px_opts *o;
	const char *raw[L_N][PX_MAX_BACKENDS]; /* the toy words as given */
	int nraw[L_N];
	struct strlist lst[L_N];
	const char *urls_p[PX_MAX_BACKENDS], *urls_d[PX_MAX_BACKENDS];
	int bp_p[PX_MAX_BACKENDS], np, nd, bp_given, toy_spelled;
	uint64_t queue;
};

/* Seconds as a decimal ("0.5", "600") into milliseconds; dst is a long. */
static int secs(const char *v, long *ms, bool zero_ok)
{
	char *end;
	double d;
	errno = 0;
	d = strtod(v, &end);
	if (!*v || *end || errno || !isfinite(d) || d < 0 || d > 1e7 || (!zero_ok && d <= 0))
		return -1;
	*ms = (long)llround(d * 1000.0);
	if (d > 0 && *ms == 0)
		*ms = 1;
	return 0;
}

static int opt_secs0(const char *v, void *dst, void *ud)
{
	(void)ud;
	return secs(v, dst, true);
}

static int opt_secs(const char *v, void *dst, void *ud)
{
	(void)ud;
	return secs(v, dst, false);
}

static int opt_host(const char *v, void *dst, void *ud)
{
	struct px_opts *o = ((struct args *)ud)->o;
	(void)dst;
	if (!*v || strlen(v) >= sizeof(o->host))
		return -1;
	snprintf(o->host, sizeof(o->host), "%s", v);
	return 0;
}

static int opt_fault(const char *v, void *dst, void *ud)
{
	char err[160];
	(void)ud;
	return px_fault_parse(v, dst, err, sizeof(err)) ? -1 : 0;
}

/* --prefill / --decode URL (checked in finish, where comma lists are split). */
static int opt_backend(const char *v, void *dst, void *ud)
{
	struct args *a = ud;
	bool prefill = dst == a->urls_p;
	int *n = prefill ? &a->np : &a->nd;
	if (*n >= PX_MAX_BACKENDS)
		return -1;
	if (prefill)
		a->bp_p[*n] = 0;
	((const char **)dst)[(*n)++] = v;
	return 0;
}

/* "--prefill URL [BOOTSTRAP_PORT|none]" (mooncake_connector_proxy.py); the V0 pipe and gen A
 * have no bootstrap server, so only mooncake uses it. */
static int more_bootstrap(const char *w, void *dst, void *ud)
{
	struct args *a = ud;
	int64_t v = 0;
	(void)dst;
	if (!is_port_or_none(w))
		return 0;
	if (strcasecmp(w, "none"))
		pd_parse_i64(w, &v);
	a->bp_p[a->np - 1] = (int)v;
	a->bp_given = 1;
	return 2;
}

/* The toy proxy's --prefiller-host/-port, --decoder-host/-port (argparse nargs="+"): the
 * words are kept as given and split into lists in finish. */
static int opt_toy(const char *v, void *dst, void *ud)
{
	struct args *a = ud;
	int k = (int)((const char *(*)[PX_MAX_BACKENDS])dst - a->raw);
	if (a->nraw[k] >= PX_MAX_BACKENDS)
		return -1;
	a->raw[k][a->nraw[k]++] = v;
	a->toy_spelled = 1;
	return 0;
}

static int more_toy(const char *w, void *dst, void *ud)
{
	return opt_toy(w, dst, ud) ? -1 : 1;
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

/* Expands the URL lists (comma lists share a bootstrap port), pairs the toy host/port lists,
 * fills the toy defaults and resolves --contract auto. 0 or -EINVAL / -ENOMEM. */
static int finish(struct args *a, struct px_opts *o, char *err, size_t errsz)
{
	static const char *const toy_flag[L_N] = {"--prefiller-host", "--prefiller-port",
	                                          "--decoder-host", "--decoder-port"};
	int ret = 0;
	for (int k = 0; k < L_N; k++)
		for (int i = 0; i < a->nraw[k]; i++)
			if ((ret = list_add(&a->lst[k], toy_flag[k], a->raw[k][i], err, errsz)))
				return ret;
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
	if ((ret = add_toy(o->prefill, &o->n_prefill, "prefiller", &a->lst[L_PH], &a->lst[L_PP],
	                   "localhost", "8100", err, errsz)))
		return ret;
	if ((ret = add_toy(o->decode, &o->n_decode, "decoder", &a->lst[L_DH], &a->lst[L_DP],
	                   "localhost", "8200", err, errsz)))
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

static const char usage_text[] =
    "Usage: pdkv-proxy [--contract v0|toy|mooncake|auto] [--host ADDR] [--port N]\n"
    "       --prefill URL [BOOTSTRAP_PORT|none]... --decode URL... [options]\n"
    "\n"
    "OpenAI-compatible disaggregated-prefill proxy, strict about failures. Each POST\n"
    "/v1/completions or /v1/chat/completions goes to a prefill instance (max_tokens=1,\n"
    "stream=false, drained) and to a decode instance whose answer streams back as is.\n"
    "\n";

static const char footer_text[] =
    "\n"
    "Server limits default to 2048 connections, 1024 per client, 300 s idle.\n"
    "Defaults when no backend is named (the toy proxy's): prefill " PX_DEFAULT_PREFILL ",\n"
    "decode " PX_DEFAULT_DECODE ".\n"
    "Prefill failure: a 4xx is passed to the client as is; any other failure is a 502\n"
    "JSON error and logged; decode is not called (mooncake: the decode call already\n"
    "running is aborted, or its stream cut if it had started). Decode errors pass\n"
    "through; a decode stream that breaks ends with an SSE error event and no [DONE].\n"
    "GET /health and /healthcheck answer 200 with the backends and failure counters\n"
    "(mooncake: 503 until ready; toy: /healthcheck as the toy proxy answers it).\n"
    "GET /v1/models goes to the first decode. v0 with no Authorization from the\n"
    "client sends OPENAI_API_KEY (if set) as a Bearer token.\n"
    "Log level: PDKV_LOG=error|warn|info|debug; one access line per request at info.\n"
    "Errors: one line \"pdkv-proxy: ...\" on stderr, exit 2.\n";

#define URL_WANT "http://host:port, host:port or an endpoint URL (at most 64 per flag)"
#define TOY_ROW(nm, k, a, h)                                                                       \
	{                                                                                          \
		.name = nm, .type = PD_OPT_FN, .dst = A->raw[k], .arg = a, .help = h,              \
		.want = "a host or port list (at most 64 entries)", .fn = opt_toy,                 \
		.more = more_toy                                                                   \
	}

/* The rows of pdkv-proxy: its own, then the server limits group shared with the stand-in. */
static int parse_table(struct args *A, struct px_opts *o, int argc, char **argv, char *err,
                       size_t errsz)
{
	const struct pd_opt rows[] = {
	    {.name = "contract",
	     .type = PD_OPT_CHOICE,
	     .dst = &o->contract,
	     .arg = "NAME",
	     .choices = "v0|toy|mooncake|auto",
	     .help = "the router to behave as (default v0):\n"
	             "v0: the integration guide's proxy (V0 pipe): prefill, then\n"
	             "  the original request to decode; the client's X-Request-Id\n"
	             "  and Authorization\n"
	             "toy: vLLM's toy_proxy_server.py (V1 gen A, vLLM 0.12-0.15):\n"
	             "  uuid4 X-Request-Id, prefill with kv_transfer_params\n"
	             "  {do_remote_decode: true,...}, then decode with prefill's\n"
	             "  returned kv_transfer_params; Authorization: Bearer\n"
	             "  $OPENAI_API_KEY (\"None\" when unset)\n"
	             "mooncake: vLLM's mooncake_connector_proxy.py (V1 gen B, vLLM\n"
	             "  >= 0.16): waits for each prefill's /health and bootstrap\n"
	             "  /query (503 until then), transfer_id \"xfer-<uuid4>\" in\n"
	             "  both bodies, X-data-parallel-rank, round robin over\n"
	             "  (prefill, dp rank); prefill and decode at once\n"
	             "auto: mooncake when a --prefill carries a bootstrap port (or\n"
	             "  none), toy when the toy spellings are used, else v0"},
	    {.name = "host",
	     .type = PD_OPT_FN,
	     .arg = "ADDR",
	     .help = "bind address (default 0.0.0.0)",
	     .want = "an address",
	     .fn = opt_host},
	    {.name = "port",
	     .type = PD_OPT_INT,
	     .dst = &o->port,
	     .arg = "N",
	     .help = "listen port (default 8000; 0 = any free port)",
	     .want = "0..65535",
	     .max = 65535},
	    {.name = "prefill",
	     .type = PD_OPT_FN,
	     .dst = A->urls_p,
	     .arg = "URL [BP|none]",
	     .help = "prefill instance; repeat (or comma-separate) for round\n"
	             "robin. URL: http://host:port, host:port, or an endpoint\n"
	             "such as http://host:port/v1/completions. BP: its\n"
	             "bootstrap port for mooncake (none or absent = 8998)",
	     .want = URL_WANT,
	     .fn = opt_backend,
	     .more = more_bootstrap},
	    {.name = "decode",
	     .type = PD_OPT_FN,
	     .dst = A->urls_d,
	     .arg = "URL",
	     .help = "decode instance; same forms, round robin",
	     .want = URL_WANT,
	     .fn = opt_backend},
	    TOY_ROW("prefiller-host", L_PH, "H...",
	            "toy-proxy spelling (or --prefiller-hosts): hosts\n"
	            "(repeat, comma or space list)"),
	    TOY_ROW("prefiller-hosts", L_PH, "H...", NULL),
	    TOY_ROW("prefiller-port", L_PP, "P...",
	            "toy-proxy spelling (or --prefiller-ports): ports, paired\n"
	            "with the hosts; one host or one port is used for every\n"
	            "entry of the other"),
	    TOY_ROW("prefiller-ports", L_PP, "P...", NULL),
	    TOY_ROW("decoder-host", L_DH, "H...",
	            "toy-proxy spelling for decode (or --decoder-hosts)"),
	    TOY_ROW("decoder-hosts", L_DH, "H...", NULL),
	    TOY_ROW("decoder-port", L_DP, "P...", "(or --decoder-ports)"),
	    TOY_ROW("decoder-ports", L_DP, "P...", NULL),
	    {.name = "prefill-timeout",
	     .type = PD_OPT_FN,
	     .dst = &o->prefill_timeout_ms,
	     .arg = "SEC",
	     .help = "whole prefill request (default 600; 0 = none)",
	     .want = "seconds (a number >= 0, 0 = no limit)",
	     .fn = opt_secs0},
	    {.name = "decode-timeout",
	     .type = PD_OPT_FN,
	     .dst = &o->decode_timeout_ms,
	     .arg = "SEC",
	     .help = "whole decode request incl. streaming (default 21600;\n0 = none)",
	     .want = "seconds (a number >= 0, 0 = no limit)",
	     .fn = opt_secs0},
	    {.name = "connect-timeout",
	     .type = PD_OPT_FN,
	     .dst = &o->connect_timeout_ms,
	     .arg = "SEC",
	     .help = "TCP connect to a backend (default 10)",
	     .want = "seconds (a number > 0)",
	     .fn = opt_secs},
	    {.name = "max-body",
	     .type = PD_OPT_SIZE,
	     .dst = &o->max_body,
	     .arg = "SIZE",
	     .help = "request body limit, e.g. 64MiB (default); larger -> 413",
	     .want = "a size from 1KiB to 4GiB",
	     .min = 1024,
	     .max = 4.0 * (1ull << 30)},
	    {.name = "stream-buffer",
	     .type = PD_OPT_SIZE,
	     .dst = &A->queue,
	     .arg = "SIZE",
	     .help = "per-request decode->client queue (default 64KiB)",
	     .want = "a size from 1KiB to 64MiB",
	     .min = 1024,
	     .max = 64 << 20},
	    {.name = "fault",
	     .type = PD_OPT_FN,
	     .dst = &o->faults,
	     .arg = "F[,F]",
	     .help = "behave like a broken router, for detector self-tests:\n"
	             "drop-transfer-id (mooncake: no transfer_id in either\n"
	             "body), no-copy-params (toy: decode gets no params),\n"
	             "ignore-prefill-errors (mooncake: a failed prefill is\n"
	             "only logged, as mooncake_connector_proxy.py does),\n"
	             "reuse-transfer-id (mooncake: every second request\n"
	             "reuses the previous transfer_id)",
	     .want = "drop-transfer-id, no-copy-params, ignore-prefill-errors or "
	             "reuse-transfer-id (comma list)",
	     .fn = opt_fault},
	};
	struct pd_opt srv[PD_OPT_SERVER_ROWS];
	struct pd_opt_group groups[] = {
	    pd_opt_server_group(srv, &o->max_conns, &o->max_conns_per_client, &o->idle_timeout_s),
	};
	const struct pd_opt_spec spec = {.prog = "pdkv-proxy",
	                                 .usage = usage_text,
	                                 .footer = footer_text,
	                                 .opts = rows,
	                                 .nopts = PD_ARRAY_SIZE(rows),
	                                 .groups = groups,
	                                 .ngroups = PD_ARRAY_SIZE(groups),
	                                 .max_pos = 0,
	                                 .ud = A,
	                                 .err = err,
	                                 .errsz = errsz};
	return pd_opt_parse(&spec, argc, argv, 1, NULL, NULL);
}

int px_parse_args(int argc, char **argv, struct px_opts *o, char *err, size_t errsz)
{
	struct args *A = calloc(1, sizeof(*A));
	int ret;

	set_defaults(o);
	err[0] = '\0';
	if (!A) {
		snprintf(err, errsz, "pdkv-proxy: out of memory");
		return -ENOMEM;
	}
	A->o = o;
	A->queue = o->queue_bytes;
	ret = parse_table(A, o, argc, argv, err, errsz);
	if (ret == 2)
		ret = -EINVAL;
	if (!ret) {
		o->queue_bytes = (size_t)A->queue;
		ret = finish(A, o, err, errsz);
		if (ret == -EINVAL) { /* finish's messages name the flag: add the program */
			char tmp[512];
			snprintf(tmp, sizeof(tmp), "pdkv-proxy: %s", err);
			snprintf(err, errsz, "%s", tmp);
		}
	}
	for (int k = 0; k < L_N; k++)
		list_free(&A->lst[k]);
	free(A);
	if (ret == -ENOMEM)
		snprintf(err, errsz, "pdkv-proxy: out of memory");
	return ret;
}
