/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-vllm-drift: `pdkv vllm-drift [--vllm PATH]` reads the vLLM a user is about to deploy
 * (without importing it) and says what pdkv does not model yet; a thin main over cfg_drift. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cfg/cfg_drift.h"
#include "pd_opt.h"
#include "pd_util.h"

struct opts {
	const char *vllm, *version, *json, *shape;
	bool model, json_set;
	int timeout_s;
};

static int json_out(const char *dest, cJSON *j)
{
	char *t = cJSON_Print(j);
	int rc = 0;
	if (!t)
		return -1;
	if (!dest || !strcmp(dest, "-"))
		printf("%s\n", t);
	else if (pd_write_file(dest, t, strlen(t))) {
		fprintf(stderr, "pdkv vllm-drift: cannot write --json file %s\n", dest);
		rc = -1;
	}
	free(t);
	return rc;
}

static int fail(const struct opts *o, const char *msg)
{
	fprintf(stderr, "pdkv vllm-drift: %s\n", msg);
	if (o->json_set) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "error", msg);
		cJSON_AddNumberToObject(j, "exit", 2);
		json_out(o->json, j);
		cJSON_Delete(j);
	}
	return 2;
}

static int show_model(const struct opts *o, int gen)
{
	struct cfg_model_view v;
	char err[256];
	if (o->version) {
		if (cfg_model_for_version(o->version, gen, &v, err, sizeof(err)))
			return fail(o, err);
	} else if (gen >= 0)
		cfg_model_for_gen((enum cfg_gen)gen, &v);
	else if (cfg_model_for_version(cfg_vllm_newest, -1, &v, err, sizeof(err)))
		return fail(o, err);
	cJSON *j = cfg_model_json(&v);
	int rc = json_out(o->json_set ? o->json : "-", j) ? 2 : 0;
	cJSON_Delete(j);
	return rc;
}

static int drift(const struct opts *o, int gen)
{
	char path[PATH_MAX], err[1024];
	cJSON *tree = NULL;
	struct cfg_drift d;
	int rc;

	if (!o->vllm && cfg_drift_default_path(path, sizeof(path), err, sizeof(err)))
		return fail(o, err);
	if (o->vllm)
		snprintf(path, sizeof(path), "%s", o->vllm);
	if (cfg_drift_extract(path, o->timeout_s * 1000, &tree, err, sizeof(err)))
		return fail(o, err);
	if (cfg_drift_compare(tree, o->version, gen, &d, err, sizeof(err))) {
		cJSON_Delete(tree);
		return fail(o, err);
	}
	rc = d.verdict == CFG_DRIFT_WIRE ? 1 : 0;
	if (!o->json_set || (o->json && strcmp(o->json, "-")))
		cfg_drift_print(stdout, &d, true);
	if (o->json_set) {
		cJSON *j = cfg_drift_json(&d);
		if (json_out(o->json, j))
			rc = 2;
		cJSON_Delete(j);
	}
	cfg_drift_free(&d);
	cJSON_Delete(tree);
	return rc;
}

/* `--json` takes an optional value: bare, `--json FILE`, `--json -` and `--json=FILE`. */
static void fold_json(int *argc, char **argv)
{
	static char buf[PATH_MAX + 8];
	for (int i = 1; i + 1 < *argc; i++)
		if (!strcmp(argv[i], "--json") &&
		    (argv[i + 1][0] != '-' || !strcmp(argv[i + 1], "-"))) {
			snprintf(buf, sizeof(buf), "--json=%s", argv[i + 1]);
			argv[i] = buf;
			memmove(&argv[i + 1], &argv[i + 2],
			        (size_t)(*argc - i - 2) * sizeof(char *));
			(*argc)--;
			return;
		}
}

static int json_opt(const char *val, void *dst, void *ud)
{
	struct opts *o = dst;
	(void)ud;
	o->json_set = true;
	o->json = val;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.timeout_s = 60};
	int gen = -1, rc;
	const struct pd_opt opts[] = {
	    {.name = "vllm",
	     .type = PD_OPT_STR,
	     .dst = &o.vllm,
	     .arg = "PATH",
	     .help = "the vllm package directory, a source checkout's root or a .whl\n"
	             "(default: the vllm package python3 would import)"},
	    {.name = "vllm-version",
	     .type = PD_OPT_STR,
	     .dst = &o.version,
	     .arg = "X.Y[.Z]",
	     .help = "compare with this release's row instead of the tree's own version;\n"
	             "with --model: the release whose model to print"},
	    {.name = "shape",
	     .type = PD_OPT_CHOICE,
	     .dst = &gen,
	     .arg = "a|b0|b1|b2|bn|bl",
	     .help = "compare with this struct shape (generation), not the row's",
	     .choices = "v0|a|b0|b1|b2|bn|bl"},
	    {.name = "model",
	     .type = PD_OPT_FLAG,
	     .dst = &o.model,
	     .help = "print pdkv's own model (of --vllm-version, --shape, or the newest row)\n"
	             "as JSON and exit"},
	    {.name = "json",
	     .type = PD_OPT_FN,
	     .dst = &o,
	     .arg = " [FILE|-]",
	     .help = "the comparison as JSON: on stdout (bare or -) or into FILE",
	     .fn = json_opt,
	     .optional_value = true},
	    {.name = "timeout",
	     .type = PD_OPT_INT,
	     .dst = &o.timeout_s,
	     .arg = "SECONDS",
	     .help = "give up on reading the tree after this long (60)",
	     .min = 1,
	     .max = 3600},
	};
	const struct pd_opt_spec spec = {
	    .prog = "pdkv vllm-drift",
	    .usage =
	        "usage: pdkv vllm-drift [--vllm PATH] [--vllm-version X.Y[.Z]] [--shape GEN] "
	        "[--json [FILE|-]]\n"
	        "       pdkv vllm-drift --model [--vllm-version X.Y[.Z] | --shape GEN]\n"
	        "Reads a vLLM tree with Python's ast module (never importing it: no torch, no "
	        "GPU) and\ncompares its MooncakeConnector wire structs, bootstrap routes, "
	        "side-channel sockets,\nVLLM_MOONCAKE_* env vars, extra-config keys, "
	        "kv_load_failure_policy default, metrics and\nerror texts with pdkv's model of "
	        "its release. Per item: known, changed (old -> new), new, gone.\n",
	    .footer =
	        "Exit: 0 \"pdkv models this vLLM\" or \"... with differences that do not touch "
	        "the wire\";\n  1 \"pdkv does not model this vLLM's wire\" (a struct field, "
	        "struct option, route or\n  socket differs); 2 usage, a path that is not a "
	        "vLLM, no MooncakeConnector in it,\n  python3 missing, an unreadable wheel.\n"
	        "Environment: PDKV_PYTHON (default python3), PDKV_VLLM_EXTRACT (the "
	        "extractor script).\n",
	    .opts = opts,
	    .nopts = PD_ARRAY_SIZE(opts),
	    .max_pos = 0,
	};
	fold_json(&argc, argv);
	rc = pd_opt_parse(&spec, argc, argv, 1, NULL, NULL);
	if (rc)
		return rc == 1 ? 0 : 2;
	if (gen == CFG_GEN_V0 && !o.model)
		return fail(&o,
		            "--shape v0: the V0 MooncakePipe has no msgspec structs to compare");
	return o.model ? show_model(&o, gen) : drift(&o, gen);
}
