# pdkv-bench (`pdkv bench`, `make bench` via ci/bench.sh): transfer_engine_bench-compatible
# benchmark on pdkv's engine, with a plain-socket baseline.
BINS += pdkv-bench
pdkv-bench_SRCS := harness/bench/bench_main.c harness/bench/bench_te.c \
	harness/bench/bench_sock.c harness/bench/bench_report.c
pdkv-bench_LIBS := te temeta pdcommon
# The engine holds only a weak reference to the RDMA transport; a strong one pulls it in.
ifneq ($(wildcard ref/te/te_rdma*.c),)
pdkv-bench_SRCS += harness/bench/bench_rdma_link.c
pdkv-bench_LIBS += terdma
endif
