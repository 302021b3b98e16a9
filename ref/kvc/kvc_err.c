/* SPDX-License-Identifier: Apache-2.0 */
/* kvc_err: the connector's error texts (vLLM's exception messages where vLLM has one).
 * Kept apart from kvc.c so the engine-free parts link without the engine. */
#include "kvc/kvc.h"

const char *kvc_strerror(int err)
{
	switch (err) {
	case KVC_OK:
		return "ok";
	case KVC_MISS:
		return "miss (producer had no matching KV item)";
	case KVC_ERR_TIMEOUT:
		return "timed out";
	case KVC_ERR_TRANSFER:
		return "Transfer Return Error";
	case KVC_ERR_ALLOC:
		return "Allocation Return Error";
	case KVC_ERR_PROTOCOL:
		return "malformed side-channel frame or tensor blob";
	case KVC_ERR_CONFIG:
		return "bad connector configuration";
	case KVC_ERR_CLOSED:
		return "connector closed";
	default:
		return "unknown kvc error";
	}
}
