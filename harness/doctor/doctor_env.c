/* SPDX-License-Identifier: Apache-2.0 */
/* doctor_env: `pdkv doctor --env` — every variable of the pd_env table with its value and
 * source (set/default), bad values marked; --names (one a line), --man=COMMAND (roff). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_env.h"

int doctor_env_main(int argc, char **argv);

static const char *type_name(const struct pd_env_var *r)
{
	static const char *const n[] = {"int",    "size",   "0|1",  "set/unset",
	                                "choice", "number", "text", "path"};
	return r->type == PD_ENV_ENUM ? r->choices : n[r->type];
}

static void range_of(const struct pd_env_var *r, char *buf, size_t sz)
{
	*buf = '\0';
	if (r->type == PD_ENV_INT || r->type == PD_ENV_SIZE)
		snprintf(buf, sz, " %lld..%lld", (long long)r->lo, (long long)r->hi);
	else if (r->type == PD_ENV_FLOAT)
		snprintf(buf, sz, " (%lld, %lld)", (long long)r->lo, (long long)r->hi);
}

/* roff for help2man's [ENVIRONMENT] section: the rows command reads */
static int man_env(const char *cmd)
{
	unsigned bit = pd_env_cmd_bit(cmd);
	static const char *const pol[] = {"warns and uses the default", "uses the default",
	                                  "refuses to start"};

	if (!bit) {
		fprintf(stderr, "pdkv doctor: --man: unknown command \"%s\"\n", cmd);
		return 2;
	}
	for (size_t i = 0; i < pd_env_count(); i++) {
		const struct pd_env_var *r = pd_env_at(i);
		char rg[64];

		if (!(r->cmds & bit))
			continue;
		range_of(r, rg, sizeof(rg));
		printf(".TP\n.B %s\n", r->name);
		/* roff: a leading '.' or '\'' would start a request; docs have neither */
		printf("%s. Type: %s%s%s%s%s.%s%s\n", r->doc, type_name(r), rg,
		       r->def ? "; default " : "", r->def ? r->def : "",
		       r->flags & PD_ENV_F_TEST ? "; for tests" : "",
		       r->type <= PD_ENV_FLOAT && r->type != PD_ENV_SET ? " A bad value: pdkv "
		                                                        : "",
		       r->type <= PD_ENV_FLOAT && r->type != PD_ENV_SET ? pol[r->bad] : "");
	}
	return 0;
}

static int list(void)
{
	int bad = 0;

	printf("%-38s %-8s %s\n", "VARIABLE", "SOURCE", "VALUE");
	for (size_t i = 0; i < pd_env_count(); i++) {
		const struct pd_env_var *r = pd_env_at(i);
		const char *v = getenv(r->name);
		char why[160];
		bool set = v && (*v || r->type == PD_ENV_SET);

		if (set && pd_env_check(r, v, why, sizeof(why))) {
			bad++;
			printf("%-38s %-8s \"%s\"  BAD: %s (default %s)\n", r->name, "set", v, why,
			       r->def ? r->def : "none");
		} else if (set) {
			printf("%-38s %-8s %s\n", r->name, "set",
			       r->flags & PD_ENV_F_SECRET ? "(hidden)" : v);
		} else {
			printf("%-38s %-8s %s\n", r->name, "default", r->def ? r->def : "(unset)");
		}
	}
	printf("env: %zu variables, %d bad\n", pd_env_count(), bad);
	return bad ? 1 : 0;
}

/* argv[0] is "--env". Exit 0, 1 when a set value is bad, 2 on bad usage. */
int doctor_env_main(int argc, char **argv)
{
	if (argc == 1)
		return list();
	if (argc == 2 && !strcmp(argv[1], "--names")) {
		for (size_t i = 0; i < pd_env_count(); i++)
			printf("%s\n", pd_env_at(i)->name);
		return 0;
	}
	if (argc == 2 && !strncmp(argv[1], "--man=", 6))
		return man_env(argv[1] + 6);
	fprintf(stderr, "usage: pdkv doctor --env [--names | --man=COMMAND]\n"
	                "Every environment variable pdkv reads: value and source (set/default); "
	                "exit 1 when a set value is bad.\n");
	return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
}
