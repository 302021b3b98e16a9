/* SPDX-License-Identifier: Apache-2.0 */
/* pd_env_table: one row per environment variable pdkv reads (C programs and the build's scripts);
 * ref/common/tests/test_env_scan.sh fails when code reads a name that has no row here. */
#include "pd_env.h"

#include "pd_par.h"
#include "pd_util.h"

/* who reads what: the transfer engine's variables reach every command that starts an engine,
 * and pdkv run / upgrade-check pass them on to the stand-ins they start */
#define TE   (PD_ENV_C_STANDIN | PD_ENV_C_BENCH | PD_ENV_C_INTEROP | PD_ENV_C_RUN | PD_ENV_C_UPGRADE)
#define SA   (PD_ENV_C_STANDIN | PD_ENV_C_RUN | PD_ENV_C_UPGRADE)
#define CFG  (PD_ENV_C_CONFIG | PD_ENV_C_PORTS | PD_ENV_C_DOCTOR | PD_ENV_C_RUN)
#define HR   (PD_ENV_C_RUN | PD_ENV_C_BENCH | PD_ENV_C_UPGRADE)
#define MK   PD_ENV_C_MAKE
#define ALL  0x3fffu /* every C command */
#define SCR  PD_ENV_F_SCRIPT
#define TST  PD_ENV_F_TEST
#define SEC  PD_ENV_F_SECRET
#define W    PD_ENV_WARN
#define IGN  PD_ENV_IGNORE
#define ERR  PD_ENV_ERROR
#define KiB  (1ll << 10)
#define MiB  (1ll << 20)
#define GiB  (1ll << 30)
#define MAXI 0x7fffffffll

#define I(n, lo, hi, def, pol, cmds, doc)                                                          \
	{                                                                                          \
		n, PD_ENV_INT, lo, hi, def, NULL, pol, cmds, 0, doc                                \
	}
#define IF(n, lo, hi, def, cmds, fl, doc)                                                          \
	{                                                                                          \
		n, PD_ENV_INT, lo, hi, def, NULL, W, cmds, fl, doc                                 \
	}
#define Z(n, lo, hi, def, pol, cmds, doc)                                                          \
	{                                                                                          \
		n, PD_ENV_SIZE, lo, hi, def, NULL, pol, cmds, 0, doc                               \
	}
#define B(n, def, pol, cmds, fl, doc)                                                              \
	{                                                                                          \
		n, PD_ENV_BOOL, 0, 1, def, NULL, pol, cmds, fl, doc                                \
	}
#define SET(n, cmds, fl, doc)                                                                      \
	{                                                                                          \
		n, PD_ENV_SET, 0, 0, NULL, NULL, IGN, cmds, fl, doc                                \
	}
#define E(n, ch, def, pol, cmds, fl, doc)                                                          \
	{                                                                                          \
		n, PD_ENV_ENUM, 0, 0, def, ch, pol, cmds, fl, doc                                  \
	}
#define S(n, def, pol, cmds, fl, doc)                                                              \
	{                                                                                          \
		n, PD_ENV_STR, 0, 0, def, NULL, pol, cmds, fl, doc                                 \
	}
#define P(n, def, cmds, fl, doc)                                                                   \
	{                                                                                          \
		n, PD_ENV_PATH, 0, 0, def, NULL, IGN, cmds, fl, doc                                \
	}

static const struct pd_env_var rows[] = {
    /* ---- the transfer engine (Mooncake's names; docs/engine.md, docs/tcp.md) */
    I("MC_TRANSFER_TIMEOUT", 5, 86400, "30", W, TE,
      "seconds one transfer may take (plus 1 ms per MB moved) before it fails; the V0 pipe's "
      "READs and gen B's WRITE deadlines use it too"),
    I("MC_SLICE_TIMEOUT", 1, 65535, NULL, IGN, TE,
      "seconds a submitted task may go without an end before it reports TIMEOUT (unset: none)"),
    SET("MC_DISABLE_METACACHE", TE, 0, "set: look peers' segment descriptors up on every transfer"),
    SET("MC_FORCE_TCP", TE, 0, "set: use TCP even when an RDMA device is present"),
    SET("MC_INTRANODE_NVLINK", TE, 0,
        "set, with no protocol given: use the intra-node GPU (nvlink_intra) transport"),
    SET("MC_LEGACY_RPC_PORT_BINDING", TE | CFG, 0,
        "set: bind the RPC port given in the server name (or MC_HANDSHAKE_PORT), not a free one "
        "from MC_MIN_RPC_PORT..MC_MAX_RPC_PORT"),
    I("MC_HANDSHAKE_PORT", 1024, 65535, "12001", W, TE | CFG,
      "RPC port with MC_LEGACY_RPC_PORT_BINDING when the server name has none"),
    I("MC_MIN_RPC_PORT", 1024, 65535, "15000", W, TE | CFG,
      "lowest port the engine picks its RPC port from"),
    I("MC_MAX_RPC_PORT", 1024, 65535, "17000", W, TE | CFG,
      "highest port the engine picks its RPC port from"),
    I("MC_MIN_PRC_PORT", 1024, 65535, "15000", W, TE | CFG,
      "older Mooncake spelling of MC_MIN_RPC_PORT (read when that is unset)"),
    I("MC_MAX_PRC_PORT", 1024, 65535, "17000", W, TE | CFG,
      "older Mooncake spelling of MC_MAX_RPC_PORT (read when that is unset)"),
    S("MC_TCP_BIND_ADDRESS", NULL, IGN, TE | CFG, 0,
      "IPv4 address the engine binds and announces (unset: the first non-loopback address; "
      "pdkv bench and local scenarios pin 127.0.0.1)"),
    S("MC_METADATA_CLUSTER_ID", NULL, IGN, TE | CFG, 0,
      "metadata keys live under mooncake/<id>/ instead of mooncake/"),
    Z("MC_HANDSHAKE_MAX_LENGTH", 1, 128 * MiB, "1M", IGN, TE,
      "largest handshake frame accepted from a peer"),
    I("MC_HANDSHAKE_LISTEN_BACKLOG", 1, 65535, "128", IGN, TE, "handshake socket's listen backlog"),
    I("MC_HANDSHAKE_CONNECT_TIMEOUT", 1, 600, "5", W, TE,
      "seconds to connect to a peer's handshake port (RDMA and TCP)"),
    I("MC_TCP_LANES_PER_PEER", 1, 16, NULL, IGN, TE,
      "TCP connections per peer (unset: 1, 2 above 4 CPUs, 4 from 16 CPUs)"),
    E("MC_TCP_PROTO", "0|1", "0", IGN, TE, 0,
      "1: speak only the first TCP framing (no integrity or multi-lane extensions)"),
    S("MC_REDIS_USERNAME", NULL, IGN, TE, 0, "user for a redis:// metadata store (AUTH)"),
    S("MC_REDIS_PASSWORD", NULL, IGN, TE, SEC, "password for a redis:// metadata store (AUTH)"),
    I("MC_REDIS_DB_INDEX", 0, 255, NULL, ERR, TE, "database a redis:// metadata store SELECTs"),
    /* ---- RDMA (docs/rdma.md) */
    IF("MC_GID_INDEX", 0, 255, NULL, TE | PD_ENV_C_DOCTOR, 0,
       "GID index for RoCE (unset: NCCL_IB_GID_INDEX, else the first RoCEv2 IPv4 GID)"),
    IF("NCCL_IB_GID_INDEX", 0, 255, NULL, TE | PD_ENV_C_DOCTOR, 0,
       "GID index when MC_GID_INDEX is unset (as NCCL's users already set it)"),
    I("MC_IB_PORT", 1, 255, "1", W, TE, "HCA port number"),
    I("MC_MTU", 256, 4096, "4096", W, TE,
      "path MTU, 512|1024|2048|4096 (capped by the port's active MTU)"),
    I("MC_NUM_QP_PER_EP", 1, 64, "2", W, TE, "queue pairs per peer endpoint"),
    I("MC_MAX_WR", 1, 65535, "256", W, TE, "work requests per queue pair"),
    I("MC_MAX_SGE", 1, 64, "4", W, TE, "scatter/gather entries per work request"),
    I("MC_MAX_INLINE", 0, 4096, "64", W, TE, "inline data bytes per work request"),
    I("MC_MAX_CQE_PER_CTX", 16, 65535, "4096", W, TE, "completion queue entries per device"),
    I("MC_SLICE_SIZE", 1, GiB, "65536", W, TE, "bytes per RDMA slice (one work request)"),
    I("MC_RETRY_CNT", 1, 127, "9", W, TE, "times a failed slice is retried"),
    I("PDKV_RDMA_STALL_S", 1, 3600, "5", W, TE,
      "seconds without a completion before a queue pair is declared stalled"),
    I("PDKV_RDMA_FAULT_RESET", 0, 1 << 20, "0", W, TE,
      "fault injection: reset a queue pair after this many work requests (0: never)"),
    I("PDKV_RDMA_BUSY_POLL", 0, 1, "0", W, TE,
      "1: RDMA workers spin on their queue and CQ instead of sleeping (pdkv bench --latency)"),
    /* ---- pdkv's own engine knobs */
    I("PDKV_HS_FRAME_TIMEOUT_MS", 1, 3600000, "5000", IGN, TE,
      "milliseconds a handshake peer has to send one whole frame"),
    Z("PDKV_TCP_SOCKBUF", 64 * KiB, GiB, NULL, IGN, TE,
      "SO_SNDBUF/SO_RCVBUF of data sockets (unset: the kernel's autotuning)"),
    S("PDKV_TCP_CONGESTION", NULL, IGN, TE, 0,
      "TCP congestion control of data sockets, e.g. cubic (unset: the host's "
      "net.ipv4.tcp_congestion_control); pdkv bench --congestion sets it"),
    I("PDKV_HTTP_HEADER_TIMEOUT_MS", 100, 3600000, "10000", W,
      SA | PD_ENV_C_PROXY | PD_ENV_C_METASERVER,
      "ms an HTTP client may take to send a request's whole header (stand-in, proxy, metaserver)"),
    I("PDKV_TCP_HEADER_TIMEOUT_MS", 1, 3600000, "10000", W, TE,
      "milliseconds a TCP data client has to send a request header once it started one"),
    I("PDKV_TCP_IDLE_TIMEOUT_S", 0, 86400, "900", W, TE,
      "seconds an idle TCP data connection is kept (0: forever)"),
    Z("PDKV_TCP_RECV_CHUNK", 0, 1ll << 62, "256K", W, TE,
      "bytes per recv() on data sockets, 0 (no cap) or at least 4K"),
    Z("PDKV_TCP_SEND_CHUNK", 0, 1ll << 62, "1M", W, TE,
      "bytes per send() on data sockets, 0 (no cap) or at least 4K"),
    I("PDKV_TCP_SPIN_US", 0, 100000, "50", W, TE,
      "microseconds a receiver busy-polls before it sleeps in poll() (0: off)"),
    I("PDKV_TE_REPUBLISH_S", 0, 3600, "5", W, TE,
      "seconds between checks that this engine's metadata is still published (0: never)"),
    S("PDKV_MOONCAKE_VERSION", NULL, W, TE | PD_ENV_C_BENCH, 0,
      "Mooncake release the peers run (0.3.6, v0.3.12.post1): its metadata quirks are matched"),
    S("PDKV_IPC_HOST_ID", NULL, IGN, TE, TST,
      "host identity of the nvlink_intra transport (unset: the kernel's boot_id)"),
    P("PDKV_CUDART", NULL, TE, 0,
      "CUDA runtime to dlopen (unset: libcudart.so.13, .12, then libcudart.so)"),
    B("PDKV_TE_CUDA_BATCH", "1", W, TE, 0,
      "1: nvlink_intra queues each group of copies with one cudaMemcpyBatchAsync (CUDA 12.8+); "
      "0: one cudaMemcpyAsync per copy"),
    I("PDKV_TE_IPC_GROUP", 1, 64, "16", W, TE,
      "nvlink_intra: copies queued behind one CUDA event (and one cudaMemcpyBatchAsync)"),
    B("PDKV_TE_IPC_PHASES", "0", IGN, TE, 0,
      "1: nvlink_intra logs each submit's phases (plan, queue, event, post) and each copy group's "
      "completion (pickup, event wait, end) in ms"),
    Z("PDKV_GPU_CHUNK", 64 * KiB, 64 * MiB, "2M", IGN, TE,
      "bytes per staging copy between GPU memory and a socket"),
    I("PDKV_KV_THREADS", 1, PD_PAR_MAX, NULL, W, SA,
      "threads that fill and verify KV blocks (unset: half the CPUs, 1..8)"),
    E("PDKV_LOG", "error|warn|info|debug", "info", IGN, ALL, 0, "log level of every command"),
    /* ---- vLLM V0 pipe in the stand-ins (docs/v0-pipe.md) */
    Z("PDKV_KVC_READ_CHUNK", 0, 1ll << 62, "4M", W, SA,
      "bytes per READ of a KV transfer, 0 for one READ; at least 64K"),
    B("PDKV_KVC_LAND_PIECES", "1", W, SA, 0,
      "1: show each landed piece as the lanes deliver it; 0: per chunk from the select thread"),
    Z("PDKV_KVC_POOL_BYTES", 8 * KiB, 1ll << 40, NULL, W, SA,
      "size of the V0 buffer pool (unset: from kv_buffer_size)"),
    B("PDKV_KVC_READ_AHEAD", "1", W, SA, 0, "0: no READ ahead of the consumer"),
    Z("PDKV_KVC_POOL_CACHE_BYTES", 0, 1ll << 62, NULL, W, SA,
      "freed dedicated buffers kept for reuse (unset: one region's worth)"),
    /* ---- vLLM V1 connector in the stand-ins (docs/wire-v1.md) */
    I("PDKV_KV1_MAX_HELD_WRITES", 1, 4096, "16", ERR, SA,
      "WRITEs held after a failure before new WRITEs wait"),
    B("PDKV_KV1_PHASES", "0", IGN, SA, 0,
      "1: one log line per gen B WRITE with its phases (segment, submit, wait) in us"),
    I("PDKV_KV1_MAX_PARKED", 1, 1000000, "1024", ERR, SA,
      "requests parked before their KV is ready, in all"),
    I("PDKV_KV1_MAX_PARKED_PER_PEER", 1, 1000000, "256", ERR, SA,
      "requests parked before their KV is ready, per peer"),
    I("PDKV_KV1_MAX_PARKED_MIB", 1, 1000000, "64", ERR, SA, "MiB of parked requests' messages"),
    I("PDKV_KV1_RECV_HOLD_S", 1, 86400, NULL, ERR, SA,
      "seconds a given-up receive holds its blocks (unset: from MC_TRANSFER_TIMEOUT)"),
    I("PDKV_KV1_RECV_HOLD_MAX_BLOCKS", 1, MAXI, NULL, ERR, SA,
      "blocks held by given-up receives, at most the KV cache's (unset: half of it)"),
    /* ---- vLLM's own variables, as the stand-ins and the config checker read them */
    S("VLLM_HOST_IP", NULL, IGN, SA | PD_ENV_C_BOOTSTRAP, 0,
      "address a V1 worker announces (unset: MC_TCP_BIND_ADDRESS or the first address)"),
    I("VLLM_MOONCAKE_BOOTSTRAP_PORT", 1, 65535, "8998", ERR, SA | CFG,
      "gen A/B prefill's bootstrap HTTP port"),
    I("VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT", 1, 86400, "480", ERR, SA | CFG,
      "seconds a prefill waits for decode to read a request's KV (gen B)"),
    I("VLLM_MOONCAKE_SIDE_CHANNEL_PORT", 1, 65535, "6557", ERR, CFG,
      "side-channel port vLLM's out-of-tree Mooncake connector uses"),
    I("VLLM_MOONCAKE_SENDER_WORKERS", 1, 1024, NULL, ERR, CFG,
      "sender threads of vLLM's out-of-tree Mooncake connector"),
    S("VLLM_MOONCAKE_PROTOCOL", "rdma", IGN, CFG, 0,
      "transport of vLLM's out-of-tree Mooncake connector"),
    E("VLLM_DISABLE_REQUEST_ID_RANDOMIZATION", "0|1|false|true", "0", IGN, SA | CFG, 0,
      "1: request ids without vLLM's random suffix (vLLM PR #27987)"),
    {"VLLM_LOG_STATS_INTERVAL", PD_ENV_FLOAT, 0, 86400, "10", NULL, IGN, SA, 0,
     "seconds between the stand-in's KV transfer stats log lines (gen B)"},
    P("MOONCAKE_CONFIG_PATH", NULL, SA | CFG, 0,
      "mooncake.json of a vLLM V0 deployment (V1 reads kv_connector_extra_config instead)"),
    IF("PDKV_TEST_SLOWDOWN_PCT", 1, 1000, NULL, PD_ENV_C_BENCH, TST,
       "test only: every pdkv engine batch of pdkv bench takes this many percent longer"),
    IF("PDKV_TEST_SOCK_LAG_MS", 1, 1000, NULL, PD_ENV_C_BENCH, TST,
       "test only: the socket baseline's first connection sleeps this long in each timed batch"),
    S("PDKV_FAULT", NULL, ERR, SA, TST, "fault spec as --fault gives it, when --fault is not"),
    P("PDKV_MDLGPU", NULL, SA, 0, "libmdlgpu.so, the GPU fill kernel (unset: beside the binary)"),
    S("CUDA_VISIBLE_DEVICES", NULL, IGN, SA | PD_ENV_C_BENCH, 0,
      "GPUs the CUDA runtime shows (--kv-cache-device, --use_vram)"),
    S("OPENAI_API_KEY", NULL, IGN, PD_ENV_C_PROXY, SEC,
      "Bearer token the proxy sends when the client sent none"),
    /* ---- config checker and vllm-drift */
    P("PDKV_SYSFS_INFINIBAND", "/sys/class/infiniband", CFG, TST,
      "where the config checker looks for RDMA devices"),
    P("PDKV_VLLM_EXTRACT", NULL, PD_ENV_C_DRIFT | PD_ENV_C_UPGRADE | PD_ENV_C_RUN, 0,
      "vllm_extract.py (unset: beside the binary, then ../share/pdkv/)"),
    P("PDKV_PYTHON", "python3", PD_ENV_C_DRIFT | PD_ENV_C_UPGRADE | PD_ENV_C_RUN, 0,
      "Python that has the vLLM to read"),
    P("PDKV_VLLM", NULL, PD_ENV_C_UPGRADE | PD_ENV_C_RUN, 0,
      "vLLM source tree or package that pdkv vllm-drift summarises in reports"),
    /* ---- the harness */
    P("PDKV_BIN", NULL, HR | PD_ENV_C_INTEROP | MK, 0,
      "directory of the pdkv-* binaries to start (unset: beside this binary, then PATH)"),
    P("PDKV_SCENARIOS", NULL, PD_ENV_C_RUN, 0,
      "default scenario directory (unset: scenarios/ of the checkout or share/pdkv/scenarios)"),
    P("PDKV_SYS_INFINIBAND", "/sys/class/infiniband", PD_ENV_C_RUN, TST,
      "where pdkv run looks for RDMA devices (a scenario's needs: rdma)"),
    SET("PDKV_KEEP_SVC", HR | PD_ENV_C_INTEROP, TST,
        "set: keep the data directories of the etcd/redis/metaserver started for a run"),
    P("MOONCAKE_BENCH", NULL, PD_ENV_C_INTEROP | MK, 0,
      "Mooncake's transfer_engine_bench (unset: PATH)"),
    P("TMPDIR", "/tmp", HR | PD_ENV_C_INTEROP, 0, "where work directories and logs go"),
    P("HOME", NULL, PD_ENV_C_RUN, 0, "~/.ssh/known_hosts for multi-host runs"),
    S("USER", NULL, IGN, PD_ENV_C_RUN, 0, "names the remote work directory of multi-host runs"),
    S("SLURM_JOB_ID", NULL, IGN, PD_ENV_C_RUN, 0,
      "--launcher slurm: the allocation whose nodes run the roles (unset: --slurm-args)"),
    P("PATH", NULL, HR | PD_ENV_C_INTEROP, 0,
      "where etcd, redis-server, ib_write_bw, ssh and transfer_engine_bench are found"),
    /* ---- the build's scripts (make test, make bench, make fuzz, make test-rxe, make test-gpu) */
    IF("PDKV_TEST_TIMEOUT", 1, 86400, "600", MK, SCR, "make test: seconds per test"),
    IF("PDKV_MEM_SCALE", 1, 100, "1", MK, SCR | TST,
       "make test: memory limits multiplier (make tsan sets 5)"),
    IF("FUZZ_SECONDS", 1, 86400, "60", MK, SCR, "make fuzz: seconds per target (CI: 30)"),
    IF("FUZZ_JOBS", 1, 64, "2", MK, SCR, "make fuzz: targets fuzzed at once"),
    S("FUZZ_CC", "clang-14", IGN, MK, SCR, "make fuzz: the compiler"),
    IF("PDKV_BENCH_DURATION", 1, 3600, "2", MK, SCR, "make bench: seconds per point"),
    IF("PDKV_BENCH_THREADS", 1, 256, "1", MK, SCR, "make bench: threads per point"),
    IF("PDKV_BENCH_REPEAT", 1, 1000, "5", MK, SCR, "make bench: runs per point"),
    P("PDKV_BENCH_HISTORY", NULL, MK, SCR, "make bench: history directory for the gate"),
    B("PDKV_BENCH_GATE", "1", W, MK, SCR,
      "make bench: 0 reports a regression verdict without failing (default: it fails)"),
    IF("PDKV_BENCH_THRESHOLD", 0, 1000, "5", MK, SCR,
       "make bench: percent a gated ratio must move (and be significant) to be a regression"),
    P("PDKV_BENCH_OUT", "reports/out", MK, SCR, "make bench: where its results are written"),
    IF("PDKV_BENCH_BATCH", 1, 1024, "128", MK, SCR, "make bench: requests per batch"),
    B("PDKV_BENCH_SERVE", "1", W, MK, SCR, "make bench: 0 skips the bench serve sweep"),
    S("PDKV_BENCH_AFFINITY", "split", IGN, MK, SCR,
      "make bench: pdkv bench --affinity (split: initiator and target on their own CPUs; none)"),
    S("PDKV_BENCH_CONGESTION", "cubic", IGN, MK, SCR,
      "make bench: pdkv bench --congestion, the TCP congestion control of every data socket "
      "(host: the host's default)"),
    S("PDKV_BENCH_SERVE_TOKENS", "1000,4000,16000", IGN, MK, SCR,
      "make bench: input lengths of the bench serve sweep"),
    IF("RXE_BW_MB", 1, 100000, "32", MK, SCR, "make test-rxe: MB per bandwidth point"),
    IF("RXE_BENCH_S", 1, 3600, "2", MK, SCR, "make test-rxe: seconds per bench point"),
    IF("RXE_ROUNDS", 1, 100, "3", MK, SCR, "make test-rxe: rounds per point"),
    IF("RXE_TIMEOUT", 1, 86400, "420", MK, SCR, "make test-rxe: seconds for the whole VM run"),
    P("RXE_LOG", NULL, MK, SCR, "make test-rxe: log file (unset: build/test-logs/rxe-tier.log)"),
    IF("GPU_BENCH_S", 1, 3600, "1", MK, SCR, "make test-gpu: seconds per bench point"),
    IF("GPU_BATCH", 1, 4096, "16", MK, SCR, "make test-gpu: batch size"),
    IF("GPU_STEP_S", 1, 86400, "240", MK, SCR, "make test-gpu: seconds per step"),
    P("GPU_LOG", NULL, MK, SCR, "make test-gpu: log directory (unset: build/test-logs/gpu-tier)"),
    IF("GPU_HANDOFF_ROUNDS", 1, 100, "3", MK, SCR,
       "make test-gpu: rounds of the nvlink_intra 1P1D scenario and paced bench behind the "
       "hand-off verdict"),
    B("GPU_PIN", "1", W, MK, SCR,
      "make test-gpu: 1 runs the 1P1D scenarios and their benches on GPU 0's local CPUs"),
};

_Static_assert(PD_ARRAY_SIZE(rows) <= PD_ENV_MAX_ROWS, "raise PD_ENV_MAX_ROWS");

size_t pd_env_count(void)
{
	return PD_ARRAY_SIZE(rows);
}

const struct pd_env_var *pd_env_at(size_t i)
{
	return i < PD_ARRAY_SIZE(rows) ? &rows[i] : NULL;
}
