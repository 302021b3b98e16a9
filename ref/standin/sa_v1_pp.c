/* SPDX-License-Identifier: Apache-2.0 */
/* sa_v1_pp: PP on the prefill side (vLLM #44528, #56033) — a prefill's pipeline stages, each a
 * kv1 worker of its own owning its share of the layers, registered with the bootstrap server
 * under its pp_rank; a decode of PP 1 pulls from every stage (kv1_genb.c). */
#include <stdio.h>

#include "sa.h"

int sa_pp_stages(const struct sa *s)
{
	return s->o.pp > 1 ? s->o.pp : 1;
}

int sa_pp_stage(const struct sa *s, int layer)
{
	return sa_pp_stages(s) > 1 ? layer / (s->o.geom.layers / s->o.pp) : 0;
}

int sa_pp_first(const struct sa *s, int stage)
{
	return stage * (s->o.geom.layers / sa_pp_stages(s));
}

struct kv1_worker *sa_pp_worker(struct sa *s, int dp, int k, int stage)
{
	return stage > 0 ? s->wst[stage - 1][dp][k] : s->w[dp][k];
}

int sa_pp_check(const struct sa *s)
{
	const char *why = NULL;

	if (sa_pp_stages(s) < 2)
		return 0;
	if (!s->producer || s->consumer)
		why = "pdkv runs PP on the prefill side only (kv_role kv_producer); a decode of PP "
		      "1 pulls from every stage";
	else if (kv1_shape_of(s->gen) < KV1_SHAPE_BL)
		why = "a PP prefill needs the Bl wire (vLLM #44528: regions aligned by layer name; "
		      "--vllm-version 0.24 or later)";
	else if (s->o.geom.layers % s->o.pp)
		why =
		    "the stages own equal shares of the layers: --kv-layers must be a multiple of "
		    "it";
	else if (s->hyb.ng > 1 || s->gpu)
		why = "not with --kv-groups or --kv-cache-device cuda in pdkv";
	if (!why)
		return 0;
	fprintf(stderr, "pdkv-standin: error: argument --pipeline-parallel-size %d: %s\n", s->o.pp,
	        why);
	return -1;
}
