/* sa_metrics: /metrics in Prometheus text format — pdkv's fixed names (the runner reads them),
 * vLLM's own names where vLLM counts the same thing, and the connector's raw statistics. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

char *sa_metrics_text(struct sa *s)
{
	char model[256];
	struct buf b = {0};
	struct kvc_stats t, st;
	char lbl[300];
	struct sa_counters *n = &s->n;

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
	}
	metric(&b, "pdkv_kv_reused_tokens_total", "counter",
	       "Prompt tokens whose KV came from the connector (model skipped).", "",
	       atomic_load(&n->reused));
	metric(&b, "pdkv_kv_recomputed_tokens_total", "counter",
	       "Prompt tokens a consumer computed itself because the KV was not received.", "",
	       atomic_load(&n->recomputed));
	metric(&b, "pdkv_kv_bytes_sent_total", "counter",
	       "KV payload bytes pulled from this instance by its peer.", "", t.bytes_sent);
	metric(&b, "pdkv_kv_bytes_received_total", "counter",
	       "KV payload bytes this instance pulled from its peer.", "", t.bytes_received);
	metric(&b, "pdkv_kv_transfer_failures_total", "counter",
	       "Requests whose KV insert or drop_select failed with a connector error.", "",
	       atomic_load(&n->transfer_failures));
	metric(&b, "pdkv_kv_checksum_failures_total", "counter",
	       "Received KV items whose checksum did not match their footer.", "",
	       atomic_load(&n->checksum_failures));
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
	metric(&b, "pdkv_kvc_buffer_items", "gauge", "Producer buffer items held now.", "",
	       t.buffer_items);
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
	return b.p;
}
