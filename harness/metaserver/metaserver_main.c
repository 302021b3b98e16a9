/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-metaserver: an in-memory HTTP metadata server with Mooncake's API (GET/PUT/DELETE
 * <any path>?key=K, 404 "metadata not found", /health), usable instead of Mooncake's Python/Go one.
 */
#include "metaserver/ms_conn.h"
#include "httplim/pd_connlim.h"
#include "httplim/pd_mhdhdr.h"
#include "httplim/pd_mhdlog.h"
#include "metaserver/ms_store.h"
#include "pd_buf.h"
#include "pd_log.h"
#include "pd_opt.h"
#include "pd_util.h"

#include <cJSON.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#define DEFAULT_PORT     8080
#define DEFAULT_MAX_BODY (16ull << 20)

static struct {
	uint64_t max_body;
	bool reject_dup_rpc_meta;
} opt = {DEFAULT_MAX_BODY, false};

/* ------------------------------------------------------------------ HTTP */
struct req {
	struct pd_buf body; /* the PUT body, capped at --max-body */
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *ctype,
                             const void *data, size_t len)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned code, const char *text)
{
	return reply(c, code, "text/plain; charset=utf-8", text, strlen(text));
}

/* At most one line a second per kind of refusal, so a flood cannot flood the log. */
static void warn_limited(int kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_limited(int kind, const char *fmt, ...)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static uint64_t last[8], skipped[8];
	char line[512];
	va_list ap;
	uint64_t now = pd_now_ns(), n;
	pthread_mutex_lock(&mu);
	if (last[kind] && now - last[kind] < 1000000000ull) {
		skipped[kind]++;
		pthread_mutex_unlock(&mu);
		return;
	}
	last[kind] = now;
	n = skipped[kind];
	skipped[kind] = 0;
	pthread_mutex_unlock(&mu);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n)
		pd_warn("%s (%llu more like it in the last second)", line, (unsigned long long)n);
	else
		pd_warn("%s", line);
}

static unsigned code_of(int err)
{
	switch (err) {
	case -ENOENT:
		return MHD_HTTP_NOT_FOUND;
	case -EINVAL:
	case -EILSEQ:
	case -EEXIST:
		return MHD_HTTP_BAD_REQUEST;
	case -ENAMETOOLONG:
		return MHD_HTTP_URI_TOO_LONG;
	case -EFBIG:
		return MHD_HTTP_CONTENT_TOO_LARGE;
	case -ENOSPC:
		return MHD_HTTP_INSUFFICIENT_STORAGE;
	default:
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

static enum MHD_Result reply_err(struct MHD_Connection *c, int err, size_t klen)
{
	if (err == -ENAMETOOLONG || err == -ENOSPC || err == -EFBIG || err == -EILSEQ)
		warn_limited(err == -ENAMETOOLONG ? 0
		             : err == -ENOSPC     ? 1
		             : err == -EFBIG      ? 2
		                                  : 3,
		             "request refused (%u): %s (key of %zu bytes)", code_of(err),
		             ms_strerror(err), klen);
	return reply_text(c, code_of(err), ms_strerror(err));
}

/* {"key": "value text", ...} for every key starting with prefix, keys sorted. */
static enum MHD_Result handle_list(struct MHD_Connection *c, const char *prefix, size_t plen)
{
	char *txt, msg[200];
	size_t len;
	int ret = ms_dump(prefix, plen, &txt, &len);
	struct MHD_Response *r;
	enum MHD_Result q;
	if (ret == -EFBIG) {
		warn_limited(4, "dump refused: %zu bytes over --max-dump", len);
		snprintf(msg, sizeof(msg),
		         "dump would be %zu bytes, over --max-dump; narrow it with ?prefix=", len);
		return reply_text(c, MHD_HTTP_INSUFFICIENT_STORAGE, msg);
	}
	if (ret)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	/* handed over, not copied: a dump near --max-dump is held once */
	r = MHD_create_response_from_buffer(len, txt, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(txt);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	q = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return q;
}

static enum MHD_Result handle_get(struct MHD_Connection *c, const char *key, size_t klen)
{
	char *val;
	size_t len;
	enum MHD_Result ret;
	int rc = ms_get(key, klen, &val, &len);
	if (rc)
		return reply_err(c, rc, klen);
	ret = reply(c, MHD_HTTP_OK, "application/json", val, len);
	free(val);
	return ret;
}

static enum MHD_Result handle_put(struct MHD_Connection *c, const char *key, size_t klen,
                                  struct req *rq)
{
	int rc =
	    ms_put(key, klen, rq->body.p ? rq->body.p : "", rq->body.len, opt.reject_dup_rpc_meta);
	pd_dbg("PUT %s (%zu bytes) -> %d", key, rq->body.len, rc);
	if (rc)
		return reply_err(c, rc, klen);
	return reply_text(c, MHD_HTTP_OK, "metadata updated");
}

static enum MHD_Result handle_del(struct MHD_Connection *c, const char *key, size_t klen)
{
	int rc = ms_del(key, klen);
	pd_dbg("DELETE %s -> %d", key, rc);
	if (rc) /* 404: Python server behaviour; the Go server answers 200 */
		return reply_err(c, rc, klen);
	return reply_text(c, MHD_HTTP_OK, "metadata deleted");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
	struct req *rq = *con_cls;
	const char *key, *prefix;
	size_t klen = 0, plen = 0;
	bool is_get = !strcmp(method, MHD_HTTP_METHOD_GET);
	bool is_put = !strcmp(method, MHD_HTTP_METHOD_PUT) || !strcmp(method, MHD_HTTP_METHOD_POST);
	bool is_del = !strcmp(method, MHD_HTTP_METHOD_DELETE);
	(void)cls;
	(void)version;

	if (!rq) {
		pd_mhdhdr_headers_done(c); /* the header deadline stops here (issue 34, D6) */
		const char *cl =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		uint64_t n;
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		if (cl && !pd_parse_u64(cl, &n) && n > opt.max_body)
			return reply_text(c, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		rq->body.max = opt.max_body;
		/* past --max-body the rest is read and dropped; the answer below is 413 */
		if (pd_buf_put(&rq->body, upload, n) == -ENOMEM)
			return MHD_NO;
		return MHD_YES;
	}
	if (rq->body.over)
		return reply_text(c, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");

	if (!strcmp(url, "/health"))
		return reply_text(c, MHD_HTTP_OK, "OK");
	/* with lengths: "%00" decodes to a NUL that a C string would cut the key at */
	if (MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, "key", 3, &key, &klen) !=
	    MHD_YES)
		key = NULL;
	if (MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, "prefix", 6, &prefix, &plen) !=
	    MHD_YES)
		prefix = NULL;
	if (!key && is_get && (prefix || !strcmp(url, "/dump")))
		return handle_list(c, prefix ? prefix : "", prefix ? plen : 0);
	if (!is_get && !is_put && !is_del)
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed");
	if (!key)
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "missing key parameter");
	if (is_get)
		return handle_get(c, key, klen);
	if (is_put)
		return handle_put(c, key, klen, rq);
	return handle_del(c, key, klen);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
	struct req *rq = *con_cls;
	(void)cls;
	(void)toe;
	pd_mhdhdr_request_done(c);
	if (rq) {
		pd_buf_free(&rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

/* ------------------------------------------------------------------ main */
/* ---- issue 11: store and connection limits (the values the limit flags fill) ---- */
static struct ms_limits lim = {MS_DEFAULT_MAX_KEY, MS_DEFAULT_MAX_VALUE, MS_DEFAULT_MAX_TOTAL,
                               MS_DEFAULT_MAX_KEYS, MS_DEFAULT_MAX_DUMP};
static struct {
	unsigned max_total, max_per, idle_s;
} conn = {MS_DEFAULT_MAX_CONN, MS_DEFAULT_MAX_CONN_PER, MS_DEFAULT_IDLE_TIMEOUT_S};

/* pd_opt's numeric types fill uint64_t; these are copied into lim / conn after parsing. */
static struct {
	uint64_t max_key, max_total, max_keys, max_dump, max_conn, max_per, idle_s;
} lim_arg = {MS_DEFAULT_MAX_KEY,       MS_DEFAULT_MAX_TOTAL, MS_DEFAULT_MAX_KEYS,
             MS_DEFAULT_MAX_DUMP,      MS_DEFAULT_MAX_CONN,  MS_DEFAULT_MAX_CONN_PER,
             MS_DEFAULT_IDLE_TIMEOUT_S};

static void limits_from_args(void)
{
	lim.max_key = (size_t)lim_arg.max_key;
	lim.max_total = (size_t)lim_arg.max_total;
	lim.max_keys = (size_t)lim_arg.max_keys;
	lim.max_dump = (size_t)lim_arg.max_dump;
	conn.max_total = (unsigned)lim_arg.max_conn;
	conn.max_per = (unsigned)lim_arg.max_per;
	conn.idle_s = (unsigned)lim_arg.idle_s;
}

#define LIMIT_OPT(n, t, field, a, h, w, hi)                                                        \
	{                                                                                          \
		.name = n, .type = t, .dst = &lim_arg.field, .arg = a, .help = h, .want = w,       \
		.min = 1, .max = (double)(hi)                                                      \
	}
/* ---- end of the limits block ---- */

static int parse_port(const char *s, int *port)
{
	int64_t v;
	if (pd_parse_i64(s, &v) || v < 0 || v > 65535)
		return -EINVAL;
	*port = (int)v;
	return 0;
}

struct listen_at {
	char host[256];
	int port;
};

static int opt_host(const char *v, void *dst, void *ud)
{
	struct listen_at *l = dst;
	(void)ud;
	if (strlen(v) >= sizeof(l->host))
		return -1;
	snprintf(l->host, sizeof(l->host), "%s", v);
	return 0;
}

static int opt_port(const char *v, void *dst, void *ud)
{
	(void)ud;
	return parse_port(v, &((struct listen_at *)dst)->port);
}

/* --addr [HOST]:PORT */
static int opt_addr(const char *v, void *dst, void *ud)
{
	struct listen_at *l = dst;
	const char *colon = strrchr(v, ':');
	(void)ud;
	if (!colon || parse_port(colon + 1, &l->port) || (size_t)(colon - v) >= sizeof(l->host))
		return -1;
	if (colon > v)
		snprintf(l->host, sizeof(l->host), "%.*s", (int)(colon - v), v);
	return 0;
}

static int opt_max_body(const char *v, void *dst, void *ud)
{
	(void)ud;
	return pd_parse_size(v, dst) || !*(uint64_t *)dst ? -1 : 0;
}

/* 0, 1 after --help, 2 on bad usage (printed). */
static int parse_args(int argc, char **argv, struct listen_at *l)
{
	static char usage[640];
	const struct pd_opt opts[] = {
	    {.name = "port",
	     .type = PD_OPT_FN,
	     .dst = l,
	     .arg = "N",
	     .help = "port to listen on (0 = a free one, printed on stdout)",
	     .want = "0..65535",
	     .fn = opt_port},
	    {.name = "host",
	     .type = PD_OPT_FN,
	     .dst = l,
	     .arg = "ADDR",
	     .help = "address to listen on",
	     .want = "a host or address",
	     .fn = opt_host},
	    {.name = "addr",
	     .type = PD_OPT_FN,
	     .dst = l,
	     .arg = "=[HOST]:PORT",
	     .help = "both at once",
	     .want = "[HOST]:PORT (e.g. :8080)",
	     .fn = opt_addr},
	    {.name = "max-body",
	     .type = PD_OPT_FN,
	     .dst = &opt.max_body,
	     .arg = "SIZE",
	     .help = "largest PUT body (default 16MiB; larger -> 413)",
	     .want = "a size such as 16MiB",
	     .fn = opt_max_body},
	    {.name = "reject-duplicate-rpc-meta",
	     .type = PD_OPT_FLAG,
	     .dst = &opt.reject_dup_rpc_meta,
	     .help = "PUT of an existing rpc_meta key -> 409"},
	    LIMIT_OPT("max-key", PD_OPT_SIZE, max_key, "SIZE",
	              "key bytes (default 4KiB; longer -> 414)",
	              "a size such as 4KiB from 1 to 1048576", 1u << 20),
	    LIMIT_OPT("max-total", PD_OPT_SIZE, max_total, "SIZE",
	              "keys + values held (default 256MiB; full -> 507)",
	              "a size such as 4KiB from 1 to 1099511627776", 1ull << 40),
	    LIMIT_OPT("max-keys", PD_OPT_U64, max_keys, "N",
	              "keys held (default 65536; full -> 507)", "a number from 1 to 1073741824",
	              1u << 30),
	    LIMIT_OPT("max-dump", PD_OPT_SIZE, max_dump, "SIZE",
	              "/dump and ?prefix= answer (default 64MiB; -> 507)",
	              "a size such as 4KiB from 1 to 1099511627776", 1ull << 40),
	    LIMIT_OPT("max-connections", PD_OPT_U64, max_conn, "N",
	              "connections at once (default 256)", "a number from 1 to 100000", 100000),
	    LIMIT_OPT("max-connections-per-client", PD_OPT_U64, max_per, "N",
	              "per client address (default 32)", "a number from 1 to 100000", 100000),
	    LIMIT_OPT("idle-timeout", PD_OPT_U64, idle_s, "SEC",
	              "drop a connection idle this long (default 10)", "a number from 1 to 86400",
	              86400),
	};
	const struct pd_opt_spec spec = {
	    .prog = "pdkv-metaserver",
	    .usage = usage,
	    .footer = "In-memory HTTP metadata server with Mooncake's API:\n"
	              "  GET|PUT|DELETE <path>?key=K   value get/set/remove (404 \"metadata not "
	              "found\")\n"
	              "  GET /health                   200 OK\n"
	              "  GET /dump, GET /?prefix=P     all (or prefixed) keys as a JSON object\n"
	              "A limit refusal is logged, at most once a second per kind. A key with a NUL "
	              "byte (%00)\nis refused (400).\n",
	    .opts = opts,
	    .nopts = PD_ARRAY_SIZE(opts),
	    .max_pos = 0,
	};
	int rc;

	snprintf(usage, sizeof(usage),
	         "usage: pdkv-metaserver [--port N] [--host ADDR] [--addr=[HOST]:PORT]\n"
	         "                       [--max-body SIZE] [--reject-duplicate-rpc-meta]\n"
	         "                       [--max-key SIZE] [--max-total SIZE] [--max-keys N]\n"
	         "                       [--max-dump SIZE] [--max-connections N]\n"
	         "                       [--max-connections-per-client N] [--idle-timeout SEC]\n"
	         "Defaults: --host 0.0.0.0 --port %d.\n",
	         DEFAULT_PORT);
	rc = pd_opt_parse(&spec, argc, argv, 1, NULL, NULL);
	if (!rc)
		limits_from_args();
	return rc;
}

int main(int argc, char **argv)
{
	struct listen_at l = {.host = "0.0.0.0", .port = DEFAULT_PORT};
	const char *host;
	int port, fd, ret;
	struct MHD_Daemon *d = NULL;
	struct pd_connlim *connlim;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	sigset_t sigs;

	pd_log_set_name("pdkv-metaserver");
	ret = parse_args(argc, argv, &l);
	if (ret)
		return ret == 1 ? 0 : 2;
	host = l.host;
	port = l.port;
	ret = 1;

	lim.max_value = opt.max_body;
	ms_store_limits(&lim);
	connlim = pd_connlim_new("pdkv-metaserver", conn.max_total, conn.max_per);
	if (!connlim || pd_connlim_header_deadline(connlim, conn.idle_s))
		return 1;
	/* block the signals before MHD starts its threads, so only sigwait sees them */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	fd = pd_tcp_listen(host, port, 128);
	if (fd < 0) {
		pd_err("cannot listen on %s:%d: %s", host, port, strerror(-fd));
		pd_connlim_free(connlim);
		return 1;
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
		                                : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	/* MHD's own limit (split between the 2 pool threads) sits above ours, so every refusal is
	 * ours and logged */
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG, 0,
	                     pd_connlim_accept, connlim, on_request, NULL,
	                     MHD_OPTION_EXTERNAL_LOGGER, pd_mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET,
	                     fd, MHD_OPTION_THREAD_POOL_SIZE, 2u, MHD_OPTION_CONNECTION_TIMEOUT,
	                     conn.idle_s, MHD_OPTION_CONNECTION_LIMIT, 2 * conn.max_total + 16,
	                     MHD_OPTION_NOTIFY_CONNECTION, pd_connlim_notify, connlim,
	                     MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_END);
	if (!d) {
		pd_err("cannot start the HTTP daemon on %s:%d", host, port);
		pd_connlim_free(connlim);
		close(fd);
		return 1;
	}
	printf("pdkv-metaserver: listening on http://%s:%d/metadata?key=...\n", host, port);
	fflush(stdout);

	for (;;) {
		int sig = 0;
		if (sigwait(&sigs, &sig) == 0 && (sig == SIGINT || sig == SIGTERM)) {
			pd_info("signal %d: shutting down (%zu keys dropped)", sig,
			        ms_store_keys());
			break;
		}
	}
	MHD_stop_daemon(d);
	pd_connlim_free(connlim);
	close(fd);
	ms_store_clear();
	ret = 0;
	return ret;
}
