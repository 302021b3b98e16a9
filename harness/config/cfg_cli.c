/* SPDX-License-Identifier: Apache-2.0 */
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

/* --vllm-version / --v1-shape against cfg_vllm's table; sets --vllm from the generation.
 * Returns 0, or 2 after the message. */
static int release_flags(struct cfg_cli *c, const char *prog, bool vllm_given)
{
	struct cfg_vllm_info info;
	enum cfg_gen g;
	char err[512];
	const char *ver = c->o.vllm_version ? c->o.vllm_version : cfg_vllm_newest;

	if (!c->o.vllm_version && !c->o.v1_shape)
		return 0;
	if (cfg_vllm_lookup(ver, &info, err, sizeof(err))) {
		fprintf(stderr, "%s: %s (pdkv config check --list-versions)\n", prog, err);
		return 2;
	}
	if (c->o.v1_shape &&
	    (cfg_gen_parse(c->o.v1_shape, &g) || !cfg_gen_is_b(g) || !cfg_gen_is_b(info.gen))) {
		fprintf(stderr,
		        "%s: --v1-shape: expected b0, b1, b2, bn or bl for a gen B release (>= "
		        "0.16), got \"%s\" "
		        "with vLLM %s (gen %s)\n",
		        prog, c->o.v1_shape, ver, cfg_gen_name(info.gen));
		return 2;
	}
	if (vllm_given && (c->o.vllm == CFG_VLLM_V1) != cfg_gen_is_v1(info.gen)) {
		fprintf(stderr, "%s: --vllm %s contradicts --vllm-version %s (a %s release)\n",
		        prog, c->o.vllm == CFG_VLLM_V1 ? "v1" : "v0", ver,
		        cfg_gen_is_v1(info.gen) ? "V1" : "V0");
		return 2;
	}
	c->o.vllm = cfg_gen_is_v1(info.gen) ? CFG_VLLM_V1 : CFG_VLLM_V0;
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

/* What the table notes beside the values: --vllm given, --list-versions asked for. */
struct cli_seen {
	bool vllm, list_versions;
};

/* The one table both commands share; c receives the values. */
static int with_spec(struct cfg_cli *c, struct cli_seen *seen, const char *prog, int argc,
                     char **argv, int first, FILE *help)
{
	static char usage[700];
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
	     .help = "V0 MooncakePipe era (default) or the V1 connector\n"
	             "(v1 without a version: gen A ports, generic defaults)",
	     .want = "v0 or v1",
	     .fn = opt_vllm,
	     .seen = &seen->vllm},
	    {.name = "vllm-version",
	     .type = PD_OPT_STR,
	     .dst = &c->o.vllm_version,
	     .arg = "X.Y[.Z]",
	     .want = "a vLLM release X.Y[.Z] (see --list-versions)",
	     .help = "check as that vLLM release does: picks v0 / gen A / gen B\n"
	             "and the per-release defaults (see --list-versions)"},
	    {.name = "v1-shape",
	     .type = PD_OPT_STR,
	     .dst = &c->o.v1_shape,
	     .arg = "b0|b1|b2|bn|bl",
	     .want = "b0, b1, b2, bn or bl",
	     .help = "gen B struct shape (default: the release's; without\n"
	             "--vllm-version: the newest release)"},
	    {.name = "list-versions",
	     .type = PD_OPT_FLAG,
	     .dst = &seen->list_versions,
	     .help = "print the vLLM release table and exit"},
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
	snprintf(
	    usage, sizeof(usage),
	    "usage: %s [--mooncake-config FILE] [--kv-transfer-config JSON] [--vllm v0|v1]\n"
	    "          [--vllm-version X.Y[.Z]] [--v1-shape b0|b1|b2|bn|bl] [--list-versions]\n"
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
	struct cli_seen seen;
	with_spec(&c, &seen, prog, 0, NULL, 0, f);
}

int cfg_cli_parse(struct cfg_cli *c, int argc, char **argv, int first, const char *prog)
{
	struct cli_seen seen = {false, false};
	int rc;

	memset(c, 0, sizeof(*c));
	c->o.tp = c->o.dp = 1;
	cfg_env_from_environ(&c->o.env);
	rc = with_spec(c, &seen, prog, argc, argv, first, NULL);
	if (rc)
		return rc;
	if (seen.list_versions) {
		cfg_vllm_print_table(stdout);
		return 1;
	}
	return release_flags(c, prog, seen.vllm);
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
