/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-doctor: checks a host before a PD run — RDMA devices, ports, GID table, MTU, line rate,
 * RLIMIT_MEMLOCK, metadata server, ports a config needs, shared libraries, GPUs — one line per
 * check (OK/WARN/FAIL + the fix) or --json; exit 0 when nothing FAILs. */
#include <arpa/inet.h>
#include <cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cfg/cfg.h"
#include "doc_boot.h"
#include "pd_env.h"
#include "pd_ibrate.h"
#include "pd_log.h"
#include "pd_opt.h"
#include "pd_util.h"
#include "te/te_inspect.h"
#include "te/te_conn.h" /* te_conn_parse: the engine's own reading of CONN */
#include "pd_meta_scheme.h"

enum { OK, WARN, FAIL };
static const char *const lvl_name[] = {"OK", "WARN", "FAIL"};

struct opts {
	const char *metadata, *config, *devices, *protocol, *bootstrap;
	bool json, rdma_wanted, vllm_auto; /* vllm_auto: no --vllm, both plans */
	int vllm;
};

static cJSON *g_results;
static int g_count[3];

static void report(int lvl, const char *check, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void report(int lvl, const char *check, const char *fix, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	cJSON *o = cJSON_CreateObject();

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	g_count[lvl]++;
	cJSON_AddStringToObject(o, "check", check);
	cJSON_AddStringToObject(o, "status", lvl_name[lvl]);
	cJSON_AddStringToObject(o, "detail", msg);
	if (fix)
		cJSON_AddStringToObject(o, "fix", fix);
	cJSON_AddItemToArray(g_results, o);
}

/* ---------------------------------------------------------------- RDMA */

/* speed/width code tables: ref/common/pd_ibrate.c (pdkv bench's % of line rate uses them too) */
#define lane_gbps pd_ib_lane_gbps
#define lanes     pd_ib_lanes

static const char *gid_type_name(int t)
{
	return t == IBV_GID_TYPE_IB ? "IB" : t == IBV_GID_TYPE_ROCE_V1 ? "RoCEv1" : "RoCEv2";
}

static bool listed(const char *names, const char *n)
{
	size_t l = strlen(n);

	for (const char *p = names; p && *p;) {
		size_t k = strcspn(p, ",");

		if (k == l && !strncmp(p, n, l))
			return true;
		p += k + (p[k] == ',');
	}
	return false;
}

static void check_port(struct ibv_context *ctx, const char *dev)
{
	struct ibv_port_attr pa;
	char check[96], buf[1024] = "", gs[64];
	int auto_gi = -1, env_gi = -1;
	int64_t gi; /* the engine's reading: MC_GID_INDEX, else NCCL_IB_GID_INDEX, 0..255 */
	int env = pd_env_int_or("MC_GID_INDEX", "NCCL_IB_GID_INDEX", &gi);
	double gbps;

	snprintf(check, sizeof(check), "%s port 1", dev);
	if (ibv_query_port(ctx, 1, &pa)) {
		report(FAIL, check, "check the driver (dmesg)", "ibv_query_port failed: %s",
		       strerror(errno));
		return;
	}
	if (pa.state != IBV_PORT_ACTIVE)
		report(FAIL, check,
		       "bring the link up (cable/switch; `ip link set <netdev> up` for "
		       "RoCE) or pick another device with device_name",
		       "state %s, physical state %u", ibv_port_state_str(pa.state), pa.phys_state);
	else
		report(OK, check, NULL, "ACTIVE, link layer %s, lid %u",
		       pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)" : "InfiniBand",
		       pa.lid);

	/* GID table: which index is RoCEv2/IPv4 (Mooncake's auto choice) */
	for (int i = 0; i < pa.gid_tbl_len && strlen(buf) < sizeof(buf) - 80; i++) {
		struct ibv_gid_entry e;
		bool v4;

		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		v4 = !memcmp(e.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12);
		if (v4)
			inet_ntop(AF_INET, e.gid.raw + 12, gs, sizeof(gs));
		else
			inet_ntop(AF_INET6, e.gid.raw, gs, sizeof(gs));
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s[%d] %s %s",
		         buf[0] ? ", " : "", i, gid_type_name(e.gid_type), gs);
		if (auto_gi < 0 &&
		    ((e.gid_type == IBV_GID_TYPE_ROCE_V2 && v4) || e.gid_type == IBV_GID_TYPE_IB))
			auto_gi = i;
	}
	snprintf(check, sizeof(check), "%s GID table", dev);
	if (env == 1)
		env_gi = (int)gi;
	if (!buf[0])
		report(FAIL, check,
		       "give the RoCE interface an IP address (GIDs follow the netdev's "
		       "addresses), then re-run",
		       "no populated GID entry");
	else if (env_gi >= 0)
		report(env_gi == auto_gi || auto_gi < 0 ? OK : WARN, check,
		       env_gi == auto_gi ? NULL : "unset MC_GID_INDEX unless the fabric needs it",
		       "%s; MC_GID_INDEX=%d pins the index (auto would pick %d)", buf, env_gi,
		       auto_gi);
	else if (auto_gi < 0)
		report(WARN, check,
		       "no RoCEv2 IPv4-mapped entry: add an IPv4 address to the netdev or "
		       "set MC_GID_INDEX",
		       "%s; auto-selection falls back to index 0", buf);
	else
		report(OK, check, NULL, "%s; auto-selects index %d (MC_GID_INDEX overrides)", buf,
		       auto_gi);

	snprintf(check, sizeof(check), "%s MTU", dev);
	report(pa.active_mtu >= IBV_MTU_1024 ? OK : WARN, check,
	       pa.active_mtu >= IBV_MTU_1024 ? NULL
	                                     : "raise the netdev/switch MTU (RoCE: 4200 for 4096)",
	       "active %d, max %d (the engine uses min(active, MC_MTU=4096))", 128 << pa.active_mtu,
	       128 << pa.max_mtu);

	snprintf(check, sizeof(check), "%s line rate", dev);
	gbps = lane_gbps(pa.active_speed) * lanes(pa.active_width);
	if (gbps > 0)
		report(OK, check, NULL,
		       "%dx %.4g Gb/s = %.1f Gb/s = %.2f GB/s (bench %% of line rate "
		       "uses this)",
		       lanes(pa.active_width), lane_gbps(pa.active_speed), gbps, gbps / 8);
	else
		report(WARN, check, NULL, "unknown speed code %u / width code %u", pa.active_speed,
		       pa.active_width);
}

static void check_rdma(const struct opts *o)
{
	struct ibv_device **l;
	int n = 0, used = 0;
	const char *none_fix =
	    o->rdma_wanted
	        ? "this host has no RDMA NIC or driver: install/load it (mlx5_core + ib_uverbs; "
	          "Soft-RoCE: `modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0`), in "
	          "a "
	          "container pass --device=/dev/infiniband; or use protocol \"tcp\""
	        : NULL;

	errno = 0;
	l = ibv_get_device_list(&n);
	if (!l || n == 0) {
		report(o->rdma_wanted ? FAIL : WARN, "rdma devices", none_fix, "none found (%s)%s",
		       errno ? strerror(errno) : "empty list",
		       o->rdma_wanted ? "" : "; fine for protocol tcp");
		goto out;
	}
	for (const char *p = o->devices; p && *p;) {
		size_t k = strcspn(p, ",");
		bool found = false;

		for (int i = 0; i < n; i++)
			if (strlen(ibv_get_device_name(l[i])) == k &&
			    !strncmp(ibv_get_device_name(l[i]), p, k))
				found = true;
		if (!found)
			report(FAIL, "device_name",
			       "fix device_name (comma list, no spaces) to name "
			       "devices `ibv_devices` shows",
			       "\"%.*s\" is not an RDMA device here", (int)k, p);
		p += k + (p[k] == ',');
	}
	for (int i = 0; i < n; i++) {
		const char *dn = ibv_get_device_name(l[i]);
		struct ibv_context *ctx;

		if (o->devices && *o->devices && !listed(o->devices, dn))
			continue;
		used++;
		ctx = ibv_open_device(l[i]);
		if (!ctx) {
			report(FAIL, dn,
			       "check permissions on /dev/infiniband/uverbs* (container: "
			       "--device=/dev/infiniband)",
			       "ibv_open_device failed: %s", strerror(errno));
			continue;
		}
		check_port(ctx, dn);
		ibv_close_device(ctx);
	}
	report(used ? OK : FAIL, "rdma devices", used ? NULL : "fix device_name",
	       "%d found, %d checked", n, used);
out:
	if (l)
		ibv_free_device_list(l);
}

/* ---------------------------------------------------------------- host */

static void check_memlock(const struct opts *o)
{
	struct rlimit rl;
	const char *fix = "`ulimit -l unlimited` (limits.conf: `* - memlock unlimited`; docker: "
	                  "--ulimit memlock=-1; systemd: LimitMEMLOCK=infinity)";

	if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
		report(WARN, "RLIMIT_MEMLOCK", NULL, "getrlimit failed: %s", strerror(errno));
	} else if (rl.rlim_cur == RLIM_INFINITY) {
		report(OK, "RLIMIT_MEMLOCK", NULL, "unlimited");
	} else {
		/* KV buffers are registered whole (GBs); root has CAP_IPC_LOCK and is not bound */
		int lvl = geteuid() == 0 ? WARN : (o->rdma_wanted ? FAIL : WARN);

		report(rl.rlim_cur >= (1ull << 40) ? OK : lvl, "RLIMIT_MEMLOCK", fix,
		       "%llu KiB: ibv_reg_mr of the KV buffer will fail beyond it%s",
		       (unsigned long long)rl.rlim_cur / 1024,
		       geteuid() == 0 ? " (root: CAP_IPC_LOCK usually overrides)" : "");
	}
}

static void check_libs(void)
{
	static const char *const libs[][3] = {
	    {"libibverbs.so.1", "RDMA verbs (rdma-core)",
	     "apt-get install libibverbs1 ibverbs-providers"},
	    {"libcuda.so.1", "CUDA driver", "install the NVIDIA driver (only for GPU KV buffers)"},
	    {"libcudart.so", "CUDA runtime",
	     "install the CUDA toolkit / cuda-cudart (vLLM brings its own)"},
	};

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		char check[64];
		void *h = dlopen(libs[i][0], RTLD_NOW | RTLD_LOCAL);

		if (!h && !strcmp(libs[i][0], "libcudart.so"))
			h = dlopen("libcudart.so.12", RTLD_NOW | RTLD_LOCAL);
		snprintf(check, sizeof(check), "lib %s", libs[i][0]);
		if (h) {
			report(OK, check, NULL, "%s loads", libs[i][1]);
			dlclose(h);
		} else {
			report(i == 0 ? FAIL : WARN, check, libs[i][2], "%s not loadable: %s",
			       libs[i][1], dlerror());
		}
	}
}

static void check_gpu(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*init)(unsigned) = NULL, (*count)(int *) = NULL;
	int n = 0, rc = -1;

	if (h) {
		*(void **)&init = dlsym(h, "cuInit");
		*(void **)&count = dlsym(h, "cuDeviceGetCount");
		if (init && count && (rc = init(0)) == 0)
			rc = count(&n);
		dlclose(h);
	}
	if (rc == 0 && n > 0)
		report(OK, "gpu", NULL, "%d CUDA device(s)", n);
	else if (!access("/dev/nvidia0", F_OK))
		report(WARN, "gpu", "check the driver with nvidia-smi",
		       "/dev/nvidia0 exists but "
		       "CUDA reports no device (cuInit rc %d)",
		       rc);
	else
		report(WARN, "gpu", "vLLM needs GPUs; pdkv's stand-ins and bench run without",
		       "no CUDA GPU (KV buffers on cpu only)");
}

/* A TCP connect to host:port within 2 s: 0, or the errno (ECONNREFUSED: nothing listens). */
static int tcp_reach(const char *host, int port)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	char ps[16];
	int fd, err = EHOSTUNREACH;

	snprintf(ps, sizeof(ps), "%d", port);
	if (getaddrinfo(host, ps, &hints, &ai) || !ai)
		return EHOSTUNREACH;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			err = 0;
		} else if (errno == EINPROGRESS) {
			struct pollfd pf = {.fd = fd, .events = POLLOUT};
			socklen_t l = sizeof(err);
			if (poll(&pf, 1, 2000) != 1)
				err = ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l))
				err = errno;
		} else {
			err = errno;
		}
		close(fd);
	}
	freeaddrinfo(ai);
	return err;
}

/* "start etcd (...)": how to bring up the store the connection string names at host:port */
static void start_hint(const struct te_conn_info *ci, char *out, size_t n)
{
	if (ci->kind == TE_META_REDIS)
		snprintf(out, n,
		         "start redis (`redis-server --bind %s --port %d`) or fix metadata_server",
		         ci->host, ci->port);
	else if (ci->kind == TE_META_HTTP)
		snprintf(
		    out, n,
		    "start the HTTP metadata server (`pdkv metaserver --host %s --port %d`, or "
		    "Mooncake's) or fix metadata_server",
		    ci->host, ci->port);
	else
		snprintf(
		    out, n,
		    "start etcd (`etcd --listen-client-urls http://%s:%d --advertise-client-urls "
		    "http://%s:%d`) or fix metadata_server",
		    ci->host, ci->port, ci->host, ci->port);
}

static void check_metadata(const char *conn)
{
	char err[256] = "", fix[900];
	double t0 = pd_now_s();
	struct te_conn_info ci;
	bool opened;
	int rc;

	if (pd_meta_is_p2p(conn)) {
		report(OK, "metadata server", NULL,
		       "P2PHANDSHAKE: no store; peers are host:rpc_port");
		return;
	}
	if (te_conn_parse(conn, &ci, err, sizeof(err))) {
		report(FAIL, "metadata server",
		       "use etcd://h:p, h:p, redis://h:p, http://h:p/path or P2PHANDSHAKE",
		       "\"%s\": %s", conn, err);
		return;
	}
	/* the address parses: whether anything listens there decides the advice */
	start_hint(&ci, fix, sizeof(fix));
	rc = tcp_reach(ci.host, ci.port);
	if (rc == ECONNREFUSED) {
		report(FAIL, "metadata server", fix, "nothing listens on %s:%d (\"%s\", %s)",
		       ci.host, ci.port, conn, te_meta_kind_name(ci.kind));
		return;
	}
	if (rc) {
		report(FAIL, "metadata server", fix,
		       "%s:%d does not answer a TCP connect (%s; \"%s\")", ci.host, ci.port,
		       strerror(rc), conn);
		return;
	}
	rc = te_inspect_meta_probe(conn, &opened, err, sizeof(err));
	if (rc == 0)
		report(OK, "metadata server", NULL, "%s answers (%.0f ms)", conn,
		       (pd_now_s() - t0) * 1e3);
	else
		report(FAIL, "metadata server",
		       "what listens there is not the store metadata_server names: point it at "
		       "the store's client address",
		       "%s:%d accepts connections but is not a working %s store: %s", ci.host,
		       ci.port, te_meta_kind_name(ci.kind), err[0] ? err : te_strerror(rc));
}

static bool local_host(const char *h)
{
	char ip[64];

	if (!*h || !strcmp(h, "*") || !strcmp(h, "0.0.0.0") || !strcmp(h, "localhost") ||
	    !strncmp(h, "127.", 4) || !strcmp(h, "::1"))
		return true;
	te_inspect_local_ip(ip, sizeof(ip));
	return !strcmp(h, ip);
}

/* Binds every port of dep's plan that is on this host: a FAIL per port in use. */
static void check_ports(const struct cfg_deploy *dep, const char *gen, size_t *checked,
                        size_t *taken)
{
	struct cfg_diags d = {0};
	struct cfg_port *p = NULL;
	size_t n = 0;

	if (cfg_ports_plan(dep, &p, &n, &d))
		n = 0;
	for (size_t i = 0; i < n; i++) {
		int fd, one = 1;
		struct sockaddr_in a = {.sin_family = AF_INET,
		                        .sin_port = htons((uint16_t)p[i].port)};

		if (!p[i].binds || p[i].port <= 0 || !local_host(p[i].host))
			continue;
		(*checked)++;
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			continue;
		/* as the servers bind (SO_REUSEADDR): a TIME_WAIT leftover is no finding */
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) && errno == EADDRINUSE) {
			char fix[160];

			snprintf(fix, sizeof(fix),
			         "stop what holds it (`ss -ltnp 'sport = :%d'`) or "
			         "move the base port in the config",
			         p[i].port);
			report(FAIL, "port", fix, "%d (%s%s %s) is already in use", p[i].port, gen,
			       p[i].side, p[i].purpose);
			(*taken)++;
		}
		close(fd);
	}
	free(p);
	cfg_diags_free(&d);
}

static char cfg_devices[512], cfg_conn[1024];

static void check_config(struct opts *o)
{
	struct cfg_mooncake mc = {0};
	struct cfg_diags d = {0};
	struct cfg_deploy dep = {0};
	char *verr = NULL;
	size_t taken = 0, checked = 0;

	if (cfg_mooncake_load(o->config, o->vllm, &mc, &d, &verr)) {
		report(FAIL, "mooncake config", "fix the file (pdkv config explains every field)",
		       "%s: %s", o->config, verr ? verr : "rejected");
		goto out;
	}
	report(cfg_diags_count(&d, CFG_ERROR) ? FAIL : OK, "mooncake config",
	       cfg_diags_count(&d, CFG_ERROR) ? "run `pdkv config` for the details" : NULL,
	       "%s: protocol %s, device_name \"%s\", metadata %s (%zu error(s), %zu warning(s))",
	       o->config, mc.protocol ? mc.protocol : "null", mc.device_name ? mc.device_name : "",
	       mc.conn_string ? mc.conn_string : "?", cfg_diags_count(&d, CFG_ERROR),
	       cfg_diags_count(&d, CFG_WARNING));
	if (!o->protocol)
		o->rdma_wanted = mc.protocol && !strcmp(mc.protocol, "rdma");
	if (!o->devices && mc.device_name && *mc.device_name) {
		snprintf(cfg_devices, sizeof(cfg_devices), "%s", mc.device_name);
		o->devices = cfg_devices;
	}
	if (!o->metadata && mc.conn_string) {
		snprintf(cfg_conn, sizeof(cfg_conn), "%s", mc.conn_string);
		o->metadata = cfg_conn;
	}
	dep.mc = &mc;
	dep.tp = dep.dp = 1;
	/* without --vllm both generations' binds are checked: V0's pipe ports (B+9, B+10) come
	 * from this very file, and a taken one kills the V0 stand-in with "Address in use" */
	if (o->vllm_auto || o->vllm == CFG_VLLM_V0) {
		dep.vllm = CFG_VLLM_V0;
		check_ports(&dep, o->vllm_auto ? "vLLM V0 " : "", &checked, &taken);
	}
	if (o->vllm_auto || o->vllm == CFG_VLLM_V1) {
		dep.vllm = CFG_VLLM_V1;
		check_ports(&dep, o->vllm_auto ? "vLLM V1 " : "", &checked, &taken);
	}
	if (!taken)
		report(OK, "ports", NULL, "%zu port(s) the config binds on this host are free%s",
		       checked, o->vllm_auto ? " (vLLM V0 and V1 plans; --vllm picks one)" : "");
out:
	free(verr);
	cfg_mooncake_free(&mc);
	cfg_diags_free(&d);
}

/* 0, 1 after --help, 2 on bad usage (printed). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	int proto = -1, vllm = -1, rc;
	const struct pd_opt opts[] = {
	    {.name = "metadata_server",
	     .type = PD_OPT_STR,
	     .dst = &o->metadata,
	     .arg = "=CONN",
	     .help = "probe this store (etcd://h:p, h:p, redis://h:p, http://..., P2PHANDSHAKE)"},
	    {.name = "mooncake-config",
	     .type = PD_OPT_STR,
	     .dst = &o->config,
	     .arg = "=FILE",
	     .help = "check the ports and devices this mooncake.json needs"},
	    {.name = "device_name",
	     .type = PD_OPT_STR,
	     .dst = &o->devices,
	     .arg = "=a,b",
	     .help = "RDMA devices to check (default: all)"},
	    {.name = "protocol",
	     .type = PD_OPT_CHOICE,
	     .dst = &proto,
	     .arg = "=rdma|tcp",
	     .help = "tcp: a missing RDMA device is only a WARN",
	     .choices = "rdma|tcp"},
	    {.name = "vllm",
	     .type = PD_OPT_CHOICE,
	     .dst = &vllm,
	     .arg = "=v0|v1",
	     .help = "which vLLM generation reads the config (default: check both plans)",
	     .choices = "v0|v1"},
	    {.name = "json", .type = PD_OPT_FLAG, .dst = &o->json, .help = "one JSON document"},
	    {.name = "bootstrap",
	     .type = PD_OPT_STR,
	     .dst = &o->bootstrap,
	     .arg = "=URL",
	     .help = "a gen B bootstrap server: exposure and its workers (doc_boot.c)"},
	};
	const struct pd_opt_spec spec = {
	    .prog = "pdkv doctor",
	    .usage = "usage: pdkv doctor [--metadata_server=CONN] [--mooncake-config=FILE] "
	             "[--device_name=a,b] [--protocol=rdma|tcp] [--vllm=v0|v1] [--json]\n"
	             "Checks RDMA devices, ports, GID table, MTU, line rate, RLIMIT_MEMLOCK, the "
	             "metadata server,\nports the config needs, shared libraries and GPUs. Exit 0 "
	             "when no check FAILs.\n",
	    .footer =
	        "  pdkv doctor --env [--names|--markdown|--man=CMD]\n"
	        "                              every environment variable pdkv reads: value,\n"
	        "                              source (set / default), bad values (exit 1)\n",
	    .opts = opts,
	    .nopts = PD_ARRAY_SIZE(opts),
	    .max_pos = 0,
	};
	rc = pd_opt_parse(&spec, argc, argv, 1, NULL, NULL);
	if (rc)
		return rc;
	if (proto >= 0) {
		o->protocol = proto == 0 ? "rdma" : "tcp";
		o->rdma_wanted = proto == 0;
	}
	o->vllm = vllm == 0 ? CFG_VLLM_V0 : CFG_VLLM_V1;
	o->vllm_auto = vllm < 0;
	return 0;
}

/* The results as a table (or --json); the exit status. */
static int print_results(const struct opts *o)
{
	cJSON *it;
	if (o->json) {
		cJSON *root = cJSON_CreateObject();
		char *s;

		cJSON_AddItemToObject(root, "checks", g_results);
		cJSON_AddNumberToObject(root, "ok", g_count[OK]);
		cJSON_AddNumberToObject(root, "warn", g_count[WARN]);
		cJSON_AddNumberToObject(root, "fail", g_count[FAIL]);
		s = cJSON_Print(root);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(root);
	} else {
		cJSON_ArrayForEach(it, g_results)
		{
			const char *fix = cJSON_GetStringValue(cJSON_GetObjectItem(it, "fix"));
			const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(it, "status"));

			printf("%-4s %-24s %s\n", st,
			       cJSON_GetStringValue(cJSON_GetObjectItem(it, "check")),
			       cJSON_GetStringValue(cJSON_GetObjectItem(it, "detail")));
			if (fix && strcmp(st, "OK"))
				printf("     %-24s fix: %s\n", "", fix);
		}
		printf("doctor: %d OK, %d WARN, %d FAIL\n", g_count[OK], g_count[WARN],
		       g_count[FAIL]);
		cJSON_Delete(g_results);
	}
	return g_count[FAIL] ? 1 : 0;
}

int doctor_env_main(int argc, char **argv);

int main(int argc, char **argv)
{
	struct opts o = {.rdma_wanted = true, .vllm = CFG_VLLM_V1};
	int rc;

	pd_log_set_name("pdkv-doctor");
	if (argc > 1 && !strcmp(argv[1], "--env")) /* harness/doctor/doctor_env.c */
		return doctor_env_main(argc - 1, argv + 1);
	rc = parse_args(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : 2;
	if (!o.json)
		pd_log_set_level(PD_LOG_ERROR);
	g_results = cJSON_CreateArray();
	if (o.config)
		check_config(&o);
	check_rdma(&o);
	check_memlock(&o);
	if (o.metadata)
		check_metadata(o.metadata);
	if (o.bootstrap)
		doc_check_bootstrap(o.bootstrap, report);
	check_libs();
	check_gpu();
	return print_results(&o);
}
