/* SPDX-License-Identifier: Apache-2.0 */
/* te_err: names for the engine's error codes and task states (te.h), in their own file so that
 * every part of the engine can log an error without depending on another part. */
#include "te.h"

#include "pd_util.h"

const char *te_strerror(int err)
{
	switch (err) {
	case TE_OK:
		return "success";
	case TE_ERR_INVALID_ARGUMENT:
		return "invalid argument";
	case TE_ERR_TOO_MANY_REQUESTS:
		return "too many requests for the batch";
	case TE_ERR_ADDRESS_NOT_REGISTERED:
		return "address not registered";
	case TE_ERR_BATCH_BUSY:
		return "batch busy (tasks not all observed finished)";
	case TE_ERR_DEVICE_NOT_FOUND:
		return "device not found";
	case TE_ERR_ADDRESS_OVERLAPPED:
		return "address overlaps a registered buffer";
	case TE_ERR_NOT_SUPPORTED_TRANSPORT:
		return "transport not supported";
	case TE_ERR_DNS:
		return "name resolution failed";
	case TE_ERR_SOCKET:
		return "socket error";
	case TE_ERR_MALFORMED_JSON:
		return "malformed JSON";
	case TE_ERR_REJECT_HANDSHAKE:
		return "handshake rejected";
	case TE_ERR_METADATA:
		return "metadata store error";
	case TE_ERR_ENDPOINT:
		return "endpoint error (transfer failed)";
	case TE_ERR_CONTEXT:
		return "context error";
	case TE_ERR_MEMORY:
		return "out of memory";
	case TE_ERR_NOT_IMPLEMENTED:
		return "not implemented";
	case TE_ERR_NOT_FOUND:
		return "not found";
	case TE_ERR_OUT_OF_RANGE:
		return "remote range outside every registered buffer";
	case TE_ERR_TIMEOUT:
		return "timed out";
	case TE_ERR_BAD_BATCH:
		return "unknown batch id";
	case TE_ERR_UNREACHABLE:
		return "metadata store or peer unreachable";
	default:
		return "unknown error";
	}
}

const char *te_status_name(int status)
{
	static const char *const names[] = {"WAITING",   "PENDING", "INVALID", "CANCELED",
	                                    "COMPLETED", "TIMEOUT", "FAILED"};
	if (status < 0 || status >= (int)PD_ARRAY_SIZE(names))
		return "UNKNOWN";
	return names[status];
}
