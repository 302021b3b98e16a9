/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_kvc_frames: the side-channel bytes a remote peer controls — pickled (ptr, len) tuples,
 * pickled ACKs, u64be frames and the pdkv tensor blob. First byte picks the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvc/kvc_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t a, b;
	uint8_t out[KVC_FRAME_MAX];
	struct kvc_tensor t;
	if (size < 1)
		return 0;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	switch (data[0] % 4) {
	case 0:
		if (kvc_unpickle_tuple2(p, n, &a, &b) == 0) {
			/* what parses must re-encode to a frame that parses to the same pair */
			size_t m = kvc_pickle_tuple2(a, b, out);
			uint64_t a2, b2;
			if (m > KVC_FRAME_MAX || kvc_unpickle_tuple2(out, m, &a2, &b2) || a2 != a ||
			    b2 != b)
				abort();
		}
		break;
	case 1:
		(void)kvc_is_pickled_ack(p, n);
		(void)kvc_u64be_get(p, n, &a);
		break;
	case 2: {
		char hex[160];
		kvc_hex(p, n, hex, sizeof(hex));
		if (strlen(hex) >= sizeof(hex))
			abort();
		break;
	}
	default:
		if (kvc_blob_decode(p, n, &t) == 0) {
			if (kvc_tensor_check(&t))
				abort();
			kvc_tensor_free(&t);
		}
		break;
	}
	return 0;
}
