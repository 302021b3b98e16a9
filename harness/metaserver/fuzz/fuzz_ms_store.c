/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_ms_store: request sequences against the metaserver's store (PUT/GET/DELETE with keys
 * and bodies from the input, /dump and ?prefix=) under small limits; a dump must parse. */
#include <cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metaserver/ms_store.h"
#include "pd_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ms_limits lim = {64, 512, 4096, 32, 8192};
	size_t i = 0;
	ms_store_limits(&lim);
	while (i + 3 <= size) {
		int op = data[i] % 4;
		size_t kl = data[i + 1] % 80, vl = (size_t)data[i + 2] * 3;
		i += 3;
		if (kl > size - i)
			kl = size - i;
		const char *key = (const char *)data + i;
		i += kl;
		if (vl > size - i)
			vl = size - i;
		const char *val = (const char *)data + i;
		i += vl;
		char *out;
		size_t n;
		switch (op) {
		case 0:
			ms_put(key, kl, val, vl, kl & 1);
			break;
		case 1:
			if (ms_get(key, kl, &out, &n) == 0)
				free(out);
			break;
		case 2:
			ms_del(key, kl);
			break;
		default:
			if (ms_dump(key, kl, &out, &n) == 0) {
				cJSON *j = cJSON_ParseWithLength(out, n);
				if (!j || strlen(out) != n) /* valid JSON, no raw NUL */
					abort();
				if (pd_utf8_invalid_at(out, n, false) >= 0)
					abort(); /* binary values escaped (issue 34, N8) */
				cJSON_Delete(j);
				free(out);
			}
			break;
		}
	}
	ms_store_clear();
	return 0;
}
