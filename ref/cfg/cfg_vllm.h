/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_vllm: the one table that maps a vLLM release to the KV-connector contract it speaks (V0
 * pipe, V1 gen A, gen B in its two struct shapes) and to the defaults that changed between them. */
#ifndef CFG_VLLM_H
#define CFG_VLLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Connector generations. B0 = the first gen-B struct shape (6-field MooncakeXferMetadata, vLLM
 * #31034), B1 = B0 + block_lens (7 fields, #36869), B2 = B1 with one block list per KV-cache
 * group in req_blocks (#40860), BN = B2 + kv_block_lens (8 fields), BL = BN plus the
 * registered_layer_names / _indices / _group_indices the prefill aligns regions by (#44528).
 * Shapes are in the order vLLM introduced them, so `g >= CFG_GEN_BN` reads "has BN's fields". */
enum cfg_gen {
	CFG_GEN_V0 = 0,
	CFG_GEN_A,
	CFG_GEN_B0,
	CFG_GEN_B1,
	CFG_GEN_B2,
	CFG_GEN_BN,
	CFG_GEN_BL
};
#define CFG_GEN_COUNT 7

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

/* What a decode's vllm:prompt_tokens_by_source_total adds for one fully transferred N-token
 * prompt. NONE: the counter does not exist. N_1: external_kv_transfer += N and local_compute
 * += 1 (the last token is counted twice; vLLM #33290). N_0: external_kv_transfer += N,
 * local_compute += 0 (PrefillStats, vLLM #37460 / #39808). */
enum cfg_src_era { CFG_SRC_NONE = 0, CFG_SRC_N_1, CFG_SRC_N_0 };
const char *cfg_src_era_name(enum cfg_src_era e);

/* What pdkv knows about one vLLM version. Pointers are static strings. */
struct cfg_vllm_info {
	char version[32]; /* as given, e.g. "0.15.1" */
	int major, minor, patch;
	const char *row;       /* the table row that matched, e.g. "0.12 - 0.15" */
	enum cfg_gen gen;      /* the generation this release speaks (gen B: its default shape) */
	const char *policy;    /* kv_load_failure_policy default: "recompute", "fail", or NULL
	                          when the release has no such field */
	bool reqid_random;     /* gen A: engine request ids get a random suffix (P/D id mismatch) */
	enum cfg_src_era src;  /* how vllm:prompt_tokens_by_source_total counts a transfer */
	bool recomputed;       /* exposes vllm:prompt_tokens_recomputed (#33290 .. #38709) */
	bool past_newest;      /* newer than cfg_vllm_newest: read as the newest row */
	unsigned feat;         /* CFG_F_* */
	const char *cite;      /* the vLLM PRs / commits the row rests on (never NULL) */
	const char *uncertain; /* what in this row is not pinned to a release, or NULL */
	const char *note;      /* what a user of this release must know, or NULL */
};

/* The newest release the table was written against; the default when no version is given.
 * Later releases resolve to its row with past_newest set and a row name that says so. */
extern const char *const cfg_vllm_newest;

/* Releases in the table: how many rows, and row i's range and citation (for tests and docs). */
size_t cfg_vllm_rows(void);
int cfg_vllm_row(size_t i, const char **range, const char **cite, int *gen);

/* Looks version ("X.Y", "X.Y.Z", optional suffix such as ".post1", "rc1", "+cu128") up. 0, or
 * -1 with err naming the value and what is expected (also for releases with no Mooncake
 * connector pdkv emulates). */
int cfg_vllm_lookup(const char *version, struct cfg_vllm_info *out, char *err, size_t errsz);
/* a is a newer release than b: the later generation, then the later version (generations
 * follow release order). */
bool cfg_vllm_newer(const struct cfg_vllm_info *a, const struct cfg_vllm_info *b);

/* "v0" | "a" | "b0" | "b1" | "b2" | "bn" | "bl" <-> enum; parse returns -1 on anything else. */
const char *cfg_gen_name(enum cfg_gen g);
int cfg_gen_parse(const char *s, enum cfg_gen *out);
static inline bool cfg_gen_is_b(enum cfg_gen g)
{
	return g >= CFG_GEN_B0;
}
/* Gen B that sends block_lens (B1 and every later shape). */
static inline bool cfg_gen_has_block_lens(enum cfg_gen g)
{
	return g >= CFG_GEN_B1;
}
/* Gen B whose req_blocks carry one block list per KV-cache group (B2 and later). */
static inline bool cfg_gen_grouped(enum cfg_gen g)
{
	return g >= CFG_GEN_B2;
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
