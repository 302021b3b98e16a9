/* SPDX-License-Identifier: Apache-2.0 */
/* sa_args: pdkv-standin's command line, parsed the way vLLM's argparse does (--a-b and --a_b,
 * --flag=value, `serve MODEL` positional), plus the table of vLLM flags accepted and ignored. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"
#include "pd_util.h"
#include "sa.h"
#include "pd_version.h"

enum argk { A_BOOL = 0, A_VALUE = 1 };

/* vLLM flags the stand-in does not need: accepted, noted in the log, ignored. */
static const struct {
	const char *name;
	int kind;
} ignored[] = {
    {"--gpu-memory-utilization", A_VALUE},
    {"--quantization", A_VALUE},
    {"-q", A_VALUE},
    {"--dtype", A_VALUE},
    {"--tokenizer", A_VALUE},
    {"--tokenizer-mode", A_VALUE},
    {"--revision", A_VALUE},
    {"--tokenizer-revision", A_VALUE},
    {"--code-revision", A_VALUE},
    {"--download-dir", A_VALUE},
    {"--load-format", A_VALUE},
    {"--seed", A_VALUE},
    {"--max-num-seqs", A_VALUE},
    {"--max-num-batched-tokens", A_VALUE},
    {"--swap-space", A_VALUE},
    {"--cpu-offload-gb", A_VALUE},
    {"--distributed-executor-backend", A_VALUE},
    {"--kv-cache-dtype", A_VALUE},
    {"--uvicorn-log-level", A_VALUE},
    {"--chat-template", A_VALUE},
    {"--chat-template-content-format", A_VALUE},
    {"--max-log-len", A_VALUE},
    {"--num-scheduler-steps", A_VALUE},
    {"--max-seq-len-to-capture", A_VALUE},
    {"--config", A_VALUE},
    {"--generation-config", A_VALUE},
    {"--override-generation-config", A_VALUE},
    {"--hf-overrides", A_VALUE},
    {"--limit-mm-per-prompt", A_VALUE},
    {"--max-logprobs", A_VALUE},
    {"--device", A_VALUE},
    {"--worker-cls", A_VALUE},
    {"--root-path", A_VALUE},
    {"--allowed-origins", A_VALUE},
    {"--response-role", A_VALUE},
    {"--tool-call-parser", A_VALUE},
    {"--reasoning-parser", A_VALUE},
    {"--guided-decoding-backend", A_VALUE},
    {"--speculative-model", A_VALUE},
    {"--num-speculative-tokens", A_VALUE},
    {"--speculative-config", A_VALUE},
    {"--rope-scaling", A_VALUE},
    {"--rope-theta", A_VALUE},
    {"--max-parallel-loading-workers", A_VALUE},
    {"--preemption-mode", A_VALUE},
    {"--scheduling-policy", A_VALUE},
    {"--compilation-config", A_VALUE},
    {"-O", A_VALUE},
    {"--kv-events-config", A_VALUE},
    {"--ssl-keyfile", A_VALUE},
    {"--ssl-certfile", A_VALUE},
    {"--lora-modules", A_VALUE},
    {"--max-loras", A_VALUE},
    {"--max-lora-rank", A_VALUE},
    {"--mm-processor-kwargs", A_VALUE},
    {"--enable-chunked-prefill", A_BOOL},
    {"--enforce-eager", A_BOOL},
    {"--trust-remote-code", A_BOOL},
    {"--enable-prefix-caching", A_BOOL},
    {"--no-enable-prefix-caching", A_BOOL},
    {"--no-enable-chunked-prefill", A_BOOL},
    {"--disable-log-requests", A_BOOL},
    {"--enable-log-requests", A_BOOL},
    {"--disable-log-stats", A_BOOL},
    {"--disable-custom-all-reduce", A_BOOL},
    {"--disable-frontend-multiprocessing", A_BOOL},
    {"--enable-auto-tool-choice", A_BOOL},
    {"--disable-sliding-window", A_BOOL},
    {"--skip-tokenizer-init", A_BOOL},
    {"--disable-fastapi-docs", A_BOOL},
    {"--use-v2-block-manager", A_BOOL},
    {"--disable-async-output-proc", A_BOOL},
    {"--return-tokens-as-token-ids", A_BOOL},
    {"--enable-request-id-headers", A_BOOL},
    {"--enable-lora", A_BOOL},
    {"--enable-sleep-mode", A_BOOL},
    {"--enable-expert-parallel", A_BOOL},
    {"--multi-step-stream-outputs", A_BOOL},
};

static const char usage_line[] =
    "usage: pdkv-standin [serve] [MODEL] [--model MODEL] [--host HOST] [--port PORT]\n"
    "                    [--max-model-len N] [--tensor-parallel-size N] [--served-model-name NAME "
    "...]\n"
    "                    [--pipeline-parallel-size N]\n"
    "                    [--kv-transfer-config JSON] [--api-key KEY] [--kv-layers N] [--kv-heads "
    "N]\n"
    "                    [--head-dim N] [--dtype-bytes N] [--hidden-size N] [--ns-per-token NS]\n"
    "                    [--kv-miss-policy recompute|fail|wait] [--kv-wait-timeout MS]\n"
    "                    [--kv-select-timeout MS] [--kv-frame-format pickle|u64be]\n"
    "                    [--kv-miss-mode old|new] [--kv-zmq-bind-host HOST] [--fault KIND] "
    "[--dry-run]\n"
    "                    [--bootstrap-host HOST]\n"
    "                    [--vllm-version X.Y[.Z]] [--v1-shape b0|b1|b2|bn|bl] [--list-versions]\n"
    "                    [--data-parallel-size N] [--block-size N] [--num-gpu-blocks-override N]\n"
    "                    [--kv-cache-device cpu|cuda|cuda:N]\n"
    "                    [--kv-mla] [--kv-groups full|sliding:W|mamba,...]\n"
    "                    [--enable-prompt-tokens-details] [--version] [-h]\n"
    "                    [--max-connections N] [--max-connections-per-client N]\n"
    "                    [--idle-timeout SEC] [--kv-zmq-max-msg-bytes N]\n"
    "                    [--kv-insert-timeout-ms MS] [--kv-block-wait-timeout-ms MS]\n"
    "                    [--max-body BYTES] [--max-body-in-flight BYTES]\n"
    "                    [--kv-integrity-policy off|fail|recompute]\n";

static void usage_error(const char *fmt, const char *a, const char *b)
{
	fputs(usage_line, stderr);
	fputs("pdkv-standin: error: ", stderr);
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
}

static int parse_int(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
	char rng[64];

	if (pd_parse_i64(v, out) == 0 && *out >= lo && *out <= hi)
		return 0;
	snprintf(rng, sizeof(rng), "an integer %lld..%lld", (long long)lo, (long long)hi);
	fputs(usage_line, stderr);
	fprintf(stderr, "pdkv-standin: error: argument %s: expected %s, got '%s'\n", flag, rng, v);
	return -EINVAL;
}

int sa_fault_parse(const char *spec, struct sa_fault *f, char *err, size_t errsz)
{
	char *dup = strdup(spec ? spec : ""), *save = NULL, *tok;
	int64_t v;
	int ret = 0;

	memset(f, 0, sizeof(*f));
	f->fail_after = -1;
	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "none") || !*tok) {
			continue;
		} else if (!strcmp(tok, "drop")) {
			f->drop = true;
		} else if (!strcmp(tok, "corrupt")) {
			f->corrupt = true;
		} else if (!strcmp(tok, "eos-first")) {
			f->eos_first = true;
		} else if (!strcmp(tok, "crash")) {
			f->crash = true;
			f->crash_after = 1;
		} else if (!strncmp(tok, "crash=", 6) && !pd_parse_i64(tok + 6, &v) && v >= 1 &&
		           v <= 1000000) {
			f->crash = true;
			f->crash_after = (int)v;
		} else if (!strncmp(tok, "delay=", 6) && !pd_parse_i64(tok + 6, &v) && v >= 0 &&
		           v <= 600000) {
			f->delay_ms = (int)v;
		} else if (!strncmp(tok, "fail-marker=", 12) && tok[12] &&
		           strlen(tok + 12) < sizeof(f->fail_marker)) {
			snprintf(f->fail_marker, sizeof(f->fail_marker), "%s", tok + 12);
		} else if (!strncmp(tok, "fail-after=", 11) && !pd_parse_i64(tok + 11, &v) &&
		           v >= 0 && v <= 1000000) {
			f->fail_after = (int)v;
		} else {
			snprintf(
			    err, errsz,
			    "fault '%s': expected drop, corrupt, eos-first, delay=MS (0..600000), "
			    "crash, crash=N (N >= 1), fail-after=N or fail-marker=TEXT (1..63 "
			    "bytes), comma-separated",
			    tok);
			ret = -EINVAL;
			break;
		}
	}
	free(dup);
	return ret;
}

static int choice(const char *flag, const char *v, const char *const *names, int n, int *out)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
	fputs(usage_line, stderr);
	fprintf(stderr, "pdkv-standin: error: argument %s: invalid choice: '%s' (choose from", flag,
	        v);
	for (int i = 0; i < n; i++)
		fprintf(stderr, "%s '%s'", i ? "," : "", names[i]);
	fputs(")\n", stderr);
	return -EINVAL;
}

static void print_help(void)
{
	fputs(usage_line, stdout);
	puts("\nA vLLM stand-in: OpenAI API on a deterministic fake model. With "
	     "--kv-transfer-config\n"
	     "it speaks the MooncakeConnector of --vllm-version (default: the newest release pdkv\n"
	     "knows): <= 0.8 the V0 pipe (needs mooncake.json), 0.12-0.15 V1 gen A, >= 0.16 V1\n"
	     "gen B (--list-versions prints the table). vLLM flags it does not need\n"
	     "(--gpu-memory-utilization, --enforce-eager, --quantization, ...) are ignored.\n"
	     "Faults (--fault or PDKV_FAULT): drop, corrupt, delay=MS, crash, crash=N, "
	     "fail-after=N, fail-marker=TEXT.\n"
	     "--record-requests FILE: one JSON line per completion request as it arrived.\n"
	     "Environment (V1): VLLM_MOONCAKE_BOOTSTRAP_PORT (8998), "
	     "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT (480),\n"
	     "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION, VLLM_HOST_IP.");
}

/* Splits "--name=value"; normalises '_' to '-' in the name like vLLM's FlexibleArgumentParser. */
static void split_flag(const char *arg, char *name, size_t namesz, const char **inl)
{
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);

	if (n >= namesz)
		n = namesz - 1;
	memcpy(name, arg, n);
	name[n] = 0;
	for (size_t i = 2; i < n; i++)
		if (name[i] == '_')
			name[i] = '-';
	*inl = eq ? eq + 1 : NULL;
}

static void set_defaults(struct sa_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->model = "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4";
	o->port = 8000;
	o->max_model_len = 32768;
	o->tp = 1;
	o->pp = 1;
	mdl_geom_default(&o->geom);
	o->ns_per_token = 20000;
	o->kv_wait_timeout_ms = 30000;
	o->kv_select_timeout_ms = 10000;
	o->dp = 1;
	o->block_size = 16;
	sa_limits_default(o);
}

/* A flag at the end of the line (or before another flag) that needs a value: argparse's
 * "expected one argument" for ours, "unrecognized arguments" for anything else. Returns 2. */
static int missing_value(const char *name, const char *a)
{
	static const char *const ours[] = {
	    "--model",
	    "--host",
	    "--port",
	    "--max-model-len",
	    "--tensor-parallel-size",
	    "-tp",
	    "--pipeline-parallel-size",
	    "-pp",
	    "--served-model-name",
	    "--kv-transfer-config",
	    "--api-key",
	    "--kv-layers",
	    "--kv-heads",
	    "--head-dim",
	    "--dtype-bytes",
	    "--hidden-size",
	    "--ns-per-token",
	    "--kv-miss-policy",
	    "--kv-wait-timeout",
	    "--kv-select-timeout",
	    "--kv-frame-format",
	    "--kv-miss-mode",
	    "--kv-zmq-bind-host",
	    "--bootstrap-host",
	    "--fault",
	    "--vllm-version",
	    "--v1-shape",
	    "--data-parallel-size",
	    "-dp",
	    "--block-size",
	    "--num-gpu-blocks-override",
	    "--kv-cache-device",
	    "--kv-groups",
	    "--record-requests",
	};
	for (size_t k = 0; k < PD_ARRAY_SIZE(ours); k++)
		if (!strcmp(name, ours[k]) || sa_limits_is_flag(name)) {
			usage_error("argument %s: expected one argument%s", name, "");
			return 2;
		}
	usage_error("unrecognized arguments: %s%s", a, "");
	return 2;
}

/* One value-taking flag of ours: 0 done, 2 usage error (printed), 1 not ours. */
static int value_flag(const char *name, const char *val, const char *inl, int argc, char **argv,
                      int *i, struct sa_opts *o)
{
	static const char *const policies[] = {"recompute", "fail", "wait"};
	static const char *const frames[] = {"pickle", "u64be"};
	static const char *const modes[] = {"old", "new"};
	int64_t v;

	if (!strcmp(name, "--model")) {
		o->model = val;
	} else if (!strcmp(name, "--host")) {
		o->host = val;
	} else if (!strcmp(name, "--bootstrap-host")) {
		o->boot_host = val; /* pdkv's own: vLLM always binds 0.0.0.0 */
	} else if (!strcmp(name, "--port")) {
		if (parse_int(name, val, 0, 65535, &v))
			return 2;
		o->port = (int)v;
	} else if (!strcmp(name, "--max-model-len")) {
		if (parse_int(name, val, 1, 1 << 24, &v))
			return 2;
		o->max_model_len = v;
	} else if (!strcmp(name, "--tensor-parallel-size") || !strcmp(name, "-tp")) {
		if (parse_int(name, val, 1, SA_MAX_TP, &v))
			return 2;
		o->tp = (int)v;
	} else if (!strcmp(name, "--pipeline-parallel-size") || !strcmp(name, "-pp")) {
		if (parse_int(name, val, 1, SA_MAX_PP, &v)) /* a prefill's stages (sa_v1_pp.c) */
			return 2;
		o->pp = (int)v;
	} else if (!strcmp(name, "--served-model-name")) {
		/* argparse nargs='+': take following non-flag words too */
		o->served[o->nserved++] = val;
		while (!inl && *i + 1 < argc && argv[*i + 1][0] != '-' && o->nserved < SA_MAX_NAMES)
			o->served[o->nserved++] = argv[++*i];
	} else if (!strcmp(name, "--kv-transfer-config")) {
		o->kv_transfer_config = val;
	} else if (!strcmp(name, "--api-key")) {
		o->api_key = val;
	} else if (!strcmp(name, "--kv-layers")) {
		if (parse_int(name, val, 1, 1024, &v))
			return 2;
		o->geom.layers = (int)v;
	} else if (!strcmp(name, "--kv-heads")) {
		if (parse_int(name, val, 1, 1024, &v))
			return 2;
		o->geom.kv_heads = (int)v;
	} else if (!strcmp(name, "--head-dim")) {
		if (parse_int(name, val, 1, 65536, &v))
			return 2;
		o->geom.head_dim = (int)v;
	} else if (!strcmp(name, "--dtype-bytes")) {
		if (parse_int(name, val, 1, 4, &v) || v == 3) {
			if (v == 3)
				usage_error("argument %s: expected 1, 2 or 4, got '%s'", name, val);
			return 2;
		}
		o->geom.dtype_bytes = (int)v;
	} else if (!strcmp(name, "--hidden-size")) {
		if (parse_int(name, val, MDL_FOOTER_BYTES / 2, 1 << 20, &v))
			return 2;
		o->geom.hidden_size = (int)v;
	} else if (!strcmp(name, "--ns-per-token")) {
		if (parse_int(name, val, 0, 1000000000, &v))
			return 2;
		o->ns_per_token = (uint64_t)v;
	} else if (!strcmp(name, "--kv-miss-policy")) {
		if (choice(name, val, policies, 3, &o->miss_policy))
			return 2;
	} else if (!strcmp(name, "--kv-wait-timeout")) {
		if (parse_int(name, val, 1, 3600000, &v))
			return 2;
		o->kv_wait_timeout_ms = (int)v;
	} else if (!strcmp(name, "--kv-select-timeout")) {
		if (parse_int(name, val, 0, 3600000, &v))
			return 2;
		o->kv_select_timeout_ms = (int)v;
	} else if (!strcmp(name, "--kv-frame-format")) {
		if (choice(name, val, frames, 2, &o->frame_format))
			return 2;
	} else if (!strcmp(name, "--kv-miss-mode")) {
		if (choice(name, val, modes, 2, &o->miss_mode))
			return 2;
	} else if (!strcmp(name, "--kv-zmq-bind-host")) {
		o->zmq_bind_host = val;
	} else if (!strcmp(name, "--fault")) {
		o->fault_spec = val;
	} else if (!strcmp(name, "--vllm-version")) {
		o->vllm_version = val;
	} else if (!strcmp(name, "--v1-shape")) {
		static const char *const shapes[] = {"b0", "b1", "b2", "bn", "bl"};
		int k;

		if (choice(name, val, shapes, 5, &k))
			return 2;
		o->v1_shape = shapes[k];
	} else if (!strcmp(name, "--data-parallel-size") || !strcmp(name, "-dp")) {
		if (parse_int(name, val, 1, SA_MAX_DP, &v))
			return 2;
		o->dp = (int)v;
	} else if (!strcmp(name, "--block-size")) {
		if (parse_int(name, val, 1, 4096, &v))
			return 2;
		o->block_size = (int)v;
	} else if (!strcmp(name, "--kv-cache-device")) {
		o->kv_cache_device = val; /* checked at startup (sa_gpu.c) */
	} else if (!strcmp(name, "--kv-groups")) {
		o->kv_groups = val; /* parsed at startup (sa_v1_hyb.c) */
	} else if (!strcmp(name, "--num-gpu-blocks-override")) {
		if (parse_int(name, val, 1, 1 << 24, &v))
			return 2;
		o->num_gpu_blocks = v;
	} else if (!strcmp(name, "--record-requests")) {
		o->record_requests = val;
	} else if ((v = sa_limits_flag(name, val, o)) != 1) {
		if (v)
			return 2;
	} else {
		return 1;
	}
	return 0;
}

/* After the loop: the positional model, the fault spec, and the checks across flags. */
static int finish(struct sa_opts *o, const char *positional)
{
	const char *fault_env = getenv("PDKV_FAULT");
	char err[256];

	if (positional)
		o->model = positional;
	if (!o->fault_spec && fault_env && *fault_env)
		o->fault_spec = fault_env;
	if (sa_fault_parse(o->fault_spec, &o->fault, err, sizeof(err))) {
		usage_error("argument --fault / PDKV_FAULT: %s%s", err, "");
		return 2;
	}
	if (mdl_geom_check(&o->geom, err, sizeof(err))) {
		usage_error("%s%s", err, "");
		return 2;
	}
	if (o->geom.kv_heads % o->tp) {
		fputs(usage_line, stderr);
		fprintf(
		    stderr,
		    "pdkv-standin: error: argument --tensor-parallel-size: %d does not divide the "
		    "%d KV heads (--kv-heads)\n",
		    o->tp, o->geom.kv_heads);
		return 2;
	}
	if (!o->nserved)
		o->served[o->nserved++] = o->model;
	return 0;
}

int sa_args_parse(int argc, char **argv, struct sa_opts *o)
{
	const char *positional = NULL;

	set_defaults(o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL, *inl;
		char name[64];
		bool known = false;
		int rc;

		if (a[0] != '-' || !a[1]) {
			if (!positional && !strcmp(a, "serve") && i == 1)
				continue;
			if (positional) {
				usage_error("unrecognized arguments: %s%s", a, "");
				return 2;
			}
			positional = a;
			continue;
		}
		split_flag(a, name, sizeof(name), &inl);
		if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
			print_help();
			return 1;
		}
		if (!strcmp(name, "--version")) {
			pd_version_print(stdout, "pdkv-standin");
			return 1;
		}
		/* Boolean flags of our own. */
		if (!strcmp(name, "--dry-run")) {
			o->dry_run = true;
			continue;
		}
		if (!strcmp(name, "--list-versions")) {
			o->list_versions = true;
			continue;
		}
		if (!strcmp(name, "--kv-mla")) {
			o->kv_mla = true;
			continue;
		}
		if (!strcmp(name, "--enable-prompt-tokens-details")) {
			o->prompt_tokens_details = true;
			continue;
		}
		for (size_t k = 0; k < PD_ARRAY_SIZE(ignored); k++) {
			if (strcmp(name, ignored[k].name))
				continue;
			known = true;
			if (ignored[k].kind == A_VALUE && !inl) {
				if (i + 1 >= argc) {
					usage_error("argument %s: expected one argument%s", name,
					            "");
					return 2;
				}
				i++;
			} else if (ignored[k].kind == A_BOOL && !inl && i + 1 < argc &&
			           (!strcasecmp(argv[i + 1], "true") ||
			            !strcasecmp(argv[i + 1], "false"))) {
				i++; /* vLLM's optional-bool form: --enable-chunked-prefill False */
			}
			pd_info("note: vLLM flag %s is accepted and ignored by pdkv-standin", name);
			break;
		}
		if (known)
			continue;
		/* Everything else we know takes one value. */
		val = inl;
		if (!val) {
			if (i + 1 >= argc || (argv[i + 1][0] == '-' && argv[i + 1][1] == '-'))
				return missing_value(name, a);
			val = argv[++i];
		}
		rc = value_flag(name, val, inl, argc, argv, &i, o);
		if (rc == 1)
			usage_error("unrecognized arguments: %s%s", a, "");
		if (rc)
			return 2;
	}
	return finish(o, positional);
}
