BINS += pdkv
pdkv_SRCS := harness/pdkv.c
pdkv_LIBS := pdcommon
