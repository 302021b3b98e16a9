# SPDX-License-Identifier: Apache-2.0
# pdkv-upgrade-check (`pdkv upgrade-check`): the rolling-upgrade matrix over the scenario runner
# (harness/lib); thin main + upg_run.c (cells) + upg_report.c (matrix, change list, JSON).
# Its bash test (tests/test_upgrade_check.sh) is found by ci/run-tests.sh.
BINS += pdkv-upgrade-check
pdkv-upgrade-check_SRCS := harness/upgrade/upgrade_main.c harness/upgrade/upg_run.c \
	harness/upgrade/upg_report.c
pdkv-upgrade-check_LIBS := hr cfg pdtestsvc pdcommon
TESTS += test_upg
test_upg_SRCS := harness/upgrade/tests/test_upg.c harness/upgrade/upg_run.c \
	harness/upgrade/upg_report.c
test_upg_LIBS := hr cfg pdtestsvc pdcommon
