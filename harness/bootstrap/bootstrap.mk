# SPDX-License-Identifier: Apache-2.0
# pdkv-bootstrap (`pdkv bootstrap`): a standalone gen B bootstrap server over ref/kv1/kv1_boot.c,
# for prefills started with kv_connector_extra_config.bootstrap_server_address
BINS += pdkv-bootstrap
pdkv-bootstrap_SRCS := harness/bootstrap/bootstrap_main.c
pdkv-bootstrap_LIBS = kv1 pdhttplim cfg $(filter te temeta,$(LIBS)) pdcommon
