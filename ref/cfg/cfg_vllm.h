/* cfg_vllm: the one table that maps a vLLM release to the KV-connector contract it speaks (V0
 * pipe, V1 gen A, gen B in its two struct shapes) and to the defaults that changed between them. */
#ifndef CFG_VLLM_H
#define CFG_VLLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Connector generations. B0 = the first gen-B struct shape (6-field MooncakeXferMetadata), BN =
 * block_lens, kv_block_lens and per-group block lists (8 fields), BL = BN plus the
 * registered_layer_names / _indices / _group_indices the prefill aligns regions by (vLLM #44528).
 * Later shapes are appended, so `g >= CFG_GEN_BN` reads "has BN's fields". */
enum cfg_gen { CFG_GEN_V0 = 0, CFG_GEN_A, CFG_GEN_B0, CFG_GEN_BN, CFG_GEN_BL };
#define CFG_GEN_COUNT 5

/* Behaviours a row has (struct cfg_vllm_info.feat), each from a vLLM PR the row cites. */
#define CFG_F_TP_TOPOLOGY                                                                          \
	(1u << 0) /* heterogeneous TP: pairing by TransferTopology, head slices,                   \
	             "This D tp_rank ... is not paired with P tp_rank ..." */
#define CFG_F_D_FAIL_REPORT                                                                        \
	(1u << 1) /* D: DEALER RCVTIMEO = abort timeout + 60 s; a failed pull is                   \
	             reported as a load error (kv_load_failure_policy) */
#define CFG_F_HMA           (1u << 2) /* hybrid KV cache manager on: one block list per KV group */
#define CFG_F_GDN_N1        (1u << 3) /* Mamba/GDN: P drops the last prompt token, D loads N-1 */
#define CFG_F_REMOTE_PP     (1u << 4) /* remote_pp_size: heterogeneous PP between P and D */
#define CFG_F_BOOT_ADDR     (1u << 5) /* kv_connector_extra_config.bootstrap_server_address */
#define CFG_F_PREFIX_REPLAY (1u << 6) /* prefix_replay_* fields (opt-in, DeepSeek-V4.1) */

/* What pdkv knows about one vLLM version. Pointers are static strings. */
struct cfg_vllm_info {
	char version[32]; /* as given, e.g. "0.15.1" */
	int major, minor, patch;
	const char *row;       /* the table row that matched, e.g. "0.12 - 0.15" */
	enum cfg_gen gen;      /* the generation this release speaks (gen B: its default shape) */
	const char *policy;    /* kv_load_failure_policy default: "recompute", "fail", or NULL
	                          when the release has no such field */
	bool reqid_random;     /* gen A: engine request ids get a random suffix (P/D id mismatch) */
	bool by_source;        /* exposes vllm:prompt_tokens_by_source_total */
	bool mooncake_metrics; /* exposes vllm:mooncake_* histograms/counters (gen B, on P) */
	unsigned feat;         /* CFG_F_* */
	const char *uncertain; /* what in this row is not pinned to a release, or NULL */
	const char *note;      /* what a user of this release must know, or NULL */
};

/* The newest release the table was written against; the default when no version is given. */
extern const char *const cfg_vllm_newest;

/* Looks version ("X.Y", "X.Y.Z", optional suffix such as ".post1", "rc1", "+cu128") up. 0, or
 * -1 with err naming the value and what is expected (also for releases with no Mooncake
 * connector pdkv emulates). */
int cfg_vllm_lookup(const char *version, struct cfg_vllm_info *out, char *err, size_t errsz);

/* "v0" | "a" | "b0" | "bn" | "bl" <-> enum; parse returns -1 on anything else. */
const char *cfg_gen_name(enum cfg_gen g);
int cfg_gen_parse(const char *s, enum cfg_gen *out);
static inline bool cfg_gen_is_b(enum cfg_gen g)
{
	return g >= CFG_GEN_B0;
}
/* Gen B with BN's fields (block_lens, kv_block_lens, per-group lists): BN and every later shape. */
static inline bool cfg_gen_has_bn(enum cfg_gen g)
{
	return g >= CFG_GEN_BN;
}
static inline bool cfg_gen_is_v1(enum cfg_gen g)
{
	return g != CFG_GEN_V0;
}

/* The table for people (`pdkv-standin --list-versions`, `pdkv config check --list-versions`). */
void cfg_vllm_print_table(FILE *f);

#endif
