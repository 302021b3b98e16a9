/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_kv1_wire: V1 bytes a remote peer controls — the msgpack messages of kv1_wire.h (agent
 * metadata, MooncakeXferMetadata in its shapes, the transfer response) and the bootstrap
 * server's POST /register body, sent to a live kv1_boot server. First byte picks the parser. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kv1/kv1_boot.h"
#include "kv1/kv1_wire.h"
#include "pd_log.h"
#include "pd_util.h"

static struct kv1_boot *boot;
static int boot_port;

static void xfer_case(enum kv1_shape sh, const uint8_t *p, size_t n)
{
	char err[256];
	struct kv1_xfer_meta m;
	memset(&m, 0, sizeof(m));
	if (kv1_xfer_meta_decode(p, n, sh, &m, err, sizeof(err)) == 0) {
		char *out = NULL;
		size_t len = 0;
		if (kv1_xfer_meta_encode(&m, sh, &out, &len) == 0) {
			struct kv1_xfer_meta m2;
			memset(&m2, 0, sizeof(m2));
			if (kv1_xfer_meta_decode(out, len, sh, &m2, err, sizeof(err)))
				abort(); /* what we encode must decode */
			kv1_xfer_meta_free(&m2);
		}
		free(out);
		kv1_xfer_meta_free(&m);
	} else {
		char msg[300];
		kv1_wire_err_to_msgspec(err, msg, sizeof(msg));
	}
}

static void wire_case(int which, const uint8_t *p, size_t n)
{
	char err[256];
	if (which == 0) {
		struct kv1_agent_meta m;
		memset(&m, 0, sizeof(m));
		if (kv1_agent_meta_decode(p, n, &m, err, sizeof(err)) == 0) {
			char *out = NULL;
			size_t len = 0;
			if (kv1_agent_meta_encode(&m, &out, &len) == 0) {
				struct kv1_agent_meta m2;
				memset(&m2, 0, sizeof(m2));
				if (kv1_agent_meta_decode(out, len, &m2, err, sizeof(err)))
					abort(); /* what we encode must decode */
				kv1_agent_meta_free(&m2);
			}
			free(out);
			kv1_agent_meta_free(&m);
		}
	} else if (which == 1 || which == 2) {
		/* 1: the B0, B1 and B2 decoders, 2: the Bn and the Bl decoders read the same bytes
		 */
		int lo = which == 1 ? KV1_SHAPE_B0 : KV1_SHAPE_BN;
		int hi = which == 1 ? KV1_SHAPE_B2 : KV1_SHAPE_BL;

		for (int k = lo; k <= hi; k++)
			xfer_case((enum kv1_shape)k, p, n);
	} else {
		struct kv1_xfer_resp r;
		memset(&r, 0, sizeof(r));
		if (kv1_xfer_resp_decode(p, n, &r, err, sizeof(err)) == 0)
			kv1_xfer_resp_free(&r);
	}
}

/* POST /register with the input as the body; the server must answer (any status) and live. */
static void register_case(const uint8_t *p, size_t n)
{
	char hdr[256], resp[512];
	int fd, hl;
	ssize_t r;
	if (!boot) {
		if (kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BN, &boot, &boot_port))
			abort();
	}
	fd = pd_tcp_connect("127.0.0.1", boot_port, 2000);
	if (fd < 0)
		abort();
	hl = snprintf(hdr, sizeof(hdr),
	              "POST /register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	              "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	              n);
	if (pd_write_full(fd, hdr, (size_t)hl) || (n && pd_write_full(fd, p, n))) {
		close(fd);
		return;
	}
	{
		struct timeval tv = {5, 0};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	r = recv(fd, resp, sizeof(resp) - 1, 0);
	if (r < 12 || memcmp(resp, "HTTP/1.1 ", 9))
		abort(); /* no answer: the server hung or died */
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;
	if (!quiet++)
		pd_log_set_level(PD_LOG_ERROR);
	if (size < 1)
		return 0;
	if (data[0] % 5 == 4)
		register_case(data + 1, size - 1);
	else
		wire_case(data[0] % 5, data + 1, size - 1);
	return 0;
}
