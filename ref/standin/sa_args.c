/* SPDX-License-Identifier: Apache-2.0 */
/* sa_args: pdkv-standin's option table for pd_opt, in vLLM's style (--a-b and --a_b,
 * --flag=value, -tp, `serve MODEL`), plus the table of vLLM flags accepted and ignored. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"
#include "sa.h"
#include "pd_opt.h"
#include <strings.h>

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

/* ---- rows: one builder per group, each a few lines per flag (add a flag: one row) ---- */

#define ROW_STR(nm, d, a, h)                                                                       \
	(struct pd_opt)                                                                            \
	{                                                                                          \
		.name = nm, .type = PD_OPT_STR, .dst = d, .arg = a, .help = h, .empty_ok = true    \
	}
#define ROW_INT(nm, d, lo, hi, a, h)                                                               \
	(struct pd_opt)                                                                            \
	{                                                                                          \
		.name = nm, .type = PD_OPT_INT, .dst = d, .min = lo, .max = hi, .arg = a,          \
		.help = h                                                                          \
	}
#define ROW_FLAG(nm, d, h)                                                                         \
	(struct pd_opt)                                                                            \
	{                                                                                          \
		.name = nm, .type = PD_OPT_FLAG, .dst = d, .help = h                               \
	}
#define ROW_CHOICE(nm, d, ch, w, h)                                                                \
	(struct pd_opt)                                                                            \
	{                                                                                          \
		.name = nm, .type = PD_OPT_CHOICE, .dst = d, .choices = ch, .arg = ch, .want = w,  \
		.help = h                                                                          \
	}

static int served_add(const char *v, void *dst, void *ud)
{
	struct sa_opts *o = dst;
	(void)ud;
	if (o->nserved >= SA_MAX_NAMES)
		return -1;
	o->served[o->nserved++] = v;
	return 0;
}

/* argparse nargs='+': the following non-flag words are names too (up to SA_MAX_NAMES). */
static int served_more(const char *w, void *dst, void *ud)
{
	struct sa_opts *o = dst;
	return o->nserved >= SA_MAX_NAMES ? 0 : served_add(w, dst, ud) ? -1 : 1;
}

static int opt_dtype_bytes(const char *v, void *dst, void *ud)
{
	(void)ud;
	if (strcmp(v, "1") && strcmp(v, "2") && strcmp(v, "4"))
		return -1;
	*(int *)dst = v[0] - '0';
	return 0;
}

static int opt_v1_shape(const char *v, void *dst, void *ud)
{
	static const char *const shapes[] = {"b0", "b1", "b2", "bn", "bl"};
	(void)ud;
	for (size_t k = 0; k < PD_ARRAY_SIZE(shapes); k++)
		if (!strcmp(v, shapes[k])) {
			*(const char **)dst = shapes[k];
			return 0;
		}
	return -1;
}

#define SA_VLLM_ROWS 16
/* vLLM's own `vllm serve` flags that the stand-in acts on. */
static struct pd_opt_group vllm_group(struct pd_opt *r, struct sa_opts *o)
{
	size_t n = 0;
	r[n++] = ROW_STR("model", &o->model, "MODEL", "the model name (or the positional MODEL)");
	r[n++] = ROW_STR("host", &o->host, "HOST", "bind address (default all)");
	r[n++] = ROW_INT("port", &o->port, 0, 65535, "PORT", "HTTP port (default 8000)");
	r[n++] = (struct pd_opt){.name = "max-model-len",
	                         .type = PD_OPT_I64,
	                         .dst = &o->max_model_len,
	                         .min = 1,
	                         .max = 1 << 24,
	                         .arg = "N",
	                         .help = "tokens per request (default 32768)"};
	r[n++] = ROW_INT("tensor-parallel-size", &o->tp, 1, SA_MAX_TP, "N",
	                 "TP ranks, also -tp (connector ranks; default 1)");
	r[n++] = ROW_INT("-tp", &o->tp, 1, SA_MAX_TP, "N", NULL);
	r[n++] = ROW_INT("pipeline-parallel-size", &o->pp, 1, SA_MAX_PP, "N",
	                 "prefill PP stages, also -pp (vLLM #44528; default 1)");
	r[n++] = ROW_INT("-pp", &o->pp, 1, SA_MAX_PP, "N", NULL);
	r[n++] = (struct pd_opt){.name = "served-model-name",
	                         .type = PD_OPT_FN,
	                         .dst = o,
	                         .fn = served_add,
	                         .more = served_more,
	                         .arg = "NAME...",
	                         .want = "at most 8 names",
	                         .help = "names the API answers to (default MODEL)"};
	r[n++] = ROW_STR("kv-transfer-config", &o->kv_transfer_config, "JSON",
	                 "KVTransferConfig JSON: speaks the MooncakeConnector");
	r[n++] = ROW_STR("api-key", &o->api_key, "KEY", "require Authorization: Bearer KEY");
	r[n++] = ROW_INT("data-parallel-size", &o->dp, 1, SA_MAX_DP, "N",
	                 "DP ranks, also -dp (V1; default 1)");
	r[n++] = ROW_INT("-dp", &o->dp, 1, SA_MAX_DP, "N", NULL);
	r[n++] = ROW_INT("block-size", &o->block_size, 1, 4096, "N", "tokens per KV block (16)");
	r[n++] = (struct pd_opt){.name = "num-gpu-blocks-override",
	                         .type = PD_OPT_I64,
	                         .dst = &o->num_gpu_blocks,
	                         .min = 1,
	                         .max = 1 << 24,
	                         .arg = "N",
	                         .help = "KV blocks (default: 4 max-model-len requests)"};
	r[n++] = ROW_FLAG("enable-prompt-tokens-details", &o->prompt_tokens_details,
	                  "usage.prompt_tokens_details.cached_tokens");
	return (struct pd_opt_group){.title = "vLLM's flags", .opts = r, .nopts = n};
}

#define SA_OWN_ROWS 17
/* pdkv's own: the connector generation, faults, the KV path. */
static struct pd_opt_group own_group(struct pd_opt *r, struct sa_opts *o)
{
	size_t n = 0;
	r[n++] =
	    ROW_STR("vllm-version", &o->vllm_version, "X.Y[.Z]",
	            "the release whose MooncakeConnector to speak\n(default the newest known)");
	r[n++] = (struct pd_opt){.name = "v1-shape",
	                         .type = PD_OPT_FN,
	                         .dst = &o->v1_shape,
	                         .fn = opt_v1_shape,
	                         .arg = "b0|b1|b2|bn|bl",
	                         .want = "a value to choose from 'b0', 'b1', 'b2', 'bn', 'bl'",
	                         .help = "gen B message shape (default the release's)"};
	r[n++] = ROW_FLAG("list-versions", &o->list_versions, "print the release table and exit");
	r[n++] = ROW_FLAG("dry-run", &o->dry_run, "check the flags and configuration, then exit");
	r[n++] = ROW_STR("bootstrap-host", &o->boot_host, "HOST",
	                 "gen B bootstrap server bind (vLLM: 0.0.0.0)");
	r[n++] = ROW_STR("fault", &o->fault_spec, "KIND[,KIND]",
	                 "drop, corrupt, eos-first, delay=MS, crash, crash=N,\n"
	                 "fail-after=N, fail-marker=TEXT (else PDKV_FAULT)");
	r[n++] = ROW_STR("record-requests", &o->record_requests, "FILE",
	                 "one JSON line per completion request as it arrived");
	r[n++] = ROW_STR("kv-cache-device", &o->kv_cache_device, "cpu|cuda|cuda:N",
	                 "where the KV blocks live (default cpu)");
	r[n++] = ROW_STR("kv-groups", &o->kv_groups, "SPEC",
	                 "hybrid model KV cache groups, comma list\n(full, sliding:W, mamba)");
	r[n++] = ROW_FLAG("kv-mla", &o->kv_mla, "one KV buffer per layer (MLA)");
	r[n++] = ROW_CHOICE("kv-miss-policy", &o->miss_policy, "recompute|fail|wait",
	                    "a value to choose from 'recompute', 'fail', 'wait'",
	                    "V0 decode without KV: recompute, fail or wait");
	r[n++] = ROW_INT("kv-wait-timeout", &o->kv_wait_timeout_ms, 1, 3600000, "MS",
	                 "V0 wait policy: how long (default 30000)");
	r[n++] = ROW_INT("kv-select-timeout", &o->kv_select_timeout_ms, 0, 3600000, "MS",
	                 "V0: how long a select waits (default 10000)");
	r[n++] = ROW_CHOICE("kv-frame-format", &o->frame_format, "pickle|u64be",
	                    "a value to choose from 'pickle', 'u64be'",
	                    "V0 side-channel framing (default pickle)");
	r[n++] =
	    ROW_CHOICE("kv-miss-mode", &o->miss_mode, "old|new",
	               "a value to choose from 'old', 'new'", "V0 miss behaviour (default old)");
	r[n++] = ROW_STR("kv-zmq-bind-host", &o->zmq_bind_host, "HOST", "V0 side-channel bind");
	r[n++] = (struct pd_opt){.name = "ns-per-token",
	                         .type = PD_OPT_U64,
	                         .dst = &o->ns_per_token,
	                         .max = 1000000000,
	                         .arg = "NS",
	                         .help = "fake model speed (default 20000)"};
	return (struct pd_opt_group){.title = "pdkv's own", .opts = r, .nopts = n};
}

#define SA_GEOM_ROWS 5
/* The fake model's KV geometry. */
static struct pd_opt_group geom_group(struct pd_opt *r, struct sa_opts *o)
{
	size_t n = 0;
	r[n++] = ROW_INT("kv-layers", &o->geom.layers, 1, 1024, "N", "layers (default 28)");
	r[n++] = ROW_INT("kv-heads", &o->geom.kv_heads, 1, 1024, "N", "KV heads (default 4)");
	r[n++] = ROW_INT("head-dim", &o->geom.head_dim, 1, 65536, "N", "head dimension (128)");
	r[n++] = (struct pd_opt){.name = "dtype-bytes",
	                         .type = PD_OPT_FN,
	                         .dst = &o->geom.dtype_bytes,
	                         .fn = opt_dtype_bytes,
	                         .arg = "N",
	                         .want = "1, 2 or 4",
	                         .help = "bytes per element (default 2)"};
	r[n++] = ROW_INT("hidden-size", &o->geom.hidden_size, MDL_FOOTER_BYTES / 2, 1 << 20, "N",
	                 "hidden size (default 3584)");
	return (struct pd_opt_group){.title = "fake model geometry", .opts = r, .nopts = n};
}

static int note_ignored(const char *v, void *dst, void *ud)
{
	(void)v;
	(void)ud;
	pd_info("note: vLLM flag %s is accepted and ignored by pdkv-standin", (const char *)dst);
	return 0;
}

/* vLLM's optional-bool form: --enable-chunked-prefill False. */
static int bool_word(const char *w, void *dst, void *ud)
{
	(void)dst;
	(void)ud;
	return !strcasecmp(w, "true") || !strcasecmp(w, "false") ? 2 : 0;
}

#define SA_IGNORED_ROWS PD_ARRAY_SIZE(ignored)
/* vLLM flags the stand-in does not need, unlisted rows (the footer names them). */
static struct pd_opt_group ignored_group(struct pd_opt *r, char *names, size_t namesz)
{
	size_t used = 0, col = 0;
	for (size_t i = 0; i < PD_ARRAY_SIZE(ignored); i++) {
		const char *nm = ignored[i].name;
		bool b = ignored[i].kind == A_BOOL;
		r[i] = (struct pd_opt){.type = PD_OPT_FN,
		                       .dst = (void *)nm,
		                       .fn = note_ignored,
		                       .optional_value = b,
		                       .more = b ? bool_word : NULL};
		if (nm[1] == '-')
			r[i].name = nm + 2;
		else if (!nm[2])
			r[i].shrt = nm[1];
		else
			r[i].name = nm; /* -pp */
		/* "  --a, --b, ..." wrapped before column 80 */
		if (col && col + strlen(nm) + 2 > 80)
			col = 0;
		if (used < namesz)
			used += (size_t)snprintf(names + used, namesz - used, "%s%s%s",
			                         i ? "," : "", col ? " " : "\n  ", nm);
		col = (col ? col + 2 : 2) + strlen(nm);
	}
	return (struct pd_opt_group){.opts = r, .nopts = PD_ARRAY_SIZE(ignored)};
}

static const char usage_text[] =
    "usage: pdkv-standin [serve] [MODEL] [options]\n"
    "\n"
    "A vLLM stand-in: OpenAI API on a deterministic fake model. With --kv-transfer-config\n"
    "it speaks the MooncakeConnector of --vllm-version (default: the newest release pdkv\n"
    "knows): <= 0.8 the V0 pipe (needs mooncake.json), 0.12-0.15 V1 gen A, >= 0.16 V1\n"
    "gen B (--list-versions prints the table). Flags as vLLM spells them: --a-b or --a_b,\n"
    "--flag=VALUE or --flag VALUE.\n"
    "\n";

static char footer_text[4096];

/* After the table: the positional model, the fault spec, and the checks across flags. */
static int finish(const struct pd_opt_spec *spec, struct sa_opts *o, const char *positional)
{
	const char *fault_env = pd_env_str("PDKV_FAULT");
	char err[256];

	if (positional)
		o->model = positional;
	if (!o->fault_spec && fault_env && *fault_env)
		o->fault_spec = fault_env;
	if (sa_fault_parse(o->fault_spec, &o->fault, err, sizeof(err)))
		return pd_opt_fail(spec, "--fault / PDKV_FAULT: %s", err);
	if (mdl_geom_check(&o->geom, err, sizeof(err)))
		return pd_opt_fail(spec, "%s", err);
	if (o->geom.kv_heads % o->tp)
		return pd_opt_fail(spec,
		                   "--tensor-parallel-size: %d does not divide the %d KV heads "
		                   "(--kv-heads)",
		                   o->tp, o->geom.kv_heads);
	if (!o->nserved)
		o->served[o->nserved++] = o->model;
	return 0;
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

int sa_args_parse(int argc, char **argv, struct sa_opts *o)
{
	struct pd_opt vllm[SA_VLLM_ROWS], own[SA_OWN_ROWS], geom[SA_GEOM_ROWS],
	    srv[PD_OPT_SERVER_ROWS], lim[SA_LIMIT_ROWS], ign[SA_IGNORED_ROWS];
	char names[3072];
	const struct pd_opt_group groups[] = {
	    vllm_group(vllm, o),
	    own_group(own, o),
	    geom_group(geom, o),
	    pd_opt_server_group(srv, &o->max_conns, &o->max_conns_per_client, &o->idle_timeout_s),
	    sa_limits_group(lim, o),
	    ignored_group(ign, names, sizeof(names)),
	};
	const struct pd_opt_spec spec = {.prog = "pdkv-standin",
	                                 .usage = usage_text,
	                                 .footer = footer_text,
	                                 .groups = groups,
	                                 .ngroups = PD_ARRAY_SIZE(groups),
	                                 .max_pos = 2,
	                                 .vllm_style = true};
	char *pos[2];
	int npos = 0, rc, k = 0;

	set_defaults(o);
	snprintf(
	    footer_text, sizeof(footer_text),
	    "\nvLLM flags accepted, noted in the log and ignored:%s.\n"
	    "Server limits default to %u connections, %u per client, %u s idle.\n"
	    "Environment (V1): VLLM_MOONCAKE_BOOTSTRAP_PORT (8998),\n"
	    "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT (480), VLLM_DISABLE_REQUEST_ID_RANDOMIZATION,\n"
	    "VLLM_HOST_IP. Errors: one line \"pdkv-standin: ...\" on stderr, exit 2.\n",
	    names, SA_DEFAULT_MAX_CONNS, SA_DEFAULT_MAX_CONNS_PER_CLIENT,
	    SA_DEFAULT_IDLE_TIMEOUT_S);
	rc = pd_opt_parse(&spec, argc, argv, 1, pos, &npos);
	if (rc)
		return rc;
	if (npos && argc > 1 && pos[0] == argv[1] && !strcmp(pos[0], "serve"))
		k = 1; /* `vllm serve MODEL` */
	if (npos - k > 1)
		return pd_opt_fail(&spec, "unexpected argument \"%s\"", pos[k + 1]);
	return finish(&spec, o, npos > k ? pos[k] : NULL);
}
