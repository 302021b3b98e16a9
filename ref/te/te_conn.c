/* SPDX-License-Identifier: Apache-2.0 */
/* te_conn: metadata connection strings — P2PHANDSHAKE, etcd://h:p[,h:p], bare h:p (= etcd),
 * redis://h[:p], http(s)://... — and the vLLM adaptor's resolution (both: docs/metadata.md). */
#include "te_internal.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pd_log.h"
#include "pd_util.h"
#include "pd_meta_scheme.h"

static int bad(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return TE_ERR_INVALID_ARGUMENT;
}

const char *te_meta_kind_name(enum te_meta_kind kind)
{
	switch (kind) {
	case TE_META_ETCD:
		return PD_META_ETCD;
	case TE_META_REDIS:
		return PD_META_REDIS;
	case TE_META_HTTP:
		return PD_META_HTTP;
	case TE_META_P2P:
		return PD_META_P2P;
	}
	return "?";
}

/* etcd endpoint list "h:p[,h:p...]" (',' or ';'); an optional http:// per endpoint is
 * dropped, as clientv3 accepts both. Normalised list goes to out->url. */
static int parse_etcd(const char *conn, const char *rest, struct te_conn_info *out, char *errbuf,
                      size_t errlen)
{
	char ep[512], host[256];
	const char *s = rest;
	size_t ulen = 0;
	int port;

	if (!*rest)
		return bad(errbuf, errlen,
		           "metadata \"%s\": etcd endpoint missing (expected "
		           "etcd://host:port)",
		           conn);
	while (*s) {
		size_t n = strcspn(s, ",;");
		if (n == 0 || n >= sizeof(ep))
			return bad(errbuf, errlen,
			           "metadata \"%s\": empty or overlong etcd endpoint", conn);
		memcpy(ep, s, n);
		ep[n] = '\0';
		const char *e = ep;
		if (!strncmp(e, "http://", 7))
			e += 7;
		if (pd_split_hostport(e, host, sizeof(host), &port))
			return bad(errbuf, errlen,
			           "metadata \"%s\": etcd endpoint \"%s\": expected "
			           "host:port with port 1..65535",
			           conn, ep);
		if (out->nendpoints == 0) {
			snprintf(out->host, sizeof(out->host), "%s", host);
			out->port = port;
		}
		size_t el = strlen(e);
		if (ulen + el + 2 > sizeof(out->url))
			return bad(errbuf, errlen, "metadata \"%s\": etcd endpoint list too long",
			           conn);
		if (ulen)
			out->url[ulen++] = ',';
		memcpy(out->url + ulen, e, el + 1);
		ulen += el;
		out->nendpoints++;
		s += n;
		if (*s)
			s++;
	}
	return 0;
}

static int parse_redis(const char *conn, const char *rest, struct te_conn_info *out, char *errbuf,
                       size_t errlen)
{
	int port;
	size_t n = strlen(rest);
	if (n && rest[n - 1] == '/')
		n--;
	if (n == 0 || n >= sizeof(out->url) || memchr(rest, '@', n) || memchr(rest, '/', n))
		return bad(errbuf, errlen,
		           "metadata \"%s\": expected redis://host[:port] (password "
		           "via MC_REDIS_PASSWORD)",
		           conn);
	snprintf(out->url, sizeof(out->url), "%.*s", (int)n, rest);
	if (!strchr(out->url, ':') || (out->url[0] == '[' && !strstr(out->url, "]:"))) {
		/* no port: Mooncake falls back to 12001 */
		const char *h = out->url;
		size_t hl = strlen(h);
		if (h[0] == '[' && hl > 2) {
			h++;
			hl -= 2;
		}
		if (hl >= sizeof(out->host))
			return bad(errbuf, errlen, "metadata \"%s\": host too long", conn);
		snprintf(out->host, sizeof(out->host), "%.*s", (int)hl, h);
		out->port = PD_META_REDIS_DEFAULT_PORT;
		pd_dbg("metadata \"%s\": no redis port given, using %d as Mooncake does", conn,
		       PD_META_REDIS_DEFAULT_PORT);
	} else if (pd_split_hostport(out->url, out->host, sizeof(out->host), &port)) {
		return bad(errbuf, errlen,
		           "metadata \"%s\": expected redis://host[:port] with port "
		           "1..65535",
		           conn);
	} else {
		out->port = port;
	}
	out->nendpoints = 1;
	return 0;
}

/* http(s): the whole string is the base URL; host and port are filled for messages. */
static int parse_http(const char *conn, const char *rest, int https, struct te_conn_info *out,
                      char *errbuf, size_t errlen)
{
	size_t n = strcspn(rest, "/?#");
	char auth[300];
	if (n == 0 || n >= sizeof(auth) || strlen(conn) >= sizeof(out->url))
		return bad(errbuf, errlen, "metadata \"%s\": expected http://host[:port]/path",
		           conn);
	snprintf(out->url, sizeof(out->url), "%s", conn);
	memcpy(auth, rest, n);
	auth[n] = '\0';
	char *at = strrchr(auth, '@');
	const char *hp = at ? at + 1 : auth;
	if (pd_split_hostport(hp, out->host, sizeof(out->host), &out->port)) {
		if (strchr(hp, ':') && hp[0] != '[')
			return bad(errbuf, errlen, "metadata \"%s\": bad port in \"%s\"", conn, hp);
		if (snprintf(out->host, sizeof(out->host), "%s", hp) >= (int)sizeof(out->host))
			return bad(errbuf, errlen, "metadata \"%s\": host too long", conn);
		out->port = https ? 443 : 80;
	}
	if (!out->host[0])
		return bad(errbuf, errlen, "metadata \"%s\": host missing", conn);
	out->nendpoints = 1;
	return 0;
}

int te_conn_parse(const char *conn, struct te_conn_info *out, char *errbuf, size_t errlen)
{
	const struct pd_meta_scheme *m;
	const char *sep;
	size_t sl;

	memset(out, 0, sizeof(*out));
	if (!conn || !*conn)
		return bad(errbuf, errlen,
		           "metadata connection string is empty (expected "
		           "P2PHANDSHAKE, etcd://h:p, redis://h:p or http://h:p/path)");
	if (!strcmp(conn, PD_META_P2P)) {
		out->kind = TE_META_P2P;
		snprintf(out->url, sizeof(out->url), "%s", conn);
		return 0;
	}
	sep = strstr(conn, "://");
	if (!sep) { /* bare host:port is etcd (Mooncake and the Python adaptor agree) */
		out->kind = TE_META_ETCD;
		return parse_etcd(conn, conn, out, errbuf, errlen);
	}
	sl = (size_t)(sep - conn);
	if (sl == 0 || sl >= 32)
		return bad(errbuf, errlen, "metadata \"%s\": missing or overlong scheme", conn);
	m = pd_meta_scheme_of(conn); /* the one registry (ref/common/pd_meta_scheme.c) */
	switch (m ? m->kind : 0) {
	case PD_META_STORE_ETCD:
		out->kind = TE_META_ETCD;
		return parse_etcd(conn, sep + 3, out, errbuf, errlen);
	case PD_META_STORE_REDIS:
		out->kind = TE_META_REDIS;
		return parse_redis(conn, sep + 3, out, errbuf, errlen);
	case PD_META_STORE_HTTP:
		out->kind = TE_META_HTTP;
		return parse_http(conn, sep + 3, m->tls, out, errbuf, errlen);
	}
	return bad(
	    errbuf, errlen,
	    "metadata \"%s\": unsupported scheme \"%.*s\" (expected etcd, redis, http, https "
	    "or the exact string P2PHANDSHAKE; Mooncake would abort here)",
	    conn, (int)sl, conn);
}
