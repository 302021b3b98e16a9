# pdkv-metaserver: in-memory HTTP metadata server with Mooncake's API (harness/metaserver/main.c)
BINS += pdkv-metaserver
pdkv-metaserver_SRCS := harness/metaserver/main.c
pdkv-metaserver_LIBS := pdcommon
