/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_names: the one registry of vLLM connector names and Mooncake metadata URL schemes that
 * pdkv's checker, stand-ins and harness use (cfg_names.c). */
#ifndef CFG_NAMES_H
#define CFG_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "pd_meta_scheme.h"

/* The connector pdkv speaks (V0 and V1 spell it the same; kv_connector is case-sensitive). */
#define CFG_CONNECTOR_MOONCAKE "MooncakeConnector"
/* The metadata URL schemes: one registry in ref/common (pd_meta_scheme.h), which ref/te and the
 * test services use too; the checker's names for it: */
#define CFG_META_P2P          PD_META_P2P
#define cfg_meta_scheme       pd_meta_scheme
#define cfg_meta_schemes      pd_meta_schemes
#define cfg_meta_scheme_of    pd_meta_scheme_of
#define cfg_meta_scheme_known pd_meta_scheme_known

/* A name in vLLM's connector registry: V0's KVConnectorFactory, or V1's (which the factory looks
 * up before any kv_connector_module_path). */
bool cfg_connector_registered(const char *name, bool v1);
/* The registered names, NULL-terminated, in vLLM's registration order. */
const char *const *cfg_connectors(bool v1);

#endif
