/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-config: `pdkv config check` — reads a deployment's mooncake.json and
 * --kv-transfer-config exactly as vLLM would and says what is wrong (thin main over ref/cfg). */
#include "config/cfg_cli.h"

#include <string.h>
#include "pd_version.h"

int main(int argc, char **argv)
{
	struct cfg_cli c;
	int rc;
	if (pd_version_asked(argc, argv, "pdkv config"))
		return 0;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		cfg_cli_usage(stdout, "pdkv config check");
		return 0;
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
