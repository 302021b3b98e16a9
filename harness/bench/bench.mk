# pdkv-bench (`pdkv bench`, `make bench` via ci/bench.sh): transfer_engine_bench-compatible
# benchmark on pdkv's engine, with a plain-socket baseline.
BINS += pdkv-bench
pdkv-bench_SRCS := harness/bench/bench_main.c harness/bench/bench_opts.c harness/bench/bench_fanout.c harness/bench/bench_te.c \
	harness/bench/bench_sock.c harness/bench/bench_report.c harness/bench/bench_gpu.c \
	harness/bench/bench_rdmarate.c harness/bench/bench_perftest.c
pdkv-bench_LIBS := te temeta pdcommon
# With lib terdma linked, ref/te/rdma.mk adds the strong reference that pulls the RDMA
# transport in (the engine's own reference is weak).
ifneq ($(wildcard ref/te/te_rdma*.c),)
pdkv-bench_LIBS += terdma
endif
