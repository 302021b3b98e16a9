/* cfg_cli: flag parsing and output for pdkv-config / pdkv-ports (issue 2's contract: exit 0
 * usable, 1 errors / collisions, 2 usage; --json prints exactly one object on stdout). */
#include "config/cfg_cli.h"
#include "pd_opt.h"
#include "pd_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int opt_vllm(const char *v, void *dst, void *ud)
{
	(void)ud;
	if (!strcmp(v, "v0") || !strcmp(v, "0"))
		*(enum cfg_vllm *)dst = CFG_VLLM_V0;
	else if (!strcmp(v, "v1") || !strcmp(v, "1"))
		*(enum cfg_vllm *)dst = CFG_VLLM_V1;
	else
		return -1;
	return 0;
}

#define PORT_OPT(n, field, h)                                                                      \
	{                                                                                          \
		.name = n, .type = PD_OPT_INT, .dst = &c->o.field, .arg = "N", .help = h,          \
		.min = 1, .max = 65535                                                             \
	}
#define HOST_OPT(n, field, h)                                                                      \
	{                                                                                          \
		.name = n, .type = PD_OPT_STR, .dst = &c->o.field, .arg = "H", .help = h           \
	}

/* The one table both commands share; c receives the values. */
static int with_spec(struct cfg_cli *c, const char *prog, int argc, char **argv, int first,
                     FILE *help)
{
	static char usage[600];
	const struct pd_opt opts[] = {
	    {.name = "mooncake-config",
	     .type = PD_OPT_STR,
	     .dst = &c->o.mooncake_path,
	     .arg = "FILE",
	     .help = "mooncake.json (default: $MOONCAKE_CONFIG_PATH, as vLLM)",
	     .empty_ok = true},
	    {.name = "kv-transfer-config",
	     .type = PD_OPT_STR,
	     .dst = &c->o.kv_transfer,
	     .arg = "J",
	     .help = "the instance's --kv-transfer-config JSON",
	     .empty_ok = true},
	    {.name = "vllm",
	     .type = PD_OPT_FN,
	     .dst = &c->o.vllm,
	     .arg = "v0|v1",
	     .help = "V0 MooncakePipe era (default) or the V1 connector",
	     .want = "v0 or v1",
	     .fn = opt_vllm},
	    {.name = "tp",
	     .type = PD_OPT_INT,
	     .dst = &c->o.tp,
	     .arg = "N",
	     .help = "tensor parallel size of each side (default 1)",
	     .min = 1,
	     .max = 1024},
	    {.name = "dp",
	     .type = PD_OPT_INT,
	     .dst = &c->o.dp,
	     .arg = "N",
	     .help = "data parallel size of each side (default 1)",
	     .min = 1,
	     .max = 1024},
	    PORT_OPT("prefill-port", prefill_http_port, "HTTP ports (default 8100 prefill,"),
	    PORT_OPT("decode-port", decode_http_port, "8200 decode,"),
	    PORT_OPT("proxy-port", proxy_port, "8000 proxy)"),
	    HOST_OPT("prefill-host", prefill_host,
	             "hosts (default: from mooncake.json URLs, else 127.0.0.1;"),
	    HOST_OPT("decode-host", decode_host, "the proxy defaults to the prefill host)"),
	    HOST_OPT("proxy-host", proxy_host, NULL),
	    {.name = "json",
	     .type = PD_OPT_FLAG,
	     .dst = &c->json,
	     .help = "one JSON object on stdout"},
	};
	const struct pd_opt_spec spec = {
	    .prog = prog,
	    .usage = usage,
	    .footer = "Environment read like vLLM/Mooncake: MOONCAKE_CONFIG_PATH, VLLM_MOONCAKE_*, "
	              "MC_*.\nExit: 0 usable, 1 errors found (or vLLM would reject it), 2 usage "
	              "error.\n",
	    .opts = opts,
	    .nopts = PD_ARRAY_SIZE(opts),
	    .max_pos = 0,
	};
	snprintf(usage, sizeof(usage),
	         "usage: %s [--mooncake-config FILE] [--kv-transfer-config JSON] [--vllm v0|v1]\n"
	         "          [--tp N] [--dp N] [--json]\n"
	         "          [--prefill-port N] [--decode-port N] [--proxy-port N]\n"
	         "          [--prefill-host H] [--decode-host H] [--proxy-host H]\n\n",
	         prog);
	if (help) {
		pd_opt_help(&spec, help);
		return 0;
	}
	return pd_opt_parse(&spec, argc, argv, first, NULL, NULL);
}

void cfg_cli_usage(FILE *f, const char *prog)
{
	struct cfg_cli c;
	with_spec(&c, prog, 0, NULL, 0, f);
}

int cfg_cli_parse(struct cfg_cli *c, int argc, char **argv, int first, const char *prog)
{
	memset(c, 0, sizeof(*c));
	c->o.tp = c->o.dp = 1;
	cfg_env_from_environ(&c->o.env);
	return with_spec(c, prog, argc, argv, first, NULL);
}

int cfg_cli_run(struct cfg_cli *c, bool ports_mode)
{
	struct cfg_report r;
	int rc = cfg_check(&c->o, &r);

	if (ports_mode) {
		rc = r.nconflicts > 0 || !r.ports_planned ? 1 : 0;
		/* the port verdict: ok only when a plan exists and nothing collides */
		r.ok = rc == 0 && r.ok;
	}
	if (c->json) {
		char *s = cfg_report_json(&r);
		if (!s) {
			fprintf(stderr, "out of memory\n");
			rc = 1;
		} else {
			fputs(s, stdout);
			free(s);
		}
	} else {
		cfg_report_print(&r, stdout, ports_mode);
	}
	cfg_report_free(&r);
	return rc;
}
