# SPDX-License-Identifier: Apache-2.0
# harness/config: thin mains for `pdkv config check` (pdkv-config) and `pdkv ports` (pdkv-ports)
# over ref/cfg; their shared flag parsing lives in cfg_cli.c.
BINS += pdkv-config pdkv-ports
pdkv-config_SRCS := harness/config/config_main.c harness/config/cfg_cli.c
pdkv-config_LIBS := cfg pdcommon
pdkv-ports_SRCS := harness/config/ports_main.c harness/config/cfg_cli.c
pdkv-ports_LIBS := cfg pdcommon
TESTS += test_config_fixtures
test_config_fixtures_SRCS := harness/config/tests/test_config_fixtures.c harness/config/cfg_cli.c
test_config_fixtures_LIBS := cfg pdcommon
