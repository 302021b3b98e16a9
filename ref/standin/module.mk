# ref/standin: pdkv-standin, the vLLM stand-in (OpenAI HTTP on the fake model + V0 connector).
# sastub holds weak fallbacks for connector/config functions not built yet; listed after the
# real libraries so their strong symbols win. The list is recursive (=) so that libraries from
# modules included after this one (ref/te) are seen.
LIBS += sastub
sastub_SRCS := $(wildcard ref/standin/stub/*.c)
BINS += pdkv-standin
pdkv-standin_SRCS := $(filter-out ref/standin/tests/% ref/standin/stub/%,$(wildcard ref/standin/*.c))
pdkv-standin_LIBS = mdl $(filter kvc cfg te temeta terdma,$(LIBS)) sastub pdcommon
