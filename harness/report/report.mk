# SPDX-License-Identifier: Apache-2.0
# report (`pdkv report`): compares pdkv's JSON outputs with statistics (Mann-Whitney U) and
# plots a history of them with gnuplot. Library rpt, thin main pdkv-report.
LIBS += rpt
rpt_SRCS := $(filter-out harness/report/report_main.c,$(wildcard harness/report/*.c))

BINS += pdkv-report
pdkv-report_SRCS := harness/report/report_main.c
pdkv-report_LIBS := rpt pdcommon

TESTS += test_report
test_report_SRCS := harness/report/tests/test_report.c
test_report_LIBS := rpt pdcommon
