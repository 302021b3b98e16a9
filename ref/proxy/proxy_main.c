/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-proxy: the disaggregated-prefill proxy (the integration guide's, docs/vllm-v0.md; vLLM's
 * toy or the mooncake router contract), strict about failures. Thin main: flags -> px_server. */
#include "px.h"
#include "pd_log.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct px_opts o;
	struct px_server *srv = NULL;
	char err[512];
	sigset_t set;
	int ret, port, sig = 0;

	pd_log_set_name("pdkv-proxy");
	ret = px_parse_args(argc, argv, &o, err, sizeof(err));
	if (ret == 1)
		return 0;
	if (ret) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	/* handled by sigwait below; every thread started from here on inherits the mask */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* a death by any other signal leaves a line in the log (issue 34: one exited silently) */
	pd_log_fatal_signals();
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		pd_err("curl_global_init failed");
		return 1;
	}
	ret = px_server_start(&o, &srv, &port);
	if (ret) {
		curl_global_cleanup();
		return 1;
	}
	pd_info("contract %s%s%s%s", px_contract_name(o.contract),
	        o.contract_why[0] ? " (auto: " : "", o.contract_why, o.contract_why[0] ? ")" : "");
	pd_info("listening on %s:%d; prefill %d, decode %d; timeouts prefill %.1fs decode %.1fs "
	        "connect %.1fs; max body %llu",
	        o.host, port, o.n_prefill, o.n_decode, o.prefill_timeout_ms / 1e3,
	        o.decode_timeout_ms / 1e3, o.connect_timeout_ms / 1e3,
	        (unsigned long long)o.max_body);
	for (int i = 0; i < o.n_prefill; i++)
		if (o.contract == PX_CONTRACT_MOONCAKE)
			pd_info("prefill[%d] %s bootstrap port %d", i, o.prefill[i],
			        o.bootstrap[i] ? o.bootstrap[i] : 8998);
		else
			pd_info("prefill[%d] %s", i, o.prefill[i]);
	for (int i = 0; i < o.n_decode; i++)
		pd_info("decode[%d] %s", i, o.decode[i]);
	sigwait(&set, &sig);
	pd_info("%s: stopping", strsignal(sig));
	px_server_stop(srv);
	curl_global_cleanup();
	pd_info("stopped");
	return 0;
}
