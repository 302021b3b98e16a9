/* SPDX-License-Identifier: Apache-2.0 */
/* te_tcp_gpu: the TCP transport's path for CUDA device memory — socket bytes staged through
 * pinned host buffers, two chunks in flight (copy of one overlapping the socket I/O of the other).
 */
#include "te_tcp.h"

#include <errno.h>
#include <string.h>

#include "pd_util.h"
#include "te_gpu.h"

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

int te_tcp_gpu_recv(struct te_gpu_stage **sp, int dev, int fd, const void *head, size_t headlen,
                    char *dst, size_t len, bool drain)
{
	size_t chunk = te_gpu_chunk(), off = 0;
	int ret = 0;

	if (te_gpu_stage_get(sp, dev))
		return -EIO;
	while (off < len) {
		size_t n = min_sz(chunk, len - off), h = min_sz(headlen, n);
		int k = te_gpu_stage_next(*sp);
		char *b = te_gpu_stage_buf(*sp, k);
		/* buffer k is free once the copy queued from it before has finished */
		if (te_gpu_stage_wait(*sp, k)) {
			ret = -EIO;
			break;
		}
		if (h) {
			memcpy(b, head, h);
			headlen = 0;
		}
		ret = n > h ? pd_read_full(fd, b + h, n - h) : 0;
		if (ret)
			break;
		if (te_gpu_stage_copy(*sp, k, dst + off, b, n)) {
			ret = -EIO;
			break;
		}
		off += n;
	}
	if ((drain || ret) && te_gpu_stage_drain(*sp) && !ret)
		ret = -EIO;
	return ret;
}

int te_tcp_gpu_send(struct te_gpu_stage **sp, int dev, int fd, const struct iovec *pre, int npre,
                    const char *src, size_t len)
{
	struct iovec iov[TCP_IOV_MAX + 1];
	size_t chunk = te_gpu_chunk(), off = 0, n;
	int k, ret = 0;

	if (npre < 0 || npre > TCP_IOV_MAX)
		return -EINVAL;
	if (te_gpu_stage_get(sp, dev))
		return -EIO;
	if (len == 0) {
		memcpy(iov, pre, (size_t)npre * sizeof(*iov));
		return npre ? pd_writev_full(fd, iov, npre) : 0;
	}
	/* copies into a buffer queue behind the stream's earlier copies from it (stream order);
	 * the host only touches a buffer after waiting for its event */
	n = min_sz(chunk, len);
	k = te_gpu_stage_next(*sp);
	if (te_gpu_stage_copy(*sp, k, te_gpu_stage_buf(*sp, k), src, n))
		return -EIO;
	while (off < len) {
		size_t nn = 0;
		int m = 0, kn = k;
		/* queue the next chunk's copy into the other buffer (its last send has returned) */
		if (off + n < len) {
			nn = min_sz(chunk, len - off - n);
			kn = te_gpu_stage_next(*sp);
			if (te_gpu_stage_copy(*sp, kn, te_gpu_stage_buf(*sp, kn), src + off + n,
			                      nn)) {
				ret = -EIO;
				break;
			}
		}
		if (te_gpu_stage_wait(*sp, k)) {
			ret = -EIO;
			break;
		}
		if (npre) {
			memcpy(iov, pre, (size_t)npre * sizeof(*iov));
			m = npre;
			npre = 0;
		}
		iov[m].iov_base = te_gpu_stage_buf(*sp, k);
		iov[m++].iov_len = n;
		ret = pd_writev_full(fd, iov, m);
		if (ret)
			break;
		off += n;
		n = nn;
		k = kn;
	}
	if (te_gpu_stage_drain(*sp) && !ret)
		ret = -EIO;
	return ret;
}
