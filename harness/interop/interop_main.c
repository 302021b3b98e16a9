/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-interop (`pdkv interop`, `make test-interop`): pdkv <-> a user's Mooncake
 * transfer_engine_bench, both directions, per metadata store; a PASS/FAIL/NOTRUN matrix. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_proc.h"
#include "testsvc/pd_svc.h"
#include "pd_util.h"
#include "te/te_inspect.h"
#include "pd_opt.h"

#define NSTORE 4
#define NDIR   3
static const char *const store_name[NSTORE] = {PD_META_P2P, PD_META_HTTP, PD_META_REDIS,
                                               PD_META_ETCD};
static const char *const dir_name[NDIR] = {"pdkv->Mooncake read+write", "Mooncake->pdkv write",
                                           "Mooncake->pdkv read"};
/* Which bytes each direction's PASS checked: pdkv's --check reads back every byte it moved; as
 * target, pdkv checks its whole buffer after Mooncake wrote; Mooncake's bench checks none of what
 * it reads, so that column proves the READs complete (pdkv's buffer still holds its pattern
 * afterwards), not the bytes that landed in Mooncake's memory. */
static const bool dir_bytes_checked[NDIR] = {true, true, false};
static const char *const dir_checks[NDIR] = {
    "every byte read and written, checked by pdkv (--check)",
    "every byte of pdkv's buffer checked after Mooncake wrote",
    "completion only: Mooncake's bench checks no bytes it reads"};

struct cell {
	const char *verdict; /* PASS | FAIL | NOTRUN */
	char why[256];
};

static struct {
	const char *mb, *json, *protocol, *device, *block, *duration;
	char dir[PATH_MAX];
	int seq;
} g = {.protocol = "tcp", .block = "65536", .duration = "2"};

static void set(struct cell *c, const char *v, const char *fmt, const char *arg)
{
	c->verdict = v;
	snprintf(c->why, sizeof(c->why), fmt, arg ? arg : "");
}

/* A program on PATH (as execvp finds it), or NULL. */
static char *on_path(const char *prog)
{
	const char *p = pd_env_str("PATH");
	char buf[PATH_MAX];

	while (p && *p) {
		size_t n = strcspn(p, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, prog);
		if (n && access(buf, X_OK) == 0)
			return strdup(buf);
		p += n + (p[n] == ':');
	}
	return NULL;
}

static bool log_has(const char *log, const char *needle, char *after, size_t len)
{
	char *txt = NULL, *at;
	bool hit = false;

	if (pd_read_file(log, 16 << 20, &txt, NULL))
		return false;
	if ((at = strstr(txt, needle))) {
		hit = true;
		if (after)
			snprintf(after, len, "%.*s", (int)strcspn(at + strlen(needle), " \n"),
			         at + strlen(needle));
	}
	free(txt);
	return hit;
}

static char *tail(const char *log)
{
	static char buf[200];
	char *txt = NULL;
	size_t n = 0;

	buf[0] = 0;
	if (!pd_read_file(log, 16 << 20, &txt, &n) && n) {
		while (n && txt[n - 1] == '\n')
			n--;
		size_t s = n;
		while (s && txt[s - 1] != '\n')
			s--;
		snprintf(buf, sizeof(buf), "%.*s", (int)(n - s > 190 ? 190 : n - s), txt + s);
	}
	free(txt);
	return buf;
}

/* A command line being built: v NULL-terminated, formatted words stored in s. */
struct args {
	char *v[24];
	char s[16][PATH_MAX + 64];
	int n, ns;
};

static void arg(struct args *a, const char *w)
{
	if (a->n + 1 < (int)(sizeof(a->v) / sizeof(a->v[0])))
		a->v[a->n++] = (char *)w;
	a->v[a->n] = NULL;
}

static void argf(struct args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void argf(struct args *a, const char *fmt, ...)
{
	va_list ap;
	if (a->ns == (int)(sizeof(a->s) / sizeof(a->s[0])))
		return;
	va_start(ap, fmt);
	vsnprintf(a->s[a->ns], sizeof(a->s[0]), fmt, ap);
	va_end(ap);
	arg(a, a->s[a->ns++]);
}

/* --protocol and --device_name, as every bench command of a run takes them */
static void mb_args(struct args *a)
{
	argf(a, "--protocol=%s", g.protocol);
	if (g.device)
		argf(a, "--device_name=%s", g.device);
}

/* Mooncake target, pdkv initiator (read, write, --check). */
static void run_mc_target(const char *conn, struct cell *c)
{
	char log[PATH_MAX + 32], name[128], seg[160] = "", host[64];
	char pl[PATH_MAX + 32], exe[PATH_MAX + 16], err[256];
	struct pd_proc mt = {0}, pi = {0};
	struct args a = {.n = 0};
	int port;

	snprintf(log, sizeof(log), "%s/mc-target-%d.log", g.dir, ++g.seq);
	snprintf(name, sizeof(name), "127.0.0.1:%d", 21000 + g.seq);
	arg(&a, g.mb);
	arg(&a, "--mode=target");
	argf(&a, "--metadata_server=%s", conn);
	argf(&a, "--local_server_name=%s", name);
	arg(&a, "--buffer_size=67108864");
	mb_args(&a);
	if (pd_proc_spawn(&mt, "mooncake-target", a.v, NULL, log)) {
		set(c, "FAIL", "cannot start %s", g.mb);
		return;
	}
	for (int i = 0; i < 150 && !seg[0]; i++) {
		if (!pd_proc_alive(&mt))
			break;
		if (pd_meta_is_p2p(conn))
			log_has(log, "P2P handshake, listening on ", seg, sizeof(seg));
		else if (!te_inspect_rpc_meta(conn, name, host, sizeof(host), &port, err,
		                              sizeof(err)))
			snprintf(seg, sizeof(seg), "%s", name);
		if (!seg[0])
			pd_sleep_ms(100);
	}
	if (!seg[0]) {
		if (log_has(log, "Unable to find metadata storage plugin", NULL, 0))
			set(c, "NOTRUN", "this Mooncake build has no client for this store%s",
			    NULL);
		else
			set(c, "FAIL", "Mooncake target did not come up: %s", tail(log));
		pd_proc_stop(&mt, 2000);
		return;
	}
	pd_sleep_ms(500); /* the segment key follows rpc_meta */
	snprintf(pl, sizeof(pl), "%s/pdkv-init-%d.log", g.dir, g.seq);
	snprintf(exe, sizeof(exe), "%s/pdkv-bench", pd_self_dir());
	a.n = 0;
	arg(&a, exe);
	arg(&a, "--mode=initiator");
	argf(&a, "--metadata_server=%s", conn);
	argf(&a, "--segment_id=%s", seg);
	mb_args(&a);
	argf(&a, "--block_size=%s", g.block);
	argf(&a, "--duration=%s", g.duration);
	arg(&a, "--batch_size=16");
	arg(&a, "--threads=2");
	arg(&a, "--operation=read,write");
	arg(&a, "--check");
	if (pd_proc_spawn(&pi, "pdkv-initiator", a.v, NULL, pl) || pd_proc_wait(&pi, 120000))
		set(c, "FAIL", "pdkv initiator did not finish: %s", tail(pl));
	else if (!WIFEXITED(pi.exit_status) || WEXITSTATUS(pi.exit_status))
		set(c, "FAIL", "pdkv initiator: %s", tail(pl));
	else
		set(c, "PASS", "every byte checked by pdkv (read and write)%s", NULL);
	pd_proc_stop(&pi, 2000);
	pd_proc_stop(&mt, 5000);
}

/* pdkv target (patterned, --verify_written), Mooncake initiator writing (and reading). */
static void run_pdkv_target(const char *conn, struct cell *w, struct cell *r)
{
	char log[PATH_MAX + 32], ready[PATH_MAX + 32], exe[PATH_MAX + 16];
	struct pd_proc pt = {0};
	char *txt = NULL, seg[160] = "";
	struct args a = {.n = 0};
	unsigned long long region = strtoull(g.block, NULL, 10) * 16 * 2;
	int ns0;

	snprintf(log, sizeof(log), "%s/pdkv-target-%d.log", g.dir, ++g.seq);
	snprintf(ready, sizeof(ready), "%s/ready-%d", g.dir, g.seq);
	snprintf(exe, sizeof(exe), "%s/pdkv-bench", pd_self_dir());
	arg(&a, exe);
	arg(&a, "--mode=target");
	argf(&a, "--metadata_server=%s", conn);
	argf(&a, "--local_server_name=127.0.0.1:%d", 22000 + g.seq);
	mb_args(&a);
	arg(&a, "--buffer_size=64MiB");
	argf(&a, "--verify_written=%llu", region);
	argf(&a, "--ready_file=%s", ready);
	ns0 = a.ns; /* the initiators below reuse the slots after these */
	if (pd_proc_spawn(&pt, "pdkv-target", a.v, NULL, log)) {
		set(w, "FAIL", "cannot start pdkv-bench%s", NULL);
		set(r, "FAIL", "cannot start pdkv-bench%s", NULL);
		return;
	}
	for (int i = 0; i < 150 && pd_read_file(ready, 4096, &txt, NULL); i++)
		pd_sleep_ms(100);
	if (txt)
		snprintf(seg, sizeof(seg), "%.*s", (int)strcspn(txt, "\n"), txt);
	free(txt);
	for (int op = 0; op < 2; op++) {
		struct cell *c = op ? r : w;
		char ml[PATH_MAX + 32];
		struct pd_proc mi = {0};
		if (!seg[0]) {
			set(c, "FAIL", "pdkv target did not come up: %s", tail(log));
			continue;
		}
		snprintf(ml, sizeof(ml), "%s/mc-init-%d-%s.log", g.dir, g.seq,
		         op ? "read" : "write");
		a.n = 0;
		a.ns = ns0;
		arg(&a, g.mb);
		arg(&a, "--mode=initiator");
		arg(&a, op ? "--operation=read" : "--operation=write");
		argf(&a, "--metadata_server=%s", conn);
		argf(&a, "--segment_id=%s", seg);
		argf(&a, "--local_server_name=127.0.0.1:%d", 23000 + 2 * g.seq + op);
		argf(&a, "--block_size=%s", g.block);
		argf(&a, "--duration=%d", atoi(g.duration) > 0 ? atoi(g.duration) : 1);
		arg(&a, "--batch_size=16");
		arg(&a, "--threads=2");
		arg(&a, "--buffer_size=67108864");
		mb_args(&a);
		if (pd_proc_spawn(&mi, "mooncake-initiator", a.v, NULL, ml) ||
		    pd_proc_wait(&mi, 120000))
			set(c, "FAIL", "Mooncake initiator did not finish: %s", tail(ml));
		else if (log_has(ml, "Unable to find metadata storage plugin", NULL, 0))
			set(c, "NOTRUN", "this Mooncake build has no client for this store%s",
			    NULL);
		else if (!WIFEXITED(mi.exit_status) || WEXITSTATUS(mi.exit_status))
			set(c, "FAIL", "Mooncake initiator: %s", tail(ml));
		else
			set(c, "PASS",
			    op ? "Mooncake completed every read (bytes not checked: they land in "
			         "Mooncake's memory, which its bench does not verify)%s"
			       : "%s",
			    NULL);
		pd_proc_stop(&mi, 2000);
	}
	kill(pt.pid, SIGINT);
	if (pd_proc_wait(&pt, 20000) || !WIFEXITED(pt.exit_status) || WEXITSTATUS(pt.exit_status)) {
		if (!strcmp(w->verdict, "PASS"))
			set(w, "FAIL", "pdkv target's check: %s", tail(log));
	} else if (!strcmp(w->verdict, "PASS")) {
		set(w, "PASS", "pdkv checked every byte of its buffer%s", NULL);
	}
	pd_proc_stop(&pt, 2000);
}

static int report(struct cell m[NSTORE][NDIR])
{
	int pass = 0, fail = 0;
	FILE *f = g.json ? fopen(g.json, "w") : NULL;

	printf("\npdkv interop: %s, protocol %s, block %s, duration %s s\n", g.mb, g.protocol,
	       g.block, g.duration);
	printf("%-13s", "metadata");
	for (int d = 0; d < NDIR; d++)
		printf("  %-27s", dir_name[d]);
	printf("\n");
	if (g.json && !f)
		pd_err("cannot write %s: %s", g.json, strerror(errno));
	if (f)
		fprintf(f, "{\"mooncake_bench\":\"%s\",\"protocol\":\"%s\",\"cells\":[", g.mb,
		        g.protocol);
	for (int s = 0; s < NSTORE; s++) {
		printf("%-13s", store_name[s]);
		for (int d = 0; d < NDIR; d++) {
			struct cell *c = &m[s][d];
			printf("  %-27s", c->verdict);
			pass += !strcmp(c->verdict, "PASS");
			fail += !strcmp(c->verdict, "FAIL");
			if (f)
				fprintf(f,
				        "%s{\"metadata\":\"%s\",\"direction\":\"%s\",\"verdict\":"
				        "\"%s\","
				        "\"why\":\"%s\",\"bytes_checked\":%s}",
				        s || d ? "," : "", store_name[s], dir_name[d], c->verdict,
				        c->why, dir_bytes_checked[d] ? "true" : "false");
		}
		printf("\n");
	}
	for (int s = 0; s < NSTORE; s++)
		for (int d = 0; d < NDIR; d++)
			if (strcmp(m[s][d].verdict, "PASS"))
				printf("  %s / %s: %s: %s\n", store_name[s], dir_name[d],
				       m[s][d].verdict, m[s][d].why);
	printf("verified:\n");
	for (int d = 0; d < NDIR; d++)
		printf("  %-27s %s\n", dir_name[d], dir_checks[d]);
	if (f) {
		fprintf(f, "]}\n");
		fclose(f);
	}
	printf("interop: %d PASS, %d FAIL, %d NOTRUN (logs in %s)\n", pass, fail,
	       NSTORE * NDIR - pass - fail, g.dir);
	return fail ? 1 : pass ? 0 : 77;
}

static int notrun(const char *why)
{
	printf("NOTRUN: %s\n", why);
	if (g.json) {
		FILE *f = fopen(g.json, "w");
		if (f) {
			fprintf(f, "{\"verdict\":\"NOTRUN\",\"why\":\"%s\",\"cells\":[]}\n", why);
			fclose(f);
		}
	}
	return 77;
}

/* A whole number lo..hi, kept as written (it goes on to the bench's command line). */
static int num_str(const char *v, void *dst, uint64_t lo, uint64_t hi)
{
	uint64_t n;
	if (pd_parse_u64(v, &n) || n < lo || n > hi)
		return -1;
	*(const char **)dst = v;
	return 0;
}

static int opt_block(const char *v, void *dst, void *ud)
{
	(void)ud;
	return num_str(v, dst, 1, 1ull << 30);
}

static int opt_duration(const char *v, void *dst, void *ud)
{
	(void)ud;
	return num_str(v, dst, 1, 86400);
}

static int opt_protocol(const char *v, void *dst, void *ud)
{
	(void)ud;
	if (strcmp(v, "tcp") && strcmp(v, "rdma"))
		return -1;
	*(const char **)dst = v;
	return 0;
}

/* Mooncake's spellings (--device_name, --block_size); '-' works too. */
static int parse_args(int argc, char **argv)
{
	const struct pd_opt rows[] = {
	    {.name = "mooncake-bench",
	     .type = PD_OPT_STR,
	     .dst = &g.mb,
	     .arg = "PATH",
	     .help = "Mooncake's transfer_engine_bench (else $MOONCAKE_BENCH,\nelse on PATH)"},
	    {.name = "json",
	     .type = PD_OPT_STR,
	     .dst = &g.json,
	     .arg = "FILE",
	     .help = "the matrix as JSON"},
	    {.name = "protocol",
	     .type = PD_OPT_FN,
	     .dst = &g.protocol,
	     .arg = "tcp|rdma",
	     .help = "transport of both sides (default tcp)",
	     .want = "tcp or rdma",
	     .fn = opt_protocol},
	    {.name = "device_name",
	     .type = PD_OPT_STR,
	     .dst = &g.device,
	     .arg = "DEVS",
	     .help = "RDMA devices, as transfer_engine_bench takes them"},
	    {.name = "block_size",
	     .type = PD_OPT_FN,
	     .dst = &g.block,
	     .arg = "BYTES",
	     .help = "bytes per transfer (default 65536)",
	     .want = "a whole number of bytes 1..1073741824",
	     .fn = opt_block},
	    {.name = "duration",
	     .type = PD_OPT_FN,
	     .dst = &g.duration,
	     .arg = "S",
	     .help = "seconds per direction (default 2)",
	     .want = "whole seconds 1..86400",
	     .fn = opt_duration},
	};
	const struct pd_opt_spec spec = {
	    .prog = "pdkv interop",
	    .usage =
	        "usage: pdkv interop [--mooncake-bench PATH] [--json FILE] [--protocol tcp|rdma]\n"
	        "                    [--device_name DEVS] [--block_size BYTES] [--duration S]\n"
	        "Runs pdkv <-> Mooncake's transfer_engine_bench both ways over P2PHANDSHAKE,\n"
	        "HTTP (pdkv-metaserver), redis and etcd.\n\n",
	    .footer =
	        "\nExit 0 all ran passed, 1 a FAIL, 2 usage (one line \"pdkv interop: ...\"),\n"
	        "77 nothing could run (the reason).\n",
	    .opts = rows,
	    .nopts = PD_ARRAY_SIZE(rows),
	    .underscores = true};
	return pd_opt_parse(&spec, argc, argv, 1, NULL, NULL);
}

int main(int argc, char **argv)
{
	struct cell m[NSTORE][NDIR];
	char *found = NULL;
	int ret;

	signal(SIGPIPE, SIG_IGN);
	ret = parse_args(argc, argv);
	if (ret)
		return ret == 1 ? 0 : 2;
	if (!g.mb)
		g.mb = pd_env_str("MOONCAKE_BENCH");
	if (!g.mb)
		g.mb = found = on_path("transfer_engine_bench");
	if (!g.mb)
		return notrun("no Mooncake transfer_engine_bench: give --mooncake-bench PATH, set "
		              "MOONCAKE_BENCH=PATH, or put it on PATH (from your Mooncake build or "
		              "the pip wheel)");
	if (access(g.mb, X_OK))
		return notrun("the Mooncake bench given is not an executable file");
	if (!strcmp(g.protocol, "rdma") && access("/sys/class/infiniband", F_OK))
		return notrun("--protocol rdma: no RDMA device on this host");
	snprintf(g.dir, sizeof(g.dir), "%s/pdkv-interop.XXXXXX",
	         pd_env_str("TMPDIR")); /* default /tmp */
	if (!mkdtemp(g.dir)) {
		pd_err("cannot create a work directory under /tmp: %s", strerror(errno));
		return 1;
	}
	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 0);
	for (int s = 0; s < NSTORE; s++) {
		static const enum pd_svc_kind kinds[] = {0, PD_SVC_METASERVER, PD_SVC_REDIS,
		                                         PD_SVC_ETCD};
		struct pd_svc svc;
		const char *conn = PD_META_P2P;
		for (int d = 0; d < NDIR; d++)
			set(&m[s][d], "NOTRUN", "not run%s", NULL);
		if (s) {
			ret = pd_svc_start(kinds[s], NULL, g.dir, &svc);
			if (ret) {
				for (int d = 0; d < NDIR; d++)
					set(&m[s][d], "NOTRUN", "%s",
					    ret == -ENOENT ? "the store's server is not "
					                     "installed"
					                   : "the store did not start");
				continue;
			}
			conn = svc.conn;
		}
		printf("interop: %s ...\n", store_name[s]);
		fflush(stdout);
		run_mc_target(conn, &m[s][0]);
		if (strcmp(m[s][0].verdict, "NOTRUN"))
			run_pdkv_target(conn, &m[s][1], &m[s][2]);
		else
			m[s][1] = m[s][2] = m[s][0];
		if (s)
			pd_svc_stop(&svc);
	}
	ret = report(m);
	free(found);
	return ret;
}
