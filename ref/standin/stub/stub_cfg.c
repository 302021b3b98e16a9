/* stub_cfg: weak fallbacks for the config library's loaders, linked only while ref/cfg lacks
 * them; the real library's strong symbols win as soon as they exist. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg/cfg.h"

#define WEAK __attribute__((weak))

static int unavailable(char **vllm_error)
{
	fprintf(stderr, "pdkv-standin: error: the config library (ref/cfg) in this build cannot "
	                "read --kv-transfer-config / mooncake.json yet\n");
	if (vllm_error)
		*vllm_error = NULL;
	return -1;
}
WEAK int cfg_mooncake_load(const char *path, enum cfg_vllm vllm, struct cfg_mooncake *out,
                           struct cfg_diags *d, char **vllm_error)
{
	(void)path;
	(void)vllm;
	(void)d;
	memset(out, 0, sizeof(*out));
	return unavailable(vllm_error);
}
WEAK void cfg_mooncake_free(struct cfg_mooncake *mc)
{
	(void)mc;
}
WEAK int cfg_kv_transfer_parse(const char *json, enum cfg_vllm vllm, struct cfg_kv_transfer *out,
                               struct cfg_diags *d, char **vllm_error)
{
	(void)json;
	(void)vllm;
	(void)d;
	memset(out, 0, sizeof(*out));
	return unavailable(vllm_error);
}
WEAK void cfg_kv_transfer_free(struct cfg_kv_transfer *kt)
{
	(void)kt;
}
