/* SPDX-License-Identifier: Apache-2.0 */
/* te_gpu: loads the CUDA runtime with dlopen (no CUDA headers or nvcc at build time), resolves
 * the few calls the engine needs, and gives the TCP transport pinned double-buffered staging. */
#include "te_gpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"
#include "te.h"

/* The few runtime declarations used (cuda_runtime_api.h, stable since CUDA 10). */
typedef int cuerr_t;
typedef void *custream_t;
typedef void *cuevent_t;
#define CU_MEMCPY_DEFAULT       4
#define CU_STREAM_NON_BLOCKING  1
#define CU_EVENT_DISABLE_TIMING 2
#define CU_MEMTYPE_DEVICE       2
struct cu_ptr_attr { /* cudaPointerAttributes, CUDA >= 11 layout */
	int type;    /* cudaMemoryType: 0 unregistered, 1 host, 2 device, 3 managed */
	int device;
	void *dptr, *hptr;
	long reserved[8];  /* CUDA 13 */
	long headroom[24]; /* room for fields a later runtime may add */
};
struct cu_ipc_handle { /* cudaIpcMemHandle_t, passed by value to cudaIpcOpenMemHandle */
	unsigned char reserved[TE_GPU_IPC_HANDLE_LEN];
};
#define CU_IPC_LAZY_PEER_ACCESS 1   /* cudaIpcMemLazyEnablePeerAccess */
#define CU_ERR_PEER_ENABLED     704 /* cudaErrorPeerAccessAlreadyEnabled */

static struct {
	void *lib;
	char libname[32];
	cuerr_t (*GetDeviceCount)(int *);
	cuerr_t (*SetDevice)(int);
	cuerr_t (*Malloc)(void **, size_t);
	cuerr_t (*Free)(void *);
	cuerr_t (*MallocHost)(void **, size_t);
	cuerr_t (*FreeHost)(void *);
	cuerr_t (*Memcpy)(void *, const void *, size_t, int);
	cuerr_t (*MemcpyAsync)(void *, const void *, size_t, int, custream_t);
	cuerr_t (*Memset)(void *, int, size_t);
	cuerr_t (*DeviceSynchronize)(void);
	cuerr_t (*StreamCreateWithFlags)(custream_t *, unsigned);
	cuerr_t (*StreamSynchronize)(custream_t);
	cuerr_t (*StreamDestroy)(custream_t);
	cuerr_t (*EventCreateWithFlags)(cuevent_t *, unsigned);
	cuerr_t (*EventRecord)(cuevent_t, custream_t);
	cuerr_t (*EventSynchronize)(cuevent_t);
	cuerr_t (*EventDestroy)(cuevent_t);
	cuerr_t (*PointerGetAttributes)(struct cu_ptr_attr *, const void *);
	const char *(*GetErrorString)(cuerr_t);
	/* optional (te_ipc.c, references): NULL when the runtime lacks them */
	cuerr_t (*GetDevice)(int *);
	cuerr_t (*GetLastError)(void);
	cuerr_t (*IpcGetMemHandle)(struct cu_ipc_handle *, void *);
	cuerr_t (*IpcOpenMemHandle)(void **, struct cu_ipc_handle, unsigned);
	cuerr_t (*IpcCloseMemHandle)(void *);
	cuerr_t (*MemcpyPeerAsync)(void *, int, const void *, int, size_t, custream_t);
	cuerr_t (*DeviceCanAccessPeer)(int *, int, int);
	cuerr_t (*DeviceEnablePeerAccess)(int, unsigned);
	int (*cuMemGetAddressRange)(uintptr_t *, size_t *, uintptr_t); /* libcuda, CUresult */
	cuerr_t (*RuntimeGetVersion)(int *);
	/* cudaMemcpyBatchAsync (12.8+): 12.x has a failIdx argument before the stream, 13.0
	 * dropped it; which one is chosen by cudaRuntimeGetVersion */
	void *MemcpyBatchAsync;
	int rtver;
	bool batch_off; /* PDKV_TE_CUDA_BATCH=0 */
	int ndev;
	char why[256];
} cu;

static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void)
{
	static const char *const libs[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
	const char *forced = pd_env_str("PDKV_CUDART");
	int n = 0;
	cuerr_t e;

	for (size_t i = 0; !cu.lib && i < PD_ARRAY_SIZE(libs) + 1; i++) {
		const char *nm = i == 0 ? forced : libs[i - 1];
		if (!nm || !*nm)
			continue;
		cu.lib = dlopen(nm, RTLD_NOW | RTLD_LOCAL);
		if (cu.lib)
			snprintf(cu.libname, sizeof(cu.libname), "%s", nm);
	}
	if (!cu.lib) {
		snprintf(cu.why, sizeof(cu.why),
		         "no CUDA runtime library (libcudart.so.13/.12/.so not found; set "
		         "LD_LIBRARY_PATH or PDKV_CUDART)");
		return;
	}
#define SYM(f)                                                                                     \
	do {                                                                                       \
		*(void **)&cu.f = dlsym(cu.lib, "cuda" #f);                                        \
		if (!cu.f) {                                                                       \
			snprintf(cu.why, sizeof(cu.why), "%s lacks cuda" #f, cu.libname);          \
			return;                                                                    \
		}                                                                                  \
	} while (0)
	SYM(GetDeviceCount);
	SYM(SetDevice);
	SYM(Malloc);
	SYM(Free);
	SYM(MallocHost);
	SYM(FreeHost);
	SYM(Memcpy);
	SYM(MemcpyAsync);
	SYM(Memset);
	SYM(DeviceSynchronize);
	SYM(StreamCreateWithFlags);
	SYM(StreamSynchronize);
	SYM(StreamDestroy);
	SYM(EventCreateWithFlags);
	SYM(EventRecord);
	SYM(EventSynchronize);
	SYM(EventDestroy);
	SYM(PointerGetAttributes);
	SYM(GetErrorString);
#undef SYM
#define OPT(f) (*(void **)&cu.f = dlsym(cu.lib, "cuda" #f))
	OPT(GetDevice);
	OPT(GetLastError);
	OPT(IpcGetMemHandle);
	OPT(IpcOpenMemHandle);
	OPT(IpcCloseMemHandle);
	OPT(MemcpyPeerAsync);
	OPT(DeviceCanAccessPeer);
	OPT(DeviceEnablePeerAccess);
	OPT(RuntimeGetVersion);
	OPT(MemcpyBatchAsync);
#undef OPT
	if (cu.RuntimeGetVersion && cu.RuntimeGetVersion(&cu.rtver))
		cu.rtver = 0;
	bool batch = true;
	pd_env_bool("PDKV_TE_CUDA_BATCH", &batch);
	cu.batch_off = !batch;
	e = cu.GetDeviceCount(&n);
	if (e || n <= 0) {
		snprintf(cu.why, sizeof(cu.why), "%s: cudaGetDeviceCount: %s", cu.libname,
		         e ? cu.GetErrorString(e) : "0 devices");
		return;
	}
	cu.ndev = n;
	/* the driver library the runtime has just loaded; only for allocation ranges */
	void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (drv)
		*(void **)&cu.cuMemGetAddressRange = dlsym(drv, "cuMemGetAddressRange_v2");
	pd_dbg("te: %s loaded, %d CUDA device(s)", cu.libname, n);
}

static int ready(void)
{
	pthread_once(&cu_once, cu_load);
	return cu.ndev;
}

int te_gpu_device_count(char *why, size_t whylen)
{
	int n = ready();
	if (!n && why && whylen)
		snprintf(why, whylen, "%s", cu.why);
	return n;
}

int te_gpu_probe(const void *p)
{
	static const char *const libs[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
	struct cu_ptr_attr a;
	bool loaded = false;

	for (size_t i = 0; i < PD_ARRAY_SIZE(libs) && !loaded; i++) {
		void *h = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
		if (h) {
			loaded = true;
			dlclose(h);
		}
	}
	if (!loaded || !ready())
		return -1;
	memset(&a, 0, sizeof(a));
	if (cu.PointerGetAttributes(&a, p) || a.type != CU_MEMTYPE_DEVICE)
		return -1;
	return a.device;
}

int te_gpu_parse_location(const char *loc, int *dev)
{
	int64_t v;

	*dev = -1;
	if (!loc || strncmp(loc, "cuda:", 5))
		return 0;
	if (pd_parse_i64(loc + 5, &v) || v < 0 || v > 1023 || loc[5] == '+' || loc[5] == ' ')
		return TE_ERR_INVALID_ARGUMENT;
	*dev = (int)v;
	return 1;
}

/* Makes dev current for this thread; logs what failed. */
static int use(int dev, const char *what)
{
	cuerr_t e;
	if (!ready() || dev < 0 || dev >= cu.ndev) {
		pd_err("te: %s: CUDA device %d not available (%s)", what, dev,
		       cu.ndev ? "out of range" : cu.why);
		return TE_ERR_DEVICE_NOT_FOUND;
	}
	e = cu.SetDevice(dev);
	if (e) {
		pd_err("te: %s: cudaSetDevice(%d): %s", what, dev, cu.GetErrorString(e));
		return TE_ERR_DEVICE_NOT_FOUND;
	}
	return 0;
}

static int fail(cuerr_t e, const char *call, size_t len)
{
	pd_err("te: %s of %zu bytes: %s", call, len, cu.GetErrorString(e));
	return TE_ERR_MEMORY;
}

int te_gpu_check_buffer(const void *p, size_t len, int dev, char *why, size_t whylen)
{
	struct cu_ptr_attr a[2];
	cuerr_t e;
	int n = ready();

	if (dev >= n) {
		if (n)
			snprintf(why, whylen, "%d CUDA device(s) found (cuda:0..cuda:%d)", n,
			         n - 1);
		else
			snprintf(why, whylen, "%s", cu.why);
		return TE_ERR_DEVICE_NOT_FOUND;
	}
	/* both ends: a range running past one allocation is caught when the last byte isn't
	 * device memory of dev (it may still span two allocations; the copies would then fail) */
	for (int i = 0; i < 2; i++) {
		const char *q = (const char *)p + (i ? len - 1 : 0);
		memset(&a[i], 0, sizeof(a[i]));
		e = cu.PointerGetAttributes(&a[i], q);
		if (e) {
			snprintf(why, whylen, "cudaPointerGetAttributes(%p): %s", (const void *)q,
			         cu.GetErrorString(e));
			return TE_ERR_INVALID_ARGUMENT;
		}
		if (a[i].type != CU_MEMTYPE_DEVICE || a[i].device != dev) {
			snprintf(why, whylen,
			         "%p is %s memory%s (type %d, device %d), not device "
			         "memory of cuda:%d",
			         (const void *)q,
			         a[i].type == 1   ? "pinned host"
			         : a[i].type == 3 ? "managed"
			         : a[i].type == 2 ? "device"
			                          : "plain host",
			         i ? " at the range's end" : "", a[i].type, a[i].device, dev);
			return TE_ERR_INVALID_ARGUMENT;
		}
	}
	return 0;
}

int te_gpu_malloc(int dev, size_t len, void **out)
{
	cuerr_t e;
	int ret = use(dev, "cudaMalloc");
	*out = NULL;
	if (ret)
		return ret;
	e = cu.Malloc(out, len);
	if (e) {
		*out = NULL;
		return fail(e, "cudaMalloc", len);
	}
	return 0;
}

void te_gpu_free(void *p)
{
	if (p && ready())
		cu.Free(p);
}

void *te_gpu_host_alloc(size_t len, bool *pinned)
{
	void *p = NULL;
	*pinned = false;
	if (ready() && !cu.MallocHost(&p, len) && p) {
		*pinned = true;
		return p;
	}
	return malloc(len);
}

void te_gpu_host_free(void *p, bool pinned)
{
	if (pinned)
		cu.FreeHost(p);
	else
		free(p);
}

int te_gpu_copy(int dev, void *dst, const void *src, size_t len)
{
	cuerr_t e;
	int ret = use(dev, "cudaMemcpy");
	if (ret)
		return ret;
	e = cu.Memcpy(dst, src, len, CU_MEMCPY_DEFAULT);
	return e ? fail(e, "cudaMemcpy", len) : 0;
}

int te_gpu_memset(int dev, void *p, int value, size_t len)
{
	cuerr_t e;
	int ret = use(dev, "cudaMemset");
	if (ret)
		return ret;
	e = cu.Memset(p, value, len);
	if (!e)
		e = cu.DeviceSynchronize();
	return e ? fail(e, "cudaMemset", len) : 0;
}

int te_gpu_sync(int dev)
{
	cuerr_t e;
	int ret = use(dev, "cudaDeviceSynchronize");
	if (ret)
		return ret;
	e = cu.DeviceSynchronize();
	return e ? fail(e, "cudaDeviceSynchronize", 0) : 0;
}

/* ---------------------------------------------------------------- staging */
struct te_gpu_stage {
	int dev;
	size_t chunk;
	char *buf[2];
	bool pinned[2];
	custream_t stream;
	cuevent_t ev[2];
	int next;
};

size_t te_gpu_chunk(void)
{
	static size_t chunk;
	if (!chunk) {
		uint64_t v;

		pd_env_size("PDKV_GPU_CHUNK", &v); /* 64K..64M, default 2M */
		chunk = (size_t)v;
	}
	return chunk;
}

void te_gpu_stage_free(struct te_gpu_stage *s)
{
	if (!s)
		return;
	if (s->stream) {
		cu.SetDevice(s->dev);
		cu.StreamSynchronize(s->stream);
		cu.StreamDestroy(s->stream);
	}
	for (int k = 0; k < 2; k++) {
		if (s->ev[k])
			cu.EventDestroy(s->ev[k]);
		if (s->buf[k])
			te_gpu_host_free(s->buf[k], s->pinned[k]);
	}
	free(s);
}

int te_gpu_stage_get(struct te_gpu_stage **sp, int dev)
{
	struct te_gpu_stage *s = *sp;
	cuerr_t e = 0;
	int ret;

	ret = use(dev, "staging");
	if (ret)
		return ret;
	if (s && s->dev == dev)
		return 0;
	te_gpu_stage_free(s);
	*sp = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return TE_ERR_MEMORY;
	s->dev = dev;
	s->chunk = te_gpu_chunk();
	for (int k = 0; k < 2 && !e; k++) {
		s->buf[k] = te_gpu_host_alloc(s->chunk, &s->pinned[k]);
		if (!s->buf[k]) {
			te_gpu_stage_free(s);
			return TE_ERR_MEMORY;
		}
		e = cu.EventCreateWithFlags(&s->ev[k], CU_EVENT_DISABLE_TIMING);
	}
	if (!e)
		e = cu.StreamCreateWithFlags(&s->stream, CU_STREAM_NON_BLOCKING);
	if (e) {
		pd_err("te: CUDA staging on cuda:%d: %s", dev, cu.GetErrorString(e));
		te_gpu_stage_free(s);
		return TE_ERR_MEMORY;
	}
	*sp = s;
	return 0;
}

int te_gpu_stage_next(struct te_gpu_stage *s)
{
	int k = s->next;
	s->next ^= 1;
	return k;
}

int te_gpu_stage_last(const struct te_gpu_stage *s)
{
	return s->next ^ 1;
}

char *te_gpu_stage_buf(struct te_gpu_stage *s, int k)
{
	return s->buf[k & 1];
}

int te_gpu_stage_copy(struct te_gpu_stage *s, int k, void *dst, const void *src, size_t len)
{
	cuerr_t e = cu.MemcpyAsync(dst, src, len, CU_MEMCPY_DEFAULT, s->stream);
	if (!e)
		e = cu.EventRecord(s->ev[k & 1], s->stream);
	return e ? fail(e, "cudaMemcpyAsync", len) : 0;
}

int te_gpu_stage_wait(struct te_gpu_stage *s, int k)
{
	cuerr_t e = cu.EventSynchronize(s->ev[k & 1]);
	return e ? fail(e, "cudaEventSynchronize", 0) : 0;
}

int te_gpu_stage_drain(struct te_gpu_stage *s)
{
	cuerr_t e = cu.StreamSynchronize(s->stream);
	return e ? fail(e, "cudaStreamSynchronize", 0) : 0;
}

/* ---------------------------------------------------------------- IPC and async copies */
/* Makes dev current and remembers the caller's device in *prev (restored by back()). */
static int enter(int dev, const char *what, int *prev)
{
	*prev = -1;
	if (ready() && cu.GetDevice)
		cu.GetDevice(prev);
	return use(dev, what);
}

static void back(int prev)
{
	if (prev >= 0)
		cu.SetDevice(prev);
}

int te_gpu_ptr_device(const void *p)
{
	struct cu_ptr_attr a;
	if (!ready())
		return -1;
	memset(&a, 0, sizeof(a));
	if (cu.PointerGetAttributes(&a, p) || a.type != CU_MEMTYPE_DEVICE) {
		if (cu.GetLastError)
			cu.GetLastError();
		return -1;
	}
	return a.device;
}

int te_gpu_ipc_export(const void *p, unsigned char h[TE_GPU_IPC_HANDLE_LEN], size_t *base_off,
                      char *why, size_t whylen)
{
	struct cu_ipc_handle hd;
	int dev = te_gpu_ptr_device(p), prev, ret;
	uintptr_t base = 0;
	size_t size = 0;
	cuerr_t e;

	*base_off = 0;
	if (dev < 0 || !cu.IpcGetMemHandle) {
		snprintf(why, whylen, "%s",
		         dev < 0 ? "not CUDA device memory" : "no cudaIpcGetMemHandle");
		return TE_ERR_INVALID_ARGUMENT;
	}
	ret = enter(dev, "cudaIpcGetMemHandle", &prev);
	if (ret)
		return ret;
	e = cu.IpcGetMemHandle(&hd, (void *)p);
	if (!e && cu.cuMemGetAddressRange && !cu.cuMemGetAddressRange(&base, &size, (uintptr_t)p) &&
	    base && base <= (uintptr_t)p)
		*base_off = (uintptr_t)p - base;
	back(prev);
	if (e) {
		snprintf(why, whylen, "cudaIpcGetMemHandle(%p): %s", p, cu.GetErrorString(e));
		return TE_ERR_MEMORY;
	}
	memcpy(h, hd.reserved, TE_GPU_IPC_HANDLE_LEN);
	return 0;
}

int te_gpu_ipc_open(int dev, const unsigned char h[TE_GPU_IPC_HANDLE_LEN], void **out, int *mdev,
                    char *why, size_t whylen)
{
	struct cu_ipc_handle hd;
	int prev, ret;
	cuerr_t e;

	*out = NULL;
	*mdev = -1;
	if (!ready() || !cu.IpcOpenMemHandle) {
		snprintf(why, whylen, "%s", cu.ndev ? "no cudaIpcOpenMemHandle" : cu.why);
		return TE_ERR_DEVICE_NOT_FOUND;
	}
	ret = enter(dev, "cudaIpcOpenMemHandle", &prev);
	if (ret) {
		snprintf(why, whylen, "CUDA device %d not available", dev);
		return ret;
	}
	memcpy(hd.reserved, h, TE_GPU_IPC_HANDLE_LEN);
	e = cu.IpcOpenMemHandle(out, hd, CU_IPC_LAZY_PEER_ACCESS);
	back(prev);
	if (e) {
		if (cu.GetLastError)
			cu.GetLastError();
		*out = NULL;
		snprintf(why, whylen, "cudaIpcOpenMemHandle: %s", cu.GetErrorString(e));
		return TE_ERR_MEMORY;
	}
	*mdev = te_gpu_ptr_device(*out);
	return 0;
}

void te_gpu_ipc_close(void *p)
{
	if (p && ready() && cu.IpcCloseMemHandle)
		cu.IpcCloseMemHandle(p);
}

int te_gpu_enable_peer(int dev, int peer)
{
	int can = 0, prev;
	cuerr_t e;

	if (dev == peer)
		return 1;
	if (!ready() || !cu.DeviceCanAccessPeer || !cu.DeviceEnablePeerAccess ||
	    cu.DeviceCanAccessPeer(&can, dev, peer) || !can)
		return 0;
	if (enter(dev, "cudaDeviceEnablePeerAccess", &prev))
		return 0;
	e = cu.DeviceEnablePeerAccess(peer, 0);
	if (e && cu.GetLastError)
		cu.GetLastError(); /* "already enabled" must not linger as the last error */
	back(prev);
	if (e && e != CU_ERR_PEER_ENABLED) {
		pd_warn("te: cudaDeviceEnablePeerAccess(cuda:%d -> cuda:%d): %s", dev, peer,
		        cu.GetErrorString(e));
		return 0;
	}
	return 1;
}

int te_gpu_stream_new(int dev, void **stream)
{
	int prev, ret = enter(dev, "cudaStreamCreate", &prev);
	cuerr_t e;
	*stream = NULL;
	if (ret)
		return ret;
	/* a blocking stream: its copies wait for work queued before them on the legacy default
	 * stream — a cudaMemcpy from pageable memory returns before its DMA has landed */
	e = cu.StreamCreateWithFlags(stream, 0);
	back(prev);
	return e ? fail(e, "cudaStreamCreateWithFlags", 0) : 0;
}

void te_gpu_stream_free(int dev, void *stream)
{
	int prev;
	if (!stream || enter(dev, "cudaStreamDestroy", &prev))
		return;
	cu.StreamSynchronize(stream);
	cu.StreamDestroy(stream);
	back(prev);
}

int te_gpu_stream_sync(void *stream)
{
	cuerr_t e = cu.StreamSynchronize(stream);
	return e ? fail(e, "cudaStreamSynchronize", 0) : 0;
}

int te_gpu_event_new(int dev, void **ev)
{
	int prev, ret = enter(dev, "cudaEventCreate", &prev);
	cuerr_t e;
	*ev = NULL;
	if (ret)
		return ret;
	e = cu.EventCreateWithFlags(ev, CU_EVENT_DISABLE_TIMING);
	back(prev);
	return e ? fail(e, "cudaEventCreateWithFlags", 0) : 0;
}

void te_gpu_event_free(void *ev)
{
	if (ev)
		cu.EventDestroy(ev);
}

int te_gpu_event_record(void *ev, void *stream)
{
	cuerr_t e = cu.EventRecord(ev, stream);
	return e ? fail(e, "cudaEventRecord", 0) : 0;
}

int te_gpu_event_wait(void *ev)
{
	cuerr_t e = cu.EventSynchronize(ev);
	return e ? fail(e, "cudaEventSynchronize", 0) : 0;
}

/* cudaMemcpyAttributes / cudaMemLocation (12.8+) */
struct cu_mem_loc {
	int type, id;
};
struct cu_memcpy_attr {
	int src_access_order; /* cudaMemcpySrcAccessOrderStream = 1 */
	struct cu_mem_loc src_hint, dst_hint;
	unsigned flags;
};

int te_gpu_copy_batch_async(int dev, void *const *dst, const void *const *src, const size_t *len,
                            size_t n, void *stream)
{
	struct cu_memcpy_attr a = {.src_access_order = 1};
	size_t idx = 0, fail_idx = 0;
	int prev, ret;
	cuerr_t e;

	if (!ready() || !cu.MemcpyBatchAsync || cu.batch_off || cu.rtver < 12080 || !n)
		return 1;
	if ((ret = enter(dev, "cudaMemcpyBatchAsync", &prev)))
		return ret;
	if (cu.rtver >= 13000)
		e = ((cuerr_t(*)(const void *const *, const void *const *, const size_t *, size_t,
		                 struct cu_memcpy_attr *, size_t *, size_t,
		                 custream_t))cu.MemcpyBatchAsync)((const void *const *)dst, src,
		                                                  len, n, &a, &idx, 1, stream);
	else
		e = ((cuerr_t(*)(void *const *, const void *const *, const size_t *, size_t,
		                 struct cu_memcpy_attr *, size_t *, size_t, size_t *,
		                 custream_t))cu.MemcpyBatchAsync)(dst, src, len, n, &a, &idx, 1,
		                                                  &fail_idx, stream);
	back(prev);
	if (e) {
		if (cu.GetLastError)
			cu.GetLastError();
		pd_dbg("te: cudaMemcpyBatchAsync of %zu copies: %s (copy %zu); one call per copy",
		       n, cu.GetErrorString(e), fail_idx);
		return 1;
	}
	return 0;
}

int te_gpu_copy_async(int dev, void *dst, int ddev, const void *src, int sdev, size_t len,
                      void *stream)
{
	int prev, ret = enter(dev, "cudaMemcpyAsync", &prev);
	cuerr_t e;
	if (ret)
		return ret;
	if (ddev >= 0 && sdev >= 0 && ddev != sdev && cu.MemcpyPeerAsync)
		e = cu.MemcpyPeerAsync(dst, ddev, src, sdev, len, stream);
	else
		e = cu.MemcpyAsync(dst, src, len, CU_MEMCPY_DEFAULT, stream);
	back(prev);
	return e ? fail(e, "cudaMemcpyAsync", len) : 0;
}
