/* SPDX-License-Identifier: Apache-2.0 */
/* sa_metrics: /metrics in Prometheus text format — pdkv's fixed names (the runner reads them),
 * vLLM's own names where vLLM counts the same thing, and the connector's raw statistics. */
#include <cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"
#include "sa.h"

struct buf {
	char *p;
	size_t len, cap;
};

static void bput(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bput(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
		char *np = realloc(b->p, ncap);
		if (!np)
			return;
		b->p = np;
		b->cap = ncap;
	}
}

static void metric(struct buf *b, const char *name, const char *type, const char *help,
                   const char *labels, unsigned long long v)
{
	bput(b, "# HELP %s %s\n# TYPE %s %s\n%s%s %llu\n", name, help, name, type, name, labels, v);
}

/* Prometheus label value: backslash, double quote and newline escaped. */
static void label_escape(const char *in, char *out, size_t outsz)
{
	size_t k = 0;

	for (; *in && k + 3 < outsz; in++) {
		if (*in == '\\' || *in == '"') {
			out[k++] = '\\';
			out[k++] = *in;
		} else if (*in == '\n') {
			out[k++] = '\\';
			out[k++] = 'n';
		} else {
			out[k++] = *in;
		}
	}
	out[k] = 0;
}

static const double ttft_le[] = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                 0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                 20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
static const double xfer_le[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                 0.25,  0.5,   1.0,  2.5,   5.0,  10.0};
static const double bytes_le[] = {1024.0,     4096.0,      16384.0,      65536.0,
                                  262144.0,   1048576.0,   4194304.0,    16777216.0,
                                  67108864.0, 268435456.0, 1073741824.0, 4294967296.0};
static const double desc_le[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384};

/* vllm/v1/metrics/loggers.py */
static const double itl_le[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
static const double e2e_le[] = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
/* pdkv's: a hand-off takes 1 ms (a few blocks) to seconds (a 32k-token prompt over TCP) */
static const double ho_le[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                               0.25,  0.5,    1.0,   2.5,  5.0,   10.0, 30.0};

#define HSET(h, arr)                                                                               \
	do {                                                                                       \
		(h).le = (arr);                                                                    \
		(h).n = (int)(sizeof(arr) / sizeof((arr)[0]));                                     \
	} while (0)

void sa_metrics_token(struct sa *s, struct sa_req *r)
{
	uint64_t now = pd_now_ns();

	if (r->t_last_tok)
		sa_hist_observe(&s->itl, (double)(now - r->t_last_tok) / 1e9);
	else
		r->t_first_tok = now;
	r->t_last_tok = now;
}

void sa_metrics_done(struct sa *s, const struct sa_req *r, long long gen)
{
	sa_hist_observe(&s->e2e, (double)(pd_now_ns() - r->t0_ns) / 1e9);
	if (gen > 1 && r->t_first_tok)
		sa_hist_observe(&s->tpot,
		                (double)(r->t_last_tok - r->t_first_tok) / 1e9 / (double)(gen - 1));
}

struct sa_ho_ring {
	pthread_mutex_t mu;
	unsigned long long seq; /* hand-offs recorded so far; entry k sits at (k - 1) % RING */
	double secs[SA_HO_RING];
	uint64_t bytes[SA_HO_RING];
};

void sa_metrics_handoff(struct sa *s, double secs, uint64_t bytes)
{
	struct sa_ho_ring *g = s->ho_ring;

	sa_hist_observe(&s->handoff_s, secs);
	sa_hist_observe(&s->handoff_bytes, (double)bytes);
	if (!g)
		return;
	pthread_mutex_lock(&g->mu);
	g->secs[g->seq % SA_HO_RING] = secs;
	g->bytes[g->seq % SA_HO_RING] = bytes;
	g->seq++;
	pthread_mutex_unlock(&g->mu);
}

char *sa_metrics_handoffs_json(struct sa *s, unsigned long long after)
{
	struct sa_ho_ring *g = s->ho_ring;
	cJSON *o = cJSON_CreateObject(), *sv, *bv;
	char *txt;

	if (!o)
		return NULL;
	sv = cJSON_AddArrayToObject(o, "seconds");
	bv = cJSON_AddArrayToObject(o, "bytes");
	if (g) {
		pthread_mutex_lock(&g->mu);
		unsigned long long first = g->seq > SA_HO_RING ? g->seq - SA_HO_RING : 0;
		if (after > first)
			first = after;
		for (unsigned long long k = first; k < g->seq; k++) {
			cJSON_AddItemToArray(sv, cJSON_CreateNumber(g->secs[k % SA_HO_RING]));
			cJSON_AddItemToArray(bv,
			                     cJSON_CreateNumber((double)g->bytes[k % SA_HO_RING]));
		}
		cJSON_AddNumberToObject(o, "seq", (double)g->seq);
		pthread_mutex_unlock(&g->mu);
	} else {
		cJSON_AddNumberToObject(o, "seq", 0);
	}
	txt = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return txt;
}

void sa_metrics_free(struct sa *s)
{
	if (s->ho_ring)
		pthread_mutex_destroy(&s->ho_ring->mu);
	free(s->ho_ring);
	s->ho_ring = NULL;
}

void sa_metrics_init(struct sa *s)
{
	s->ho_ring = calloc(1, sizeof(*s->ho_ring));
	if (s->ho_ring)
		pthread_mutex_init(&s->ho_ring->mu, NULL);
	HSET(s->itl, itl_le);
	HSET(s->tpot, itl_le);
	HSET(s->e2e, e2e_le);
	HSET(s->handoff_s, ho_le);
	HSET(s->handoff_bytes, bytes_le);
	s->ttft.le = ttft_le;
	s->ttft.n = (int)(sizeof(ttft_le) / sizeof(ttft_le[0]));
	s->xfer_time.le = xfer_le;
	s->xfer_time.n = (int)(sizeof(xfer_le) / sizeof(xfer_le[0]));
	s->xfer_bytes.le = bytes_le;
	s->xfer_bytes.n = (int)(sizeof(bytes_le) / sizeof(bytes_le[0]));
	s->xfer_desc.le = desc_le;
	s->xfer_desc.n = (int)(sizeof(desc_le) / sizeof(desc_le[0]));
}

void sa_hist_observe(struct sa_hist *h, double v)
{
	int i = 0;

	if (!h->le)
		return;
	while (i < h->n && v > h->le[i])
		i++;
	atomic_fetch_add(&h->count[i], 1);
	atomic_fetch_add(&h->total, 1);
	atomic_fetch_add(&h->sum_ns, (uint64_t)(v * 1e9));
}

static void hist(struct buf *b, const char *name, const char *help, const char *labels,
                 struct sa_hist *h)
{
	unsigned long long cum = 0;

	bput(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (int i = 0; i <= h->n; i++) {
		cum += atomic_load(&h->count[i]);
		if (i < h->n)
			bput(b, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, h->le[i], cum);
		else
			bput(b, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, cum);
	}
	bput(b, "%s_sum{%s} %.9f\n%s_count{%s} %llu\n", name, labels,
	     (double)atomic_load(&h->sum_ns) / 1e9, name, labels,
	     (unsigned long long)atomic_load(&h->total));
}

/* Latency histograms with vLLM's names (TTFT here only for V0: V1 has it with its labels) and
 * pdkv's hand-off histograms. */
static void lat_metrics(struct sa *s, struct buf *b, const char *model)
{
	char l[320];

	if (cfg_gen_is_v1(s->gen))
		snprintf(l, sizeof(l), "model_name=\"%s\",engine=\"0\"", model);
	else
		snprintf(l, sizeof(l), "model_name=\"%s\"", model);
	if (!cfg_gen_is_v1(s->gen))
		hist(b, "vllm:time_to_first_token_seconds",
		     "Histogram of time to first token in seconds.", l, &s->ttft);
	hist(b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
	     l, &s->itl);
	hist(b, "vllm:time_per_output_token_seconds",
	     "Histogram of time per output token in seconds (per request: (last - first token) / "
	     "(n - 1)).",
	     l, &s->tpot);
	hist(b, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
	     l, &s->e2e);
	hist(b, "pdkv_kv_handoff_seconds",
	     "KV hand-off, this side's part: prefill from having the KV to having handed it over "
	     "(V1: WRITE done; V0: inserted), decode to the verified KV from the blocks' arrival "
	     "(V1, P pushes) or from the start of its pull (V0, D reads).",
	     l, &s->handoff_s);
	hist(b, "pdkv_kv_handoff_bytes", "KV bytes per hand-off (keys + values).", l,
	     &s->handoff_bytes);
}

/* vLLM V1's own names (vllm/v1/metrics/loggers.py, mooncake/stats.py), hidden where the chosen
 * release does not have them. Counters carry prometheus_client's _total suffix. */
/* Every V1 worker's counters (all dp and tp ranks) summed. */
static void kv1_totals(struct sa *s, struct kv1_stats *t)
{
	memset(t, 0, sizeof(*t));
	for (int d = 0; d < SA_MAX_DP; d++)
		for (int r = 0; r < SA_MAX_TP; r++)
			if (s->w[d][r]) {
				struct kv1_stats k;

				kv1_worker_stats(s->w[d][r], &k);
				t->bytes_sent += k.bytes_sent;
				t->xfers += k.xfers;
				t->xfer_failures += k.xfer_failures;
				t->handshakes += k.handshakes;
				t->unknown_ids += k.unknown_ids;
				t->expired += k.expired;
				t->rejected += k.rejected;
				t->bytes_received_blocks += k.bytes_received_blocks;
				t->alloc_waits += k.alloc_waits;
				t->writes_abandoned += k.writes_abandoned;
				t->writes_abandoned_held += k.writes_abandoned_held;
				t->writes_refused += k.writes_refused;
				t->recv_holds += k.recv_holds;
				t->recv_held_blocks += k.recv_held_blocks;
				t->recvs_refused += k.recvs_refused;
				t->recv_p_timeouts += k.recv_p_timeouts;
				t->recv_no_answer += k.recv_no_answer;
			}
}

/* vllm:prompt_tokens_by_source_total as the emulated release counts it (cfg_vllm's src era).
 * sa_v1.c counts each transferred N-token prompt as reused N, external N-1 and local 1 (the
 * last token recomputed), so T = reused - external transfers were made. 0.16 - 0.20 (#33290):
 * external N, local_compute 1, and vllm:prompt_tokens_recomputed 1 per transfer; from 0.21
 * (#37460, #39808): external N, local_compute 0, no prompt_tokens_recomputed (#38709). */
static void by_source(struct sa *s, struct buf *b, const char *l)
{
	struct sa_counters *n = &s->n;
	unsigned long long ext = atomic_load(&n->src_external), reused = atomic_load(&n->reused);
	unsigned long long loc = atomic_load(&n->src_local);
	unsigned long long t = reused > ext ? reused - ext : 0;

	if (s->vi.src == CFG_SRC_NONE)
		return;
	if (s->vi.src == CFG_SRC_N_0)
		loc = loc > t ? loc - t : 0;
	bput(b, "# HELP vllm:prompt_tokens_by_source_total Number of prompt tokens by "
	        "source.\n# TYPE vllm:prompt_tokens_by_source_total counter\n");
	bput(b, "vllm:prompt_tokens_by_source_total{%s,source=\"local_compute\"} %llu\n", l, loc);
	bput(b, "vllm:prompt_tokens_by_source_total{%s,source=\"local_cache_hit\"} %llu\n", l,
	     (unsigned long long)atomic_load(&n->src_cache));
	bput(b, "vllm:prompt_tokens_by_source_total{%s,source=\"external_kv_transfer\"} %llu\n", l,
	     reused);
	if (s->vi.recomputed)
		bput(b,
		     /* prometheus_client names a counter's HELP/TYPE with _total too */
		     "# HELP vllm:prompt_tokens_recomputed_total Number of cached prompt tokens "
		     "recomputed (the last token of a fully cached prompt).\n"
		     "# TYPE vllm:prompt_tokens_recomputed_total counter\n"
		     "vllm:prompt_tokens_recomputed_total{%s} %llu\n",
		     l, t);
}

static void v1_metrics(struct sa *s, struct buf *b, const char *model)
{
	struct sa_counters *n = &s->n;
	char l[320];

	snprintf(l, sizeof(l), "model_name=\"%s\",engine=\"0\"", model);
	by_source(s, b, l);
	bput(b,
	     "# HELP vllm:prompt_tokens_cached_total Number of cached prompt tokens (local + "
	     "external).\n# TYPE vllm:prompt_tokens_cached_total counter\n"
	     "vllm:prompt_tokens_cached_total{%s} %llu\n",
	     l, (unsigned long long)atomic_load(&n->cached_tokens));
	bput(b,
	     "# HELP vllm:external_prefix_cache_queries_total External prefix cache queries "
	     "(tokens).\n# TYPE vllm:external_prefix_cache_queries_total counter\n"
	     "vllm:external_prefix_cache_queries_total{%s} %llu\n",
	     l, (unsigned long long)atomic_load(&n->ext_queries));
	bput(b,
	     "# HELP vllm:external_prefix_cache_hits_total External prefix cache hits "
	     "(tokens).\n# TYPE vllm:external_prefix_cache_hits_total counter\n"
	     "vllm:external_prefix_cache_hits_total{%s} %llu\n",
	     l, (unsigned long long)atomic_load(&n->ext_hits));
	hist(b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
	     l, &s->ttft);
}

/* The V1 prefill's own WRITE statistics under pdkv's names: vLLM has no Prometheus names for
 * them (mooncake/stats.py keeps a TODO for MooncakePromMetrics; #50374 is open), it only logs
 * "KV Transfer metrics: Num successful transfers=..., Avg xfer time (ms)=..." lines. */
static void kv1_xfer_metrics(struct sa *s, struct buf *b, const struct kv1_stats *k1,
                             const char *model)
{
	char l[300];

	if (!cfg_gen_is_b(s->gen))
		return;
	snprintf(l, sizeof(l), "model_name=\"%s\"", model);
	hist(b, "pdkv_kv1_xfer_seconds", "V1 prefill: duration of each batched KV WRITE.", l,
	     &s->xfer_time);
	hist(b, "pdkv_kv1_xfer_bytes", "V1 prefill: bytes per batched KV WRITE.", l,
	     &s->xfer_bytes);
	hist(b, "pdkv_kv1_xfer_descriptors", "V1 prefill: descriptors per batched KV WRITE.", l,
	     &s->xfer_desc);
	metric(b, "pdkv_kv1_failed_recvs_total", "counter",
	       "V1 decode: receives that ended without their KV.", "",
	       atomic_load(&s->n.failed_recvs));
	metric(b, "pdkv_kv1_expired_total", "counter",
	       "V1 prefill: requests whose blocks expired unsent (abort timeout).", "",
	       k1->expired);
}

/* V1 blocks held out of the free lists (kv1_write.c, kv1_rhold.c), summed over the ranks. */
static void kv1_hold_metrics(struct buf *b, const struct kv1_stats *k)
{
	metric(b, "pdkv_kv1_writes_abandoned_total", "counter",
	       "V1 prefill WRITEs given up while still in flight (timeout, slice timeout, "
	       "shutdown); their blocks are held out of the free list until the engine ends them.",
	       "", k->writes_abandoned);
	metric(b, "pdkv_kv1_writes_abandoned_held", "gauge",
	       "Abandoned V1 WRITEs held now (new WRITEs wait past PDKV_KV1_MAX_HELD_WRITES per "
	       "rank, 16).",
	       "", k->writes_abandoned_held);
	metric(b, "pdkv_kv1_writes_refused_total", "counter",
	       "V1 WRITEs refused because too many abandoned WRITEs were still held.", "",
	       k->writes_refused);
	metric(b, "pdkv_kv1_recv_holds_total", "counter",
	       "V1 decode receives that ended without their KV while the prefill might still "
	       "write (timeout, error); their blocks are held out of the free list for "
	       "PDKV_KV1_RECV_HOLD_S or until every byte landed.",
	       "", k->recv_holds);
	metric(b, "pdkv_kv1_recv_held_blocks", "gauge",
	       "Decode blocks held now after failed V1 receives (new receives wait past "
	       "PDKV_KV1_RECV_HOLD_MAX_BLOCKS per rank, half the pool).",
	       "", k->recv_held_blocks);
	metric(b, "pdkv_kv1_recvs_refused_total", "counter",
	       "V1 receives refused because too many blocks of failed receives were still held.",
	       "", k->recvs_refused);
	metric(b, "pdkv_kv1_recv_p_timeouts_total", "counter",
	       "V1 gen B decode pulls the prefill answered \"Timeout waiting for P side ready.\" "
	       "after VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT (a transfer_id it never made ready: "
	       "unknown, already served, or its prefill too slow); each is a load failure the "
	       "kv_load_failure_policy handles.",
	       "", k->recv_p_timeouts);
	metric(b, "pdkv_kv1_recv_no_answer_total", "counter",
	       "V1 gen B decode pulls with no prefill answer within the receive timeout "
	       "(abort timeout + 60 s where vLLM reports failed pulls).",
	       "", k->recv_no_answer);
}

char *sa_metrics_text(struct sa *s)
{
	char model[256];
	struct buf b = {0};
	struct kvc_stats t, st;
	char lbl[300];
	struct sa_counters *n = &s->n;
	struct kv1_stats k1;

	memset(&t, 0, sizeof(t));
	for (int k = 0; k < s->nkvc; k++) {
		kvc_get_stats(s->kvc[k], &st);
		t.bytes_sent += st.bytes_sent;
		t.bytes_received += st.bytes_received;
		t.transfers += st.transfers;
		t.transfer_failures += st.transfer_failures;
		t.buffer_bytes += st.buffer_bytes;
		t.buffer_items += st.buffer_items;
		t.hits += st.hits;
		t.misses += st.misses;
		t.resyncs += st.resyncs;
		t.insert_timeouts += st.insert_timeouts;
		t.extra_peers += st.extra_peers;
		t.reads_abandoned += st.reads_abandoned;
		t.reads_abandoned_held += st.reads_abandoned_held;
		t.reads_ahead += st.reads_ahead;
	}
	/* V1: prefill pushes (bytes it wrote into decode's blocks), decode counts what it was
	 * told was written */
	kv1_totals(s, &k1);
	t.bytes_sent += k1.bytes_sent;
	t.bytes_received += k1.bytes_received_blocks;
	metric(&b, "pdkv_kv_reused_tokens_total", "counter",
	       "Prompt tokens whose KV came from the connector (model skipped).", "",
	       atomic_load(&n->reused));
	metric(&b, "pdkv_kv_recomputed_tokens_total", "counter",
	       "Prompt tokens a consumer computed itself because the KV was not received.", "",
	       atomic_load(&n->recomputed));
	if (s->hyb.mamba) /* kv_reused expects N-1 reused tokens for each of them */
		metric(
		    &b, "pdkv_kv_mamba_n1_requests_total", "counter",
		    "Requests whose KV was loaded for N-1 prompt tokens, the last one recomputed "
		    "(Mamba/GDN model, vLLM #46807).",
		    "", atomic_load(&n->mamba_n1));
	metric(&b, "pdkv_kv_bytes_sent_total", "counter",
	       "KV payload bytes pulled from this instance by its peer (V0) or written into the "
	       "peer's blocks (V1).",
	       "", t.bytes_sent);
	metric(&b, "pdkv_kv_bytes_received_total", "counter",
	       "KV payload bytes this instance pulled from its peer (V0) or that its peer reported "
	       "written into its blocks (V1).",
	       "", t.bytes_received);
	metric(&b, "pdkv_kv_transfer_failures_total", "counter",
	       "Requests whose KV insert or drop_select failed with a connector error.", "",
	       atomic_load(&n->transfer_failures));
	metric(&b, "pdkv_kv_checksum_failures_total", "counter",
	       "Received KV items whose checksum did not match their footer.", "",
	       atomic_load(&n->checksum_failures));
	metric(
	    &b, "pdkv_kv_check_parts_landed_total", "counter",
	    "V1 decode: KV parts (one layer's keys or values) whose checksum was summed as their "
	    "bytes landed, on the engine's receiving thread, with no read-back.",
	    "", atomic_load(&n->parts_landed));
	metric(&b, "pdkv_kv_check_rescans_total", "counter",
	       "V1 decode: checks whose first hash disagreed and were redone from the final "
	       "blocks.",
	       "", atomic_load(&n->check_rescans));
	metric(&b, "pdkv_requests_total", "counter", "Completion requests received.", "",
	       atomic_load(&n->requests));
	metric(&b, "pdkv_requests_failed_total", "counter",
	       "Completion requests answered with an HTTP error.", "",
	       atomic_load(&n->requests_failed));
	metric(&b, "pdkv_kv_misses_total", "counter",
	       "Consumer requests whose KV was not received (miss, timeout, error, mismatch).", "",
	       atomic_load(&n->misses));
	metric(&b, "pdkv_kv_computed_tokens_total", "counter",
	       "Prompt tokens run through the fake model (any role).", "",
	       atomic_load(&n->computed));
	metric(&b, "pdkv_kv_inserted_total", "counter", "KV items handed to the connector.", "",
	       atomic_load(&n->inserted));
	metric(&b, "pdkv_kvc_transfers_total", "counter", "Connector tensor transfers (raw).", "",
	       t.transfers);
	metric(&b, "pdkv_kvc_transfer_failures_total", "counter",
	       "Connector tensor transfer failures (raw).", "", t.transfer_failures);
	metric(&b, "pdkv_kvc_hits_total", "counter", "Connector buffer hits (raw).", "", t.hits);
	metric(&b, "pdkv_kvc_misses_total", "counter", "Connector buffer misses (raw).", "",
	       t.misses);
	metric(&b, "pdkv_kvc_buffer_bytes", "gauge", "Producer buffer bytes held now.", "",
	       t.buffer_bytes);
	metric(&b, "pdkv_kvc_resyncs_total", "counter",
	       "Consumer side channels resynchronised after lost answers or garbage.", "",
	       t.resyncs);
	metric(&b, "pdkv_kvc_insert_timeouts_total", "counter",
	       "Producer inserts that gave up on a full buffer (--kv-insert-timeout-ms).", "",
	       t.insert_timeouts);
	metric(&b, "pdkv_kv_block_waits_total", "counter",
	       "V1 block allocations (per rank) that waited for free KV blocks "
	       "(--kv-block-wait-timeout-ms).",
	       "", k1.alloc_waits);
	metric(&b, "pdkv_kvc_side_channel_extra_peers_total", "counter",
	       "Extra peers seen on a bound side-channel port (a rogue or stale connection).", "",
	       t.extra_peers);
	metric(&b, "pdkv_kv_side_channel_rejected_total", "counter",
	       "V1 side-channel messages refused: wrong frames, bad msgpack, unknown request ids, "
	       "wrong rank or region lengths (a rogue or broken peer).",
	       "", k1.rejected + k1.unknown_ids);
	metric(&b, "pdkv_kvc_buffer_items", "gauge", "Producer buffer items held now.", "",
	       t.buffer_items);
	metric(&b, "pdkv_kvc_reads_abandoned_total", "counter",
	       "Connector READs given up while still in flight (timeout, shutdown); each "
	       "buffer is held out of the pool until the engine ends the READ.",
	       "", t.reads_abandoned);
	metric(&b, "pdkv_kvc_reads_abandoned_held", "gauge",
	       "Buffers of abandoned connector READs held now (at most 16 per rank).", "",
	       t.reads_abandoned_held);
	metric(&b, "pdkv_kvc_reads_ahead_total", "counter",
	       "Connector READs started while the READ of the tensor before them was still "
	       "running (the peer had already announced them; PDKV_KVC_READ_AHEAD=0 turns it off).",
	       "", t.reads_ahead);
	kv1_hold_metrics(&b, &k1);
	label_escape(s->o.served[0], model, sizeof(model));
	snprintf(lbl, sizeof(lbl), "{model_name=\"%s\"}", model);
	metric(&b, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
	       lbl, atomic_load(&n->prompt_tokens));
	metric(&b, "vllm:generation_tokens_total", "counter",
	       "Number of generation tokens processed.", lbl, atomic_load(&n->generation_tokens));
	metric(&b, "vllm:num_requests_running", "gauge",
	       "Number of requests currently running on GPU.", lbl,
	       (unsigned long long)atomic_load(&n->running));
	snprintf(lbl, sizeof(lbl), "{model_name=\"%s\",kv_role=\"%s\",tp=\"%d\"}", model,
	         s->kv ? s->kt.kv_role : "none", s->o.tp);
	metric(&b, "pdkv_standin_info", "gauge", "Stand-in identity (always 1).", lbl, 1);
	if (cfg_gen_is_v1(s->gen))
		v1_metrics(s, &b, model);
	kv1_xfer_metrics(s, &b, &k1, model);
	lat_metrics(s, &b, model);
	return b.p;
}

/* ---- vLLM's periodic "KV Transfer metrics:" log line ------------------------------------- */

/* What the gen-B counters held at the last line. Only the stand-in's main loop ticks. */
static struct {
	uint64_t t_ns, n, t_sum, b_sum, d_sum, fail, frecv, expired;
	uint64_t cnt[SA_HIST_MAX + 1];
} xlog;

static void xlog_snap(struct sa *s, uint64_t now)
{
	struct kv1_stats k1;

	kv1_totals(s, &k1);
	xlog.t_ns = now;
	xlog.n = atomic_load(&s->xfer_time.total);
	xlog.t_sum = atomic_load(&s->xfer_time.sum_ns);
	xlog.b_sum = atomic_load(&s->xfer_bytes.sum_ns);
	xlog.d_sum = atomic_load(&s->xfer_desc.sum_ns);
	xlog.fail = atomic_load(&s->n.transfer_failures);
	xlog.frecv = atomic_load(&s->n.failed_recvs);
	xlog.expired = k1.expired;
	for (int i = 0; i <= SA_HIST_MAX; i++)
		xlog.cnt[i] = atomic_load(&s->xfer_time.count[i]);
}

/* A Python float as round(x, digits) prints it: at least one decimal, no trailing zeros. */
static const char *pyfloat(char *buf, size_t sz, double x, int digits)
{
	size_t l;

	snprintf(buf, sz, "%.*f", digits, x);
	l = strlen(buf);
	while (l > 2 && buf[l - 1] == '0' && buf[l - 2] != '.')
		buf[--l] = '\0';
	return buf;
}

/* The upper edge (ms) of the bucket holding the interval's 90th percentile transfer time:
 * vLLM takes the exact percentile of the durations, the stand-in only has the histogram. */
static double p90_ms(struct sa *s, uint64_t n)
{
	const struct sa_hist *h = &s->xfer_time;
	uint64_t cum = 0;

	for (int i = 0; i < h->n; i++) {
		cum += atomic_load(&h->count[i]) - xlog.cnt[i];
		if ((double)cum >= 0.9 * (double)n)
			return h->le[i] * 1e3;
	}
	return h->n ? h->le[h->n - 1] * 1e3 : 0;
}

/* Every VLLM_LOG_STATS_INTERVAL seconds (vLLM's default 10), a gen-B instance logs the
 * interval's connector stats the way vLLM's KVConnectorLogging prints
 * MooncakeKVConnectorStats.reduce() (mooncake/stats.py @ e046c7da8842), and only when the
 * interval saw a transfer or a failure. Successful transfers are counted on P (it pushes),
 * failed receives on D. Called from the stand-in's main loop. */
void sa_metrics_tick(struct sa *s)
{
	static uint64_t interval_ns;
	uint64_t now = pd_now_ns(), n, fail, frecv, exp;
	struct kv1_stats k1;
	char a[32], p[32], mb[32], tp[32], d[32];
	double secs, bytes;

	if (!s->kv || !cfg_gen_is_b(s->gen))
		return;
	if (!interval_ns) {
		double v;

		pd_env_float("VLLM_LOG_STATS_INTERVAL", &v); /* (0, 86400) s, default 10 */
		interval_ns = (uint64_t)(v * 1e9);
		xlog_snap(s, now);
		return;
	}
	if (now - xlog.t_ns < interval_ns)
		return;
	kv1_totals(s, &k1);
	n = atomic_load(&s->xfer_time.total) - xlog.n;
	fail = atomic_load(&s->n.transfer_failures) - xlog.fail;
	frecv = atomic_load(&s->n.failed_recvs) - xlog.frecv;
	exp = k1.expired - xlog.expired;
	if (!n && !fail && !frecv && !exp) {
		xlog.t_ns = now;
		return;
	}
	secs = (double)(atomic_load(&s->xfer_time.sum_ns) - xlog.t_sum) / 1e9;
	bytes = (double)(atomic_load(&s->xfer_bytes.sum_ns) - xlog.b_sum) / 1e9;
	if (!n) {
		snprintf(a, sizeof(a), "0");
		snprintf(p, sizeof(p), "0");
		snprintf(mb, sizeof(mb), "0");
		snprintf(tp, sizeof(tp), "0");
		snprintf(d, sizeof(d), "0");
	} else {
		pyfloat(a, sizeof(a), secs / (double)n * 1e3, 3);
		pyfloat(p, sizeof(p), p90_ms(s, n), 3);
		pyfloat(mb, sizeof(mb), bytes / 1048576.0 / (double)n, 3);
		pyfloat(tp, sizeof(tp), secs > 0 ? bytes / 1048576.0 / secs : 0.0, 3);
		pyfloat(d, sizeof(d),
		        (double)(atomic_load(&s->xfer_desc.sum_ns) - xlog.d_sum) / 1e9 / (double)n,
		        1);
	}
	pd_info("KV Transfer metrics: Num successful transfers=%llu, Avg xfer time (ms)=%s, P90 "
	        "xfer time (ms)=%s, Avg MB per transfer=%s, Throughput (MB/s)=%s, Avg number of "
	        "descriptors=%s, Num failed transfers=%llu, Num failed recvs=%llu, Num KV expired "
	        "reqs=%llu",
	        (unsigned long long)n, a, p, mb, tp, d, (unsigned long long)fail,
	        (unsigned long long)frecv, (unsigned long long)exp);
	xlog_snap(s, now);
}
