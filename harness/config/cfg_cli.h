/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_cli: the flags `pdkv config check` and `pdkv ports` share, parsed into cfg_check_opts. */
#ifndef CFG_CLI_H
#define CFG_CLI_H

#include "cfg/cfg.h"

struct cfg_cli {
	struct cfg_check_opts o;
	bool json;
};
/* argv[first..argc) are flags. Returns 0, 1 for --help (printed), or 2 (usage error printed). */
int cfg_cli_parse(struct cfg_cli *c, int argc, char **argv, int first, const char *prog);
void cfg_cli_usage(FILE *f, const char *prog);
/* Runs the check and prints it; returns the exit status. ports_mode: exit 1 only on collisions. */
int cfg_cli_run(struct cfg_cli *c, bool ports_mode);

#endif
