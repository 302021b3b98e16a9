# pdkv — top-level build. Every module (ref/*/, harness/*/) owns a module.mk that appends to
# LIBS, BINS and TESTS; this file turns those lists into rules, so adding a module never means
# editing this file. Binaries land in $(BUILD)/bin, test programs in $(BUILD)/tests.
BUILD    ?= build
CC       ?= cc
SAN      ?=
OPT      ?= -O2
CFLAGS   ?= $(OPT) -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread $(SAN) \
            -Iref -Iref/common -Iharness -I/usr/include/cjson
LDFLAGS  += -pthread $(SAN)
SYSLIBS  := -lcjson -lcurl -lmicrohttpd -lhiredis -lzmq -libverbs -lcmocka -lm -ldl -lrt

LIBS  :=
BINS  :=
TESTS :=
TEST_SCRIPTS :=
include $(sort $(wildcard ref/*/*.mk harness/module.mk harness/*/*.mk))

DEPS_STAMP := $(BUILD)/.deps-ok
LIBFILES   := $(foreach l,$(LIBS),$(BUILD)/lib/lib$(l).a)
BINFILES   := $(foreach b,$(BINS),$(BUILD)/bin/$(b))
TESTFILES  := $(foreach t,$(TESTS),$(BUILD)/tests/$(t))

.PHONY: all test asan run bench test-rxe test-gpu clean deps format check-format tidy
all: $(BINFILES) $(TESTFILES)

# Fresh machine: install the Debian packages once (ci/install-deps.sh is idempotent).
$(DEPS_STAMP): ci/install-deps.sh
	@mkdir -p $(@D)
	@bash ci/install-deps.sh
	@touch $@
deps: $(DEPS_STAMP)

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

define lib_rule
$(BUILD)/lib/lib$(1).a: $$(patsubst %.c,$(BUILD)/obj/%.o,$$($(1)_SRCS))
	@mkdir -p $$(@D)
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
# A binary links the libraries named in NAME_LIBS (all of them when unset), so one module's
# half-finished code never breaks another module's build.
libs_of = $(foreach l,$(if $($(1)_LIBS),$($(1)_LIBS),$(LIBS)),$(BUILD)/lib/lib$(l).a)
define bin_rule
$(2)/$(1): $$(patsubst %.c,$(BUILD)/obj/%.o,$$($(1)_SRCS)) $$(call libs_of,$(1))
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) -o $$@ $$(patsubst %.c,$(BUILD)/obj/%.o,$$($(1)_SRCS)) \
	  -Wl,--start-group $$(call libs_of,$(1)) -Wl,--end-group $$(SYSLIBS)
endef
$(foreach l,$(LIBS),$(eval $(call lib_rule,$(l))))
$(foreach b,$(BINS),$(eval $(call bin_rule,$(b),$(BUILD)/bin)))
$(foreach t,$(TESTS),$(eval $(call bin_rule,$(t),$(BUILD)/tests)))

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# The README's test command. Runs every test program and test script, one line each, then
# "tests: N passed, N failed". T=name-substring narrows it.
test: all
	@BUILD=$(BUILD) bash ci/run-tests.sh $(T)

asan:
	@$(MAKE) --no-print-directory BUILD=build-asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" test

# The README's main command: the default scenario suite on local TCP with a local etcd.
run: all
	@$(BUILD)/bin/pdkv run --json reports/out/run.json --junit reports/out/junit.xml

bench: all
	@BUILD=$(BUILD) bash ci/bench.sh

test-rxe: all
	@BUILD=$(BUILD) bash ci/rxe/run-rxe-tier.sh

# The GPU tier: CUDA tests, pdkv bench --use_vram (nvlink_intra, tcp), ratios; 77 without CUDA.
test-gpu: all
	@BUILD=$(BUILD) bash ci/gpu/run-gpu-tier.sh

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

# CI's format gate: lists the files that differ from .clang-format and the command to fix them.
check-format:
	@bash ci/check-format.sh

# .clang-tidy's function-size limit over every C file; fails when any function is over it.
CLANG_TIDY ?= clang-tidy-14
tidy:
	@out=$$($(CLANG_TIDY) --quiet $$(git ls-files '*.c') -- $(CFLAGS) 2>/dev/null | \
	  grep -A1 'readability-function-size' | grep 'warning:' || true); \
	if [ -n "$$out" ]; then echo "$$out"; exit 1; else echo "tidy: every function within the limit"; fi

clean:
	rm -rf build build-asan
