/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv: the one command users type. `pdkv SUB ...` runs the sibling binary pdkv-SUB from the
 * same directory (git-style), so each subcommand is its own thin main and its own module. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pd_proc.h"
#include "pd_version.h"

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

static void usage(FILE *f)
{
	fprintf(f, "usage: pdkv <command> [args]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		fprintf(f, "  %-13s %s\n", subs[i].name, subs[i].what);
	fprintf(f, "\n`pdkv <command> --help` shows a command's flags.\n");
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	if (argc == 2 && !strcmp(argv[1], "--version")) { /* pdkv CMD --version: CMD's own */
		pd_version_print(stdout, "pdkv");
		return 0;
	}
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
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
