/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-config: `pdkv config check` — reads a deployment's mooncake.json and
 * --kv-transfer-config exactly as vLLM would and says what is wrong (thin main over ref/cfg). */
#include "config/cfg_cli.h"

#include <string.h>
#include "pd_opt.h"

int main(int argc, char **argv)
{
	struct cfg_cli c;
	int rc;
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		cfg_cli_usage(stdout, "pdkv config check");
		return 0;
	}
	if (argc >= 2 && argv[1][0] == '-') { /* --version, or an unknown option */
		const struct pd_opt_spec spec = {.prog = "pdkv config"};
		return pd_opt_parse(&spec, 2, argv, 1, NULL, NULL) == 1 ? 0 : 2;
	}
	if (argc < 2 || strcmp(argv[1], "check")) {
		fprintf(stderr,
		        "usage: pdkv config check [flags]   (`pdkv config check --help`)\n");
		return 2;
	}
	rc = cfg_cli_parse(&c, argc, argv, 2, "pdkv config check");
	if (rc)
		return rc == 1 ? 0 : 2;
	return cfg_cli_run(&c, false);
}
