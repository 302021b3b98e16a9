/* SPDX-License-Identifier: Apache-2.0 */
/* hr_fault_rogue: the fault kind {"at": "during_workload", "rogue": "side-channel", "send": [...],
 * "duration_ms": N, "repeat": R} — a rogue peer on prefill's side channel during the workload (on
 * V0 the pipe's data and ACK PUSH ports, on V1 the ZMQ ROUTER) sending what "send" names. */
#include "hr_faults.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <msgpack.h>
#include <zmq.h>

#include "cfg/cfg_vllm.h"
#include "pd_util.h"

static const char *const rogue_kinds[] = {"take", "garbage", "oversized", "wrong-frames",
                                          "unknown-id"};

static int rogue_parse(const char *path, const char *field, const cJSON *e, char *err, size_t sz)
{
	static const char *const keys[] = {"at",   "after_ms",    "rogue",
	                                   "send", "duration_ms", "repeat"};
	const cJSON *v;
	int ret = hr_fault_hostile_common(
	    path, field, e, keys, PD_ARRAY_SIZE(keys),
	    "a rogue fault has at, after_ms, rogue, send, duration_ms, repeat", err, sz);

	if (ret)
		return ret;
	v = cJSON_GetObjectItemCaseSensitive(e, "rogue");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "side-channel"))
		return pd_field_err(path, err, sz, field, "\"rogue\": expected \"side-channel\"");
	if (!hr_fault_num_in(cJSON_GetObjectItemCaseSensitive(e, "repeat"), 1, 256))
		return pd_field_err(path, err, sz, field, "\"repeat\": expected 1..256");
	v = cJSON_GetObjectItemCaseSensitive(e, "send");
	if (v && !hr_fault_names_ok(v, rogue_kinds, PD_ARRAY_SIZE(rogue_kinds)))
		return pd_field_err(path, err, sz, field,
		                    "\"send\": expected a list of take, garbage, oversized, "
		                    "wrong-frames, unknown-id");
	return 0;
}

static bool wants(const cJSON *send, const char *kind)
{
	if (!send)
		return true; /* all of them */
	if (cJSON_IsString(send))
		return !strcmp(send->valuestring, kind);
	for (const cJSON *x = send->child; x; x = x->next)
		if (!strcmp(x->valuestring, kind))
			return true;
	return false;
}

/* ZMTP/2.0 greeting of socket type `type` and a long frame header announcing `size` bytes. */
static size_t zmtp2_oversize(uint8_t *b, uint8_t type, uint64_t size)
{
	size_t n = 0;
	b[n++] = 0xff;
	memset(b + n, 0, 7);
	n += 7;
	b[n++] = 0x01;
	b[n++] = 0x7f;
	b[n++] = 0x01; /* revision: ZMTP 2.0 */
	b[n++] = type;
	b[n++] = 0x00; /* identity: flags, length 0 */
	b[n++] = 0x00;
	b[n++] = 0x02; /* long frame */
	for (int i = 7; i >= 0; i--)
		b[n++] = (uint8_t)(size >> (8 * i));
	return n;
}

/* A raw TCP peer sends bytes; was it dropped within 3 s? */
static const char *raw_send(const struct hr_addr *a, const void *b, size_t n)
{
	int fd = hr_hostile_connect(NULL, a);
	bool closed;
	if (fd < 0)
		return "refused";
	closed = send(fd, b, n, MSG_NOSIGNAL) == (ssize_t)n && hr_hostile_closed_within(fd, 2000);
	close(fd);
	return closed ? "dropped by prefill" : "still open after 2 s";
}

/* V0: a PULL that takes answers off prefill's data PUSH port for ms; raw garbage and a 2^62
 * frame header on both PUSH ports. */
static void rogue_v0(const struct hr_addr *a, int ack, const cJSON *send, int ms,
                     volatile sig_atomic_t *stop, char *out, size_t osz)
{
	struct hr_addr ports[2] = {*a, *a};
	uint8_t b[64];
	size_t l;

	ports[1].port = ack;
	snprintf(out, osz, "data tcp://%s:%d, ack %d:", a->host, a->port, ack);
	if (wants(send, "take")) {
		void *ctx = zmq_ctx_new(), *s = ctx ? zmq_socket(ctx, ZMQ_PULL) : NULL;
		char ep[128];
		int zero = 0, took = 0;
		double end = pd_now_s() + ms / 1000.0;
		snprintf(ep, sizeof(ep), "tcp://%s:%d", a->host, a->port);
		if (s) {
			zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
			zmq_connect(s, ep);
		}
		while (s && !*stop && pd_now_s() < end) {
			zmq_pollitem_t pi = {.socket = s, .events = ZMQ_POLLIN};
			char fb[4096];
			if (zmq_poll(&pi, 1, 50) > 0 &&
			    zmq_recv(s, fb, sizeof(fb), ZMQ_DONTWAIT) >= 0)
				took++;
		}
		if (s)
			zmq_close(s);
		if (ctx)
			zmq_ctx_term(ctx);
		l = strlen(out);
		snprintf(out + l, osz - l, " a PULL took %d frame(s) in %.1f s;", took,
		         ms / 1000.0);
	}
	if (wants(send, "garbage")) {
		/* a ZMTP 3.0 greeting with a mechanism nobody speaks, then junk */
		memset(b, 0, sizeof(b));
		b[0] = 0xff;
		b[9] = 0x7f;
		b[10] = 3;
		memcpy(b + 12, "GARBAGE", 7);
		for (size_t i = 32; i < sizeof(b); i++)
			b[i] = (uint8_t)(0x5a ^ (i * 37));
		for (int k = 0; k < 2; k++) {
			l = strlen(out);
			snprintf(out + l, osz - l, " garbage on %d %s;", ports[k].port,
			         raw_send(&ports[k], b, sizeof(b)));
		}
	}
	if (wants(send, "oversized"))
		for (int k = 0; k < 2; k++) {
			size_t n = zmtp2_oversize(b, 0x07 /* PULL */, 1ull << 62);
			l = strlen(out);
			snprintf(out + l, osz - l, " 2^62-byte frame on %d %s;", ports[k].port,
			         raw_send(&ports[k], b, n));
		}
}

static void pk_str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

/* A well-formed handshake for request / transfer ids prefill never saw (gen A: the
 * MooncakeAgentMetadata, gen B: MooncakeXferMetadata with a wrong transfer id and prefill's own
 * region lengths, so only the id is wrong), naming a peer port nothing listens on. */
static void unknown_ids_msg(int gen, int nbufs, long block_len, msgpack_sbuffer *sb)
{
	msgpack_packer pk;
	bool bn = cfg_gen_has_bn((enum cfg_gen)gen), b1 = cfg_gen_has_block_lens((enum cfg_gen)gen);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, gen == CFG_GEN_A ? 5 : bn ? 8 : b1 ? 7 : 6);
	pk_str(&pk, "remote_hostname");
	pk_str(&pk, "127.0.0.1");
	pk_str(&pk, "remote_port");
	msgpack_pack_int64(&pk, 1);
	if (gen == CFG_GEN_A) {
		pk_str(&pk, "request_ids");
		msgpack_pack_array(&pk, 1);
		pk_str(&pk, "rogue-request-1");
	} else {
		pk_str(&pk, "remote_tp_size");
		msgpack_pack_int64(&pk, 1);
		pk_str(&pk, "remote_tp_rank");
		msgpack_pack_int64(&pk, 0);
		pk_str(&pk, "req_blocks");
		msgpack_pack_map(&pk, 1);
		pk_str(&pk, "rogue-request-1");
		msgpack_pack_array(&pk, 2);
		pk_str(&pk, "rogue-transfer-1");
		if (cfg_gen_grouped((enum cfg_gen)gen))
			msgpack_pack_array(&pk, 1);
		msgpack_pack_array(&pk, 2);
		msgpack_pack_int64(&pk, 1);
		msgpack_pack_int64(&pk, 2);
	}
	pk_str(&pk, "kv_caches_base_addr");
	msgpack_pack_array(&pk, 1);
	msgpack_pack_uint64(&pk, 4096);
	if (gen == CFG_GEN_A) {
		pk_str(&pk, "block_ids");
		msgpack_pack_array(&pk, 1);
		msgpack_pack_array(&pk, 2);
		msgpack_pack_int64(&pk, 1);
		msgpack_pack_int64(&pk, 2);
	} else if (b1) { /* b1, b2: block_lens; bn on: kv_block_lens too */
		for (int k = 0; k < (bn ? 2 : 1); k++) {
			pk_str(&pk, k ? "kv_block_lens" : "block_lens");
			msgpack_pack_array(&pk, (size_t)nbufs);
			for (int i = 0; i < nbufs; i++)
				msgpack_pack_int64(&pk, block_len);
		}
	}
}

/* Sends one message (parts frames) through a fresh DEALER; "answered" or "no answer". */
static const char *dealer_send_n(void *ctx, const char *ep, bool gen_a, const void *const *f,
                                 const size_t *fl, int parts, int times)
{
	void *s = zmq_socket(ctx, ZMQ_DEALER);
	int zero = 0, ok = 0;
	zmq_pollitem_t pi;
	if (!s)
		return "no socket";
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	if (zmq_connect(s, ep)) {
		zmq_close(s);
		return "no connect";
	}
	for (int t = 0; t < times; t++) {
		if (gen_a) /* a REQ's empty delimiter */
			zmq_send(s, "", 0, ZMQ_SNDMORE);
		for (int i = 0; i < parts; i++)
			zmq_send(s, f[i], fl[i], i + 1 < parts ? ZMQ_SNDMORE : 0);
	}
	pi = (zmq_pollitem_t){.socket = s, .events = ZMQ_POLLIN};
	if (zmq_poll(&pi, 1, 1500) > 0)
		ok = 1;
	zmq_close(s);
	return ok ? "answered" : "no answer";
}

static const char *dealer_send(void *ctx, const char *ep, bool gen_a, const void *const *f,
                               const size_t *fl, int parts)
{
	return dealer_send_n(ctx, ep, gen_a, f, fl, parts, 1);
}

/* V1: DEALERs on prefill's ROUTER send bytes that are not msgpack, msgpack of the wrong type,
 * too many frames, unknown ids, and a ZMTP peer announces a 2^62-byte frame. */
static void rogue_v1(struct hr_deploy *d, const struct hr_addr *a, const cJSON *send, int rep,
                     char *out, size_t osz)
{
	int gen = d->sc->gen, nbufs = 1;
	long block_len = 3; /* no real region is 3 bytes long: refused for its lengths */
	void *ctx = zmq_ctx_new();
	char ep[128];
	size_t l;
	bool ga = gen == CFG_GEN_A;

	snprintf(ep, sizeof(ep), "tcp://%s:%d", a->host, a->port);
	snprintf(out, osz, "ROUTER %s:", ep);
	if (!ctx)
		return;
	if (wants(send, "garbage")) {
		static const uint8_t notmp[] = {0xc1, 0xc1, 0xff, 0x00, 0x13, 0x37};
		static const uint8_t wrongtype[] = {0x81, 0xa1, 'x', 0x07}; /* {"x": 7} */
		const void *f1[] = {notmp}, *f2[] = {wrongtype};
		size_t l1[] = {sizeof(notmp)}, l2[] = {sizeof(wrongtype)};
		const char *r1 = dealer_send(ctx, ep, ga, f1, l1, 1);
		const char *r2 = dealer_send(ctx, ep, ga, f2, l2, 1);
		l = strlen(out);
		snprintf(out + l, osz - l, " not msgpack %s; {\"x\": 7} %s;", r1, r2);
	}
	if (wants(send, "wrong-frames")) {
		const void *f[] = {"a", "b", "c", "d"};
		size_t fl[] = {1, 1, 1, 1};
		l = strlen(out);
		snprintf(out + l, osz - l, " 4 frames %s;", dealer_send(ctx, ep, ga, f, fl, 4));
	}
	if (wants(send, "unknown-id")) {
		msgpack_sbuffer sb;
		msgpack_sbuffer_init(&sb);
		hr_hostile_kv_regions(d, &nbufs, &block_len);
		unknown_ids_msg(gen, nbufs, block_len, &sb);
		const void *f[] = {sb.data};
		size_t fl[] = {sb.size};
		l = strlen(out);
		snprintf(out + l, osz - l, " unknown %s x%d %s;", ga ? "request id" : "transfer id",
		         rep, dealer_send_n(ctx, ep, ga, f, fl, 1, rep));
		msgpack_sbuffer_destroy(&sb);
	}
	if (wants(send, "oversized")) {
		uint8_t b[64];
		size_t n = zmtp2_oversize(b, 0x05 /* DEALER */, 1ull << 62);
		l = strlen(out);
		snprintf(out + l, osz - l, " 2^62-byte frame %s;", raw_send(a, b, n));
	}
	zmq_ctx_term(ctx);
}

/* The WARN / ERROR lines prefill logged from offset on: how many, and the first. */
static int log_warnings(const char *log, long off, char *first, size_t fsz)
{
	FILE *f = log ? fopen(log, "r") : NULL;
	char line[1024];
	int n = 0;
	if (!f)
		return 0;
	fseek(f, off, SEEK_SET);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " WARN ") || strstr(line, " ERROR ")) {
			if (!n++) {
				line[strcspn(line, "\n")] = '\0';
				snprintf(first, fsz, "%.160s", line);
			}
		}
	fclose(f);
	return n;
}

static long log_size(const char *log)
{
	FILE *f = log ? fopen(log, "r") : NULL;
	long n = 0;
	if (f && !fseek(f, 0, SEEK_END))
		n = ftell(f);
	if (f)
		fclose(f);
	return n;
}

/* What it sent, what happened, and the warnings prefill logged meanwhile, into notes. */
static void rogue_run_on(struct hr_deploy *d, const cJSON *e, volatile sig_atomic_t *stop,
                         char *notes, size_t nsz)
{
	const cJSON *send = cJSON_GetObjectItemCaseSensitive(e, "send");
	const cJSON *dv = cJSON_GetObjectItemCaseSensitive(e, "duration_ms");
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(e, "repeat");
	const char *log = hr_node_log(d, &d->prefill);
	long off = log_size(log);
	struct hr_addr a;
	int ack = -1, nw;
	char what[600] = "", first[200] = "";

	if (!hr_hostile_side_channel(d, &a, &ack)) {
		hr_note_add(notes, nsz, "rogue: could not find prefill's side channel in its log");
		return;
	}
	if (d->sc->gen == CFG_GEN_V0)
		rogue_v0(&a, ack, send, dv ? dv->valueint : 1000, stop, what, sizeof(what));
	else
		rogue_v1(d, &a, send, rv ? rv->valueint : 1, what, sizeof(what));
	pd_sleep_ms(300); /* prefill's log lines about it */
	nw = log_warnings(log, off, first, sizeof(first));
	hr_note_add(notes, nsz,
	            "rogue on prefill's side channel %s prefill logged %d warning(s)%s%s", what, nw,
	            nw ? ", first: " : "", first);
}

static void rogue_run(struct hr_pfaults *f, const cJSON *e)
{
	rogue_run_on(f->d, e, &f->stop, f->notes, sizeof(f->notes));
}

const struct hr_fault_kind hr_fault_rogue = {
    .key = "rogue",
    .hostile = true,
    .parse = rogue_parse,
    .run = rogue_run,
};
