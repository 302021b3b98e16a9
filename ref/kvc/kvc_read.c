/* kvc_read: the receiver's TE READ of one announced (ptr, len), polled with short naps (a READ of
 * a few ms must not end up to a 1 ms nap late, as te_transfer_sync's back-off allows), and
 * optionally cut into chunks submitted as one batch (PDKV_KVC_READ_CHUNK: on this 2-core host
 * 1..16 MiB chunks measured the same as one request, within the noise, so one request is the
 * default). Same result codes as te_transfer_sync. */
#include <stdlib.h>
#include <time.h>

#include "kvc/kvc_internal.h"
#include "pd_log.h"
#include "pd_util.h"
#include "te/te.h"

#define CHUNK_MIN  (64ull << 10)
#define MAX_CHUNKS 8192 /* larger reads get larger chunks */
#define NAP_MIN_NS 2000
#define NAP_MAX_NS 100000

/* PDKV_KVC_READ_CHUNK: a size (at least 64 KiB); unset or 0 = one request; read per call */
static size_t chunk_bytes(size_t len)
{
	const char *e = getenv("PDKV_KVC_READ_CHUNK");
	size_t c = len;
	uint64_t v;

	if (e && *e && pd_parse_size(e, &v) == 0 && v)
		c = v < CHUNK_MIN ? CHUNK_MIN : (size_t)v;
	if (c < len / MAX_CHUNKS + 1)
		c = len / MAX_CHUNKS + 1;
	return c < len ? c : len;
}

static int timeout_ms_of(const struct kvc_pipe *p, size_t len)
{
	const char *e = getenv("MC_TRANSFER_TIMEOUT");
	int64_t s = 30;

	if (p->transfer_timeout_ms > 0)
		return p->transfer_timeout_ms;
	if (e && (pd_parse_i64(e, &s) || s < 5))
		s = 30;
	return (int)(s * 1000 + (int64_t)(len / 1000000));
}

int kvc_read(struct kvc_pipe *p, void *dst, uint64_t ptr, size_t len)
{
	size_t chunk = chunk_bytes(len), n = (len + chunk - 1) / chunk, next = 0;
	struct te_request *r;
	uint64_t seg, batch, end;
	long nap = NAP_MIN_NS;
	bool failed = false;
	int rc;

	if (len == 0)
		return 0;
	rc = te_open_segment(p->eng, p->v0.remote_url, &seg);
	if (rc)
		return rc;
	r = malloc(n * sizeof(*r));
	if (!r)
		return TE_ERR_MEMORY;
	for (size_t i = 0; i < n; i++) {
		size_t off = i * chunk;

		r[i] = (struct te_request){TE_READ, (uint8_t *)dst + off, seg, ptr + off,
		                           len - off < chunk ? len - off : chunk};
	}
	rc = te_batch_alloc(p->eng, n, &batch);
	if (rc) {
		free(r);
		return rc;
	}
	rc = te_batch_submit(p->eng, batch, r, n);
	free(r);
	if (rc) {
		te_batch_free(p->eng, batch);
		return rc;
	}
	end = pd_now_ns() + (uint64_t)timeout_ms_of(p, len) * 1000000ull;
	/* chunks finish about in order: wait on the oldest unfinished one */
	while (next < n) {
		struct te_task_status st = {0, 0};

		rc = te_batch_status(p->eng, batch, next, &st);
		if (rc)
			break;
		if (st.status != TE_WAITING && st.status != TE_PENDING) {
			failed |= st.status != TE_COMPLETED;
			next++;
			nap = NAP_MIN_NS;
			continue;
		}
		if (pd_now_ns() > end || atomic_load(&p->stop)) {
			pd_err("kvc: READ of %zu bytes from %s timed out (%zu of %zu chunks done)",
			       len, p->v0.remote_url, next, n);
			return TE_ERR_TIMEOUT; /* the batch stays (busy); the engine frees it */
		}
		nanosleep(&(struct timespec){0, nap}, NULL);
		if (nap < NAP_MAX_NS)
			nap *= 2;
	}
	if (te_batch_free(p->eng, batch))
		pd_warn("kvc: READ left batch %llx busy", (unsigned long long)batch);
	if (rc)
		return rc;
	return failed ? TE_ERR_ENDPOINT : 0;
}
