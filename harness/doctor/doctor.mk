# SPDX-License-Identifier: Apache-2.0
# pdkv-doctor: host checks before a PD run (harness/doctor/doctor_main.c); owned by rdma.
BINS += pdkv-doctor
pdkv-doctor_SRCS := harness/doctor/doctor_main.c harness/doctor/doc_boot.c harness/doctor/doctor_env.c
pdkv-doctor_LIBS := kv1 pdhttplim temeta te cfg pdcommon
