/* cfg: reads a Mooncake + vLLM prefill/decode deployment's configuration exactly as vLLM and the
 * Mooncake adaptor read it (shared/spec/vllm-connector.md §2, §3, §5, §7.4), and says what is
 * wrong. Used by `pdkv config`, `pdkv ports`, the stand-ins, the connector and the runner. */
#ifndef CFG_H
#define CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	char *path;            /* the file read */
	char *prefill_url;     /* NULL when absent/null */
	char *decode_url;
	char *metadata_server;
	char *metadata_backend;
	char *protocol;        /* "tcp" when absent (vLLM default); NULL when JSON null */
	char *device_name;     /* "" when absent */
	char *conn_string;     /* resolved TE connection string ("etcd://h:p", "redis://h:p",
				  "http://h:p/path", "P2PHANDSHAKE"); NULL if unresolvable */
	char **device_names;   /* device_name split on ',' (no trimming, like the adaptor) */
	size_t ndevice_names;
};

/* path NULL = MOONCAKE_CONFIG_PATH as vLLM does (unset and empty are different errors).
 * Returns 0 when vLLM would accept the file, -1 otherwise. vllm_error (may be NULL) receives
 * the malloc'd "ExceptionClass: message" vLLM would raise. Diagnostics appended to d. */
int cfg_mooncake_load(const char *path, enum cfg_vllm vllm, struct cfg_mooncake *out,
		      struct cfg_diags *d, char **vllm_error);
void cfg_mooncake_free(struct cfg_mooncake *mc);

/* --kv-transfer-config, with vLLM's defaults filled in. */
struct cfg_kv_transfer {
	char *kv_connector;
	char *kv_role;            /* kv_producer | kv_consumer | kv_both */
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
};
int cfg_kv_transfer_parse(const char *json, enum cfg_vllm vllm, struct cfg_kv_transfer *out,
			  struct cfg_diags *d, char **vllm_error);
void cfg_kv_transfer_free(struct cfg_kv_transfer *kt);

/* The V0 MooncakePipe's names and ports for one TP rank (spec §3.1–§3.2): +100 rule applied
 * (string compare), kv_rank 0 = prefill end, anything else = decode end. */
struct cfg_v0_pipe {
	bool prefill_end;
	char own_host[256], remote_host[256];
	int own_base, remote_base;          /* base ports after the +100 rule */
	char own_url[300], remote_url[300]; /* TE segment names host:(base+rank) */
	int bind_data_port, bind_ack_port;  /* own B+9+2r, B+10+2r (bound on '*') */
	int connect_data_port, connect_ack_port; /* the peer's, on remote_host */
};
int cfg_v0_pipe(const struct cfg_mooncake *mc, const struct cfg_kv_transfer *kt, int local_rank,
		struct cfg_v0_pipe *out, struct cfg_diags *d);

/* Port planner: every port each process binds or connects. */
struct cfg_port {
	char host[256];
	int port;
	char side[8];      /* "prefill" | "decode" | "proxy" */
	int rank;
	char purpose[128]; /* e.g. "v0 zmq data PUSH bind (B+9+2r)" */
	bool binds;        /* false = only connects */
};
struct cfg_deploy {
	const struct cfg_mooncake *mc;
	const struct cfg_kv_transfer *kt; /* may be NULL */
	enum cfg_vllm vllm;
	int tp, dp;
	int prefill_http_port, decode_http_port, proxy_port; /* 0 = unknown / not planned */
};
/* *ports malloc'd; conflicts are pairs of binds on the same host:port (see cfg_ports_conflicts). */
int cfg_ports_plan(const struct cfg_deploy *dep, struct cfg_port **ports, size_t *n,
		   struct cfg_diags *d);

#endif
