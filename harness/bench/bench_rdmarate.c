/* SPDX-License-Identifier: Apache-2.0 */
/* bench_rdmarate: the line rate pdkv bench reports "% line rate" against (port 1 active speed x
 * width of every device in --device_name, summed) and the GID index ib_write_bw is given. */
#include "bench.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_env.h"
#include "pd_ibrate.h"

static bool listed(const char *names, const char *n)
{
	size_t l = strlen(n);

	if (!names || !*names)
		return true;
	for (const char *p = names; *p;) {
		size_t k = strcspn(p, ",");
		if (k == l && !strncmp(p, n, l))
			return true;
		p += k + (p[k] == ',');
	}
	return false;
}

static void addf(char *buf, size_t len, const char *fmt, const char *dev, double a, double b)
{
	size_t u = strlen(buf);
	if (u < len)
		snprintf(buf + u, len - u, fmt, u ? " + " : "", dev, a, b);
}

int bench_rdma_line_rate(const char *devices, double *gbps, char *desc, size_t desclen)
{
	struct ibv_device **l;
	int n = 0, counted = 0;
	char skipped[256] = "";

	*gbps = 0;
	desc[0] = '\0';
	l = ibv_get_device_list(&n);
	if (!l || n <= 0) {
		snprintf(desc, desclen, "no RDMA device on this host (%s)",
		         l ? "ibv_get_device_list found none" : strerror(errno));
		if (l)
			ibv_free_device_list(l);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(l[i]);
		struct ibv_context *ctx;
		struct ibv_port_attr pa;
		double g;

		if (!listed(devices, name))
			continue;
		ctx = ibv_open_device(l[i]);
		if (!ctx || ibv_query_port(ctx, 1, &pa) || pa.state != IBV_PORT_ACTIVE) {
			size_t u = strlen(skipped);
			snprintf(skipped + u, sizeof(skipped) - u, " %s%s", name,
			         ctx ? "(port 1 not ACTIVE)" : "(cannot open)");
			if (ctx)
				ibv_close_device(ctx);
			continue;
		}
		ibv_close_device(ctx);
		g = pd_ib_lane_gbps(pa.active_speed) * pd_ib_lanes(pa.active_width);
		if (!(g > 0)) {
			size_t u = strlen(skipped);
			snprintf(skipped + u, sizeof(skipped) - u, " %s(unknown speed %u/width %u)",
			         name, pa.active_speed, pa.active_width);
			continue;
		}
		addf(desc, desclen, "%s%s %.0fx %.4g Gb/s", name, pd_ib_lanes(pa.active_width),
		     pd_ib_lane_gbps(pa.active_speed));
		*gbps += g;
		counted++;
	}
	ibv_free_device_list(l);
	if (!counted)
		snprintf(desc, desclen, "no ACTIVE port with a known speed among %s%s",
		         devices && *devices ? devices : "the host's devices",
		         skipped[0] ? skipped : "");
	else if (skipped[0]) {
		size_t u = strlen(desc);
		snprintf(desc + u, desclen > u ? desclen - u : 0, "; not counted:%s", skipped);
	}
	return counted;
}

int bench_rdma_gid_index(const char *dev)
{
	struct ibv_device **l;
	struct ibv_context *ctx = NULL;
	struct ibv_port_attr pa;
	int64_t env;
	int n = 0, gi = -1;

	/* as the engine reads it: MC_GID_INDEX, else NCCL_IB_GID_INDEX, 0..255 */
	if (pd_env_int_or("MC_GID_INDEX", "NCCL_IB_GID_INDEX", &env) == 1)
		return (int)env;
	l = ibv_get_device_list(&n);
	for (int i = 0; l && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(l[i]), dev))
			ctx = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	if (!ctx)
		return -1;
	if (!ibv_query_port(ctx, 1, &pa))
		for (int i = 0; i < pa.gid_tbl_len && gi < 0; i++) {
			struct ibv_gid_entry e;
			bool v4;
			if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
				continue;
			v4 = !memcmp(e.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12);
			if ((e.gid_type == IBV_GID_TYPE_ROCE_V2 && v4) ||
			    e.gid_type == IBV_GID_TYPE_IB)
				gi = i;
		}
	ibv_close_device(ctx);
	return gi < 0 ? 0 : gi;
}
