/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-standin: a vLLM stand-in launched like `vllm serve` — OpenAI HTTP API over the fake model
 * (ref/model) with the V0 MooncakeConnector (ref/kvc) when --kv-transfer-config is given. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"
#include <cJSON.h>

#include "sa.h"
#include "sa_record.h"

static void print_diags(const struct cfg_diags *d)
{
	static const char *const sev[] = {"error", "warning", "info"};

	for (size_t i = 0; i < d->n; i++) {
		const struct cfg_diag *g = &d->v[i];
		int k = g->severity >= 0 && g->severity <= 2 ? (int)g->severity : 0;

		fprintf(stderr, "pdkv-standin: %s: %s%s%s\n", sev[k], g->field ? g->field : "",
		        g->field ? ": " : "", g->message ? g->message : "");
	}
}

static volatile sig_atomic_t got_signal, in_startup = 1;

/* Before the server is up (the connector may be blocked on its metadata server) a signal ends
 * the process at once; afterwards it only sets a flag that main polls. */
static void on_signal(int sig)
{
	static const char msg[] = "pdkv-standin: signal during startup; exiting\n";

	/* the handler runs on whichever thread got the signal (an MHD thread, say): atomics */
	if (__atomic_load_n(&in_startup, __ATOMIC_RELAXED)) {
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
		_exit(1);
	}
	__atomic_store_n(&got_signal, sig, __ATOMIC_RELAXED);
}

static bool v0_ready(struct sa *s)
{
	for (int k = 0; k < s->nkvc; k++)
		if (!kvc_ready(s->kvc[k]))
			return false;
	return !atomic_load(&s->stopping);
}

/* Reads --kv-transfer-config and mooncake.json the way vLLM V0 does; prints the checker's
 * diagnostics; 0 or -1. */
static int load_config(struct sa *s)
{
	struct cfg_diags d = {0};
	char *verr = NULL;
	int ret = -1;

	if (cfg_kv_transfer_parse(s->o.kv_transfer_config, CFG_VLLM_V0, &s->kt, &d, &verr)) {
		print_diags(&d);
		fprintf(stderr, "pdkv-standin: error: --kv-transfer-config rejected%s%s\n",
		        verr ? "; vLLM would raise " : "", verr ? verr : "");
		goto out;
	}
	if (!s->kt.kv_connector || strcmp(s->kt.kv_connector, CFG_CONNECTOR_MOONCAKE)) {
		print_diags(&d);
		fprintf(stderr,
		        "pdkv-standin: error: --kv-transfer-config: kv_connector \"%s\" is not "
		        "supported; pdkv-standin speaks the V0 \"MooncakeConnector\"\n",
		        s->kt.kv_connector ? s->kt.kv_connector : "(none)");
		goto out;
	}
	if (cfg_mooncake_load(NULL, CFG_VLLM_V0, &s->mc, &d, &verr)) {
		print_diags(&d);
		fprintf(stderr,
		        "pdkv-standin: error: mooncake.json (MOONCAKE_CONFIG_PATH) rejected%s%s\n",
		        verr ? "; vLLM would raise " : "", verr ? verr : "");
		goto out;
	}
	print_diags(&d); /* warnings */
	s->producer = s->kt.is_producer;
	s->consumer = !s->producer;
	if (s->kt.is_producer && s->kt.is_consumer)
		pd_warn("kv_role kv_both: like vLLM V0's SimpleConnector only the producer side is "
		        "built (vLLM itself fails at the first receive)");
	ret = 0;
out:
	free(verr);
	cfg_diags_free(&d);
	return ret;
}

/* An ERR row of the pd_env table (its range and default): a bad value refuses to start. */
static int env_int(const char *name, int *out)
{
	int64_t v;
	int rc = pd_env_int(name, &v);

	*out = (int)v;
	if (rc < 0) {
		fprintf(stderr,
		        "pdkv-standin: error: %s (vLLM: ValueError: invalid literal for int())\n",
		        pd_env_error());
		return -1;
	}
	return 0;
}

/* bootstrap_server_address ("host:port"): a gen B prefill of a release that reads it starts no
 * bootstrap server and registers its workers there (get_mooncake_bootstrap_addr and
 * should_launch_bootstrap_server, mooncake_connector.py @ 00f4240e, with its error text). */
static int v1_boot_addr(struct sa *s, const cJSON *a)
{
	char host[256];
	int port;

	if (!a)
		return 0;
	if (!cfg_gen_is_b(s->gen) || !(s->vi.feat & CFG_F_BOOT_ADDR)) {
		pd_warn("kv_connector_extra_config.bootstrap_server_address is not read by vLLM %s "
		        "(gen %s); the prefill starts its own bootstrap server",
		        s->vi.version, cfg_gen_name(s->gen));
		return 0;
	}
	if (!s->kt.is_producer)
		return 0; /* only the prefill reads it */
	if (!cJSON_IsString(a) || pd_split_hostport(a->valuestring, host, sizeof(host), &port) ||
	    strlen(a->valuestring) >= sizeof(s->boot_addr)) {
		fprintf(stderr, "pdkv-standin: error: --kv-transfer-config: "
		                "kv_connector_extra_config.bootstrap_server_address: ValueError: "
		                "bootstrap_server_address must specify a host and port\n");
		return -1;
	}
	snprintf(s->boot_addr, sizeof(s->boot_addr), "%s", a->valuestring);
	return 0;
}

/* kv_connector_extra_config of the V1 connector: mooncake_protocol (str, "rdma"),
 * num_workers (int), device_name (str), bootstrap_server_address (str). */
static int v1_extra(struct sa *s)
{
	cJSON *j =
	    cJSON_Parse(s->kt.kv_connector_extra_config ? s->kt.kv_connector_extra_config : "{}");
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "mooncake_protocol");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "num_workers");
	int ret = 0;

	snprintf(s->protocol, sizeof(s->protocol), "rdma");
	if (p && !(cJSON_IsString(p) &&
	           (!strcmp(p->valuestring, "rdma") || !strcmp(p->valuestring, "tcp") ||
	            !strcmp(p->valuestring, "nvlink_intra")))) {
		fprintf(stderr, "pdkv-standin: error: --kv-transfer-config: "
		                "kv_connector_extra_config.mooncake_protocol: expected \"rdma\", "
		                "\"tcp\" or \"nvlink_intra\"\n");
		ret = -1;
	} else if (p) {
		snprintf(s->protocol, sizeof(s->protocol), "%s", p->valuestring);
	}
	if (n && !(cJSON_IsNumber(n) && n->valuedouble >= 1)) {
		fprintf(stderr,
		        "pdkv-standin: error: --kv-transfer-config: "
		        "kv_connector_extra_config.num_workers: expected an integer >= 1\n");
		ret = -1;
	}
	if (v1_boot_addr(s, cJSON_GetObjectItemCaseSensitive(j, "bootstrap_server_address")))
		ret = -1;
	cJSON_Delete(j);
	return ret;
}

static int load_config_v1(struct sa *s)
{
	struct cfg_diags d = {0};
	char *verr = NULL, uuid[40];
	const char *pol;
	int ret = -1;

	if (cfg_kv_transfer_parse(s->o.kv_transfer_config, CFG_VLLM_V1, &s->kt, &d, &verr)) {
		print_diags(&d);
		fprintf(stderr, "pdkv-standin: error: --kv-transfer-config rejected%s%s\n",
		        verr ? "; vLLM would raise " : "", verr ? verr : "");
		goto out;
	}
	print_diags(&d);
	if (!s->kt.kv_connector || strcmp(s->kt.kv_connector, CFG_CONNECTOR_MOONCAKE)) {
		fprintf(stderr,
		        "pdkv-standin: error: --kv-transfer-config: kv_connector \"%s\" is not "
		        "supported; pdkv-standin speaks \"MooncakeConnector\"\n",
		        s->kt.kv_connector ? s->kt.kv_connector : "(none)");
		goto out;
	}
	if (v1_extra(s))
		goto out;
	s->producer = s->kt.is_producer;
	s->consumer = s->kt.is_consumer;
	/* The policy default moved between releases (cfg_vllm's table) unless it is given. */
	pol = strstr(s->o.kv_transfer_config, "\"kv_load_failure_policy\"")
	          ? s->kt.kv_load_failure_policy
	          : s->vi.policy;
	s->policy_fail = pol && !strcmp(pol, "fail");
	if (env_int("VLLM_MOONCAKE_BOOTSTRAP_PORT", &s->bootstrap_port) ||
	    env_int("VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT", &s->abort_timeout_s))
		goto out;
	if (s->gen == CFG_GEN_A &&
	    s->bootstrap_port + (s->o.dp - 1) * s->o.tp + s->o.tp - 1 > 65535) {
		fprintf(stderr,
		        "pdkv-standin: error: VLLM_MOONCAKE_BOOTSTRAP_PORT %d + dp*tp + "
		        "tp_rank runs past port 65535\n",
		        s->bootstrap_port);
		goto out;
	}
	if (!s->kt.engine_id) {
		unsigned char b[16];

		for (int i = 0; i < 16; i++)
			b[i] = (unsigned char)(random() ^ (pd_now_ns() >> (i % 8)));
		b[6] = (b[6] & 0x0f) | 0x40;
		b[8] = (b[8] & 0x3f) | 0x80;
		snprintf(uuid, sizeof(uuid),
		         "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		         b[12], b[13], b[14], b[15]);
	}
	for (int k = 0; k < s->o.dp; k++) {
		const char *id = s->kt.engine_id ? s->kt.engine_id : uuid;

		if (s->o.dp == 1)
			snprintf(s->engine_ids[k], sizeof(s->engine_ids[k]), "%.150s", id);
		else
			snprintf(s->engine_ids[k], sizeof(s->engine_ids[k]), "%.150s_dp%d", id, k);
	}
	ret = 0;
out:
	free(verr);
	cfg_diags_free(&d);
	return ret;
}

/* --vllm-version (default: the newest release in cfg_vllm's table) and --v1-shape. */
static int select_version(struct sa *s)
{
	const char *v = s->o.vllm_version ? s->o.vllm_version : cfg_vllm_newest;
	const char *mcp = pd_env_str("MOONCAKE_CONFIG_PATH");
	char err[300];

	/* A V0 deployment (mooncake.json in MOONCAKE_CONFIG_PATH) started without a version
	 * keeps speaking the pipe: vLLM's V1 connector never reads that file. */
	if (!s->o.vllm_version && s->kv && mcp && *mcp) {
		v = "0.8";
		pd_info(
		    "note: MOONCAKE_CONFIG_PATH is set and no --vllm-version given: speaking the "
		    "V0 pipe of vLLM 0.8 (pass --vllm-version to choose; without both, the "
		    "newest release %s)",
		    cfg_vllm_newest);
	}

	if (cfg_vllm_lookup(v, &s->vi, err, sizeof(err))) {
		fprintf(stderr, "pdkv-standin: error: %s\n", err);
		return -1;
	}
	s->gen = s->vi.gen;
	if (s->o.v1_shape) {
		if (!cfg_gen_is_b(s->gen)) {
			fprintf(
			    stderr,
			    "pdkv-standin: error: --v1-shape applies to gen B releases (>= 0.16); "
			    "vLLM %s speaks %s\n",
			    v, cfg_gen_name(s->gen));
			return -1;
		}
		/* sa_args.c accepts only gen-B names, so this parse succeeds */
		if (cfg_gen_parse(s->o.v1_shape, &s->gen) || !cfg_gen_is_b(s->gen))
			s->gen = CFG_GEN_B0;
	}
	if (!cfg_gen_is_v1(s->gen) && s->o.dp > 1) {
		fprintf(stderr, "pdkv-standin: error: --data-parallel-size > 1 needs a V1 release "
		                "(--vllm-version >= 0.12)\n");
		return -1;
	}
	return 0;
}

static int describe_pipes(struct sa *s)
{
	for (int r = 0; r < s->o.tp; r++) {
		struct cfg_v0_pipe p;
		struct cfg_diags d = {0};

		if (cfg_v0_pipe(&s->mc, &s->kt, r, &p, &d)) {
			print_diags(&d);
			cfg_diags_free(&d);
			fprintf(stderr,
			        "pdkv-standin: error: cannot derive the V0 pipe for rank %d\n", r);
			return -1;
		}
		cfg_diags_free(&d);
		pd_info("rank %d: %s end, segment %s, peer segment %s, zmq bind *:%d (data) *:%d "
		        "(ack), connect %s:%d (data) %s:%d (ack), metadata %s",
		        r, p.prefill_end ? "prefill" : "decode", p.own_url, p.remote_url,
		        p.bind_data_port, p.bind_ack_port, p.remote_host, p.connect_data_port,
		        p.remote_host, p.connect_ack_port,
		        s->mc.conn_string ? s->mc.conn_string : "?");
	}
	return 0;
}

static int start_connector(struct sa *s);
static void stop_connector(struct sa *s);
const struct sa_conn sa_conn_v0 = {
    .name = "v0",
    .start = start_connector,
    .stop = stop_connector,
    .ready = v0_ready,
    .prefill = sa_v0_prefill,
    .finished = NULL,
    .metrics = NULL,
};

static int start_connector(struct sa *s)
{
	for (int r = 0; r < s->o.tp; r++) {
		struct kvc_opts ko;
		int ret;

		memset(&ko, 0, sizeof(ko));
		ko.mc = &s->mc;
		ko.kt = &s->kt;
		ko.local_rank = r;
		ko.frame_format = s->o.frame_format;
		ko.miss_mode = s->o.miss_mode;
		ko.select_timeout_ms = s->o.miss_policy == SA_MISS_WAIT ? s->o.kv_wait_timeout_ms
		                                                        : s->o.kv_select_timeout_ms;
		ko.zmq_bind_host = s->o.zmq_bind_host;
		ko.zmq_max_msg_bytes = s->o.kv_zmq_max_msg_bytes;
		ko.insert_timeout_ms = s->o.kv_insert_timeout_ms;
		/* reuse a long prompt's registered buffers across requests (kvc's default keeps
		 * one region's worth, 512 MiB at most: a 16k-token prompt's keys are more) */
		ko.pool_cache_bytes = (size_t)4 << 30;
		ret = kvc_create(&ko, &s->kvc[r]);
		if (ret) {
			fprintf(stderr, "pdkv-standin: error: connector rank %d: kvc_create: %s\n",
			        r, kvc_strerror(ret));
			return -1;
		}
		s->nkvc = r + 1;
	}
	return 0;
}

static void stop_connector(struct sa *s)
{
	for (int r = 0; r < s->nkvc; r++)
		kvc_destroy(s->kvc[r]);
	s->nkvc = 0;
}

/* The heap keeps freed KV tensors for reuse (mallopt below) in every malloc arena a request
 * thread touched, so RSS stays at the sum of the arenas' peaks long after a burst. Once no
 * request has been in flight for 2 s, the free pages go back (malloc_trim); under load the warm
 * pages stay. Issue 34 (memory soak). */
static void idle_trim(struct sa *s)
{
	static uint64_t busy_at, trimmed_at;
	uint64_t now = pd_now_ns();

	if (atomic_load(&s->n.inflight) > 0) {
		busy_at = now;
		return;
	}
	if (busy_at > trimmed_at && now - busy_at >= 2000000000ull) {
		malloc_trim(0);
		trimmed_at = now;
	}
}

/* SIGINT/SIGTERM: the heap figures, requests drained (1.5 s at most), the connector stopped,
 * the run's totals logged. */
static int shut_down(struct sa *s, struct sa_http *h)
{
	int ret;

	pd_info("signal %d: shutting down", (int)__atomic_load_n(&got_signal, __ATOMIC_RELAXED));
	{
		struct mallinfo2 mi = mallinfo2(); /* main arena + the others' in-use sums */
		pd_info("heap: %zu KiB in use, %zu KiB free in the arenas, %zu KiB mmapped "
		        "(a leak shows as in-use growing with the requests served)",
		        (mi.uordblks + mi.hblkhd) / 1024, mi.fordblks / 1024, mi.hblkhd / 1024);
	}
	atomic_store(&s->stopping, true);
	ret = sa_http_quiesce(h, 1500);
	if (ret > 0) {
		pd_err("%d request(s) still running after 1.5 s; exiting without waiting for them "
		       "(connector not destroyed)",
		       ret);
		fflush(NULL);
		_exit(1);
	}
	sa_http_stop(h);
	if (s->kv) {
		s->conn->stop(s);
		cfg_kv_transfer_free(&s->kt);
		if (!cfg_gen_is_v1(s->gen))
			cfg_mooncake_free(&s->mc);
	}
	pd_info("stopped: %llu requests (%llu failed), %llu prompt tokens reused, %llu recomputed, "
	        "%llu checksum failures, %llu transfer failures",
	        (unsigned long long)atomic_load(&s->n.requests),
	        (unsigned long long)atomic_load(&s->n.requests_failed),
	        (unsigned long long)atomic_load(&s->n.reused),
	        (unsigned long long)atomic_load(&s->n.recomputed),
	        (unsigned long long)atomic_load(&s->n.checksum_failures),
	        (unsigned long long)atomic_load(&s->n.transfer_failures));
	sa_metrics_free(s);
	return 0;
}

int main(int argc, char **argv)
{
	static struct sa s;
	struct sa_http *h = NULL;
	struct sigaction sa;
	int ret, port = 0;
	bool ready_logged = false;

	/* A request's KV tensors are hundreds of MB: as fresh mmaps (glibc's default above 32 MiB)
	 * every request pays a page fault per 4 KiB on each side of the hand-off and a munmap
	 * after it. From the heap, kept after free, they are reused warm. */
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);

	pd_log_set_name("pdkv-standin");
	ret = sa_args_parse(argc, argv, &s.o);
	if (ret)
		return ret == 1 ? 0 : 2;
	if (s.o.list_versions) {
		cfg_vllm_print_table(stdout);
		return 0;
	}
	s.started = (double)time(NULL);
	srandom((unsigned)(pd_now_ns() ^ (uint64_t)getpid()));
	s.kv = s.o.kv_transfer_config != NULL;
	if (select_version(&s))
		return 2;
	s.conn = cfg_gen_is_v1(s.gen) ? &sa_conn_v1 : &sa_conn_v0;
	if (s.o.kv_groups) { /* hybrid model (sa_v1_hyb.c): the plain stand-in reads it too */
		char herr[256];

		if (!cfg_gen_is_v1(s.gen) ||
		    sa_hyb_parse(s.o.kv_groups, &s.hyb, herr, sizeof(herr))) {
			fprintf(stderr, "pdkv-standin: error: %s\n",
			        cfg_gen_is_v1(s.gen)
			            ? herr
			            : "--kv-groups: the hybrid-model mode needs a "
			              "V1 connector (--vllm-version 0.12 or later)");
			return 2;
		}
	}
	sa_metrics_init(&s);
	if (s.kv) {
		if (cfg_gen_is_v1(s.gen) ? load_config_v1(&s) : load_config(&s))
			return 1;
		pd_log_set_name(s.producer
		                    ? (s.consumer ? "pdkv-standin[both]" : "pdkv-standin[prefill]")
		                    : "pdkv-standin[decode]");
		if (!cfg_gen_is_v1(s.gen) && describe_pipes(&s))
			return 1;
		if (cfg_gen_is_v1(s.gen))
			pd_info("vLLM %s (table row %s): V1 MooncakeConnector gen %s, protocol %s, "
			        "kv_load_failure_policy %s, VLLM_MOONCAKE_BOOTSTRAP_PORT %d, abort "
			        "timeout %d s, dp %d%s",
			        s.vi.version, s.vi.row, cfg_gen_name(s.gen), s.protocol,
			        s.policy_fail ? "fail" : "recompute", s.bootstrap_port,
			        s.abort_timeout_s, s.o.dp,
			        s.vi.reqid_random ? ", request ids get a random suffix" : "");
	}
	pd_info("model %s (served as %s), max-model-len %lld, role %s, tp %d, kv %d layers x %d "
	        "heads x %d dims x %d bytes = %zu bytes/token, %llu ns/token%s%s",
	        s.o.model, s.o.served[0], (long long)s.o.max_model_len,
	        s.kv ? s.kt.kv_role : "plain (no --kv-transfer-config)", s.o.tp, s.o.geom.layers,
	        s.o.geom.kv_heads, s.o.geom.head_dim, s.o.geom.dtype_bytes,
	        mdl_kv_bytes_per_token(&s.o.geom, s.o.geom.kv_heads),
	        (unsigned long long)s.o.ns_per_token, s.o.fault_spec ? ", fault " : "",
	        s.o.fault_spec ? s.o.fault_spec : "");
	if (s.o.kv_cache_device && strcmp(s.o.kv_cache_device, "cpu") &&
	    !(s.kv && cfg_gen_is_v1(s.gen))) {
		fprintf(stderr,
		        "pdkv-standin: error: --kv-cache-device %s: GPU KV blocks are a V1 "
		        "connector feature (needs --kv-transfer-config on vLLM >= 0.12); the V0 "
		        "pipe keeps its buffer in host memory\n",
		        s.o.kv_cache_device);
		return 2;
	}
	if (s.o.dry_run)
		return 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	pd_log_fatal_signals(); /* no silent death: the signal is named in the log */

	if (s.kv && s.conn->start(&s)) {
		s.conn->stop(&s);
		return 1;
	}
	ret = sa_record_open(s.o.record_requests);
	if (ret) {
		fprintf(stderr, "pdkv-standin: error: --record-requests %s: %s\n",
		        s.o.record_requests, strerror(-ret));
		if (s.kv)
			s.conn->stop(&s);
		return 1;
	}
	ret = sa_http_start(&s, &h, &port);
	if (ret) {
		fprintf(stderr, "pdkv-standin: error: cannot serve HTTP on %s:%d: %s\n",
		        s.o.host ? s.o.host : "0.0.0.0", s.o.port, strerror(-ret));
		if (s.kv)
			s.conn->stop(&s);
		return 1;
	}
	__atomic_store_n(&in_startup, 0, __ATOMIC_RELAXED);
	pd_info("listening on http://%s:%d (OpenAI API: /v1/completions /v1/chat/completions "
	        "/v1/models /health /metrics)",
	        s.o.host ? s.o.host : "0.0.0.0", port);
	while (!__atomic_load_n(&got_signal, __ATOMIC_RELAXED)) {
		if (!ready_logged && sa_ready(&s)) {
			pd_info("ready: /health answers 200%s",
			        s.kv ? " (connector segment "
			               "published, side channel bound)"
			             : "");
			ready_logged = true;
		}
		sa_metrics_tick(&s);
		idle_trim(&s);
		pd_sleep_ms(50);
	}
	return shut_down(&s, h);
}
