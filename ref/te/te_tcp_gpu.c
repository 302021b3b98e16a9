/* te_tcp_gpu: the TCP transport's path for CUDA device memory — socket bytes staged through
 * pinned host buffers, two chunks in flight (copy of one overlapping the socket I/O of the other).
 */
#include "te_tcp.h"

#include <errno.h>
#include <string.h>

#include "te_gpu.h"

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

int te_tcp_gpu_recv(struct te_gpu_stage **sp, int dev, int fd, char *dst, size_t len)
{
	size_t chunk = te_gpu_chunk(), off = 0;
	int k = 0, ret = 0;

	if (te_gpu_stage_get(sp, dev))
		return -EIO;
	for (; off < len; k ^= 1) {
		size_t n = min_sz(chunk, len - off);
		char *b = te_gpu_stage_buf(*sp, k);
		/* buffer k is free once the copy queued from it two chunks ago has finished */
		if (te_gpu_stage_wait(*sp, k)) {
			ret = -EIO;
			break;
		}
		ret = te_tcp_recv_full(fd, b, n);
		if (ret)
			break;
		if (te_gpu_stage_copy(*sp, k, dst + off, b, n)) {
			ret = -EIO;
			break;
		}
		off += n;
	}
	if (te_gpu_stage_drain(*sp) && !ret)
		ret = -EIO;
	return ret;
}

int te_tcp_gpu_send(struct te_gpu_stage **sp, int dev, int fd, const struct iovec *pre, int npre,
                    const char *src, size_t len)
{
	struct iovec iov[TCP_IOV_MAX + 1];
	size_t chunk = te_gpu_chunk(), off = 0, n;
	int k = 0, ret = 0;

	if (npre < 0 || npre > TCP_IOV_MAX)
		return -EINVAL;
	if (te_gpu_stage_get(sp, dev))
		return -EIO;
	if (len == 0) {
		memcpy(iov, pre, (size_t)npre * sizeof(*iov));
		return npre ? te_tcp_send_iov(fd, iov, npre) : 0;
	}
	n = min_sz(chunk, len);
	if (te_gpu_stage_copy(*sp, 0, te_gpu_stage_buf(*sp, 0), src, n))
		return -EIO;
	while (off < len) {
		size_t nn = 0;
		int m = 0;
		/* queue the next chunk's copy into the other buffer (its last send has returned) */
		if (off + n < len) {
			nn = min_sz(chunk, len - off - n);
			if (te_gpu_stage_copy(*sp, k ^ 1, te_gpu_stage_buf(*sp, k ^ 1),
			                      src + off + n, nn)) {
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
		ret = te_tcp_send_iov(fd, iov, m);
		if (ret)
			break;
		off += n;
		n = nn;
		k ^= 1;
	}
	if (te_gpu_stage_drain(*sp) && !ret)
		ret = -EIO;
	return ret;
}
