# SPDX-License-Identifier: Apache-2.0
# pdkv-bench (`pdkv bench`, `make bench` via ci/bench.sh): transfer_engine_bench-compatible
# benchmark on pdkv's engine, with a plain-socket baseline.
BINS += pdkv-bench
pdkv-bench_SRCS := harness/bench/bench_main.c harness/bench/bench_opts.c harness/bench/bench_fanout.c harness/bench/bench_te.c \
	harness/bench/bench_sock.c harness/bench/bench_report.c harness/bench/bench_gpu.c harness/bench/bench_place.c \
	harness/bench/bench_rdmarate.c harness/bench/bench_perftest.c harness/bench/bench_mooncake.c \
	harness/bench/bench_serve.c harness/bench/bench_serve_load.c harness/bench/bench_serve_out.c \
	harness/bench/bench_serve_opts.c harness/bench/bench_serve_data.c harness/bench/bench_serve_save.c \
	harness/bench/bench_loop.c harness/bench/bench_scheme.c harness/bench/bench_lat.c harness/bench/bench_multi.c \
	harness/bench/bench_affinity.c harness/bench/bench_cc.c
pdkv-bench_LIBS := hr cfg pdtestsvc te temeta pdcommon
# With lib terdma linked, ref/te/rdma.mk adds the strong reference that pulls the RDMA
# transport in (the engine's own reference is weak).
ifneq ($(wildcard ref/te/te_rdma*.c),)
pdkv-bench_LIBS += terdma
endif

# The commit pdkv-bench writes into its JSON "meta": `git describe` at build time into a header
# rewritten only when it changed, so a new commit rebuilds bench_report.o and nothing else.
BENCH_GIT_H := $(BUILD)/gen/pdkv_git.h
$(BENCH_GIT_H): bench-git-force
	@mkdir -p $(@D); c=$$(git describe --always --dirty 2>/dev/null || echo unknown); \
	 l="#define PDKV_GIT_COMMIT \"$$c\""; [ "$$(cat $@ 2>/dev/null)" = "$$l" ] || echo "$$l" >$@
$(BUILD)/obj/harness/bench/bench_report.o: $(BENCH_GIT_H)
$(BUILD)/obj/harness/bench/bench_report.o: CFLAGS += -I$(BUILD)/gen
.PHONY: bench-git-force
bench-git-force:
