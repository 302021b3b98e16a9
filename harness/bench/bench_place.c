/* SPDX-License-Identifier: Apache-2.0 */
/* bench_place: where a run's buffers live, from its options alone — the memory location string
 * the engine registers ("cpu:0" | "cuda:N") and the GPU of each side and scheme pair. */
#include "bench.h"

#include <stdio.h>

const char *bench_mem_location(const struct bench_opts *o)
{
	static char loc[32];
	if (!o->use_vram)
		return "cpu:0";
	snprintf(loc, sizeof(loc), "cuda:%d", o->gpu_id);
	return loc;
}

int bench_target_gpu(const struct bench_opts *o)
{
	return o->target_gpu_id >= 0 ? o->target_gpu_id : o->gpu_id;
}

int bench_scheme_gpu(const struct bench_opts *o, bool target, int idx)
{
	int n = o->scheme_ngpu > 0 ? o->scheme_ngpu : 1;
	return ((target ? bench_target_gpu(o) : o->gpu_id) + idx) % n;
}
