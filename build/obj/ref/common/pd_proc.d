build/obj/ref/common/pd_proc.o: ref/common/pd_proc.c ref/common/pd_proc.h \
 ref/common/pd_util.h
ref/common/pd_proc.h:
ref/common/pd_util.h:
