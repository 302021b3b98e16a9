build/obj/ref/common/pd_log.o: ref/common/pd_log.c ref/common/pd_log.h
ref/common/pd_log.h:
