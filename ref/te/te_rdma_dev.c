/* SPDX-License-Identifier: Apache-2.0 */
/* te_rdma_dev: RDMA device contexts — MC_* knobs, device open, port state, GID choice, MTU, and
 * memory registration, each failure reported with the fix a user needs (docs/rdma.md). */
#include "te_rdma.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"

/* An INT row of the pd_env table (its range and default are the row's; a bad value warns). */
static int env_int(const char *name)
{
	int64_t x;

	pd_env_int(name, &x);
	return (int)x;
}

void te_rdma_cfg_load(struct te_rdma_cfg *cfg)
{
	int64_t gid;

	cfg->ib_port = env_int("MC_IB_PORT");
	/* unset or bad (warned, naming the variable): the first RoCEv2 IPv4 GID */
	cfg->gid_index =
	    pd_env_int_or("MC_GID_INDEX", "NCCL_IB_GID_INDEX", &gid) == 1 ? (int)gid : -1;
	cfg->mtu = env_int("MC_MTU");
	if (cfg->mtu != 512 && cfg->mtu != 1024 && cfg->mtu != 2048 && cfg->mtu != 4096) {
		pd_warn(
		    "rdma: MC_MTU=%d is not 512|1024|2048|4096 (Mooncake exits on it); using 4096",
		    cfg->mtu);
		cfg->mtu = 4096;
	}
	cfg->num_qp_per_ep = env_int("MC_NUM_QP_PER_EP");
	cfg->max_wr = env_int("MC_MAX_WR");
	cfg->max_sge = env_int("MC_MAX_SGE");
	cfg->max_inline = env_int("MC_MAX_INLINE");
	cfg->max_cqe = env_int("MC_MAX_CQE_PER_CTX");
	cfg->slice_size = (size_t)env_int("MC_SLICE_SIZE");
	cfg->retry_cnt = env_int("MC_RETRY_CNT");
	cfg->hs_timeout_ms = env_int("MC_HANDSHAKE_CONNECT_TIMEOUT") * 1000;
	/* pdkv addition: a QP whose peer vanished should end in RETRY_EXC_ERR within ~1 s, but
	 * Soft-RoCE (6.1) can stay silent forever; no progress for this long resets the endpoint */
	cfg->stall_ms = env_int("PDKV_RDMA_STALL_S") * 1000;
	cfg->fault_reset = env_int("PDKV_RDMA_FAULT_RESET");
	cfg->busy_poll = env_int("PDKV_RDMA_BUSY_POLL");
}

void te_rdma_gid_str(const union ibv_gid *g, char out[48])
{
	char *p = out;

	for (int i = 0; i < 16; i++)
		p += sprintf(p, i ? ":%02x" : "%02x", g->raw[i]);
}

int te_rdma_gid_parse(const char *s, union ibv_gid *g)
{
	for (int i = 0; i < 16; i++) {
		char *end;
		unsigned long v = strtoul(s, &end, 16);

		if (end == s || v > 0xff || (i < 15 && *end != ':') || (i == 15 && *end))
			return TE_ERR_INVALID_ARGUMENT;
		g->raw[i] = (uint8_t)v;
		s = end + 1;
	}
	return 0;
}

/* NUMA node as Mooncake's discovery reads it: numa_node two levels above the device's sysfs
 * entry (the PCI function); -1 when there is none (rxe lives under /sys/devices/virtual). */
static int dev_numa(const char *dev)
{
	char path[PATH_MAX + 32], real[PATH_MAX], *txt = NULL;
	int64_t v = -1;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", dev);
	if (!realpath(path, real))
		return -1;
	snprintf(path, sizeof(path), "%s/../../numa_node", real);
	if (pd_read_file(path, 64, &txt, NULL)) /* absent: no NUMA node */
		return -1;
	txt[strcspn(txt, " \n")] = 0;
	if (pd_parse_i64(txt, &v) || v < 0)
		v = -1;
	free(txt);
	return (int)v;
}

static bool gid_zero(const union ibv_gid *g)
{
	for (int i = 0; i < 16; i++)
		if (g->raw[i])
			return false;
	return true;
}

static bool gid_v4mapped(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

int te_rdma_pick_gid(struct ibv_context *ctx, uint8_t port, int tbl_len)
{
	for (int i = 0; i < tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, port, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_IB && !gid_zero((union ibv_gid *)e.gid.raw))
			return i;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && gid_v4mapped((union ibv_gid *)e.gid.raw))
			return i;
	}
	return 0;
}

const char *te_rdma_mtu_str(enum ibv_mtu m)
{
	switch (m) {
	case IBV_MTU_256:
		return "256";
	case IBV_MTU_512:
		return "512";
	case IBV_MTU_1024:
		return "1024";
	case IBV_MTU_2048:
		return "2048";
	case IBV_MTU_4096:
		return "4096";
	}
	return "?";
}

static enum ibv_mtu mtu_enum(int bytes)
{
	return bytes >= 4096   ? IBV_MTU_4096
	       : bytes >= 2048 ? IBV_MTU_2048
	       : bytes >= 1024 ? IBV_MTU_1024
	       : bytes >= 512  ? IBV_MTU_512
	                       : IBV_MTU_256;
}

static int open_ctx(struct te_rdma *tr, struct ibv_device *dev, struct te_rdma_ctx *c)
{
	const struct te_rdma_cfg *cfg = &tr->cfg;
	struct ibv_port_attr pa;
	struct ibv_device_attr da;
	int gi;

	snprintf(c->name, sizeof(c->name), "%s", ibv_get_device_name(dev));
	c->tr = tr;
	c->port = (uint8_t)cfg->ib_port;
	c->ctx = ibv_open_device(dev);
	if (!c->ctx) {
		pd_err(
		    "rdma: cannot open device %s: %s (is /dev/infiniband/uverbs* accessible? in a "
		    "container pass --device=/dev/infiniband or --privileged)",
		    c->name, strerror(errno));
		return TE_ERR_CONTEXT;
	}
	if (ibv_query_device(c->ctx, &da) || ibv_query_port(c->ctx, c->port, &pa)) {
		pd_err("rdma: %s: cannot query device/port %d: %s (MC_IB_PORT selects the port)",
		       c->name, c->port, strerror(errno));
		return TE_ERR_CONTEXT;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		pd_err("rdma: %s port %d is %s, not ACTIVE: bring the link up (cable, switch, `ip "
		       "link "
		       "set <netdev> up` for RoCE), or name another device in device_name / port "
		       "with MC_IB_PORT",
		       c->name, c->port, ibv_port_state_str(pa.state));
		return TE_ERR_CONTEXT;
	}
	gi = cfg->gid_index >= 0 ? cfg->gid_index
	                         : te_rdma_pick_gid(c->ctx, c->port, pa.gid_tbl_len);
	if (gi >= pa.gid_tbl_len) {
		pd_err("rdma: %s: GID index %d is outside the GID table (%d entries); set "
		       "MC_GID_INDEX "
		       "to a valid index (`pdkv doctor` lists the table)",
		       c->name, gi, pa.gid_tbl_len);
		return TE_ERR_CONTEXT;
	}
	c->gid_index = gi;
	if (ibv_query_gid(c->ctx, c->port, gi, &c->gid) || gid_zero(&c->gid)) {
		pd_err(
		    "rdma: %s port %d GID index %d is all zero (no IP address on the RoCE "
		    "netdev?): "
		    "give the interface an IPv4 address or set MC_GID_INDEX to a populated entry "
		    "(`pdkv doctor` lists the table)",
		    c->name, c->port, gi);
		return TE_ERR_CONTEXT;
	}
	te_rdma_gid_str(&c->gid, c->gid_str);
	c->lid = pa.lid;
	c->numa = dev_numa(c->name);
	c->path_mtu = pa.active_mtu < mtu_enum(cfg->mtu) ? pa.active_mtu : mtu_enum(cfg->mtu);
	c->max_rd_atomic = da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16;
	if (da.max_qp_init_rd_atom < c->max_rd_atomic)
		c->max_rd_atomic = da.max_qp_init_rd_atom;
	if (c->max_rd_atomic < 1)
		c->max_rd_atomic = 1;
	c->cq_depth = cfg->max_cqe < da.max_cqe ? cfg->max_cqe : da.max_cqe;
	c->pd = ibv_alloc_pd(c->ctx);
	c->chan = c->pd ? ibv_create_comp_channel(c->ctx) : NULL;
	if (c->chan)
		fcntl(c->chan->fd, F_SETFL, fcntl(c->chan->fd, F_GETFL) | O_NONBLOCK);
	c->cq = c->chan ? ibv_create_cq(c->ctx, c->cq_depth, NULL, c->chan, 0) : NULL;
	if (!c->cq) {
		pd_err("rdma: %s: cannot allocate PD/CQ of %d entries: %s", c->name, c->cq_depth,
		       strerror(errno));
		return TE_ERR_CONTEXT;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	pd_info("rdma: %s port %d ACTIVE, GID[%d] %s, lid %u, MTU %s (active %s, MC_MTU %d)",
	        c->name, c->port, gi, c->gid_str, c->lid, te_rdma_mtu_str(c->path_mtu),
	        te_rdma_mtu_str(pa.active_mtu), cfg->mtu);
	return 0;
}

void te_rdma_close_ctx(struct te_rdma_ctx *c)
{
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->chan)
		ibv_destroy_comp_channel(c->chan);
	c->chan = NULL;
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->ctx)
		ibv_close_device(c->ctx);
	c->cq = NULL;
	c->pd = NULL;
	c->ctx = NULL;
}

static bool name_listed(const char *names, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = names; p && *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == n && !strncmp(p, name, n))
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

int te_rdma_open_devices(struct te_rdma *tr, const char *names)
{
	struct ibv_device **list;
	char avail[512] = "";
	int n = 0, rc = 0;

	if (names && !*names)
		names = NULL;
	errno = 0;
	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		pd_err(
		    "rdma: no RDMA device found (%s): this host has no RDMA NIC or the driver is "
		    "not loaded (check `ibv_devices`, `rdma link`; for Soft-RoCE `rdma link add "
		    "rxe0 type rxe netdev <if>`), or use protocol \"tcp\"",
		    errno ? strerror(errno) : "empty device list");
		rc = TE_ERR_DEVICE_NOT_FOUND;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		size_t l = strlen(avail);

		snprintf(avail + l, sizeof(avail) - l, "%s%s", l ? "," : "",
		         ibv_get_device_name(list[i]));
	}
	/* every listed name must exist (a typo would silently lose a rail otherwise) */
	for (const char *p = names; p && *p;) {
		const char *e = strchr(p, ',');
		int l = e ? (int)(e - p) : (int)strlen(p);
		bool found = false;

		for (int i = 0; i < n; i++)
			if ((int)strlen(ibv_get_device_name(list[i])) == l &&
			    !strncmp(ibv_get_device_name(list[i]), p, l))
				found = true;
		if (!found) {
			pd_err("rdma: device_name lists \"%.*s\" but this host has no such RDMA "
			       "device "
			       "(available: %s); fix device_name in mooncake.json / --device_name",
			       l, p, avail);
			rc = TE_ERR_DEVICE_NOT_FOUND;
			goto out;
		}
		p = e ? e + 1 : NULL;
	}
	for (int i = 0; i < n && tr->nctx < TE_MAX_DEVICES; i++) {
		struct te_rdma_ctx *c = &tr->ctxs[tr->nctx];

		if (names && !name_listed(names, ibv_get_device_name(list[i])))
			continue;
		rc = open_ctx(tr, list[i], c);
		if (rc) {
			te_rdma_close_ctx(c);
			memset(c, 0, sizeof(*c));
			/* a named device that cannot be used is an error; a discovered one is
			 * skipped */
			if (names)
				goto out;
			rc = 0;
			continue;
		}
		c->index = tr->nctx++;
	}
	if (tr->nctx == 0) {
		pd_err("rdma: none of the RDMA devices (%s) is usable (see the messages above)",
		       avail);
		rc = TE_ERR_DEVICE_NOT_FOUND;
	}
out:
	if (list)
		ibv_free_device_list(list);
	return rc;
}

static void memlock_hint(size_t len, int err)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		pd_err(
		    "rdma: ibv_reg_mr of %zu bytes failed (%s) and RLIMIT_MEMLOCK is %llu KiB: "
		    "raise "
		    "it with `ulimit -l unlimited` (limits.conf: `* - memlock unlimited`; docker: "
		    "`--ulimit memlock=-1`; systemd: LimitMEMLOCK=infinity)",
		    len, strerror(err), (unsigned long long)rl.rlim_cur / 1024);
	else
		pd_err("rdma: ibv_reg_mr of %zu bytes failed: %s (RLIMIT_MEMLOCK is unlimited; "
		       "check the address is mapped and the device's max_mr_size)",
		       len, strerror(err));
}

int te_rdma_reg(struct te_rdma *tr, void *addr, size_t len, struct te_rdma_mr **out)
{
	const int access =
	    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	struct te_rdma_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return TE_ERR_MEMORY;
	m->addr = (uintptr_t)addr;
	m->len = len;
	for (int i = 0; i < tr->nctx; i++) {
		m->mr[i] = ibv_reg_mr(tr->ctxs[i].pd, addr, len, access);
		if (!m->mr[i]) {
			int err = errno;

			memlock_hint(len, err);
			te_rdma_dereg(m);
			return TE_ERR_MEMORY;
		}
	}
	*out = m;
	return 0;
}

void te_rdma_dereg(struct te_rdma_mr *m)
{
	if (!m)
		return;
	for (int i = 0; i < TE_MAX_DEVICES; i++)
		if (m->mr[i])
			ibv_dereg_mr(m->mr[i]);
	free(m);
}
