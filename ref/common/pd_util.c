/* SPDX-License-Identifier: Apache-2.0 */
/* pd_util: time, file, number and socket helpers shared by every pdkv module.
 * Nothing here logs; callers turn the returned -errno into a message that names the input. */
#include "pd_util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_log.h"

uint64_t pd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

size_t pd_locked_size(pthread_mutex_t *mu, const size_t *v)
{
	size_t n;

	pthread_mutex_lock(mu);
	n = *v;
	pthread_mutex_unlock(mu);
	return n;
}

double pd_now_s(void)
{
	return (double)pd_now_ns() / 1e9;
}

void pd_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void pd_futex_wake(uint32_t *a)
{
	syscall(SYS_futex, a, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

int pd_futex_wait(uint32_t *a, uint32_t v, uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};

	return (int)syscall(SYS_futex, a, FUTEX_WAIT_PRIVATE, v, &ts, NULL, 0);
}

void pd_fine_naps(void)
{
	static __thread bool set;

	if (!set) {
		prctl(PR_SET_TIMERSLACK, 1000UL);
		set = true;
	}
}

int pd_read_file(const char *path, size_t max, char **out, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	int fd, ret = 0;

	*out = NULL;
	if (len)
		*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		ret = -EISDIR;
		goto out;
	}
	for (;;) {
		ssize_t r;
		if (n + 4096 + 1 > cap) {
			size_t ncap = cap ? cap * 2 : 8192;
			char *nb;
			if (cap > max + 1)
				ncap = cap;
			nb = realloc(buf, ncap);
			if (!nb) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap = ncap;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			ret = -EFBIG;
			goto out;
		}
	}
	if (!buf && !(buf = malloc(1))) {
		ret = -ENOMEM;
		goto out;
	}
	buf[n] = '\0';
	*out = buf;
	buf = NULL;
	if (len)
		*len = n;
out:
	free(buf);
	close(fd);
	return ret;
}

/* Writes straight into path (a device, a FIFO, a symbolic link: not replaced by a rename). */
static int write_in_place(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int ret;
	if (fd < 0)
		return -errno;
	ret = pd_write_full(fd, data, len);
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

int pd_write_file(const char *path, const void *data, size_t len)
{
	char tmp[PATH_MAX];
	struct stat st;
	int fd, ret;

	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return write_in_place(path, data, len);
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ret = pd_write_full(fd, data, len);
	if (!ret && fsync(fd) && errno != EINVAL && errno != EROFS) /* EINVAL: cannot sync */
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp); /* the old file, if any, is left whole */
	return ret;
}

int pd_mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int pd_rm_rf(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	int ret = 0;

	if (!path || !*path || !strcmp(path, "/"))
		return -EINVAL;
	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) ? -errno : 0;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *sub;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		sub = pd_asprintf("%s/%s", path, e->d_name);
		if (!sub) {
			ret = -ENOMEM;
			break;
		}
		if (pd_rm_rf(sub) && !ret)
			ret = -EIO;
		free(sub);
	}
	closedir(d);
	if (rmdir(path) && !ret)
		ret = -errno;
	return ret;
}

int pd_split_hostport(const char *s, char *host_out, size_t host_sz, int *port_out)
{
	const char *colon, *hs = s, *he;
	int64_t port;
	if (!s || !*s)
		return -EINVAL;
	if (*s == '[') {
		he = strchr(s, ']');
		if (!he || he[1] != ':')
			return -EINVAL;
		hs = s + 1;
		colon = he + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		he = colon;
	}
	if (he == hs || (size_t)(he - hs) >= host_sz)
		return -EINVAL;
	if (pd_parse_i64(colon + 1, &port) || port < 1 || port > 65535)
		return -EINVAL;
	memcpy(host_out, hs, (size_t)(he - hs));
	host_out[he - hs] = '\0';
	*port_out = (int)port;
	return 0;
}

static int resolve(const char *host, int port, int passive, struct addrinfo **res)
{
	struct addrinfo hints = {0};
	char pbuf[16];
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	snprintf(pbuf, sizeof(pbuf), "%d", port);
	if (getaddrinfo(host, pbuf, &hints, res))
		return -EHOSTUNREACH;
	return 0;
}

int pd_tcp_listen(const char *host, int port, int backlog)
{
	struct addrinfo *res, *ai;
	int fd = -1, one = 1, ret;
	if (!host || !*host || !strcmp(host, "*"))
		host = "0.0.0.0";
	ret = resolve(host, port, 1, &res);
	if (ret)
		return ret;
	ret = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0) {
			ret = fd;
			break;
		}
		ret = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return ret;
}

/* Lowest port the kernel hands out for outgoing connections (and for bind to port 0). */
static int ephemeral_low(void)
{
	char *txt = NULL;
	size_t n;
	int lo = 32768, hi;
	if (pd_read_file("/proc/sys/net/ipv4/ip_local_port_range", 64, &txt, &n) == 0) {
		if (sscanf(txt, "%d %d", &lo, &hi) != 2)
			lo = 32768;
		free(txt);
	}
	return lo;
}

/* A port below the ephemeral range, free right now: a port from bind(0) is an ephemeral
 * one, which any process's next connect() may take as its local port before the service
 * binds it (EADDRINUSE: test_bench.sh's "metadata services did not start", issue 11 D13). */
static int low_free_port(const char *host)
{
	static _Atomic unsigned seed;
	int lo = 10000, hi = ephemeral_low() - 1;
	unsigned x;
	if (hi - lo < 1000)
		return -ERANGE;
	x = seed ? seed : (unsigned)getpid() * 2654435761u ^ (unsigned)pd_now_ns();
	for (int i = 0; i < 64; i++) {
		x = x * 1103515245u + 12345u;
		int port = lo + (int)((x >> 8) % (unsigned)(hi - lo + 1));
		int fd = pd_tcp_listen(host, port, 1);
		if (fd >= 0) {
			close(fd);
			seed = x;
			return port;
		}
	}
	seed = x;
	return -EADDRNOTAVAIL;
}

int pd_free_port(const char *host)
{
	int low = low_free_port(host);
	if (low > 0)
		return low;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = pd_tcp_listen(host, 0, 1), port = -EADDRNOTAVAIL;
	if (fd < 0)
		return fd;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
		                                : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	close(fd);
	return port;
}

/* poll() of one fd until end_ns, through signals (EINTR: the time left is recomputed). */
static int poll_until(struct pollfd *p, uint64_t end_ns)
{
	for (;;) {
		uint64_t now = pd_now_ns();
		int r, ms = now >= end_ns ? 0 : (int)((end_ns - now + 999999) / 1000000);

		r = poll(p, 1, ms);
		if (r >= 0 || errno != EINTR)
			return r;
	}
}

int pd_tcp_connect(const char *host, int port, int timeout_ms)
{
	struct addrinfo *res, *ai;
	uint64_t end = pd_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
	int ret = resolve(host, port, 0, &res);
	if (ret)
		return ret;
	ret = -ECONNREFUSED;
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		int err = 0, one = 1;
		socklen_t el = sizeof(err);
		struct pollfd p;
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS &&
		    errno != EINTR) { /* EINTR: the connect goes on, as EINPROGRESS */
			ret = -errno;
			close(fd);
			continue;
		}
		p.fd = fd;
		p.events = POLLOUT;
		if (poll_until(&p, end) != 1) {
			ret = -ETIMEDOUT;
			close(fd);
			continue;
		}
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
		if (err) {
			ret = -err;
			close(fd);
			continue;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		ret = fd;
		break;
	}
	freeaddrinfo(res);
	return ret;
}

int pd_wait_tcp(const char *host, int port, int timeout_ms)
{
	uint64_t end = pd_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	do {
		int fd = pd_tcp_connect(host, port, 200);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		pd_sleep_ms(20);
	} while (pd_now_ns() < end);
	return -ETIMEDOUT;
}

size_t pd_chunk_parse(const char *name, const char *e, size_t def)
{
	uint64_t v = def;

	if (e && *e && (pd_parse_size(e, &v) || (v && v < 4096))) {
		pd_warn("%s=\"%s\": expected 0 (no cap) or a size of at least 4K; using %zu KiB",
		        name, e, def >> 10);
		v = def;
	}
	return v ? (size_t)v : SIZE_MAX - 1;
}

/* The cap of environment variable name, parsed once per process into *slot (SIZE_MAX: not yet). */
static size_t env_chunk(atomic_size_t *slot, const char *name, size_t def)
{
	size_t c = atomic_load_explicit(slot, memory_order_relaxed);

	if (c == SIZE_MAX) {
		/* the row's text, checked here: 0 (no cap) or a size of at least 4K (a rule a
		 * row's range cannot say) */
		c = pd_chunk_parse(name, pd_env_raw(name), def);
		atomic_store_explicit(slot, c, memory_order_relaxed);
	}
	return c;
}

size_t pd_sock_recv_chunk(void)
{
	static atomic_size_t chunk = SIZE_MAX;
	return env_chunk(&chunk, "PDKV_TCP_RECV_CHUNK", PD_SOCK_RECV_CHUNK);
}

size_t pd_sock_send_chunk(void)
{
	static atomic_size_t chunk = SIZE_MAX;
	return env_chunk(&chunk, "PDKV_TCP_SEND_CHUNK", PD_SOCK_SEND_CHUNK);
}

uint64_t pd_spin_parse_ns(const char *name, const char *e)
{
	int64_t us = PD_SOCK_SPIN_US;

	if (e && *e && (pd_parse_i64(e, &us) || us < 0 || us > 100000)) {
		pd_warn("%s=%s: expected microseconds from 0 (off) to 100000; using %d", name, e,
		        PD_SOCK_SPIN_US);
		us = PD_SOCK_SPIN_US;
	}
	return (uint64_t)us * 1000;
}

uint64_t pd_sock_spin_ns(void)
{
	static _Atomic int64_t ns = -1;
	int64_t v = atomic_load_explicit(&ns, memory_order_relaxed);

	if (v < 0) {
		pd_env_int("PDKV_TCP_SPIN_US", &v); /* 0..100000 us, default PD_SOCK_SPIN_US */
		v *= 1000;
		atomic_store_explicit(&ns, v, memory_order_relaxed);
	}
	return (uint64_t)v;
}

ssize_t pd_recvmsg_spin(int fd, struct msghdr *m, int flags)
{
	uint64_t spin = pd_sock_spin_ns(), end;

	if (spin) {
		end = pd_now_ns() + spin;
		do {
			ssize_t r = recvmsg(fd, m, flags | MSG_DONTWAIT);

			if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
				return r;
		} while (pd_now_ns() < end);
	}
	return recvmsg(fd, m, flags);
}

static int read_full(int fd, void *buf, size_t len, bool spin)
{
	char *p = buf;
	int sock = 1;
	size_t cap = pd_sock_recv_chunk();
	while (len) {
		/* on a socket, MSG_WAITALL: one wake-up per message instead of one per segment,
		 * but at most pd_sock_recv_chunk() per call (pd_util.h says why) */
		struct iovec v = {p, len < cap ? len : cap};
		struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
		ssize_t r = !sock  ? read(fd, p, len)
		            : spin ? pd_recvmsg_spin(fd, &m, MSG_WAITALL)
		                   : recvmsg(fd, &m, MSG_WAITALL);
		if (r < 0 && sock && errno == ENOTSOCK) {
			sock = 0;
			continue;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EPIPE;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int pd_read_full(int fd, void *buf, size_t len)
{
	return read_full(fd, buf, len, false);
}

int pd_read_full_spin(int fd, void *buf, size_t len)
{
	return read_full(fd, buf, len, true);
}

int pd_write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t r = send(fd, p, len, MSG_NOSIGNAL);
		if (r < 0 && errno == ENOTSOCK)
			r = write(fd, p, len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int pd_writev_full(int fd, struct iovec *iov, int n)
{
	return pd_writev_full_max(fd, iov, n, SIZE_MAX);
}

size_t pd_iov_cap(struct iovec *v, int n, size_t max, size_t *full)
{
	size_t t = 0;

	for (int i = 0; i < n; i++) {
		if (v[i].iov_len >= max - t) {
			*full = v[i].iov_len;
			v[i].iov_len = max - t;
			return (size_t)i + 1;
		}
		t += v[i].iov_len;
	}
	*full = v[n - 1].iov_len;
	return (size_t)n;
}

void pd_iov_advance(struct iovec **v, int *n, size_t done)
{
	while (*n > 0 && done >= (*v)->iov_len) {
		done -= (*v)->iov_len;
		(*v)++;
		(*n)--;
	}
	if (*n > 0) {
		(*v)->iov_base = (char *)(*v)->iov_base + done;
		(*v)->iov_len -= done;
	}
}

int pd_writev_full_max(int fd, struct iovec *iov, int n, size_t max)
{
	if (!max)
		max = SIZE_MAX;
	while (n > 0) {
		struct msghdr m = {0};
		size_t full, k = pd_iov_cap(iov, n, max, &full); /* at most max bytes this call */
		ssize_t w;
		m.msg_iov = iov;
		m.msg_iovlen = k;
		w = sendmsg(fd, &m, MSG_NOSIGNAL);
		iov[k - 1].iov_len = full;
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		pd_iov_advance(&iov, &n, (size_t)w);
	}
	return 0;
}

size_t pd_utf8_encode(uint32_t cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

size_t pd_utf8_seq(const unsigned char *s, size_t n, bool surrogates)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed && !surrogates)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

long pd_utf8_invalid_at(const char *s, size_t n, bool surrogates)
{
	for (size_t i = 0; i < n;) {
		size_t k = pd_utf8_seq((const unsigned char *)s + i, n - i, surrogates);
		if (!k)
			return (long)i;
		i += k;
	}
	return -1;
}

char *pd_vasprintf(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	return s;
}

char *pd_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	s = pd_vasprintf(fmt, ap);
	va_end(ap);
	return s;
}

void pd_seterr(char *err, size_t sz, const char *fmt, ...)
{
	va_list ap;
	if (!err || !sz)
		return;
	va_start(ap, fmt);
	vsnprintf(err, sz, fmt, ap);
	va_end(ap);
}

int pd_field_verr(const char *path, char *err, size_t sz, const char *field, const char *fmt,
                  va_list ap)
{
	int n = snprintf(err, sz, "%s: %s: ", path, field);
	if (n >= 0 && (size_t)n < sz)
		vsnprintf(err + n, sz - (size_t)n, fmt, ap);
	return -1;
}

int pd_field_err(const char *path, char *err, size_t sz, const char *field, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pd_field_verr(path, err, sz, field, fmt, ap);
	va_end(ap);
	return -1;
}

int pd_dir_count(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

void pd_deadline_in(struct timespec *ts, clockid_t clock, int ms)
{
	clock_gettime(clock, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}
