# SPDX-License-Identifier: Apache-2.0
# hr: the scenario runner library (pdkv run): scenarios, deployment, workload, metrics, checks,
# reporters. Its unit tests live in harness/tests/.
LIBS += hr
hr_SRCS := $(wildcard harness/lib/*.c)

TESTS += test_hr
test_hr_SRCS := harness/tests/test_hr.c
test_hr_LIBS := hr cfg pdtestsvc pdcommon
TESTS += test_hr_gen
test_hr_gen_SRCS := harness/tests/test_hr_gen.c harness/tests/scenario_fixture.c
test_hr_gen_LIBS := hr cfg pdtestsvc pdcommon

# separate network stacks (hr_netns) and the OpenSSH launcher (hr_ssh): real namespaces, a real
# sshd; both NOTRUN without root
TESTS += test_netns
test_netns_SRCS := harness/tests/test_netns.c
test_netns_LIBS := hr cfg pdtestsvc pdcommon
TESTS += test_ssh
test_ssh_SRCS := harness/tests/test_ssh.c harness/tests/ssh_fixture.c
test_ssh_LIBS := hr cfg pdtestsvc pdcommon
# pdkv run --hosts through the launcher: three sshd namespaces as machines (NOTRUN without root)
TESTS += test_hosts
test_hosts_SRCS := harness/tests/test_hosts.c harness/tests/ssh_fixture.c
test_hosts_LIBS := hr cfg pdtestsvc pdcommon
TESTS += test_hr_router
test_hr_router_SRCS := harness/tests/test_hr_router.c
test_hr_router_LIBS := hr cfg pdtestsvc pdcommon
# the resources check (issue 34 soak): its verdict on hand-made samples, live /proc samples
TESTS += test_hr_resources
test_hr_resources_SRCS := harness/tests/test_hr_resources.c
test_hr_resources_LIBS := hr cfg pdtestsvc pdcommon
