# ref/te metadata part (lib temeta, sources listed in module.mk): tests owned by te-meta.
TESTS += test_meta_svc
test_meta_svc_SRCS := ref/te/tests/test_meta_svc.c
test_meta_svc_LIBS := pdcommon
