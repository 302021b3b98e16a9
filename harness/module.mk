BINS += pdkv
pdkv_SRCS := harness/pdkv.c
