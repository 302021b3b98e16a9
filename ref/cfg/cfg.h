/* SPDX-License-Identifier: Apache-2.0 */
/* cfg: reads a Mooncake + vLLM prefill/decode deployment's configuration exactly as vLLM and the
 * Mooncake adaptor read it (docs/vllm-v0.md), and says what is
 * wrong. Used by `pdkv config`, `pdkv ports`, the stand-ins, the connector and the runner. */
#ifndef CFG_H
#define CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cfg/cfg_vllm.h"

enum cfg_vllm { CFG_VLLM_V0 = 0, CFG_VLLM_V1 = 1 };
enum cfg_severity { CFG_ERROR = 0, CFG_WARNING = 1, CFG_INFO = 2 };

struct cfg_diag {
	enum cfg_severity severity;
	char *field;   /* "mooncake.json: decode_url", "kv-transfer-config: kv_rank", NULL */
	char *message; /* names the file, the bad value and what to write instead */
};
struct cfg_diags {
	struct cfg_diag *v;
	size_t n, cap;
};
void cfg_diag_add(struct cfg_diags *d, enum cfg_severity sev, const char *field, const char *fmt,
                  ...) __attribute__((format(printf, 4, 5)));
size_t cfg_diags_count(const struct cfg_diags *d, enum cfg_severity sev);
void cfg_diags_free(struct cfg_diags *d);

/* mooncake.json as MooncakeTransferEngineConfig.from_file builds it (defaults applied). */
struct cfg_mooncake {
	char *path;        /* the file read */
	char *prefill_url; /* NULL when absent/null */
	char *decode_url;
	char *metadata_server;
	char *metadata_backend;
	char *protocol;      /* "tcp" when absent (vLLM default); NULL when JSON null */
	char *device_name;   /* "" when absent */
	char *conn_string;   /* resolved TE connection string ("etcd://h:p", "redis://h:p",
	                        "http://h:p/path", "P2PHANDSHAKE"); NULL if unresolvable */
	char **device_names; /* device_name split on ',' (no trimming, like the adaptor) */
	size_t ndevice_names;
	/* Added by cfg: Python type of each key's JSON value, indexed by enum cfg_mc_field
	 * ("absent" when the key is missing, "NoneType" for null, "str", "int", ...). */
	char types[6][12];
	bool loaded; /* the file was read and is a JSON object */
};
enum cfg_mc_field {
	CFG_MC_PREFILL_URL = 0,
	CFG_MC_DECODE_URL,
	CFG_MC_METADATA_SERVER,
	CFG_MC_METADATA_BACKEND,
	CFG_MC_PROTOCOL,
	CFG_MC_DEVICE_NAME,
};
extern const char *const cfg_mc_field_names[6];

/* path NULL = MOONCAKE_CONFIG_PATH as vLLM does (unset and empty are different errors).
 * Returns 0 when vLLM would accept the file, -1 otherwise. V0: "accept" covers from_file and
 * MooncakePipe construction up to the ZMQ sockets (url.split, int(), metadata_backend, the
 * adaptor's argument types); the ZMQ/port verdict is cfg_check's. V1 reads no mooncake.json, so
 * the file is only checked for pdkv's diagnostics. vllm_error (may be NULL) receives
 * the malloc'd "ExceptionClass: message" vLLM would raise. Diagnostics appended to d. */
int cfg_mooncake_load(const char *path, enum cfg_vllm vllm, struct cfg_mooncake *out,
                      struct cfg_diags *d, char **vllm_error);
void cfg_mooncake_free(struct cfg_mooncake *mc);

/* --kv-transfer-config, with vLLM's defaults filled in. */
struct cfg_kv_transfer {
	char *kv_connector;
	char *kv_role; /* kv_producer | kv_consumer | kv_both */
	bool kv_rank_set;
	int64_t kv_rank;
	int64_t kv_parallel_size; /* 1 */
	double kv_buffer_size;    /* 1e9 */
	char *kv_buffer_device;   /* "cuda" */
	char *kv_ip;              /* "127.0.0.1" */
	int64_t kv_port;          /* 14579 */
	/* V1 */
	char *engine_id;
	char *kv_connector_module_path;
	char *kv_connector_extra_config; /* compact JSON object text, "{}" by default */
	char *kv_load_failure_policy;    /* "recompute" */
	bool is_producer, is_consumer;
	/* Added for the V1 releases (V1 only; zero/NULL for V0): */
	bool engine_id_generated; /* engine_id absent or null: vLLM's __post_init__ set it to a
	                             fresh uuid4, different at every start (engine_id holds one) */
	char *mooncake_protocol;  /* kv_connector_extra_config.mooncake_protocol: "rdma" when
	                             absent, NULL when not a string */
	int64_t num_workers;      /* ...num_workers: 10 when absent, 0 when not an integer */
	char *device_name;        /* ...device_name: "" when absent, NULL when not a string */
};
int cfg_kv_transfer_parse(const char *json, enum cfg_vllm vllm, struct cfg_kv_transfer *out,
                          struct cfg_diags *d, char **vllm_error);
void cfg_kv_transfer_free(struct cfg_kv_transfer *kt);
/* cfg_kv_transfer_parse as one vLLM release does it: rel->gen V0 = the V0 pydantic model (V1
 * fields ignored), otherwise the V1 dataclass with that release's kv_load_failure_policy
 * default. rel NULL = cfg_kv_transfer_parse(json, CFG_VLLM_V1, ...) (release not pinned: policy
 * default "recompute"). */
int cfg_kv_transfer_parse_release(const char *json, const struct cfg_vllm_info *rel,
                                  struct cfg_kv_transfer *out, struct cfg_diags *d,
                                  char **vllm_error);
/* str(uuid.uuid4()) from the kernel's random source: 36 characters + NUL. 0, or -1. */
int cfg_uuid4(char out[37]);

/* The V0 MooncakePipe's names and ports for one TP rank (docs/vllm-v0.md): +100 rule applied
 * (string compare), kv_rank 0 = prefill end, anything else = decode end. */
struct cfg_v0_pipe {
	bool prefill_end;
	char own_host[256], remote_host[256];
	int own_base, remote_base;               /* base ports after the +100 rule */
	char own_url[300], remote_url[300];      /* TE segment names host:(base+rank) */
	int bind_data_port, bind_ack_port;       /* own B+9+2r, B+10+2r (bound on '*') */
	int connect_data_port, connect_ack_port; /* the peer's, on remote_host */
};
int cfg_v0_pipe(const struct cfg_mooncake *mc, const struct cfg_kv_transfer *kt, int local_rank,
                struct cfg_v0_pipe *out, struct cfg_diags *d);

/* Port planner: every port each process binds or connects. */
struct cfg_port {
	char host[256];
	int port;
	char side[8]; /* "prefill" | "decode" | "proxy" */
	int rank;
	char purpose[128]; /* e.g. "v0 zmq data PUSH bind (B+9+2r)" */
	bool binds;        /* false = only connects */
};
struct cfg_env;
struct cfg_deploy {
	const struct cfg_mooncake *mc;
	const struct cfg_kv_transfer *kt; /* may be NULL */
	enum cfg_vllm vllm;
	int tp, dp;
	int prefill_http_port, decode_http_port, proxy_port; /* 0 = unknown / not planned */
	/* Added by cfg: */
	const struct cfg_env *env; /* NULL = none of the MC_* / VLLM_MOONCAKE_* variables set */
	const char *prefill_host, *decode_host, *proxy_host; /* NULL = from the URLs / 127.0.0.1 */
	/* Added for the V1 releases: which side channel V1 plans. CFG_GEN_V0 (0) = release not
	 * pinned, planned as gen A; CFG_GEN_B0 / CFG_GEN_BN = bootstrap server + random ports. */
	enum cfg_gen gen;
};
/* *ports malloc'd; conflicts are pairs of binds on the same host:port (see cfg_ports_conflicts). */
int cfg_ports_plan(const struct cfg_deploy *dep, struct cfg_port **ports, size_t *n,
                   struct cfg_diags *d);

/* ---- Added by cfg (not in the lead's first draft) ---- */

/* Binds of two processes (or two ranks) on the same machine and port. Hosts are the same
 * machine when the strings are equal or both are loopback names (localhost, 127.x, ::1). */
struct cfg_conflict {
	char host[256];
	int port;
	char **purposes; /* "prefill rank 0: v0 zmq data PUSH bind (B+9+2r)", ... */
	size_t npurposes;
};
int cfg_ports_conflicts(const struct cfg_port *p, size_t n, struct cfg_conflict **out,
                        size_t *nout);
void cfg_conflicts_free(struct cfg_conflict *c, size_t n);
bool cfg_same_machine(const char *a, const char *b);

/* Environment that changes what vLLM / TE do (docs/vllm-v0.md, docs/engine.md,
 * docs/rdma.md). Strings are NULL when unset. */
struct cfg_env {
	const char *mooncake_config_path;
	const char *bootstrap_port, *side_channel_port, *abort_timeout, *sender_workers, *protocol;
	const char *legacy_rpc, *tcp_bind_address, *handshake_port, *cluster_id;
	const char *min_rpc, *max_rpc, *min_prc, *max_prc;
	/* Added for the V1 releases: */
	const char *disable_reqid_random; /* VLLM_DISABLE_REQUEST_ID_RANDOMIZATION */
	const char *ib_sysfs; /* PDKV_SYSFS_INFINIBAND: where this host lists RDMA devices
	                         (NULL = /sys/class/infiniband; tests point it elsewhere) */
};
void cfg_env_from_environ(struct cfg_env *e);

/* Everything `pdkv config check` / `pdkv ports` take. */
struct cfg_check_opts {
	const char *mooncake_path; /* NULL = MOONCAKE_CONFIG_PATH (env.mooncake_config_path) */
	const char *kv_transfer;   /* raw --kv-transfer-config, NULL = not given */
	enum cfg_vllm vllm;
	int tp, dp;
	int prefill_http_port, decode_http_port, proxy_port; /* 0 = guide defaults 8100/8200/8000 */
	const char *prefill_host, *decode_host,
	    *proxy_host; /* NULL = from mooncake.json / 127.0.0.1 */
	struct cfg_env env;
	/* Added for the V1 releases: */
	const char *vllm_version; /* --vllm-version X.Y[.Z]: picks V0/V1 and the generation */
	const char *v1_shape;     /* --v1-shape b0|bn (gen B); without a version: the newest */
};
struct cfg_report {
	bool ok, vllm_accepted;
	char *vllm_error; /* "ExceptionClass: message" or NULL */
	struct cfg_mooncake mc;
	bool mc_ok;
	struct cfg_kv_transfer kt;
	bool kt_given, kt_ok;
	char *eff_prefill_url, *eff_decode_url; /* after the +100 rule (rank 0) */
	struct cfg_port *ports;
	size_t nports;
	struct cfg_conflict *conflicts;
	size_t nconflicts;
	struct cfg_diags diags;
	enum cfg_vllm vllm;
	bool ports_planned; /* V0: the pipe's ports could be derived; V1: always */
	char *v1_protocol;  /* V1: mooncake_protocol / VLLM_MOONCAKE_PROTOCOL in effect */
	/* Added for the V1 releases: */
	bool release_pinned;          /* --vllm-version or --v1-shape given */
	struct cfg_vllm_info release; /* valid when release_pinned */
	enum cfg_gen gen;             /* V0, or the V1 generation planned (gen A when unpinned) */
};
/* Runs every check. Returns the exit code contract: 0 usable, 1 errors found. */
int cfg_check(const struct cfg_check_opts *o, struct cfg_report *r);
void cfg_report_free(struct cfg_report *r);
/* The --json object of issue 2 (malloc'd, one line + '\n'). */
char *cfg_report_json(const struct cfg_report *r);
/* Human report: errors first, then warnings/infos, then (ports != 0) the port table. */
void cfg_report_print(const struct cfg_report *r, FILE *f, bool ports_first);

#endif
