/* cfg_cli: flag parsing and output for pdkv-config / pdkv-ports (issue 2's contract: exit 0
 * usable, 1 errors / collisions, 2 usage; --json prints exactly one object on stdout). */
#include "config/cfg_cli.h"
#include "pd_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cfg_cli_usage(FILE *f, const char *prog)
{
	fprintf(
	    f,
	    "usage: %s [--mooncake-config FILE] [--kv-transfer-config JSON] [--vllm v0|v1]\n"
	    "          [--vllm-version X.Y[.Z]] [--v1-shape b0|bn] [--list-versions]\n"
	    "          [--tp N] [--dp N] [--json]\n"
	    "          [--prefill-port N] [--decode-port N] [--proxy-port N]\n"
	    "          [--prefill-host H] [--decode-host H] [--proxy-host H]\n"
	    "\n"
	    "  --mooncake-config FILE   mooncake.json (default: $MOONCAKE_CONFIG_PATH, as vLLM)\n"
	    "  --kv-transfer-config J   the instance's --kv-transfer-config JSON\n"
	    "  --vllm v0|v1             V0 MooncakePipe era (default) or the V1 connector\n"
	    "                           (v1 without a version: gen A ports, generic defaults)\n"
	    "  --vllm-version X.Y[.Z]   check as that vLLM release does: picks v0 / gen A / gen B\n"
	    "                           and the per-release defaults (see --list-versions)\n"
	    "  --v1-shape b0|bn         gen B struct shape (default: the release's; without\n"
	    "                           --vllm-version: the newest release)\n"
	    "  --list-versions          print the vLLM release table and exit\n"
	    "  --tp N, --dp N           tensor / data parallel size of each side (default 1)\n"
	    "  --*-port N               HTTP ports (default 8100 prefill, 8200 decode, 8000 "
	    "proxy)\n"
	    "  --*-host H               hosts (default: from mooncake.json URLs, else 127.0.0.1;\n"
	    "                           the proxy defaults to the prefill host)\n"
	    "  --json                   one JSON object on stdout\n"
	    "Environment read like vLLM/Mooncake: MOONCAKE_CONFIG_PATH, VLLM_MOONCAKE_*, MC_*.\n"
	    "Exit: 0 usable, 1 errors found (or vLLM would reject it), 2 usage error.\n",
	    prog);
}

static int num(const char *prog, const char *flag, const char *v, int lo, int hi, int *out)
{
	int64_t x;

	if (pd_parse_i64(v, &x) || x < lo || x > hi) {
		fprintf(stderr, "%s: %s: expected an integer %d..%d, got \"%s\"\n", prog, flag, lo,
		        hi, v);
		return 2;
	}
	*out = (int)x;
	return 0;
}

/* --vllm-version / --v1-shape against cfg_vllm's table; sets --vllm from the generation. 0 or 2.
 */
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
		fprintf(
		    stderr,
		    "%s: --v1-shape: expected b0 or bn for a gen B release (>= 0.16), got \"%s\" "
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

int cfg_cli_parse(struct cfg_cli *c, int argc, char **argv, int first, const char *prog)
{
	int i;
	bool vllm_given = false;

	memset(c, 0, sizeof(*c));
	c->o.tp = c->o.dp = 1;
	cfg_env_from_environ(&c->o.env);
	for (i = first; i < argc; i++) {
		const char *a = argv[i], *v = NULL, *eq;
		char flag[64];
		int rc = 0;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			cfg_cli_usage(stdout, prog);
			return 1;
		}
		if (!strcmp(a, "--json")) {
			c->json = true;
			continue;
		}
		if (!strcmp(a, "--list-versions")) {
			cfg_vllm_print_table(stdout);
			return 1;
		}
		if (strncmp(a, "--", 2)) {
			fprintf(stderr, "%s: unexpected argument \"%s\"\n", prog, a);
			goto usage;
		}
		eq = strchr(a, '=');
		if (eq) {
			snprintf(flag, sizeof(flag), "%.*s", (int)(eq - a), a);
			v = eq + 1;
		} else {
			snprintf(flag, sizeof(flag), "%s", a);
			if (i + 1 >= argc) {
				fprintf(stderr, "%s: %s needs a value\n", prog, a);
				goto usage;
			}
			v = argv[++i];
		}
		if (!strcmp(flag, "--mooncake-config"))
			c->o.mooncake_path = v;
		else if (!strcmp(flag, "--kv-transfer-config"))
			c->o.kv_transfer = v;
		else if (!strcmp(flag, "--vllm-version") && *v)
			c->o.vllm_version = v;
		else if (!strcmp(flag, "--v1-shape") && *v)
			c->o.v1_shape = v;
		else if (!strcmp(flag, "--vllm")) {
			vllm_given = true;
			if (!strcmp(v, "v0") || !strcmp(v, "0"))
				c->o.vllm = CFG_VLLM_V0;
			else if (!strcmp(v, "v1") || !strcmp(v, "1"))
				c->o.vllm = CFG_VLLM_V1;
			else {
				fprintf(stderr, "%s: --vllm: expected v0 or v1, got \"%s\"\n", prog,
				        v);
				goto usage;
			}
		} else if (!strcmp(flag, "--tp"))
			rc = num(prog, flag, v, 1, 1024, &c->o.tp);
		else if (!strcmp(flag, "--dp"))
			rc = num(prog, flag, v, 1, 1024, &c->o.dp);
		else if (!strcmp(flag, "--prefill-port"))
			rc = num(prog, flag, v, 1, 65535, &c->o.prefill_http_port);
		else if (!strcmp(flag, "--decode-port"))
			rc = num(prog, flag, v, 1, 65535, &c->o.decode_http_port);
		else if (!strcmp(flag, "--proxy-port"))
			rc = num(prog, flag, v, 1, 65535, &c->o.proxy_port);
		else if (!strcmp(flag, "--prefill-host") && *v)
			c->o.prefill_host = v;
		else if (!strcmp(flag, "--decode-host") && *v)
			c->o.decode_host = v;
		else if (!strcmp(flag, "--proxy-host") && *v)
			c->o.proxy_host = v;
		else {
			fprintf(stderr, "%s: unknown flag or empty value: %s\n", prog, a);
			goto usage;
		}
		if (rc)
			goto usage;
	}
	if (release_flags(c, prog, vllm_given))
		goto usage;
	return 0;
usage:
	cfg_cli_usage(stderr, prog);
	return 2;
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
