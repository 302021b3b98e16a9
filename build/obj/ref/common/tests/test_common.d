build/obj/ref/common/tests/test_common.o: ref/common/tests/test_common.c \
 ref/common/pd_proc.h ref/common/pd_util.h
ref/common/pd_proc.h:
ref/common/pd_util.h:
