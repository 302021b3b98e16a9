/* SPDX-License-Identifier: Apache-2.0 */
/* test_config_fixtures: runs every fixtures/config/NAME.expected case (input beside it) through
 * the CLI parser, cfg_check and the --json report, and fails on any expectation that differs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/cfg_cli.h"
#include "pd_util.h"

static const char *fixdir = "fixtures/config";

struct fx {
	char name[128];
	char path[512];
};

static void setenv_field(struct cfg_env *e, const char *k, const char *v)
{
	static const struct {
		const char *name;
		size_t off;
	} m[] = {
	    {"MOONCAKE_CONFIG_PATH", offsetof(struct cfg_env, mooncake_config_path)},
	    {"VLLM_MOONCAKE_BOOTSTRAP_PORT", offsetof(struct cfg_env, bootstrap_port)},
	    {"VLLM_MOONCAKE_SIDE_CHANNEL_PORT", offsetof(struct cfg_env, side_channel_port)},
	    {"VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT", offsetof(struct cfg_env, abort_timeout)},
	    {"VLLM_MOONCAKE_SENDER_WORKERS", offsetof(struct cfg_env, sender_workers)},
	    {"VLLM_MOONCAKE_PROTOCOL", offsetof(struct cfg_env, protocol)},
	    {"MC_LEGACY_RPC_PORT_BINDING", offsetof(struct cfg_env, legacy_rpc)},
	    {"MC_TCP_BIND_ADDRESS", offsetof(struct cfg_env, tcp_bind_address)},
	    {"MC_HANDSHAKE_PORT", offsetof(struct cfg_env, handshake_port)},
	    {"MC_METADATA_CLUSTER_ID", offsetof(struct cfg_env, cluster_id)},
	    {"MC_MIN_RPC_PORT", offsetof(struct cfg_env, min_rpc)},
	    {"MC_MAX_RPC_PORT", offsetof(struct cfg_env, max_rpc)},
	    {"MC_MIN_PRC_PORT", offsetof(struct cfg_env, min_prc)},
	    {"MC_MAX_PRC_PORT", offsetof(struct cfg_env, max_prc)},
	    {"VLLM_DISABLE_REQUEST_ID_RANDOMIZATION",
	     offsetof(struct cfg_env, disable_reqid_random)},
	    {"PDKV_SYSFS_INFINIBAND", offsetof(struct cfg_env, ib_sysfs)},
	};
	size_t i;

	for (i = 0; i < PD_ARRAY_SIZE(m); i++)
		if (!strcmp(m[i].name, k)) {
			*(const char **)((char *)e + m[i].off) = v;
			return;
		}
	fail_msg("unknown env variable %s in fixture", k);
}

/* "${DIR}" in an expectation stands for the fixtures directory. */
static char *subst(const char *s)
{
	const char *p = strstr(s, "${DIR}");
	char *o = NULL;

	if (!p)
		return strdup(s);
	if (asprintf(&o, "%.*s%s%s", (int)(p - s), s, fixdir, p + 6) < 0)
		return NULL;
	return o;
}

/* "${UUID4}" in an expectation matches any str(uuid.uuid4()) (vLLM's random engine_id). Returns
 * the end of the matched prefix of got, or NULL. */
static const char *pat_prefix(const char *got, const char *want)
{
	static const char ph[] = "${UUID4}";

	while (*want) {
		if (!strncmp(want, ph, sizeof(ph) - 1)) {
			for (int i = 0; i < 36; i++) {
				char c = got[i];
				bool dash = i == 8 || i == 13 || i == 18 || i == 23;
				if (dash ? c != '-'
				         : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
					return NULL;
			}
			if (got[14] != '4' || !strchr("89ab", got[19]))
				return NULL;
			got += 36;
			want += sizeof(ph) - 1;
		} else if (*got++ != *want++) {
			return NULL;
		}
	}
	return got;
}

static bool pat_eq(const char *got, const char *want)
{
	const char *e = pat_prefix(got, want);

	return e && !*e;
}

static bool pat_in(const char *got, const char *want)
{
	for (; *got; got++)
		if (pat_prefix(got, want))
			return true;
	return !*want;
}

static bool value_eq(const cJSON *v, const char *want)
{
	char buf[64];

	if (!strcmp(want, "null"))
		return v && cJSON_IsNull(v);
	if (!v)
		return false;
	if (cJSON_IsString(v))
		return pat_eq(v->valuestring, want);
	if (cJSON_IsBool(v))
		return !strcmp(want, cJSON_IsTrue(v) ? "true" : "false");
	if (cJSON_IsNumber(v)) {
		snprintf(buf, sizeof(buf), "%.17g", v->valuedouble);
		return !strcmp(buf, want) || strtod(want, NULL) == v->valuedouble;
	}
	return false;
}

/* One expectation line of a case against the --json object and the two exit codes. */
static bool expect_line(const char *name, const cJSON *o, int rc, int ports_rc, const char *line)
{
	char *want = NULL;
	bool ok = true;

	if (!strncmp(line, "exit ", 5)) {
		ok = rc == atoi(line + 5);
	} else if (!strncmp(line, "ports-exit ", 11)) {
		ok = ports_rc == atoi(line + 11);
	} else if (!strncmp(line, "vllm.", 5) && strchr(line, ' ')) {
		/* vllm.error / vllm.release / vllm.generation / vllm.row ... */
		char key[64];
		const char *sp = strchr(line, ' ');
		snprintf(key, sizeof(key), "%.*s", (int)(sp - line - 5), line + 5);
		want = subst(sp + 1);
		ok = value_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "vllm"), key), want);
	} else if (!strncmp(line, "ok ", 3)) {
		ok = value_eq(cJSON_GetObjectItem(o, "ok"), line + 3);
	} else if (!strncmp(line, "config.", 7) || !strncmp(line, "kv.", 3)) {
		char key[64];
		const char *sp = strchr(line, ' ');
		const cJSON *sec =
		    cJSON_GetObjectItem(o, line[0] == 'c' ? "config" : "kv_transfer");
		const char *dot = strchr(line, '.') + 1;
		if (!sp)
			fail_msg("%s: bad line %s", name, line);
		snprintf(key, sizeof(key), "%.*s", (int)(sp - dot), dot);
		want = subst(sp + 1);
		if (!strcmp(key, "device_names")) {
			char *got = NULL, *tmp;
			const cJSON *it;
			got = strdup("");
			cJSON_ArrayForEach(it, cJSON_GetObjectItem(sec, key))
			{
				if (asprintf(&tmp, "%s%s[%s]", got, *got ? "," : "",
				             it->valuestring) < 0)
					tmp = NULL;
				free(got);
				got = tmp ? tmp : strdup("");
			}
			ok = !strcmp(got, want);
			free(got);
		} else {
			ok = value_eq(cJSON_GetObjectItem(sec, key), want);
		}
	} else if (!strncmp(line, "diag ", 5) || !strncmp(line, "no-diag ", 8)) {
		/* diag SEV FIELD [:: TEXT]   FIELD "*" = any */
		bool neg = line[0] == 'n';
		char sev[16], fieldw[256];
		const char *rest = line + (neg ? 8 : 5), *sep;
		const char *text_w = NULL;
		const cJSON *it;
		bool found = false;
		snprintf(sev, sizeof(sev), "%.*s", (int)strcspn(rest, " "), rest);
		rest += strlen(sev);
		while (*rest == ' ')
			rest++;
		sep = strstr(rest, " :: ");
		snprintf(fieldw, sizeof(fieldw), "%.*s",
		         (int)(sep ? (size_t)(sep - rest) : strlen(rest)), rest);
		if (sep)
			text_w = sep + 4;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "diagnostics"))
		{
			const cJSON *s = cJSON_GetObjectItem(it, "severity");
			const cJSON *fl = cJSON_GetObjectItem(it, "field");
			const cJSON *m = cJSON_GetObjectItem(it, "message");
			if (strcmp(s->valuestring, sev))
				continue;
			if (*fieldw && strcmp(fieldw, "*") &&
			    !(cJSON_IsString(fl) && !strcmp(fl->valuestring, fieldw)))
				continue;
			if (text_w && !pat_in(m->valuestring, text_w))
				continue;
			found = true;
		}
		ok = neg ? !found : found;
	} else if (!strncmp(line, "conflicts ", 10)) {
		ok = cJSON_GetArraySize(cJSON_GetObjectItem(o, "conflicts")) == atoi(line + 10);
	} else if (!strncmp(line, "conflict ", 9)) {
		const cJSON *it;
		ok = false;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "conflicts"))
		{
			char hp[300];
			snprintf(hp, sizeof(hp), "%s:%d",
			         cJSON_GetObjectItem(it, "host")->valuestring,
			         (int)cJSON_GetObjectItem(it, "port")->valuedouble);
			ok |= !strcmp(hp, line + 9);
		}
	} else if (!strncmp(line, "port ", 5) || !strncmp(line, "no-port ", 8)) {
		/* [no-]port SIDE RANK HOST:PORT bind|connect [:: PURPOSE-TEXT] */
		bool neg = line[0] == 'n';
		const char *spec = line + (neg ? 8 : 5), *sep = strstr(spec, " :: ");
		char side[16], hp[300], act[16], got[300];
		int rank;
		const cJSON *it;
		bool found = false;
		if (sscanf(spec, "%15s %d %299s %15s", side, &rank, hp, act) != 4)
			fail_msg("%s: bad line %s", name, line);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "ports"))
		{
			snprintf(got, sizeof(got), "%s:%d",
			         cJSON_GetObjectItem(it, "host")->valuestring,
			         (int)cJSON_GetObjectItem(it, "port")->valuedouble);
			found |= !strcmp(cJSON_GetObjectItem(it, "side")->valuestring, side) &&
			         (int)cJSON_GetObjectItem(it, "rank")->valuedouble == rank &&
			         !strcmp(got, hp) &&
			         cJSON_IsTrue(cJSON_GetObjectItem(it, "binds")) ==
			             !strcmp(act, "bind") &&
			         (!sep ||
			          strstr(cJSON_GetObjectItem(it, "purpose")->valuestring, sep + 4));
		}
		ok = neg ? !found : found;
	} else {
		fail_msg("%s: unknown expectation line: %s", name, line);
	}
	free(want);
	return ok;
}

static void run_fixture(void **state)
{
	const struct fx *f = *state;
	char *text = NULL, *line, *save = NULL, *json = NULL, *argv[64], mc[600], *mcarg = NULL;
	const char *args[64];
	int argc = 1, rc, ports_rc, fails = 0;
	struct cfg_cli c;
	struct cfg_report r;
	struct cfg_env env = {0};
	cJSON *o = NULL;
	bool mc_set = false;
	struct stat st;

	assert_int_equal(pd_read_file(f->path, 1 << 20, &text, NULL), 0);
	args[0] = "test";
	/* pass 1: inputs */
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "arg ", 4) && argc < 60) {
			args[argc++] = line + 4;
		} else if (!strncmp(line, "mooncake ", 9)) {
			mc_set = true;
			if (strcmp(line + 9, "-")) {
				snprintf(mc, sizeof(mc), "--mooncake-config=%s%s%s",
				         line[9] == '/' ? "" : fixdir, line[9] == '/' ? "" : "/",
				         line + 9);
				mcarg = strdup(mc);
				args[argc++] = mcarg;
			}
		} else if (!strncmp(line, "env ", 4)) {
			char *eq = strchr(line + 4, '=');
			assert_non_null(eq);
			*eq = 0;
			setenv_field(&env, line + 4, eq + 1);
			*eq = '=';
		}
	}
	if (!mc_set) {
		snprintf(mc, sizeof(mc), "%s/%s.json", fixdir, f->name);
		if (stat(mc, &st) == 0) {
			snprintf(mc, sizeof(mc), "--mooncake-config=%s/%s.json", fixdir, f->name);
			mcarg = strdup(mc);
			args[argc++] = mcarg;
			mc_set = true;
		}
	}
	args[argc] = NULL;
	memcpy(argv, args, sizeof(args));
	rc = cfg_cli_parse(&c, argc, argv, 1, "test");
	assert_int_equal(rc, 0);
	/* the environment comes only from the fixture; this host's RDMA devices do not count
	 * (PDKV_SYSFS_INFINIBAND defaults to a directory that does not exist) */
	{
		char *mcp = NULL, *ib;
		if (env.mooncake_config_path)
			mcp = subst(env.mooncake_config_path);
		ib = subst(env.ib_sysfs ? env.ib_sysfs : "${DIR}/sysfs/none");
		env.mooncake_config_path = mcp;
		env.ib_sysfs = ib;
		c.o.env = env;
		rc = cfg_check(&c.o, &r);
		free(mcp);
		free(ib);
		c.o.env.mooncake_config_path = NULL;
		c.o.env.ib_sysfs = NULL;
	}
	ports_rc = r.nconflicts > 0 || !r.ports_planned ? 1 : 0;
	json = cfg_report_json(&r);
	assert_non_null(json);
	o = cJSON_Parse(json);
	assert_non_null(o);
	free(text);
	assert_int_equal(pd_read_file(f->path, 1 << 20, &text, NULL), 0);
	/* pass 2: expectations */
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		bool ok;
		if (!*line || line[0] == '#' || !strncmp(line, "arg ", 4) ||
		    !strncmp(line, "mooncake ", 9) || !strncmp(line, "env ", 4))
			continue;
		ok = expect_line(f->name, o, rc, ports_rc, line);
		if (!ok) {
			fails++;
			print_error("%s: expectation not met: %s\n", f->name, line);
		}
	}
	if (fails)
		print_error("%s: exit=%d ports-exit=%d; --json was:\n%s", f->name, rc, ports_rc,
		            json);
	free(mcarg);
	cJSON_Delete(o);
	free(json);
	free(text);
	cfg_report_free(&r);
	assert_int_equal(fails, 0);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct fx *)a)->name, ((const struct fx *)b)->name);
}

int main(void)
{
	DIR *dir;
	struct dirent *de;
	struct fx *fx = NULL;
	struct CMUnitTest *t;
	size_t n = 0, i;
	int rc;

	if (getenv("PDKV_FIXTURES"))
		fixdir = getenv("PDKV_FIXTURES");
	dir = opendir(fixdir);
	if (!dir) {
		fprintf(stderr, "cannot open %s (run from the repository root)\n", fixdir);
		return 1;
	}
	while ((de = readdir(dir))) {
		size_t l = strlen(de->d_name);
		struct fx *nf;
		if (l < 10 || strcmp(de->d_name + l - 9, ".expected"))
			continue;
		nf = realloc(fx, (n + 1) * sizeof(*fx));
		assert_non_null(nf);
		fx = nf;
		snprintf(fx[n].name, sizeof(fx[n].name), "%.*s", (int)(l - 9), de->d_name);
		snprintf(fx[n].path, sizeof(fx[n].path), "%s/%s", fixdir, de->d_name);
		n++;
	}
	closedir(dir);
	if (n < 50) {
		fprintf(stderr, "only %zu fixtures in %s; expected the full set\n", n, fixdir);
		return 1;
	}
	qsort(fx, n, sizeof(*fx), by_name);
	t = calloc(n, sizeof(*t));
	for (i = 0; i < n; i++) {
		t[i].name = fx[i].name;
		t[i].test_func = run_fixture;
		t[i].initial_state = &fx[i];
	}
	rc = _cmocka_run_group_tests("config_fixtures", t, n, NULL, NULL);
	free(t);
	free(fx);
	return rc;
}
