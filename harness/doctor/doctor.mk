# pdkv-doctor: host checks before a PD run (harness/doctor/main.c); owned by rdma.
BINS += pdkv-doctor
pdkv-doctor_SRCS := harness/doctor/main.c harness/doctor/doctor_env.c
pdkv-doctor_LIBS := temeta te cfg pdcommon
