# hr: the scenario runner library (pdkv run): scenarios, deployment, workload, metrics, checks,
# reporters. Its unit tests live in harness/tests/.
LIBS += hr
hr_SRCS := $(wildcard harness/lib/*.c)

TESTS += test_hr
test_hr_SRCS := harness/tests/test_hr.c
test_hr_LIBS := hr cfg pdtestsvc pdcommon
TESTS += test_hr_gen
test_hr_gen_SRCS := harness/tests/test_hr_gen.c
test_hr_gen_LIBS := hr cfg pdtestsvc pdcommon
