# SPDX-License-Identifier: Apache-2.0
# pdkv-accept (`pdkv accept`): the fleet acceptance matrix — pdkv-bench between pairs of nodes
# (netns, hosts file over ssh, Slurm), the N x N matrix, node medians and outliers. Thin main;
# pdkv bench's option parser (bench_opts.c, with the latency/multi-device/perftest checks it
# calls) validates the bench flags both sides get.
# Its bash test (tests/test_accept.sh) is found by ci/run-tests.sh.
BINS += pdkv-accept
pdkv-accept_SRCS := harness/accept/accept_main.c harness/accept/acc_judge.c harness/accept/acc_run.c \
	harness/accept/acc_report.c harness/bench/bench_opts.c harness/bench/bench_lat.c \
	harness/bench/bench_multi.c harness/bench/bench_perftest.c harness/bench/bench_rdmarate.c \
	harness/bench/bench_affinity.c harness/bench/bench_cc.c
pdkv-accept_LIBS := hr cfg pdtestsvc te temeta pdcommon
TESTS += test_accept
test_accept_SRCS := harness/accept/tests/test_accept.c harness/accept/acc_judge.c \
	harness/accept/acc_report.c
test_accept_LIBS := hr cfg pdtestsvc pdcommon
# --hosts through the OpenSSH launcher: three sshd namespaces as machines (NOTRUN without root)
TESTS += test_accept_ssh
test_accept_ssh_SRCS := harness/accept/tests/test_accept_ssh.c harness/tests/ssh_fixture.c
test_accept_ssh_LIBS := hr cfg pdtestsvc pdcommon
