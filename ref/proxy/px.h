/* SPDX-License-Identifier: Apache-2.0 */
/* px: the pdkv-proxy library — flag parsing, backend URL normalisation, the router contracts
 * (v0, toy, mooncake), the libcurl forwarder and the libmicrohttpd front end. */
#ifndef PX_H
#define PX_H

#include <stddef.h>
#include <stdint.h>

#define PX_MAX_BACKENDS 64
#define PX_URL_MAX      512

/* --contract: which router a pdkv-proxy behaves as (px_contract.c holds the table). */
enum px_contract_id {
	PX_CONTRACT_V0,       /* the integration guide's proxy (V0 MooncakePipe) */
	PX_CONTRACT_TOY,      /* vLLM's toy_proxy_server.py (V1 gen A) */
	PX_CONTRACT_MOONCAKE, /* vLLM >= 0.16 mooncake_connector_proxy.py (V1 gen B) */
	PX_CONTRACT_AUTO,     /* resolved by px_parse_args from the flags used */
};

struct px_opts {
	char host[256];                            /* --host, bind address */
	int port;                                  /* --port (0 = any free port) */
	char prefill[PX_MAX_BACKENDS][PX_URL_MAX]; /* normalised base URLs, no trailing slash */
	int n_prefill;
	int bootstrap[PX_MAX_BACKENDS]; /* --prefill URL BOOTSTRAP_PORT; 0 = none (8998 used) */
	char decode[PX_MAX_BACKENDS][PX_URL_MAX];
	int n_decode;
	long prefill_timeout_ms; /* whole prefill request; 0 = none */
	long decode_timeout_ms;  /* whole decode request; 0 = none */
	long connect_timeout_ms;
	uint64_t max_body;     /* request body limit, bytes */
	size_t queue_bytes;    /* decode -> client stream queue per request */
	int contract;          /* enum px_contract_id, never AUTO after px_parse_args */
	char contract_why[96]; /* how --contract auto decided; "" when named */
	unsigned faults;       /* --fault: PX_FAULT_* bits (detector self-tests) */
	/* --max-connections, --max-connections-per-client, --idle-timeout (seconds) */
	unsigned max_conns, max_conns_per_client, idle_timeout_s;
};

/* "v0", "toy", "mooncake" or "auto". */
const char *px_contract_name(int id);

/* Parses argv (argv[0] is the program) with pd_opt. Returns 0, 1 when --help or --version was
 * printed to stdout, or -EINVAL after writing one line "pdkv-proxy: FLAG: ..." naming the bad
 * flag to err (size errsz). */
int px_parse_args(int argc, char **argv, struct px_opts *o, char *err, size_t errsz);

/* Turns "http://h:p", "h:p", "[v6]:p", "https://h:p/v1/completions", "http://h:p/v1/" ... into a
 * base URL ("http://h:p", or with a non-OpenAI path prefix kept). 0 or -EINVAL (err says why). */
int px_normalize_url(const char *in, char *out, size_t outsz, char *err, size_t errsz);

/* The host of a normalised base URL ("[v6]" keeps its brackets) into out. 0 or -EINVAL. */
int px_url_host(const char *url, char *out, size_t outsz);

/* The front end. px_server_start binds (SO_REUSEADDR) and serves on MHD threads; *bound_port
 * gets the real port. px_server_stop quiesces, aborts in-flight backend calls and joins. */
struct px_server;
int px_server_start(const struct px_opts *o, struct px_server **out, int *bound_port);
void px_server_stop(struct px_server *s);

#endif
