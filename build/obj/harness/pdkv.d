build/obj/harness/pdkv.o: harness/pdkv.c ref/common/pd_proc.h
ref/common/pd_proc.h:
