/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv: the one command users type. `pdkv SUB ...` runs the sibling binary pdkv-SUB from the
 * same directory (git-style), so each subcommand is its own thin main and its own module. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pd_opt.h"
#include "pd_proc.h"

static const struct {
	const char *name, *what;
} subs[] = {
    {"run", "run scenarios (default suite in scenarios/) and report PASS/FAIL/NOTRUN"},
    {"config", "check a mooncake.json + --kv-transfer-config as vLLM would (config check)"},
    {"ports", "list every port a deployment binds and report collisions"},
    {"bench", "transfer-engine bandwidth benchmark (transfer_engine_bench flags)"},
    {"accept", "fleet acceptance: pdkv bench between node pairs, N x N matrix, outliers"},
    {"report", "compare two runs with statistics (compare, diff) and plot a history"},
    {"doctor", "check this host for RDMA devices, GIDs, MTU, memlock, metadata reachability"},
    {"standin", "OpenAI-compatible Prefill/Decode stand-in for vLLM (deterministic fake model)"},
    {"proxy", "disaggregation proxy: prefill with max_tokens=1, then decode"},
    {"metaserver", "HTTP metadata server with Mooncake's API"},
    {"bootstrap", "vLLM gen B bootstrap server, for prefills given bootstrap_server_address"},
    {"interop", "pdkv <-> your Mooncake transfer_engine_bench, both ways, every store"},
    {"upgrade-check", "rolling-upgrade matrix: old/new prefill x old/new decode, what changed"},
    {"vllm-drift", "read an installed vLLM (no import) and say what pdkv does not model yet"},
};

static char usage_text[2048];

/* The command list, the start of the help. */
static void fill_usage(void)
{
	size_t n = (size_t)snprintf(usage_text, sizeof(usage_text),
	                            "usage: pdkv <command> [args]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]) && n < sizeof(usage_text); i++)
		n += (size_t)snprintf(usage_text + n, sizeof(usage_text) - n, "  %-13s %s\n",
		                      subs[i].name, subs[i].what);
	if (n < sizeof(usage_text))
		snprintf(usage_text + n, sizeof(usage_text) - n, "\noptions:\n");
}

/* "pdkv --help", "pdkv --version", "pdkv --x": pd_opt on argv[1] alone (the rest belongs to
 * the command). Returns 0, 1 (answered) or 2. */
static const struct pd_opt_spec spec = {
    .prog = "pdkv",
    .usage = usage_text,
    .footer = "\n`pdkv <command> --help` shows a command's flags; `pdkv <command> --version`\n"
              "its build.\n",
};

static int own_option(char **argv)
{
	return pd_opt_parse(&spec, 2, argv, 1, NULL, NULL);
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	int rc;

	fill_usage();
	if (argc < 2) {
		pd_opt_help(&spec, stderr);
		return 2;
	}
	if (argv[1][0] == '-' || !strcmp(argv[1], "help")) {
		rc = own_option(!strcmp(argv[1], "help") ? (char *[]){argv[0], "--help", NULL}
		                                         : argv);
		return rc == 1 ? 0 : 2;
	}
	if (strchr(argv[1], '/') || snprintf(path, sizeof(path), "%s/pdkv-%s", pd_self_dir(),
	                                     argv[1]) >= (int)sizeof(path)) {
		fprintf(stderr, "pdkv: unknown command '%s'\n", argv[1]);
		return 2;
	}
	argv[1] = path;
	execv(path, argv + 1);
	if (errno == ENOENT)
		fprintf(stderr, "pdkv: unknown command '%s' (no %s); run `pdkv --help`\n",
		        strrchr(path, '-') + 1, path);
	else
		fprintf(stderr, "pdkv: cannot run %s: %s\n", path, strerror(errno));
	return 2;
}
