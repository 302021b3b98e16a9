/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv bootstrap: a standalone gen B bootstrap server (POST /register, GET /query) for prefills
 * started with kv_connector_extra_config.bootstrap_server_address; a thin main over kv1_boot. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg/cfg_vllm.h"
#include "kv1/kv1.h"
#include "kv1/kv1_boot.h"
#include "pd_log.h"
#include "pd_opt.h"
#include "pd_util.h"

/* VLLM_MOONCAKE_BOOTSTRAP_PORT's default (vllm/envs.py) */
#define DEFAULT_PORT 8998

struct args {
	const char *host, *version;
	int port, shape; /* shape: index into "b0|bn" */
	bool shape_seen;
	int max_conn, idle_s;
};

/* 0, 1 after --help, 2 on bad usage (printed). */
static int parse_args(int argc, char **argv, struct args *a)
{
	const struct pd_opt opts[] = {
	    {.name = "host",
	     .type = PD_OPT_STR,
	     .dst = &a->host,
	     .arg = "ADDR",
	     .help = "address to listen on (default 127.0.0.1; 0.0.0.0 = every interface)"},
	    {.name = "port",
	     .type = PD_OPT_INT,
	     .dst = &a->port,
	     .arg = "N",
	     .help = "port (default 8998 = VLLM_MOONCAKE_BOOTSTRAP_PORT; 0 = a free one)",
	     .min = 0,
	     .max = 65535},
	    {.name = "shape",
	     .type = PD_OPT_CHOICE,
	     .dst = &a->shape,
	     .arg = "=b0|bn",
	     .help = "b0: a second registration of a worker is 400; bn (default): 200 when\n"
	             "the address is the same",
	     .choices = "b0|bn",
	     .seen = &a->shape_seen},
	    {.name = "vllm-version",
	     .type = PD_OPT_STR,
	     .dst = &a->version,
	     .arg = "X.Y[.Z]",
	     .help = "take the shape from this vLLM release (gen b0 or bn)"},
	    {.name = "max-connections",
	     .type = PD_OPT_INT,
	     .dst = &a->max_conn,
	     .arg = "N",
	     .help = "connections at once (default 64)",
	     .min = 1,
	     .max = 10000},
	    {.name = "idle-timeout",
	     .type = PD_OPT_INT,
	     .dst = &a->idle_s,
	     .arg = "SEC",
	     .help = "drop a connection idle this long (default 10)",
	     .min = 1,
	     .max = 86400},
	};
	const struct pd_opt_spec spec = {
	    .prog = "pdkv bootstrap",
	    .usage =
	        "usage: pdkv bootstrap [--host ADDR] [--port N] [--shape=b0|bn | --vllm-version "
	        "X.Y]\n"
	        "                      [--max-connections N] [--idle-timeout SEC]\n"
	        "Serves vLLM MooncakeConnector's bootstrap API for prefills whose\n"
	        "kv_connector_extra_config.bootstrap_server_address points here.\n",
	    .footer =
	        "Prints its URL on stdout; SIGINT or SIGTERM stops it. Point the router at it\n"
	        "(pdkv-proxy --contract mooncake --prefill URL PORT). Exit 0, 1 when it cannot "
	        "listen,\n2 on bad usage.\n",
	    .opts = opts,
	    .nopts = PD_ARRAY_SIZE(opts),
	    .max_pos = 0,
	};
	return pd_opt_parse(&spec, argc, argv, 1, NULL, NULL);
}

/* The shape from --vllm-version (gen B only) or --shape. 0, or 2 after printing why. */
static int pick_shape(const struct args *a, enum kv1_shape *shape)
{
	struct cfg_vllm_info vi;
	char err[256];

	*shape = a->shape == 0 ? KV1_SHAPE_B0 : KV1_SHAPE_BN;
	if (!a->version)
		return 0;
	if (a->shape_seen) {
		fprintf(stderr, "pdkv bootstrap: give --shape or --vllm-version, not both\n");
		return 2;
	}
	if (cfg_vllm_lookup(a->version, &vi, err, sizeof(err))) {
		fprintf(stderr, "pdkv bootstrap: --vllm-version: %s\n", err);
		return 2;
	}
	if (!cfg_gen_is_b((enum cfg_gen)vi.gen)) {
		fprintf(stderr,
		        "pdkv bootstrap: --vllm-version: vLLM %s (gen %s) has no bootstrap server; "
		        "it appeared with gen b0 (0.16)\n",
		        a->version, cfg_gen_name((enum cfg_gen)vi.gen));
		return 2;
	}
	*shape = kv1_shape_of((enum cfg_gen)vi.gen);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a = {
	    .host = "127.0.0.1", .port = DEFAULT_PORT, .shape = 1, .max_conn = 64, .idle_s = 10};
	struct kv1_boot_limits lim;
	struct kv1_boot *b = NULL;
	enum kv1_shape shape;
	sigset_t sigs;
	int ret, bound = 0, sig = 0;

	pd_log_set_name("pdkv-bootstrap");
	ret = parse_args(argc, argv, &a);
	if (ret)
		return ret == 1 ? 0 : 2;
	ret = pick_shape(&a, &shape);
	if (ret)
		return ret;
	lim = (struct kv1_boot_limits){(unsigned)a.max_conn, (unsigned)a.idle_s};
	/* blocked before the server's threads start, so only sigwait sees them */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	ret = kv1_boot_start_lim(a.host, a.port, shape, &lim, &b, &bound);
	if (ret) {
		pd_err("Mooncake bootstrap server cannot listen on %s:%d: %s", a.host, a.port,
		       strerror(-ret));
		return 1;
	}
	printf("pdkv-bootstrap: listening on http://%s%s%s:%d (shape %s)\n",
	       strchr(a.host, ':') ? "[" : "", a.host, strchr(a.host, ':') ? "]" : "", bound,
	       shape < KV1_SHAPE_BN ? "b0" : "bn"); /* b1 / b2 serve as b0 does */
	fflush(stdout);
	while (sigwait(&sigs, &sig) || (sig != SIGINT && sig != SIGTERM))
		;
	pd_info("signal %d: stopping (%zu engines registered)", sig, kv1_boot_engines(b));
	kv1_boot_stop(b);
	return 0;
}
