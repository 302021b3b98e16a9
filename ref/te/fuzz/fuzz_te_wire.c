/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_te_wire: the engine's remote bytes — segment-descriptor and rpc_meta JSON from a store,
 * handshake frames (through a real socket pair, as the server reads them), and the TCP data
 * header's request checked against registered memory. First byte picks the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pd_log.h"
#include "te/te.h"
#include "te/te_internal.h"

/* one engine with one registered buffer: the TCP header's (addr, size) are checked against it */
static struct te_engine *eng;
static char *region;
#define REGION (1u << 16)

static void setup(void)
{
	struct te_engine_opts o = {"P2PHANDSHAKE", "fuzz", "tcp", NULL};
	pd_log_set_level(PD_LOG_ERROR);
	region = malloc(REGION);
	if (te_engine_create(&o, &eng) || te_register(eng, region, REGION, "cpu:0"))
		abort();
}

static void desc_case(const uint8_t *p, size_t n)
{
	struct te_segment_desc *d = NULL;
	char err[256], host[256];
	int port = 0;
	if (te_desc_decode((const char *)p, n, &d, err, sizeof(err)) == 0) {
		/* what decodes must encode and decode again */
		char *j = te_desc_encode(d);
		struct te_segment_desc *d2 = NULL;
		if (!j || te_desc_decode(j, strlen(j), &d2, err, sizeof(err)))
			abort();
		te_desc_free(d2);
		free(j);
		(void)te_desc_find_range(d, 0x1000, 64);
		te_desc_free(d);
	}
	if (te_rpcmeta_decode((const char *)p, n, host, sizeof(host), &port, err, sizeof(err)) ==
	        0 &&
	    (port < 1 || port > 65535 || !host[0]))
		abort();
}

static void frame_case(const uint8_t *p, size_t n)
{
	int sv[2], type;
	char *json = NULL;
	size_t len;
	if (n > 60000 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return;
	if (write(sv[0], p, n) != (ssize_t)n) {
		close(sv[0]);
		close(sv[1]);
		return;
	}
	close(sv[0]); /* EOF after the bytes: a truncated frame must fail, not wait */
	te_net_set_timeouts_ms(sv[1], 1000);
	if (te_hs_recv_frame(sv[1], &type, &json, &len, 65536) == 0 && (!json || len > 65536))
		abort();
	free(json);
	close(sv[1]);
}

/* The 24-byte header: size LE, addr LE (here an offset into the region, or raw), opcode. */
static void header_case(const uint8_t *p, size_t n)
{
	uint64_t size = 0, addr = 0;
	int gpu = 0;
	bool in;
	if (n < 17)
		return;
	memcpy(&size, p, 8);
	memcpy(&addr, p + 8, 8);
	if (p[16] & 1) /* relative: near the registered buffer, where off-by-ones live */
		addr = (uint64_t)(uintptr_t)region + (addr % (2 * REGION)) - REGION / 2;
	in = te_engine_local_range_gpu(eng, addr, size, &gpu);
	if (in && (addr < (uint64_t)(uintptr_t)region || size > REGION ||
	           addr - (uint64_t)(uintptr_t)region > REGION - size))
		abort(); /* accepted a range outside the buffer */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!eng)
		setup();
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		desc_case(data + 1, size - 1);
		break;
	case 1:
		frame_case(data + 1, size - 1);
		break;
	default:
		header_case(data + 1, size - 1);
		break;
	}
	return 0;
}
