/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_cfg: the user's config bytes through ref/cfg's public API — --kv-transfer-config JSON
 * (first byte even) and mooncake.json read from a memfd (first byte odd), V0 and V1 rules. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cfg/cfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg_diags d = {0};
	char *verr = NULL;
	if (size < 1)
		return 0;
	enum cfg_vllm v = (data[0] & 2) ? CFG_VLLM_V1 : CFG_VLLM_V0;
	if (!(data[0] & 1)) {
		char *s = malloc(size);
		struct cfg_kv_transfer kt = {0};
		if (!s)
			return 0;
		memcpy(s, data + 1, size - 1);
		s[size - 1] = '\0';
		cfg_kv_transfer_parse(s, v, &kt, &d, &verr);
		cfg_kv_transfer_free(&kt); /* a failed parse may have filled some fields */
		free(s);
	} else {
		struct cfg_mooncake mc = {0};
		char path[64];
		int fd = memfd_create("fuzz_cfg", 0);
		if (fd < 0)
			return 0;
		if (write(fd, data + 1, size - 1) == (ssize_t)(size - 1)) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			cfg_mooncake_load(path, v, &mc, &d, &verr);
			cfg_mooncake_free(&mc);
		}
		close(fd);
	}
	free(verr);
	cfg_diags_free(&d);
	return 0;
}
