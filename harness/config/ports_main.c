/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-ports: `pdkv ports` — every port a prefill/decode/proxy deployment binds or connects,
 * per side and rank, and every collision (exit 1). Thin main over ref/cfg. */
#include "config/cfg_cli.h"

int main(int argc, char **argv)
{
	struct cfg_cli c;
	int rc = cfg_cli_parse(&c, argc, argv, 1, "pdkv ports");
	if (rc)
		return rc == 1 ? 0 : 2;
	return cfg_cli_run(&c, true);
}
