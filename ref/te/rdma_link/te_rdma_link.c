/* SPDX-License-Identifier: Apache-2.0 */
/* te_rdma_link: linked into every binary that links lib terdma (see ref/te/rdma.mk). te_engine.c
 * refers to te_rdma_transport_ops only weakly, which never pulls an archive member; this strong
 * reference does, so the RDMA transport is present wherever terdma is linked. */
#include "te/te_internal.h"

const struct te_transport_ops *const te_rdma_link_ref = &te_rdma_transport_ops;
