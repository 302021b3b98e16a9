/* pdkv-metaserver: an in-memory HTTP metadata server with Mooncake's API (GET/PUT/DELETE
 * <any path>?key=K, 404 "metadata not found", /health), usable instead of Mooncake's Python/Go one.
 */
#include "metaserver/ms_conn.h"
#include "metaserver/ms_store.h"
#include "pd_log.h"
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
	char *body;
	size_t len, cap;
	bool too_big;
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
	int rc = ms_put(key, klen, rq->body ? rq->body : "", rq->len, opt.reject_dup_rpc_meta);
	pd_dbg("PUT %s (%zu bytes) -> %d", key, rq->len, rc);
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
		if (rq->too_big || rq->len + n > opt.max_body) {
			rq->too_big = true;
			return MHD_YES;
		}
		if (rq->len + n + 1 > rq->cap) {
			size_t cap = rq->cap ? rq->cap : 4096;
			while (cap < rq->len + n + 1)
				cap *= 2;
			char *b = realloc(rq->body, cap);
			if (!b)
				return MHD_NO;
			rq->body = b;
			rq->cap = cap;
		}
		memcpy(rq->body + rq->len, upload, n);
		rq->len += n;
		return MHD_YES;
	}
	if (rq->too_big)
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
	(void)c;
	(void)toe;
	if (rq) {
		free(rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

/* ------------------------------------------------------------------ main */
/* "--name=value" or "--name value"; returns the value or NULL. */
static const char *arg_val(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n))
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

/* ---- issue 11: store and connection limits (one block: the flags, their parsing) ---- */
static struct ms_limits lim = {MS_DEFAULT_MAX_KEY, MS_DEFAULT_MAX_VALUE, MS_DEFAULT_MAX_TOTAL,
                               MS_DEFAULT_MAX_KEYS, MS_DEFAULT_MAX_DUMP};
static struct {
	unsigned max_total, max_per, idle_s;
} conn = {MS_DEFAULT_MAX_CONN, MS_DEFAULT_MAX_CONN_PER, MS_DEFAULT_IDLE_TIMEOUT_S};

static const char LIMITS_USAGE[] =
    "Limits (a refusal is logged, at most once a second per kind):\n"
    "  --max-key SIZE                    key bytes (default 4KiB; longer -> 414)\n"
    "  --max-total SIZE                  keys + values held (default 256MiB; full -> 507)\n"
    "  --max-keys N                      keys held (default 65536; full -> 507)\n"
    "  --max-dump SIZE                   /dump and ?prefix= answer (default 64MiB; -> 507)\n"
    "  --max-connections N               connections at once (default 256)\n"
    "  --max-connections-per-client N    per client address (default 32)\n"
    "  --idle-timeout SEC                drop a connection idle this long (default 10)\n"
    "A key with a NUL byte (%00) is refused (400).\n";

/* 1 consumed, 0 not a limit flag, -1 bad value (message printed) */
static int limit_opt(int argc, char **argv, int *i)
{
	static const struct {
		const char *name;
		bool size;
		uint64_t min, max;
	} f[] = {
	    {"--max-key", true, 1, 1u << 20},
	    {"--max-total", true, 1, 1ull << 40},
	    {"--max-keys", false, 1, 1u << 30},
	    {"--max-dump", true, 1, 1ull << 40},
	    {"--max-connections", false, 1, 100000},
	    {"--max-connections-per-client", false, 1, 100000},
	    {"--idle-timeout", false, 1, 86400},
	};
	for (size_t k = 0; k < PD_ARRAY_SIZE(f); k++) {
		const char *v = arg_val(argc, argv, i, f[k].name);
		uint64_t x;
		if (!v)
			continue;
		if ((f[k].size ? pd_parse_size(v, &x) : pd_parse_u64(v, &x)) || x < f[k].min ||
		    x > f[k].max) {
			pd_err("%s: expected %s from %llu to %llu, got \"%s\"", f[k].name,
			       f[k].size ? "a size such as 4KiB" : "a number",
			       (unsigned long long)f[k].min, (unsigned long long)f[k].max, v);
			return -1;
		}
		size_t *sz[] = {&lim.max_key, &lim.max_total, &lim.max_keys, &lim.max_dump};
		unsigned *un[] = {&conn.max_total, &conn.max_per, &conn.idle_s};
		if (k < 4)
			*sz[k] = (size_t)x;
		else
			*un[k - 4] = (unsigned)x;
		return 1;
	}
	return 0;
}
/* ---- end of the limits block ---- */

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: pdkv-metaserver [--port N] [--host ADDR] [--addr=[HOST]:PORT]\n"
	    "                       [--max-body SIZE] [--reject-duplicate-rpc-meta]\n"
	    "In-memory HTTP metadata server with Mooncake's API:\n"
	    "  GET|PUT|DELETE <path>?key=K   value get/set/remove (404 \"metadata not found\")\n"
	    "  GET /health                   200 OK\n"
	    "  GET /dump, GET /?prefix=P     all (or prefixed) keys as a JSON object\n"
	    "Defaults: --host 0.0.0.0 --port %d --max-body 16MiB (larger PUT -> 413).\n"
	    "--port 0 picks a free port (printed on stdout).\n%s",
	    DEFAULT_PORT, LIMITS_USAGE);
}

static int parse_port(const char *s, int *port)
{
	int64_t v;
	if (pd_parse_i64(s, &v) || v < 0 || v > 65535)
		return -EINVAL;
	*port = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	char host[256] = "0.0.0.0";
	int port = DEFAULT_PORT, fd, ret = 1;
	struct MHD_Daemon *d = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	sigset_t sigs;
	const char *v;
	int rc;

	pd_log_set_name("pdkv-metaserver");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if ((v = arg_val(argc, argv, &i, "--port"))) {
			if (parse_port(v, &port)) {
				pd_err("--port: expected 0..65535, got \"%s\"", v);
				return 2;
			}
		} else if ((v = arg_val(argc, argv, &i, "--host"))) {
			snprintf(host, sizeof(host), "%s", v);
		} else if ((v = arg_val(argc, argv, &i, "--addr"))) {
			const char *colon = strrchr(v, ':');
			if (!colon || parse_port(colon + 1, &port) ||
			    (size_t)(colon - v) >= sizeof(host)) {
				pd_err("--addr: expected [HOST]:PORT (e.g. :8080), got \"%s\"", v);
				return 2;
			}
			if (colon > v)
				snprintf(host, sizeof(host), "%.*s", (int)(colon - v), v);
		} else if ((v = arg_val(argc, argv, &i, "--max-body"))) {
			if (pd_parse_size(v, &opt.max_body) || !opt.max_body) {
				pd_err("--max-body: expected a size such as 16MiB, got \"%s\"", v);
				return 2;
			}
		} else if (!strcmp(argv[i], "--reject-duplicate-rpc-meta")) {
			opt.reject_dup_rpc_meta = true;
		} else if ((rc = limit_opt(argc, argv, &i)) != 0) {
			if (rc < 0)
				return 2;
		} else {
			pd_err("unknown argument \"%s\"", argv[i]);
			usage(stderr);
			return 2;
		}
	}

	lim.max_value = opt.max_body;
	ms_store_limits(&lim);
	ms_conn_limits(conn.max_total, conn.max_per);
	/* block the signals before MHD starts its threads, so only sigwait sees them */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	fd = pd_tcp_listen(host, port, 128);
	if (fd < 0) {
		pd_err("cannot listen on %s:%d: %s", host, port, strerror(-fd));
		return 1;
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
		                                : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	/* MHD's own limit (split between the 2 pool threads) sits above ours, so every refusal is
	 * ours and logged */
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG, 0,
	                     ms_conn_accept, NULL, on_request, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
	                     MHD_OPTION_THREAD_POOL_SIZE, 2u, MHD_OPTION_CONNECTION_TIMEOUT,
	                     conn.idle_s, MHD_OPTION_CONNECTION_LIMIT, 2 * conn.max_total + 16,
	                     MHD_OPTION_NOTIFY_CONNECTION, ms_conn_notify, NULL,
	                     MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_END);
	if (!d) {
		pd_err("cannot start the HTTP daemon on %s:%d", host, port);
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
	close(fd);
	ms_store_clear();
	ret = 0;
	return ret;
}
