build/obj/ref/common/pd_util.o: ref/common/pd_util.c ref/common/pd_util.h
ref/common/pd_util.h:
