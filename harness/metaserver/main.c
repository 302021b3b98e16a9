/* pdkv-metaserver: an in-memory HTTP metadata server with Mooncake's API (GET/PUT/DELETE
 * <any path>?key=K, 404 "metadata not found", /health), usable instead of Mooncake's Python/Go one.
 */
#include "pd_buf.h"
#include "pd_log.h"
#include "pd_opt.h"
#include "pd_util.h"

#include <cJSON.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
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

/* ------------------------------------------------------------------ key/value store */
struct entry {
	struct entry *next;
	char *key;
	char *val;
	size_t vlen;
};

static struct {
	pthread_mutex_t lock;
	struct entry **b;
	size_t nb, n;
} store = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct {
	uint64_t max_body;
	bool reject_dup_rpc_meta;
} opt = {DEFAULT_MAX_BODY, false};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct entry **slot_of(const char *key)
{
	struct entry **pp = &store.b[hash_str(key) & (store.nb - 1)];
	while (*pp && strcmp((*pp)->key, key))
		pp = &(*pp)->next;
	return pp;
}

static int store_grow(void)
{
	size_t nb = store.nb ? store.nb * 2 : 64;
	struct entry **b = calloc(nb, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < store.nb; i++) {
		struct entry *e = store.b[i], *next;
		for (; e; e = next) {
			next = e->next;
			size_t h = hash_str(e->key) & (nb - 1);
			e->next = b[h];
			b[h] = e;
		}
	}
	free(store.b);
	store.b = b;
	store.nb = nb;
	return 0;
}

static void entry_free(struct entry *e)
{
	free(e->key);
	free(e->val);
	free(e);
}

static void store_clear(void)
{
	for (size_t i = 0; i < store.nb; i++) {
		struct entry *e = store.b[i], *next;
		for (; e; e = next) {
			next = e->next;
			entry_free(e);
		}
	}
	free(store.b);
	store.b = NULL;
	store.nb = store.n = 0;
}

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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* {"key": "value text", ...} for every key starting with prefix, keys sorted. */
static enum MHD_Result handle_list(struct MHD_Connection *c, const char *prefix)
{
	cJSON *obj = cJSON_CreateObject();
	char **keys = NULL, *txt = NULL;
	size_t nk = 0, plen = strlen(prefix);
	enum MHD_Result ret;

	pthread_mutex_lock(&store.lock);
	keys = calloc(store.n + 1, sizeof(*keys));
	for (size_t i = 0; keys && i < store.nb; i++)
		for (struct entry *e = store.b[i]; e; e = e->next)
			if (!strncmp(e->key, prefix, plen))
				keys[nk++] = e->key;
	if (keys)
		qsort(keys, nk, sizeof(*keys), cmp_str);
	for (size_t i = 0; obj && keys && i < nk; i++) {
		struct entry *e = *slot_of(keys[i]);
		cJSON_AddItemToObject(obj, e->key, cJSON_CreateString(e->val));
	}
	pthread_mutex_unlock(&store.lock);
	if (obj && keys)
		txt = cJSON_Print(obj);
	free(keys);
	cJSON_Delete(obj);
	if (!txt)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	ret = reply(c, MHD_HTTP_OK, "application/json", txt, strlen(txt));
	free(txt);
	return ret;
}

static enum MHD_Result handle_get(struct MHD_Connection *c, const char *key)
{
	char *copy = NULL;
	size_t len = 0;
	enum MHD_Result ret;

	pthread_mutex_lock(&store.lock);
	struct entry *e = store.nb ? *slot_of(key) : NULL;
	if (e) {
		len = e->vlen;
		copy = malloc(len + 1);
		if (copy)
			memcpy(copy, e->val, len);
	}
	pthread_mutex_unlock(&store.lock);
	if (!e)
		return reply_text(c, MHD_HTTP_NOT_FOUND, "metadata not found");
	if (!copy)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	ret = reply(c, MHD_HTTP_OK, "application/json", copy, len);
	free(copy);
	return ret;
}

static enum MHD_Result handle_put(struct MHD_Connection *c, const char *key, struct req *rq)
{
	struct entry **pp, *e;
	char *val = malloc(rq->body.len + 1);
	const char *msg = "metadata updated";
	unsigned code = MHD_HTTP_OK;

	if (!val)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	if (rq->body.len)
		memcpy(val, rq->body.p, rq->body.len);
	val[rq->body.len] = '\0';
	pthread_mutex_lock(&store.lock);
	if ((store.n >= store.nb && store_grow()) || !store.nb) {
		code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		msg = "out of memory";
		goto out;
	}
	pp = slot_of(key);
	e = *pp;
	if (e && opt.reject_dup_rpc_meta && strstr(key, "rpc_meta")) {
		/* newer Mooncake Python server (#818): a second engine with the same name fails */
		code = MHD_HTTP_BAD_REQUEST;
		msg = "Duplicate rpc_meta key not allowed";
		goto out;
	}
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || !(e->key = strdup(key))) {
			free(e);
			code = MHD_HTTP_INTERNAL_SERVER_ERROR;
			msg = "out of memory";
			goto out;
		}
		*pp = e;
		store.n++;
	}
	free(e->val);
	e->val = val;
	e->vlen = rq->body.len;
	val = NULL;
out:
	pthread_mutex_unlock(&store.lock);
	free(val);
	pd_dbg("PUT %s (%zu bytes) -> %u", key, rq->body.len, code);
	return reply_text(c, code, msg);
}

static enum MHD_Result handle_del(struct MHD_Connection *c, const char *key)
{
	struct entry *e = NULL;
	pthread_mutex_lock(&store.lock);
	if (store.nb) {
		struct entry **pp = slot_of(key);
		e = *pp;
		if (e) {
			*pp = e->next;
			store.n--;
		}
	}
	pthread_mutex_unlock(&store.lock);
	pd_dbg("DELETE %s -> %s", key, e ? "200" : "404");
	if (!e) /* Python server behaviour; the Go server answers 200 */
		return reply_text(c, MHD_HTTP_NOT_FOUND, "metadata not found");
	entry_free(e);
	return reply_text(c, MHD_HTTP_OK, "metadata deleted");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
	struct req *rq = *con_cls;
	const char *key, *prefix;
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
		rq->body.max = opt.max_body;
		if (pd_buf_put(&rq->body, upload, n) == -ENOMEM)
			return MHD_NO;
		return MHD_YES;
	}
	if (rq->body.over)
		return reply_text(c, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");

	if (!strcmp(url, "/health"))
		return reply_text(c, MHD_HTTP_OK, "OK");
	key = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "key");
	prefix = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "prefix");
	if (!key && is_get && (prefix || !strcmp(url, "/dump")))
		return handle_list(c, prefix ? prefix : "");
	if (!is_get && !is_put && !is_del)
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed");
	if (!key)
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "missing key parameter");
	if (!*key)
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "empty key");
	if (is_get)
		return handle_get(c, key);
	if (is_put)
		return handle_put(c, key, rq);
	return handle_del(c, key);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
	struct req *rq = *con_cls;
	(void)cls;
	(void)c;
	(void)toe;
	if (rq) {
		pd_buf_free(&rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

/* ------------------------------------------------------------------ main */
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
	static char usage[512];
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
	     .help = "largest PUT body (larger -> 413)",
	     .want = "a size such as 16MiB",
	     .fn = opt_max_body},
	    {.name = "reject-duplicate-rpc-meta",
	     .type = PD_OPT_FLAG,
	     .dst = &opt.reject_dup_rpc_meta,
	     .help = "PUT of an existing rpc_meta key -> 409"},
	};
	const struct pd_opt_spec spec = {
	    .prog = "pdkv-metaserver",
	    .usage = usage,
	    .footer = "In-memory HTTP metadata server with Mooncake's API:\n"
	              "  GET|PUT|DELETE <path>?key=K   value get/set/remove (404 \"metadata not "
	              "found\")\n"
	              "  GET /health                   200 OK\n"
	              "  GET /dump, GET /?prefix=P     all (or prefixed) keys as a JSON object\n",
	    .opts = opts,
	    .nopts = PD_ARRAY_SIZE(opts),
	    .max_pos = 0,
	};
	snprintf(usage, sizeof(usage),
	         "usage: pdkv-metaserver [--port N] [--host ADDR] [--addr=[HOST]:PORT]\n"
	         "                       [--max-body SIZE] [--reject-duplicate-rpc-meta]\n"
	         "Defaults: --host 0.0.0.0 --port %d --max-body 16MiB.\n",
	         DEFAULT_PORT);
	return pd_opt_parse(&spec, argc, argv, 1, NULL, NULL);
}

int main(int argc, char **argv)
{
	struct listen_at l = {.host = "0.0.0.0", .port = DEFAULT_PORT};
	int fd, ret = 1;
	struct MHD_Daemon *d = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	sigset_t sigs;
	const char *host = l.host;
	int port;

	pd_log_set_name("pdkv-metaserver");
	ret = parse_args(argc, argv, &l);
	if (ret)
		return ret == 1 ? 0 : 2;
	port = l.port;
	ret = 1;

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
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
	                     on_request, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
	                     MHD_OPTION_THREAD_POOL_SIZE, 2u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
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
			pd_info("signal %d: shutting down (%zu keys dropped)", sig, store.n);
			break;
		}
	}
	MHD_stop_daemon(d);
	close(fd);
	store_clear();
	ret = 0;
	return ret;
}
