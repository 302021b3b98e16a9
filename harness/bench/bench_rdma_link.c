/* bench_rdma_link: built only when lib terdma exists; its strong reference makes the linker
 * pull the RDMA transport out of libterdma.a (the engine's own reference is weak). */
#include "te/te_internal.h"

const struct te_transport_ops *const pdkv_bench_rdma_transport = &te_rdma_transport_ops;
