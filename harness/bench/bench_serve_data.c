/* SPDX-License-Identifier: Apache-2.0 */
/* bench_serve_data: the prompts of `pdkv bench serve` — vllm bench serve's random dataset, or a
 * ShareGPT file sampled as vLLM samples it (vllm/benchmarks/datasets/datasets.py: conversations
 * with >= 2 turns, shuffled by --seed, prompt and answer lengths pruned by is_valid_sequence,
 * oversampled when too few; @ 6f955986e). The fake model's tokenizer is one token per byte. */
#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_serve.h"
#include "pd_util.h"

/* a ShareGPT file larger than this is refused (ShareGPT_V3_unfiltered is about 640 MiB) */
#define SHAREGPT_MAX_BYTES (2ull << 30)

struct conv {
	char *prompt;
	int answer_len;
};

static struct {
	struct conv *v;
	size_t n;
	int seed;
	bool loaded;
} ds;

/* xorshift64*: prompts and dataset order depend on --seed only */
static uint64_t rnd(uint64_t *st)
{
	*st ^= *st >> 12;
	*st ^= *st << 25;
	*st ^= *st >> 27;
	return *st * 2685821657736338717ULL;
}

/* vLLM's is_valid_sequence with its defaults: prompt 4..1024 tokens, prompt + output <= 2048,
 * output >= 4 unless the output length is fixed by a flag */
static bool valid_sequence(int prompt_len, int out_len, bool fixed_out)
{
	return prompt_len >= 4 && (fixed_out || out_len >= 4) && prompt_len <= 1024 &&
	       prompt_len + out_len <= 2048;
}

static const char *turn_text(const cJSON *turn)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(turn, "value");
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Reads and keeps every conversation with a prompt and an answer, in the file's order. */
static int sharegpt_load(const char *path)
{
	char *txt = NULL;
	size_t len = 0;
	cJSON *root, *e;
	int rc = pd_read_file(path, SHAREGPT_MAX_BYTES, &txt, &len);

	if (rc) {
		fprintf(stderr, "pdkv bench serve: --dataset-path %s: cannot read: %s\n", path,
		        strerror(-rc));
		return -1;
	}
	root = cJSON_ParseWithLength(txt, len);
	if (!root || !cJSON_IsArray(root)) {
		fprintf(stderr,
		        "pdkv bench serve: --dataset-path %s: expected a ShareGPT JSON list "
		        "[{\"conversations\": [{\"from\": \"human\", \"value\": ...}, {\"from\": "
		        "\"gpt\", \"value\": ...}]}, ...]%s\n",
		        path, root ? "" : " (the file is not valid JSON)");
		cJSON_Delete(root);
		free(txt);
		return -1;
	}
	ds.v = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof(*ds.v));
	cJSON_ArrayForEach(e, root)
	{
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "conversations");
		const char *p, *a;

		if (!ds.v || !cJSON_IsArray(c) || cJSON_GetArraySize(c) < 2)
			continue;
		p = turn_text(cJSON_GetArrayItem(c, 0));
		a = turn_text(cJSON_GetArrayItem(c, 1));
		if (!p || !a)
			continue;
		ds.v[ds.n].prompt = strdup(p);
		ds.v[ds.n].answer_len = (int)(strlen(a) > 1000000 ? 1000000 : strlen(a));
		if (ds.v[ds.n].prompt)
			ds.n++;
	}
	cJSON_Delete(root);
	free(txt);
	if (!ds.v) {
		fprintf(stderr, "pdkv bench serve: out of memory reading %s\n", path);
		return -1;
	}
	return 0;
}

static void shuffle(int seed)
{
	uint64_t st = (uint64_t)seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;

	for (size_t i = ds.n; i > 1; i--) {
		size_t j = (size_t)(rnd(&st) % i);
		struct conv t = ds.v[i - 1];
		ds.v[i - 1] = ds.v[j];
		ds.v[j] = t;
	}
}

static int fill_sharegpt(const struct serve_opts *o, struct serve_req *reqs, size_t n)
{
	bool fixed = o->sharegpt_output_len > 0;
	size_t k = 0;

	if (!ds.loaded) {
		if (sharegpt_load(o->dataset_path))
			return -1;
		shuffle(o->seed);
		ds.loaded = true;
	}
	for (size_t i = 0; i < ds.n && k < n; i++) {
		int pl = (int)strlen(ds.v[i].prompt),
		    ol = fixed ? o->sharegpt_output_len : ds.v[i].answer_len;

		if (!valid_sequence(pl, ol, fixed))
			continue;
		reqs[k].prompt = strdup(ds.v[i].prompt);
		reqs[k].in_len = pl;
		reqs[k].out_len = ol;
		if (!reqs[k].prompt)
			return -1;
		k++;
	}
	if (!k) {
		fprintf(
		    stderr,
		    "pdkv bench serve: --dataset-path %s: no conversation fits vllm bench serve's "
		    "limits (prompt 4-1024 tokens, answer >= 4, both <= 2048; one token per "
		    "byte here)\n",
		    o->dataset_path);
		return -1;
	}
	if (k < n)
		fprintf(stderr,
		        "pdkv bench serve: %s has %zu usable conversations for %zu requests: "
		        "repeating them (as vLLM oversamples)\n",
		        o->dataset_path, k, n);
	for (size_t i = k; i < n; i++) {
		reqs[i] = reqs[i % k];
		reqs[i].prompt = strdup(reqs[i % k].prompt);
		if (!reqs[i].prompt)
			return -1;
	}
	return 0;
}

int serve_dataset_fill(const struct serve_opts *o, int in_len, struct serve_req *reqs, size_t n)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz ";
	uint64_t st = (uint64_t)o->seed * 2654435761ULL + 88172645463325252ULL;

	if (o->dataset == SERVE_DS_SHAREGPT)
		return fill_sharegpt(o, reqs, n);
	for (size_t i = 0; i < n; i++) {
		struct serve_req *q = &reqs[i];

		q->in_len = in_len;
		q->out_len = o->output_len;
		q->prompt = malloc((size_t)in_len + 1);
		if (!q->prompt)
			return -1;
		for (int k = 0; k < in_len; k++)
			q->prompt[k] = alpha[rnd(&st) % (sizeof(alpha) - 1)];
		q->prompt[in_len] = 0;
	}
	return 0;
}

void serve_dataset_free(void)
{
	for (size_t i = 0; i < ds.n; i++)
		free(ds.v[i].prompt);
	free(ds.v);
	memset(&ds, 0, sizeof(ds));
}
